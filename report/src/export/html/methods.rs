//! The bottom of the page: the ranks table and how the figures were obtained.

use std::fmt::Write;

use crate::model::ProfileSource;
use crate::units::{bytes, count, pct, secs};

use super::*;

pub(crate) fn ranks_table(o: &mut String, c: &Ctx) {
    let r = c.r;
    let mut rows: Vec<&crate::model::RankReport> = r.ranks.iter().collect();
    let all = rows.len() <= 64;
    if !all {
        rows.sort_by(|a, b| {
            let k = |x: &crate::model::RankReport| x.overhead_s.unwrap_or(x.mpi_time_s);
            k(b).total_cmp(&k(a)).then(a.rank.cmp(&b.rank))
        });
        rows.truncate(32);
    }
    let _ = write!(
        o,
        "<h2 id=\"ranks\">Ranks <span class=\"meta\">({})</span></h2><div class=\"scroll\"><table class=\"sortable\"><thead><tr>\
         <th class=\"n\">Rank</th><th>Host</th><th class=\"n\">App time</th><th class=\"n\">MPI time</th><th class=\"n\">MPI %</th>\
         <th class=\"n\">Overhead</th><th class=\"n\">Tool cost</th><th>Record</th></tr></thead><tbody>",
        if all {
            "all".to_string()
        } else {
            format!("the {} with the most {} of {}", rows.len(), if c.ovh { "overhead" } else { "MPI time" }, r.ranks.len())
        }
    );
    for k in rows {
        let _ = write!(
            o,
            "<tr><td class=\"n\" data-v=\"{}\">{}</td><td>{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            k.rank,
            k.rank,
            esc(&k.host),
            k.app_time_s,
            secs(k.app_time_s),
            k.mpi_time_s,
            secs(k.mpi_time_s),
            pct(if k.app_time_s > 0.0 { k.mpi_time_s / k.app_time_s } else { 0.0 }),
            k.overhead_s.unwrap_or(-1.0),
            k.overhead_s.map(secs).unwrap_or_else(|| "-".into()),
            secs(k.tool_time_s),
            esc(&k.finished)
        );
    }
    o.push_str("</tbody></table></div>\n");
}

pub(crate) fn methods(o: &mut String, c: &Ctx) {
    let m = &c.r.methods;
    o.push_str("<h2 id=\"methods\">Methods</h2><dl class=\"methods\">");
    let mut item = |k: &str, v: String| {
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(&v));
    };
    item(
        "Profile",
        match &m.profile {
            Some(p) => format!(
                "{} ({}; {}){}",
                p.path,
                if p.source == ProfileSource::Record {
                    "tmax recorded online"
                } else {
                    "re-analysed from the histograms"
                },
                match p.matched {
                    Some(true) => "environment matches the run",
                    Some(false) => "environment does NOT match the run",
                    None => "environment not checked",
                },
                p.tmax_from
                    .as_ref()
                    .map(|t| format!("; {}", t.describe(m.q_max)))
                    .unwrap_or_default()
            ),
            None => "none".into(),
        },
    );
    item(
        "Overhead",
        "sum over calls of max(0, t - tmax), from the recorded histograms (1 % buckets)".into(),
    );
    item("Significance", crate::export::prose::significance(m));
    item("Wait states", crate::export::prose::wait_states(m, bytes));
    let l = &m.lookups;
    item("tmax lookups", crate::export::prose::lookups(l));
    item("Timer", crate::export::prose::timer(&m.timer));
    item("Tool cost", crate::export::prose::tool_cost(&m.tool));
    item(
        "Folded keys",
        format!(
            "{} keys, {} calls",
            count(m.folded_keys),
            count(m.folded_calls)
        ),
    );
    item("Call-site depth", m.depth.to_string());
    if let Some(h) = &m.hint {
        item("Note", h.clone());
    }
    o.push_str("</dl>\n");
}
