//! The sites table and, per top site, its details: the distribution of its
//! call times against tmax (`dist.rs`) and its source lines.

use std::fmt::Write;

use super::{esc, Ctx};
use crate::export::html::dist::dist_svg;
use crate::export::html::regions::root_causes;
use crate::model::{Significance, WaitState};
use crate::units::{bytes, count, pct, secs};

pub(crate) fn opt_secs(v: Option<f64>) -> String {
    v.map(secs).unwrap_or_else(|| "-".into())
}

/// The late ranks of a site, the first few: on thousands of ranks the whole
/// list would make its row a page tall (the JSON has all).
fn late_ranks(ranks: &[u32]) -> String {
    const SHOWN: usize = 6;
    if ranks.is_empty() {
        return "-".into();
    }
    let mut s: Vec<String> = ranks.iter().take(SHOWN).map(|x| x.to_string()).collect();
    if ranks.len() > SHOWN {
        s.push(format!("{} more", ranks.len() - SHOWN));
    }
    esc(&s.join(", "))
}

/// The table wraps its long cells to fit the page rather than scrolling in
/// a box of its own, which also lets its header row stay under the
/// navigation while the page scrolls.
pub(crate) fn sites_table(o: &mut String, c: &Ctx, n: usize) {
    let _ = write!(
        o,
        "<h2 id=\"sites\">Sites <span class=\"meta\">(ranked by {}; {} of {}; click a header to sort)</span></h2>\n\
         <table class=\"sortable fit\" id=\"sites-table\"><thead><tr>\
         <th class=\"n\">#</th><th>Location</th><th>Function</th><th>MPI call</th><th class=\"n\">Calls</th>\
         <th class=\"n\">Time</th><th class=\"n\">Bytes</th><th class=\"n\">Sum tmax</th><th class=\"n\">Overhead</th>\
         <th class=\"n\">% MPI</th><th class=\"n\">% app</th>\
         <th class=\"n\">&gt; tmax</th><th>Significance</th><th>Wait state</th><th>Late ranks</th>\
         <th class=\"n\">{}</th><th class=\"n\">Worst rank</th></tr></thead><tbody>",
        c.r.summary.ranked_by,
        n,
        c.r.sites.len(),
        // Per rank: the overhead's spread when it is known, else the time's.
        if c.ovh {
            "Rank overhead min / med / max"
        } else {
            "Rank time min / med / max"
        }
    );
    for s in c.r.sites.iter().take(n) {
        let sig_cls = match s.significance {
            Significance::Significant => "tag sig",
            Significance::TooFewCalls | Significance::Marginal | Significance::LevelShift => {
                "tag few"
            }
            _ => "tag",
        };
        let p = &s.per_rank;
        let spread = if c.ovh {
            (
                opt_secs(p.overhead_min_s),
                opt_secs(p.overhead_median_s),
                opt_secs(p.overhead_max_s),
            )
        } else {
            (
                secs(p.time_min_s),
                secs(p.time_median_s),
                secs(p.time_max_s),
            )
        };
        // Calls outside the profile's measured range: their tmax is the
        // nearest edge's, marked in the cell.
        let oor = if s.out_of_range_calls > 0 {
            format!(
                " <span class=\"tag few\" title=\"{} of {} calls outside the profile's measured range: \
                 tmax of its nearest edge\">out of range</span>",
                s.out_of_range_calls, s.calls
            )
        } else {
            String::new()
        };
        let _ = write!(
            o,
            "<tr class=\"{}\"><td class=\"n\" data-v=\"{}\">{}</td><td class=\"w\" title=\"{}\">{}</td><td class=\"w\">{}</td><td>{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}{oor}</td>\
             <td class=\"n ovh\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td>\
             <td><span class=\"{sig_cls}\">{}</span></td><td class=\"w\">{}</td><td class=\"w\">{}</td>\
             <td class=\"n w\"><span class=\"v\">{}</span> / <span class=\"v\">{}</span> / <span class=\"v\">{}</span></td>\
             <td class=\"n\">{}</td></tr>",
            if s.significant { "sig" } else { "" },
            s.position,
            s.position,
            esc(&s.location),
            esc(&c.loc(s)),
            // Whole C++ signatures: the table has room, the text report has not.
            esc(s.function_signature.as_deref().unwrap_or("-")),
            esc(&s.mpi_function),
            s.calls,
            count(s.calls),
            s.time_s,
            secs(s.time_s),
            s.bytes,
            bytes(s.bytes),
            s.tmax_sum_s.unwrap_or(-1.0),
            opt_secs(s.tmax_sum_s),
            s.overhead_s.unwrap_or(-1.0),
            opt_secs(s.overhead_s),
            s.overhead_share_of_mpi.unwrap_or(-1.0),
            s.overhead_share_of_mpi.map(pct).unwrap_or_else(|| "-".into()),
            s.overhead_share_of_app.unwrap_or(-1.0),
            s.overhead_share_of_app.map(pct).unwrap_or_else(|| "-".into()),
            s.exceed_fraction.unwrap_or(-1.0),
            s.exceed_fraction.map(pct).unwrap_or_else(|| "-".into()),
            esc(s.significance.as_str()),
            esc(s.wait_state.map_or("-", WaitState::as_str)),
            late_ranks(&s.late_ranks),
            spread.0,
            spread.1,
            spread.2,
            if c.ovh && p.overhead_max_s.is_none() {
                "-".to_string()
            } else {
                p.worst_rank.to_string()
            }
        );
    }
    o.push_str("</tbody></table>\n");
}

