//! Regions in the HTML report: the root causes in a site's details, and the
//! Regions section, a table of load imbalance with each region's source
//! lines (`docs/method.md`, "Root causes").

use std::fmt::Write;

use super::{esc, Ctx};
use crate::model::{Excerpt, RegionRef, SiteReport, TOP_REGIONS};
use crate::prose::regions::{cause, function, label};
use crate::units::{count, secs};

/// The index into `Report::regions` of `g` when its source lines are shown.
fn with_source(c: &Ctx, g: &RegionRef) -> Option<usize> {
    let i = c.r.regions.iter().position(|x| &x.region == g)?;
    c.r.detail
        .regions
        .get(i)
        .is_some_and(|e| !e.is_empty())
        .then_some(i)
}

/// Under a significant site with a wait state: why its late ranks were
/// late, each root cause linked to its region's source.
pub(crate) fn root_causes(o: &mut String, c: &Ctx, s: &SiteReport) {
    let Some(causes) = s.root_causes.as_ref().filter(|_| s.significant) else {
        return;
    };
    if causes.is_empty() {
        if !c.r.regions.is_empty() && !s.late_ranks.is_empty() {
            o.push_str(
                "<p class=\"meta\">Root cause: none stands out (no region of the late ranks took \
                 clearly longer than the waiting ranks').</p>",
            );
        }
        return;
    }
    o.push_str("<p class=\"meta\">Root causes:</p><ul class=\"causes\">");
    for rc in causes {
        let text = esc(&cause(rc, &c.shorts));
        match with_source(c, &rc.region) {
            Some(i) => {
                let _ = write!(o, "<li>{text} (<a href=\"#region-{i}\">source</a>)</li>");
            }
            None => {
                let _ = write!(o, "<li>{text}</li>");
            }
        }
    }
    o.push_str("</ul>");
}

/// One excerpt, the region's ends marked, an elision where lines are left
/// out.
fn excerpt(o: &mut String, e: &Excerpt) {
    let _ = write!(o, "<pre class=\"src\" title=\"{}\">", esc(&e.path));
    let mut last: Option<u32> = None;
    for (ln, text) in &e.lines {
        if last.is_some_and(|l| *ln > l + 1) {
            o.push_str("<span class=\"gap\">    ...</span>");
        }
        last = Some(*ln);
        let line = format!("{ln:>5}  {}", esc(text));
        if e.marks.contains(ln) {
            let _ = write!(o, "<span class=\"hl\">{line}</span>");
        } else {
            let _ = writeln!(o, "{line}");
        }
    }
    o.push_str("</pre>");
}

/// The table of regions by load imbalance, then the source of those shown
/// and of those the sites name as root causes.
pub(crate) fn regions_section(o: &mut String, c: &Ctx) {
    let r = c.r;
    if r.regions.is_empty() {
        return;
    }
    let n = TOP_REGIONS.min(r.regions.len());
    let _ = write!(
        o,
        "<h2 id=\"regions\">Regions <span class=\"meta\">(the code between two MPI calls, by \
         imbalance: the slowest rank's time minus the median rank's; {n} of {}; click a header \
         to sort)</span></h2>\n<div class=\"scroll\"><table class=\"sortable\"><thead><tr>\
         <th>Region</th><th>Function</th><th class=\"n\">Ranks</th><th class=\"n\">Passes</th>\
         <th class=\"n\">Max</th><th class=\"n\">Median</th><th class=\"n\">Min</th>\
         <th class=\"n\">Max rank</th><th class=\"n\">Imbalance</th></tr></thead><tbody>",
        r.regions.len()
    );
    for (i, g) in r.regions.iter().take(n).enumerate() {
        let name = esc(&label(&g.region, &c.shorts));
        let name = match with_source(c, &g.region) {
            Some(_) => format!("<a href=\"#region-{i}\">{name}</a>"),
            None => name,
        };
        let _ = write!(
            o,
            "<tr><td>{name}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\" data-v=\"{}\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\" data-v=\"{}\">{}</td></tr>",
            esc(&function(&g.region)),
            g.ranks,
            g.passes,
            count(g.passes),
            g.max_s,
            secs(g.max_s),
            g.median_s,
            secs(g.median_s),
            g.min_s,
            secs(g.min_s),
            g.max_rank,
            g.imbalance_s,
            secs(g.imbalance_s)
        );
    }
    o.push_str("</tbody></table></div>\n");
    let shown: Vec<usize> = (0..r.regions.len())
        .filter(|&i| r.detail.regions.get(i).is_some_and(|e| !e.is_empty()))
        .collect();
    if shown.is_empty() {
        return;
    }
    o.push_str(
        "<p class=\"meta\">Each region's source: the MPI calls that open and close it are \
         marked, the region is the code between them.</p>\n",
    );
    for i in shown {
        let g = &r.regions[i];
        let _ = write!(
            o,
            "<div class=\"region\" id=\"region-{i}\"><h3>{}</h3><p class=\"meta\">in <code>{}</code>; \
             {} rank{}, {} passes; slowest rank {}: {}, median {}</p>",
            esc(&label(&g.region, &c.shorts)),
            esc(&function(&g.region)),
            g.ranks,
            if g.ranks == 1 { "" } else { "s" },
            count(g.passes),
            g.max_rank,
            secs(g.max_s),
            secs(g.median_s)
        );
        for e in &r.detail.regions[i] {
            excerpt(o, e);
        }
        o.push_str("</div>\n");
    }
}

#[cfg(test)]
mod tests {
    use crate::export::fixture::fixture_report;
    use crate::export::ExportOptions;
    use crate::model::Excerpt;

    fn html(r: &crate::model::Report) -> String {
        String::from_utf8(super::super::export(r, &ExportOptions::default())).unwrap()
    }

    #[test]
    fn root_causes_and_regions_are_escaped() {
        let mut r = fixture_report();
        let f = "ns::step<int, 'x'>";
        let g = &mut r.regions[0].region;
        for e in [&mut g.from, &mut g.to] {
            e.function = Some(f.into());
        }
        let cause = &mut r.sites[0].root_causes.as_mut().unwrap()[0];
        cause.region = r.regions[0].region.clone();
        r.detail.regions = vec![vec![Excerpt {
            path: "/home/user/halo/solver.c".into(),
            lines: vec![(80, "bcast(<a>);".into()), (88, "x && y;".into())],
            marks: vec![80, 88],
        }]];
        let out = html(&r);
        assert!(!out.contains("step<int"), "a function name unescaped");
        assert!(
            out.contains("in ns::step&lt;int, &#39;x&#39;&gt;(), 90 % of the site&#39;s overhead")
        );
        assert!(out.contains("<td>ns::step&lt;int, &#39;x&#39;&gt;</td>"));
        // The cause links to the region's source, which marks both ends and
        // elides the lines between.
        assert!(out.contains("(<a href=\"#region-0\">source</a>)"));
        assert!(out.contains(
            "<pre class=\"src\" title=\"/home/user/halo/solver.c\"><span class=\"hl\">   80  \
             bcast(&lt;a&gt;);</span><span class=\"gap\">    ...</span><span class=\"hl\">   88  \
             x &amp;&amp; y;</span></pre>"
        ));
        // Without readable sources: the table, no links.
        r.detail.regions.clear();
        let out = html(&r);
        assert!(out.contains("<h2 id=\"regions\">") && !out.contains("#region-0"));
        r.regions.clear();
        assert!(!html(&r).contains("id=\"regions\""));
    }
}
