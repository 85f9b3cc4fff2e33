//! The sections of the text report, in the order they are printed.

use std::fmt::Write;

use super::{heading, opt_secs, Ctx};
use crate::export::text::regions::{cause_lines, methods_line};
use crate::export::text::table::{plain, truncate, Table};
use crate::model::{Metric, ProfileSource, Significance, WaitState};
use crate::units::{bytes, count, pct, secs};

/// The run: directory, command, ranks, library.
pub(super) fn header(o: &mut String, c: &Ctx) {
    let (r, st) = (c.r, c.st);
    // Header.
    let _ = writeln!(o, "{} {}", st.bold("mpiover report:"), r.run.dir);
    let _ = writeln!(o, "  command   {}", r.run.command.join(" "));
    let present = if r.run.ranks_present == r.run.ranks {
        format!("{} ranks", r.run.ranks)
    } else {
        format!(
            "{} of {} ranks have a record",
            r.run.ranks_present, r.run.ranks
        )
    };
    let _ = writeln!(
        o,
        "  ranks     {present} on {} host{}",
        r.run.hosts.len(),
        if r.run.hosts.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "  MPI       {}",
        truncate(
            &mpiover_common::host::library_headline(&r.run.mpi_library),
            90
        )
    );
    o.push('\n');
}

/// Totals, overhead and the worst sites in words.
pub(super) fn summary(o: &mut String, c: &Ctx) {
    let (r, st, overhead_known) = (c.r, c.st, c.overhead_known);
    // Summary.
    let s = &r.summary;
    let _ = writeln!(o, "{}", st.bold("SUMMARY"));
    let _ = writeln!(
        o,
        "  Application time  {:>9}   sum over {} ranks; longest rank {}",
        secs(s.app_time_s),
        r.ranks.len(),
        secs(s.app_wall_s)
    );
    let _ = writeln!(
        o,
        "  MPI time          {:>9}   {} of application time",
        secs(s.mpi_time_s),
        pct(if s.app_time_s > 0.0 {
            s.mpi_time_s / s.app_time_s
        } else {
            0.0
        })
    );
    if s.startup_s + s.shutdown_s > 0.0 {
        let _ = writeln!(
            o,
            "  Start-up/shut-down {:>8}   MPI_Init* {}, MPI_Finalize {}: not in MPI time",
            secs(s.startup_s + s.shutdown_s),
            secs(s.startup_s),
            secs(s.shutdown_s)
        );
    }
    match s.overhead_s {
        Some(ov) => {
            let _ = writeln!(
                o,
                "  Overhead          {}   {} of MPI time, {} of application time; {} of {} sites significant{}",
                // Pad before colouring: the escape codes are not printed width.
                st.red(&format!("{:>9}", secs(ov))),
                pct(s.overhead_share_of_mpi.unwrap_or(0.0)),
                pct(s.overhead_share_of_app.unwrap_or(0.0)),
                s.significant_sites,
                s.sites,
                if s.marginal_sites > 0 {
                    format!(", {} marginal", s.marginal_sites)
                } else {
                    String::new()
                }
            );
        }
        None => {
            let _ = writeln!(
                o,
                "  Overhead          {:>9}   unknown: no profile (see METHODS)",
                "-"
            );
        }
    }
    if !s.worst.is_empty() {
        let _ = writeln!(
            o,
            "  {}",
            if overhead_known {
                "Worst lines:"
            } else {
                "Most time:"
            }
        );
        for (i, w) in s.worst.iter().enumerate() {
            let _ = writeln!(o, "    {}. {w}", i + 1);
        }
    }
    o.push('\n');
}

/// `part` as a fraction of `whole`; 0 of nothing.
fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

