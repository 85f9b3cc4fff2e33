//! The bottom of the page: the ranks table and how the figures were obtained.

use std::fmt::Write;

use super::{esc, Ctx};
use crate::model::ProfileSource;
use crate::units::{bytes, count, pct, secs};

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

/// The METHODS of the text report, item for item (its test holds them
/// together): a reader of either learns the same about the figures.
pub(crate) fn methods(o: &mut String, c: &Ctx) {
    let m = &c.r.methods;
    o.push_str("<h2 id=\"methods\">Methods</h2><dl class=\"methods\">");
    let mut item = |k: &str, v: &[String]| {
        let lines: Vec<String> = v.iter().map(|l| esc(l)).collect();
        let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), lines.join("<br>"));
    };
    match &m.profile {
        Some(p) => {
            let mut lines = vec![format!(
                "{} ({}; {})",
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
            )];
            lines.extend(p.note.clone());
            lines.extend(p.tmax_from.as_ref().map(|t| t.describe(m.q_max)));
            item("Profile", &lines);
        }
        None => item("Profile", &["none".into()]),
    }
    if let Some(h) = &m.hint {
        item("Note", std::slice::from_ref(h));
    }
    item(
        "Overhead",
        &["sum over calls of max(0, t - tmax), from the recorded histograms (1 % buckets)".into()],
    );
    item("Significance", &[crate::prose::significance(m)]);
    item("Wait states", &[crate::prose::wait_states(m, bytes)]);
    if m.lookups.entries > 0 || m.profile.is_some() {
        item("Lookups", &[crate::prose::lookups(&m.lookups)]);
    }
    item("Timer", &[crate::prose::timer(&m.timer)]);
    item("Tool cost", &[crate::prose::tool_cost(&m.tool)]);
    if m.folded_keys > 0 {
        item(
            "Folded",
            &[format!(
                "{} keys, {} calls over the interposer's key cap (shown as `other`)",
                count(m.folded_keys),
                count(m.folded_calls)
            )],
        );
    }
    item(
        "Call sites",
        &[format!("caller depth {} (MPIOVER_DEPTH)", m.depth)],
    );
    if let Some(b) = &m.bounded_detail {
        item("Per rank", &[b.describe()]);
    }
    if !c.r.regions.is_empty() {
        item("Root causes", &[crate::prose::root_cause_rule()]);
    }
    o.push_str("</dl>\n");
}

#[cfg(test)]
mod tests {
    use crate::export::fixture::fixture_report;
    use crate::export::ExportOptions;

    /// Every line of the text report's METHODS, its label and its words,
    /// is in the HTML's Methods.
    #[test]
    fn methods_say_what_the_text_says() {
        let mut r = fixture_report();
        r.methods.hint = Some("a hint <of> the tool's".into());
        let opts = ExportOptions::default();
        let text = String::from_utf8(crate::export::text::export(&r, &opts)).unwrap();
        let html = String::from_utf8(super::super::export(&r, &opts)).unwrap();
        let html = &html[html.find("id=\"methods\"").expect("a Methods section")..];
        let block: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("METHODS"))
            .skip(1)
            .take_while(|l| !l.trim().is_empty())
            .collect();
        assert!(block.len() >= 8, "{text}");
        assert!(block.iter().any(|l| l.contains("Root causes")), "{text}");
        for line in block {
            let line = line.trim();
            // "Label  words": the label is a <dt>, the words in a <dd>; a
            // line of words alone continues the item above.
            const LABELS: [&str; 11] = [
                "Profile",
                "Note",
                "Overhead",
                "Significance",
                "Wait states",
                "Lookups",
                "Timer",
                "Tool cost",
                "Folded",
                "Call sites",
                "Root causes",
            ];
            let (label, words) = LABELS
                .iter()
                .find_map(|l| Some((*l, line.strip_prefix(l)?.strip_prefix(' ')?.trim())))
                .unwrap_or(("", line));
            if !label.is_empty() {
                assert!(
                    html.contains(&format!("<dt>{}</dt>", super::esc(label))),
                    "label {label:?} missing in\n{html}"
                );
            }
            assert!(
                html.contains(&super::esc(words)),
                "{words:?} missing in\n{html}"
            );
        }
    }
}
