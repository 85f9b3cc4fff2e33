//! `mpiover profile ...`: show, query and merge calibration profiles
//! (`mpiover-profile/1`, written by `mpiover-calibrate`; format and lookup in
//! `mpiover_common::profile`).
use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Subcommand;
use mpiover_common::profile::{Profile, ProfileEntry, Query};

use crate::units::precise_secs;

#[derive(Debug, Subcommand)]
pub enum ProfileCmd {
    /// Print a profile as a readable table: environment, method, one line per base point.
    Show {
        profile: PathBuf,
        /// Only this function (e.g. MPI_Bcast or bcast).
        #[arg(long)]
        function: Option<String>,
    },
    /// Print tmax (seconds) of one call, and whether it was a base point,
    /// interpolated, or outside the measured range (then the nearest edge).
    Lookup {
        profile: PathBuf,
        /// MPI function (MPI_Allreduce, allreduce, ...).
        function: String,
        /// Communicator size.
        p: u32,
        /// Bytes (per-rank block, see the profile format).
        bytes: u64,
        /// root or nonroot for rooted collectives; MPI_Isend or MPI_Irecv for MPI_Wait.
        #[arg(long)]
        role: Option<String>,
        /// Point-to-point: whether the peer is on the same host (default: unknown).
        #[arg(long)]
        same_host: Option<bool>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Fit the error models again on the samples the profile keeps (this
    /// version's models, the profile's q_max and alpha) and write the result.
    Refit {
        profile: PathBuf,
        /// Output profile (may be the input).
        #[arg(short, long)]
        output: PathBuf,
    },
    /// Judge the profile's tmax on its kept samples: which models were
    /// chosen, the share of held-out calls above tmax, how many samples the
    /// stopping rule needed; with --against, tmax against another calibration.
    Check {
        profile: PathBuf,
        /// Another calibration of the same machine to compare tmax with.
        #[arg(long, value_name = "PROFILE")]
        against: Option<PathBuf>,
        /// Tolerance of the stopping rule (spread of the recent tmax over terr,max).
        #[arg(long, default_value_t = 0.05, value_name = "FRACTION")]
        rel_tol: f64,
        /// Print JSON (with every entry) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Merge the entries of two calibration runs (of the same machine) into one profile.
    Merge {
        a: PathBuf,
        b: PathBuf,
        /// Output profile.
        #[arg(short, long)]
        output: PathBuf,
        /// Merge even if the environments differ.
        #[arg(long)]
        force: bool,
    },
}

/// Where a command's output goes: standard output in the command, anything
/// in the tests (the fuzz tests run the command's own code on bad files).
pub type Sink<'a> = &'a mut dyn FnMut(&[u8]) -> anyhow::Result<()>;

pub fn run(cmd: &ProfileCmd) -> anyhow::Result<()> {
    run_to(cmd, &mut |b| crate::cli::write_out(None, b))
}

/// [`run`], its output given to `out`.
pub fn run_to(cmd: &ProfileCmd, out: Sink) -> anyhow::Result<()> {
    match cmd {
        ProfileCmd::Show { profile, function } => show(out, profile, function.as_deref()),
        ProfileCmd::Lookup {
            profile,
            function,
            p,
            bytes,
            role,
            same_host,
            json,
        } => lookup(
            out,
            profile,
            &Query {
                function,
                p: *p,
                bytes: *bytes,
                role: role.as_deref(),
                same_host: *same_host,
            },
            *json,
        ),
        ProfileCmd::Merge {
            a,
            b,
            output,
            force,
        } => merge(out, a, b, output, *force),
        ProfileCmd::Refit { profile, output } => {
            print_lines(out, &[crate::profile_check::refit(profile, output)?])
        }
        ProfileCmd::Check {
            profile,
            against,
            rel_tol,
            json,
        } => {
            if !(*rel_tol > 0.0 && rel_tol.is_finite()) {
                bail!("invalid --rel-tol {rel_tol}: a positive fraction");
            }
            let c = crate::profile_check::check(profile, against.as_deref(), *rel_tol)?;
            let text = match json {
                true => format!("{}\n", serde_json::to_string_pretty(&c)?),
                false => crate::profile_check::render(&c),
            };
            out(text.as_bytes())
        }
    }
}

/// `allreduce`, `Allreduce`, `mpi_allreduce` -> the name the profile uses.
fn function_name(prof: &Profile, f: &str) -> String {
    let low = f.trim().to_ascii_lowercase();
    let bare = low.strip_prefix("mpi_").unwrap_or(&low);
    prof.entries
        .iter()
        .map(|e| e.function.as_str())
        .find(|n| n.len() > 4 && n[4..].eq_ignore_ascii_case(bare))
        .map(String::from)
        .unwrap_or_else(|| f.trim().to_string())
}

fn fmt_bytes(b: u64) -> String {
    if b >= 1 << 20 && b.trailing_zeros() >= 20 {
        format!("{}Mi", b >> 20)
    } else if b >= 1 << 10 && b.trailing_zeros() >= 10 {
        format!("{}Ki", b >> 10)
    } else {
        b.to_string()
    }
}

fn show(out: Sink, path: &PathBuf, function: Option<&str>) -> anyhow::Result<()> {
    let prof = Profile::load(path)?;
    let want = function.map(|f| function_name(&prof, f));
    let entries = shown_entries(&prof, want.as_deref());
    let mut lines = vec![format!("profile {} ({})", path.display(), prof.schema)];
    show_environment(&prof, &mut lines);
    show_method(&prof, &mut lines);
    show_protocol(&prof, &mut lines);
    show_runs(&prof, &mut lines);
    show_entries(&entries, &mut lines);
    show_totals(&prof, &entries, &mut lines);
    print_lines(out, &lines)?;
    if want.is_some() && entries.is_empty() {
        bail!(
            "{}: no entries for {}",
            path.display(),
            function.unwrap_or_default()
        );
    }
    Ok(())
}

/// Writes `lines` to stdout, one a line (a closed pipe ends quietly).
fn print_lines(out: Sink, lines: &[String]) -> anyhow::Result<()> {
    let mut text = lines.join("\n");
    text.push('\n');
    out(text.as_bytes())
}

/// The entries of `want` (all without), in the table's order.
fn shown_entries<'a>(prof: &'a Profile, want: Option<&str>) -> Vec<&'a ProfileEntry> {
    let mut entries: Vec<&ProfileEntry> = prof
        .entries
        .iter()
        .filter(|e| want.is_none_or(|w| e.function == w))
        .collect();
    entries.sort_by(|a, b| {
        (&a.function, a.p, a.bytes, &a.role, a.same_host).cmp(&(
            &b.function,
            b.p,
            b.bytes,
            &b.role,
            b.same_host,
        ))
    });
    entries
}

/// Machine, MPI library, binding and timer.
fn show_environment(prof: &Profile, lines: &mut Vec<String>) {
    let env = &prof.environment;
    lines.push(format!(
        "  machine:  {} host(s) {} | {} ranks ({} per host) | {} | {} CPUs",
        env.hosts.len(),
        env.hosts.join(","),
        env.ranks,
        env.ranks_per_host
            .iter()
            .map(|x| x.to_string())
            .collect::<Vec<_>>()
            .join(","),
        env.cpu_model,
        env.cpus
    ));
    lines.push(format!(
        "  MPI:      {}",
        mpiover_common::host::library_headline(&env.mpi_library)
    ));
    lines.push(format!(
        "  binding:  {}",
        env.binding.policy.clone().unwrap_or_else(|| format!(
            "none requested; CPUs per rank: {}",
            env.binding
                .ranks
                .iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .cloned()
                .collect::<Vec<_>>()
                .join(" | ")
        ))
    ));
    lines.push(format!(
        "  timer:    {} (resolution {}, cost {})",
        env.timer.name,
        precise_secs(env.timer.resolution_s),
        precise_secs(env.timer.cost_s)
    ));
}

/// How the calibration measured: sync, q_max, sample counts, budgets,
/// clock synchronization, and its notes.
fn show_method(prof: &Profile, lines: &mut Vec<String>) {
    let m = &prof.method;
    lines.push(format!(
        "  method:   sync {} | q_max {} | alpha {} | warm-up {} | samples {}..{}{} | entry budget {} s{} | seed {}{}",
        m.sync,
        m.q_max,
        m.alpha,
        m.warmup,
        m.min_samples,
        m.max_samples,
        match (m.rounds, m.spread_s) {
            (0 | 1, _) => String::new(),
            (r, s) if s > 0.0 => format!(" in {r} rounds over >= {s} s"),
            (r, _) => format!(" in {r} rounds"),
        },
        m.entry_budget_s,
        m.time_budget_s.map(|b| format!(" | run budget {b} s")).unwrap_or_default(),
        m.seed,
        if m.quick { " | quick" } else { "" }
    ));
    if let Some(cs) = &m.clock_sync {
        let worst = cs.ranks.iter().map(|r| r.residual_s).fold(0.0, f64::max);
        lines.push(format!(
            "  clocks:   {} fit points x {} ping-pongs, re-sync every {} s; worst fit residual {}",
            cs.fitpoints,
            cs.exchanges,
            cs.resync_interval_s,
            precise_secs(worst)
        ));
        lines.extend(crate::profile_show::clock_hosts(prof, cs));
        let wrong: Vec<String> = cs
            .ranks
            .iter()
            .filter(|r| r.model_failures > 0)
            .map(|r| {
                format!(
                    "rank {} {} time(s), worst {}",
                    r.rank,
                    r.model_failures,
                    precise_secs(r.prediction_error_s)
                )
            })
            .collect();
        if !wrong.is_empty() {
            lines.push(format!(
                "  CLOCK MODEL WENT WRONG: a fit point's offset was off the model's prediction \
                 beyond its bound ({}): the drift changed between fit points, windows may have \
                 started the ranks apart",
                wrong.join("; ")
            ));
        }
    }
}

/// The eager limits the calibration found, then the method's notes.
fn show_protocol(prof: &Profile, lines: &mut Vec<String>) {
    match &prof.protocol {
        Some(p) => {
            let lim = |l: Option<u64>| match l {
                Some(b) if b >= p.searched_up_to => format!("every size up to {b} B eager"),
                Some(b) => format!("{b} B (sends of {} B or more wait for the receiver)", b + 1),
                None => "-".into(),
            };
            lines.push(format!(
                "  eager:    same host {}; across hosts {}{}",
                lim(p.eager_limit_same_host),
                lim(p.eager_limit_cross_host),
                {
                    let stated: Vec<String> = [&p.mpi_t, &p.mpi_t_cross_host]
                        .into_iter()
                        .flatten()
                        .map(|t| format!("{} = {} B", t.cvar, t.bytes))
                        .collect();
                    if stated.is_empty() {
                        String::new()
                    } else {
                        format!("; the library states {}", stated.join(", "))
                    }
                }
            ));
        }
        None => lines.push("  eager:    not measured (a profile without MPI_Send)".into()),
    }
    lines.extend(crate::profile_show::eager_used(prof));
    for n in &prof.method.notes {
        lines.push(format!("  note:     {n}"));
    }
}

/// One line per calibration run, and what the host's load says of it.
fn show_runs(prof: &Profile, lines: &mut Vec<String>) {
    for r in &prof.runs {
        lines.push(format!(
            "  run:      {} {} | {} ranks | {:.1} s{}{}",
            r.id,
            r.date,
            r.ranks,
            r.wall_s,
            if r.resumed > 0 {
                format!(" | resumed {}x", r.resumed)
            } else {
                String::new()
            },
            if r.complete { "" } else { " | incomplete" }
        ));
        match &r.load {
            Some(l) if l.busy => lines.push(format!(
                "  load:     BUSY HOST: {}; tmax holds that work's noise: calibrate again on an \
                 idle host",
                l.describe()
            )),
            Some(l) if l.unsteady => lines.push(format!(
                "  load:     UNSTEADY: idle host, but the calls' typical time moved during the \
                 run ({}); tmax holds the states this run saw: pool more of them with --rounds \
                 and --spread, or merge calibrations",
                l.describe()
            )),
            Some(l) => lines.push(format!("  load:     idle host ({})", l.describe())),
            None => {}
        }
    }
}

/// The table: one line per base point.
fn show_entries(entries: &[&ProfileEntry], lines: &mut Vec<String>) {
    lines.push(String::new());
    lines.push(format!(
        "{:<26} {:>4} {:>8} {:<9} {:>6} {:>6} {:>11} {:>11} {:>11} {:<12} {:>4}",
        "function", "p", "bytes", "role", "n", "drop", "min", "median", "tmax", "model", "runs"
    ));
    for e in entries {
        let role = match (&e.role, e.same_host) {
            (Some(r), _) => r.trim_start_matches("MPI_").to_string(),
            (None, Some(false)) => "x-host".into(),
            _ => "-".into(),
        };
        let model = match (&e.model, e.accepted, e.fallback) {
            (_, _, true) => "empirical".to_string(),
            (Some(m), true, _) => m.to_string(),
            (Some(m), false, _) => format!("{m}?"),
            (None, _, _) => "-".to_string(),
        };
        lines.push(format!(
            "{:<26} {:>4} {:>8} {:<9} {:>6} {:>6} {:>11} {:>11} {:>11} {:<12} {:>4}",
            e.function,
            e.p,
            fmt_bytes(e.bytes),
            role,
            e.n,
            e.n_invalid,
            precise_secs(e.min_s),
            precise_secs(e.median_s),
            precise_secs(e.tmax_s),
            model,
            e.runs.len().max(1)
        ));
    }
}

/// Samples kept and dropped over the shown entries, and where their tmax
/// comes from.
fn show_totals(prof: &Profile, entries: &[&ProfileEntry], lines: &mut Vec<String>) {
    lines.push(String::new());
    let n: u64 = entries.iter().map(|e| e.n).sum();
    let dropped: u64 = entries.iter().map(|e| e.n_invalid).sum();
    lines.push(format!(
        "{} entries, {} samples kept, {} dropped (invalid windows){}",
        entries.len(),
        n,
        dropped,
        if prof.skipped.is_empty() {
            String::new()
        } else {
            format!(", {} base points not measured", prof.skipped.len())
        }
    ));
    let mut shown = prof.clone();
    shown.entries = entries.iter().map(|&e| e.clone()).collect();
    lines.push(crate::model::TmaxFrom::of(&shown).describe(Some(prof.method.q_max)));
}

/// `asked.function` as given (`allreduce`); the rest of the query as is.
fn lookup(out: Sink, path: &PathBuf, asked: &Query, json: bool) -> anyhow::Result<()> {
    let prof = Profile::load(path)?;
    let f = function_name(&prof, asked.function);
    let q = Query {
        function: &f,
        ..*asked
    };
    let (p, bytes, role) = (q.p, q.bytes, q.role);
    let Some(l) = prof.tmax_query(&q) else {
        let roles: BTreeSet<String> = prof
            .entries
            .iter()
            .filter(|e| e.function == f)
            .filter_map(|e| e.role.clone())
            .collect();
        if !roles.is_empty() {
            bail!(
                "{}: no entry for {f}{}; its roles are: {} (use --role)",
                path.display(),
                role.map(|r| format!(" with role {r}")).unwrap_or_default(),
                roles.into_iter().collect::<Vec<_>>().join(", ")
            );
        }
        let fs: BTreeSet<&str> = prof.entries.iter().map(|e| e.function.as_str()).collect();
        bail!(
            "{}: no entry for {f}; the profile has: {}",
            path.display(),
            fs.into_iter().collect::<Vec<_>>().join(", ")
        );
    };
    if json {
        let v = serde_json::json!({
            "function": f, "p": p, "bytes": bytes, "role": role,
            "tmax_s": l.tmax_s, "kind": l.kind(), "exact": l.exact, "out_of_range": l.out_of_range,
            "p_lo": l.p_lo, "p_hi": l.p_hi,
        });
        return print_lines(out, &[v.to_string()]);
    }
    let how = match (l.exact, l.out_of_range) {
        (true, _) => "exact (a measured base point)".to_string(),
        (false, false) if l.p_lo != l.p_hi => {
            format!("interpolated between p={} and p={}", l.p_lo, l.p_hi)
        }
        (false, false) => "interpolated".to_string(),
        (false, true) => "out of range: nearest edge of the measured range used".to_string(),
    };
    print_lines(
        out,
        &[format!(
            "{f} p={p} bytes={bytes}{}: tmax = {:e} s ({}), {how}",
            role.map(|r| format!(" role={r}")).unwrap_or_default(),
            l.tmax_s,
            precise_secs(l.tmax_s)
        )],
    )
}

fn merge(sink: Sink, a: &PathBuf, b: &PathBuf, out: &PathBuf, force: bool) -> anyhow::Result<()> {
    let pa = Profile::load(a)?;
    let pb = Profile::load(b)?;
    let m = Profile::merge(&pa, &pb, force)
        .with_context(|| format!("merging {} and {}", a.display(), b.display()))?;
    m.save_atomic(out)?;
    let both = m.entries.iter().filter(|e| e.runs.len() > 1).count();
    print_lines(
        sink,
        &[format!(
            "{}: {} entries ({} measured in more than one run), {} runs",
            out.display(),
            m.entries.len(),
            both,
            m.runs.len()
        )],
    )
}