/// The ranked sites table, with notes on sites that are not plain source lines.
pub(super) fn sites(o: &mut String, c: &Ctx) {
    let (r, st, overhead_known, top) = (c.r, c.st, c.overhead_known, c.top);
    heading(
        o,
        c,
        "SITES",
        format_args!(
            "ranked by {}; {} of {}",
            r.summary.ranked_by,
            top,
            r.sites.len()
        ),
    );
    let mut t = Table::new(&[
        ">#", "Location", "Function", "MPI call", ">Calls", ">Time", ">Bytes",
    ]);
    if overhead_known {
        t.extend_head(&[
            ">Sum tmax",
            ">Overhead",
            ">%MPI",
            ">%App",
            ">>tmax",
            "Signif.",
            "Wait state",
            "Late ranks",
        ]);
    } else {
        t.extend_head(&[">%MPI"]);
    }
    for site in r.sites.iter().take(top) {
        let mut row = vec![
            plain(site.position.to_string()),
            plain(c.loc(site)),
            // C++ names without their parameter lists (`function`): the
            // JSON and HTML reports have them whole too.
            plain(truncate(site.function.as_deref().unwrap_or("-"), 28)),
            plain(site.mpi_function.clone()),
            plain(count(site.calls)),
            plain(secs(site.time_s)),
            plain(bytes(site.bytes)),
        ];
        if overhead_known {
            let sig = match site.significance {
                Significance::Significant => ("yes".to_string(), Some("1;31")),
                Significance::NotSignificant => ("no".to_string(), None),
                Significance::Marginal | Significance::LevelShift => {
                    (site.significance.to_string(), Some("33"))
                }
                other => (other.to_string(), Some("2")),
            };
            let late: Vec<String> = site
                .late_ranks
                .iter()
                .take(4)
                .map(|x| x.to_string())
                .collect();
            let more = if site.late_ranks.len() > 4 {
                ",..."
            } else {
                ""
            };
            // "*": some calls lie outside the profile's measured range, their
            // tmax is its nearest edge's (a note below says how many).
            let oor = if site.out_of_range_calls > 0 { "*" } else { "" };
            row.extend([
                plain(format!("{}{oor}", opt_secs(site.tmax_sum_s))),
                (
                    opt_secs(site.overhead_s),
                    site.significant.then_some("1;31"),
                ),
                plain(
                    site.overhead_share_of_mpi
                        .map(pct)
                        .unwrap_or_else(|| "-".into()),
                ),
                plain(
                    site.overhead_share_of_app
                        .map(pct)
                        .unwrap_or_else(|| "-".into()),
                ),
                plain(site.exceed_fraction.map(pct).unwrap_or_else(|| "-".into())),
                sig,
                plain(site.wait_state.map_or("-", WaitState::as_str)),
                plain(if late.is_empty() {
                    "-".into()
                } else {
                    format!("{}{more}", late.join(","))
                }),
            ]);
        } else {
            row.push(plain(pct(site.time_share_of_mpi)));
        }
        t.rows.push(row);
    }
    t.render(o, st, "  ");
    // Notes on sites whose location is not a plain source line (Python code
    // seen at its nearest native frame, unresolved addresses).
    for site in r.sites.iter().take(top) {
        if let Some(note) = &site.note {
            let _ = writeln!(o, "  note on #{}: {note}", site.position);
        }
        if overhead_known && site.out_of_range_calls > 0 {
            let _ = writeln!(
                o,
                "  * #{}: {} of {} calls outside the profile's measured range (tmax of its \
                 nearest edge; calibrate these sizes or process counts to trust it)",
                site.position,
                count(site.out_of_range_calls),
                count(site.calls)
            );
        }
        // What a completion waited for: the late peer and the line that
        // posted the request it was late with.
        if site.significant && !site.waited_for.is_empty() {
            let who: Vec<String> = site
                .waited_for
                .iter()
                .take(3)
                .map(|w| match &w.posted_at {
                    Some(at) => format!("rank {} ({at}) {}", w.peer, secs(w.overhead_s)),
                    None => format!("rank {} {}", w.peer, secs(w.overhead_s)),
                })
                .collect();
            let _ = writeln!(o, "  #{} waited for {}", site.position, who.join(", "));
        }
        cause_lines(o, c, site);
        for rule in &site.tmax_composed {
            let _ = writeln!(o, "  tmax of #{} composed: {rule}", site.position);
        }
        // A completion without a tmax is worth a word; functions the profile
        // does not cover at all are summed up under METHODS.
        if mpiover_common::completion::is_completion(&site.mpi_function) {
            for why in &site.tmax_missing {
                let _ = writeln!(o, "  no tmax for #{}: {why}", site.position);
            }
        }
    }
    o.push('\n');
}