pub(crate) fn site_details(o: &mut String, c: &Ctx, n: usize) {
    if n == 0 {
        return;
    }
    o.push_str("<h2 id=\"details\">Top sites in detail</h2>\n<p class=\"meta\">Call times (log scale); red bars are above the mean tmax (dashed line), the shaded band spans tmax over the calls' sizes.</p>\n");
    for (i, s) in c.r.sites.iter().take(n).enumerate() {
        let _ = write!(
            o,
            "<div class=\"site\" id=\"site-{}\"><h3>{}. {} in <code>{}</code> at <code>{}</code></h3><p class=\"meta\">{} calls, time {}, overhead {}, {} over tmax, {}{}{}</p><div class=\"grid2\"><div>",
            s.position,
            s.position,
            esc(&s.mpi_function),
            esc(s.function_signature.as_deref().unwrap_or("?")),
            esc(&s.location),
            count(s.calls),
            secs(s.time_s),
            s.overhead_s.map(secs).unwrap_or_else(|| "unknown".into()),
            match (s.exceed_fraction, s.expected_exceed_fraction) {
                (Some(x), Some(e)) => format!("{} (chance: {})", pct(x), pct(e)),
                (Some(x), None) => pct(x),
                _ => "-".into(),
            },
            esc(s.significance.as_str()),
            s.wait_state
                .map(|w| format!(", {}", esc(w.as_str())))
                .unwrap_or_default(),
            if s.late_ranks.is_empty() {
                String::new()
            } else {
                format!(
                    ", late ranks {}",
                    s.late_ranks.iter().take(8).map(|x| x.to_string()).collect::<Vec<_>>().join(", ")
                )
            }
        );
        match c.r.detail.dists.get(i).and_then(|d| d.as_ref()) {
            Some(d) => dist_svg(o, d, s.position),
            None => o.push_str("<p>No distribution.</p>"),
        }
        o.push_str("</div><div>");
        match c.r.detail.sources.get(i).and_then(|d| d.as_ref()) {
            Some(src) => {
                let _ = write!(o, "<pre class=\"src\" title=\"{}\">", esc(&src.path));
                for (ln, text) in &src.lines {
                    let line = format!("{ln:>5}  {}", esc(text));
                    if *ln == src.highlight {
                        let _ = write!(o, "<span class=\"hl\">{line}</span>");
                    } else {
                        let _ = writeln!(o, "{line}");
                    }
                }
                o.push_str("</pre>");
            }
            None => {
                let _ = write!(
                    o,
                    "<p class=\"meta\">Source {} not readable here.</p>",
                    esc(s.file.as_deref().unwrap_or(&s.location))
                );
            }
        }
        if !s.inlined_into.is_empty() {
            let _ = write!(
                o,
                "<p class=\"meta\">Inlined into: {}</p>",
                esc(&s.inlined_into.join(" ← "))
            );
        }
        if !s.posted_at.is_empty() {
            let _ = write!(
                o,
                "<p class=\"meta\">Completes {} posted at {}</p>",
                esc(&s.completes.join(", ")),
                esc(&s.posted_at.join(", "))
            );
        }
        if !s.waited_for.is_empty() {
            let who: Vec<String> = s
                .waited_for
                .iter()
                .map(|w| {
                    format!(
                        "rank {}{} ({})",
                        w.peer,
                        w.posted_at
                            .as_ref()
                            .map(|a| format!(", posted at {a}"))
                            .unwrap_or_default(),
                        crate::units::secs(w.overhead_s)
                    )
                })
                .collect();
            let _ = write!(
                o,
                "<p class=\"meta\">Waited for: {}</p>",
                esc(&who.join("; "))
            );
        }
        root_causes(o, c, s);
        if !s.completed_at.is_empty() {
            let _ = write!(
                o,
                "<p class=\"meta\">Completed at {}</p>",
                esc(&s.completed_at.join(", "))
            );
        }
        for rule in &s.tmax_composed {
            let _ = write!(o, "<p class=\"meta\">tmax composed: {}</p>", esc(rule));
        }
        for why in &s.tmax_missing {
            let _ = write!(o, "<p class=\"meta\">No tmax: {}</p>", esc(why));
        }
        o.push_str("</div></div></div>\n");
    }
}