/// How the top sites spread over ranks.
pub(super) fn spread(o: &mut String, c: &Ctx) {
    let (r, st, overhead_known, top) = (c.r, c.st, c.overhead_known, c.top);
    heading(
        o,
        c,
        "PER-RANK SPREAD",
        "per site, over the ranks where it occurs",
    );
    let mut t = Table::new(&[
        ">#",
        "Location",
        ">Ranks",
        ">Time min",
        "(rank)",
        ">median",
        ">max",
        "(rank)",
        ">Call min",
        ">Call max",
    ]);
    if overhead_known {
        t.extend_head(&[">Overhead min", ">median", ">max", ">worst rank"]);
    }
    for site in r.sites.iter().take(top) {
        let p = &site.per_rank;
        let mut row = vec![
            plain(site.position.to_string()),
            plain(c.loc(site)),
            plain(p.ranks.to_string()),
            plain(secs(p.time_min_s)),
            plain(format!("({})", p.time_min_rank)),
            plain(secs(p.time_median_s)),
            plain(secs(p.time_max_s)),
            plain(format!("({})", p.time_max_rank)),
            plain(secs(site.min_call_s)),
            plain(secs(site.max_call_s)),
        ];
        if overhead_known {
            row.extend([
                plain(opt_secs(p.overhead_min_s)),
                plain(opt_secs(p.overhead_median_s)),
                plain(opt_secs(p.overhead_max_s)),
                plain(if p.overhead_max_s.is_some() {
                    p.worst_rank.to_string()
                } else {
                    "-".into()
                }),
            ]);
        }
        t.rows.push(row);
    }
    t.render(o, st, "  ");
    o.push('\n');
}

/// One row per rank (at most 16 shown).
pub(super) fn ranks(o: &mut String, c: &Ctx) {
    let (r, st, overhead_known) = (c.r, c.st, c.overhead_known);
    // Ranks.
    let shown: Vec<&crate::model::RankReport> = if r.ranks.len() <= 16 {
        r.ranks.iter().collect()
    } else {
        let mut v: Vec<&crate::model::RankReport> = r.ranks.iter().collect();
        v.sort_by(|a, b| {
            let k = |x: &crate::model::RankReport| x.overhead_s.unwrap_or(x.mpi_time_s);
            k(b).total_cmp(&k(a)).then(a.rank.cmp(&b.rank))
        });
        v.truncate(10);
        v
    };
    heading(
        o,
        c,
        "RANKS",
        if shown.len() == r.ranks.len() {
            "all".to_string()
        } else {
            format!(
                "the {} with the most {} of {}",
                shown.len(),
                if overhead_known {
                    "overhead"
                } else {
                    "MPI time"
                },
                r.ranks.len()
            )
        },
    );
    let mut t = Table::new(&[
        ">Rank",
        "Host",
        ">App time",
        ">MPI time",
        ">MPI %",
        ">Overhead",
        "Record",
    ]);
    for k in &shown {
        t.rows.push(vec![
            plain(k.rank.to_string()),
            plain(truncate(&k.host, 24)),
            plain(secs(k.app_time_s)),
            plain(secs(k.mpi_time_s)),
            plain(pct(share(k.mpi_time_s, k.app_time_s))),
            plain(opt_secs(k.overhead_s)),
            (
                k.finished.clone(),
                (k.finished != "finalize").then_some("33"),
            ),
        ]);
    }
    t.render(o, st, "  ");
    if r.ranks.len() > 16 {
        let mut m: Vec<f64> = r.ranks.iter().map(|k| k.mpi_time_s).collect();
        m.sort_by(f64::total_cmp);
        let _ = writeln!(
            o,
            "  MPI time over all ranks: min {}, median {}, max {}",
            secs(m[0]),
            secs(m[m.len() / 2]),
            secs(m[m.len() - 1])
        );
    }
    o.push('\n');
}

/// Who waited on whom.
pub(super) fn wait_matrix(o: &mut String, c: &Ctx) {
    let (r, st) = (c.r, c.st);
    // Wait matrix.
    let wm = &r.wait_matrix;
    if !wm.cells.is_empty() {
        let by = if wm.metric == Metric::Overhead {
            "overhead of Late Sender / Late Receiver calls"
        } else {
            "time in point-to-point calls"
        };
        heading(
            o,
            c,
            "WAIT MATRIX",
            format_args!(
                "who waited on whom, by {by}; {} of {} pairs, total {}",
                wm.cells.len().min(10),
                wm.cells_total,
                secs(wm.total_s)
            ),
        );
        // On several hosts, each rank's host: which waits cross hosts.
        let hosts = r.run.hosts.len() > 1;
        let mut head = vec![">Rank", ">waited on", ">for", ">share", ">calls"];
        if hosts {
            head.splice(1..1, ["Host"]);
            head.splice(3..3, ["Host"]);
        }
        let mut t = Table::new(&head);
        for c in wm.cells.iter().take(10) {
            let host = |h: &Option<String>| plain(truncate(h.as_deref().unwrap_or("?"), 24));
            let mut row = vec![
                plain(c.waiter.to_string()),
                plain(c.peer.to_string()),
                plain(secs(c.value_s)),
                plain(pct(share(c.value_s, wm.total_s))),
                plain(count(c.calls)),
            ];
            if hosts {
                row.insert(1, host(&c.waiter_host));
                row.insert(3, host(&c.peer_host));
            }
            t.rows.push(row);
        }
        t.render(o, st, "  ");
        o.push('\n');
    }
}

/// How the figures were obtained, and the warnings.
pub(super) fn methods(o: &mut String, c: &Ctx) {
    let (r, st) = (c.r, c.st);
    // Methods.
    let m = &r.methods;
    let _ = writeln!(o, "{}", st.bold("METHODS"));
    match &m.profile {
        Some(p) => {
            let how = if p.source == ProfileSource::Record {
                "tmax recorded online"
            } else {
                "re-analysed from the histograms"
            };
            let matched = match p.matched {
                Some(true) => "environment matches the run".to_string(),
                Some(false) => st.yellow("environment does NOT match the run"),
                None => "environment not checked".to_string(),
            };
            let _ = writeln!(o, "  Profile      {} ({how}; {matched})", p.path);
            if let Some(n) = &p.note {
                let _ = writeln!(o, "               {n}");
            }
            if let Some(t) = &p.tmax_from {
                let _ = writeln!(o, "               {}", t.describe(r.methods.q_max));
            }
        }
        None => {
            let _ = writeln!(o, "  Profile      none");
        }
    }
    if let Some(h) = &m.hint {
        let _ = writeln!(o, "  {}", st.yellow(&format!("Note         {h}")));
    }
    let _ = writeln!(
        o,
        "  Overhead     sum over calls of max(0, t - tmax), from the recorded histograms (1 % buckets)"
    );
    let _ = writeln!(o, "  Significance {}", crate::prose::significance(m));
    let _ = writeln!(o, "  Wait states  {}", crate::prose::wait_states(m, bytes));
    let l = &m.lookups;
    if l.entries > 0 || m.profile.is_some() {
        let _ = writeln!(o, "  Lookups      {}", crate::prose::lookups(l));
    }
    let _ = writeln!(o, "  Timer        {}", crate::prose::timer(&m.timer));
    let _ = writeln!(o, "  Tool cost    {}", crate::prose::tool_cost(&m.tool));
    if m.folded_keys > 0 {
        let _ = writeln!(
            o,
            "  Folded       {} keys, {} calls over the interposer's key cap (shown as `other`)",
            count(m.folded_keys),
            count(m.folded_calls)
        );
    }
    let _ = writeln!(o, "  Call sites   caller depth {} (MPIOVER_DEPTH)", m.depth);
    if let Some(b) = &m.bounded_detail {
        let _ = writeln!(o, "  Per rank     {}", b.describe());
    }
    methods_line(o, c);

    if !r.warnings.is_empty() {
        o.push('\n');
        let _ = writeln!(o, "{}", st.bold("WARNINGS"));
        for w in &r.warnings {
            let _ = writeln!(o, "  - {}", st.yellow(w));
        }
    }
}
