//! HTML: one self-contained file (inline CSS, SVG and a little JS; nothing
//! fetched from the network) with the summary, a bar chart of the top sites,
//! a per-rank heat map, the wait matrix, for each top site the distribution
//! of its call times against tmax, its source lines and its root causes, and
//! the regions between MPI calls by load imbalance with their source.

use std::fmt::Write;

use super::ExportOptions;
use crate::model::{RankedBy, Report, SiteReport};
use crate::prose::paths::{report_files, short_paths};

mod charts;
mod dist;
mod methods;
mod regions;
mod sites;
mod style;
mod summary;

use charts::*;
use methods::*;
use regions::*;
use sites::*;
use style::*;
use summary::*;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// White to dark red for t in [0, 1].
fn heat(t: f64) -> String {
    let t = if t.is_finite() {
        t.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let (a, b) = ((255.0, 245.0, 240.0), (165.0, 15.0, 21.0));
    let m = |x: f64, y: f64| (x + (y - x) * t).round() as u8;
    format!("#{:02x}{:02x}{:02x}", m(a.0, b.0), m(a.1, b.1), m(a.2, b.2))
}

struct Ctx<'a> {
    r: &'a Report,
    ovh: bool,
    shorts: std::collections::HashMap<String, String>,
}

impl Ctx<'_> {
    fn loc(&self, s: &SiteReport) -> String {
        match (&s.file, s.line) {
            (Some(f), Some(l)) => format!(
                "{}:{l}",
                self.shorts.get(f).map_or(f.as_str(), |x| x.as_str())
            ),
            (Some(f), None) => self.shorts.get(f).cloned().unwrap_or_else(|| f.clone()),
            _ => s.location.clone(),
        }
    }
    fn value(&self, s: &SiteReport) -> f64 {
        if self.ovh {
            s.overhead_s.unwrap_or(0.0)
        } else {
            s.time_s
        }
    }
}

pub fn export(r: &Report, opts: &ExportOptions) -> Vec<u8> {
    let c = Ctx {
        r,
        ovh: r.summary.ranked_by == RankedBy::Overhead,
        shorts: short_paths(report_files(r)),
    };
    let top = opts.top.unwrap_or(20).min(r.sites.len());
    let mut o = String::new();
    let title = format!(
        "mpiover report: {}",
        r.run.command.first().map(String::as_str).unwrap_or("run")
    );
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{}</title><style>{CSS}</style></head><body><main>\n",
        esc(&title)
    );
    nav(&mut o, &c, top);
    header(&mut o, &c);
    summary(&mut o, &c);
    bar_chart(&mut o, &c, top.min(15));
    sites_table(&mut o, &c, top);
    heatmap(&mut o, &c);
    wait_matrix(&mut o, &c);
    site_details(&mut o, &c, top.min(10));
    regions_section(&mut o, &c);
    ranks_table(&mut o, &c);
    methods(&mut o, &c);
    let _ = write!(o, "<script>{JS}</script>\n</main></body></html>\n");
    o.into_bytes()
}

/// A bar that stays at the top of the window with a link to every section
/// the page has: the page is long (a site's details, the regions), and the
/// ranks and methods are at its end.
fn nav(o: &mut String, c: &Ctx, top: usize) {
    let r = c.r;
    let sections = [
        ("summary", "Summary", true),
        ("bars", "Top sites", true),
        ("sites", "Sites", true),
        ("heatmap", "Per rank", r.detail.heatmap.is_some()),
        ("wait-matrix", "Who waited on whom", true),
        ("details", "Details", top.min(10) > 0),
        ("regions", "Regions", !r.regions.is_empty()),
        ("ranks", "Ranks", true),
        ("methods", "Methods", true),
    ];
    o.push_str("<nav class=\"toc\" id=\"toc\"><span class=\"t\">mpiover</span>");
    for (id, name, _) in sections.iter().filter(|s| s.2) {
        let _ = write!(o, "<a href=\"#{id}\">{name}</a>");
    }
    o.push_str("</nav>\n");
}

fn header(o: &mut String, c: &Ctx) {
    let r = c.r;
    let _ = write!(
        o,
        "<h1>Where does <code>{}</code> waste time in MPI?</h1>\n<p class=\"meta\">Run <code>{}</code> \
         &middot; {} &middot; {} on {} host{} &middot; {}</p>\n",
        esc(&r.run.command.join(" ")),
        esc(&r.run.dir),
        esc(mpiover_common::host::library_headline(&r.run.mpi_library)
            .split(',')
            .next()
            .unwrap_or("")),
        if r.run.ranks_present == r.run.ranks {
            format!("{} ranks", r.run.ranks)
        } else {
            format!("{} of {} ranks", r.run.ranks_present, r.run.ranks)
        },
        r.run.hosts.len(),
        if r.run.hosts.len() == 1 { "" } else { "s" },
        esc(&r.generator)
    );
    for w in &r.warnings {
        let _ = writeln!(o, "<div class=\"warn\">{}</div>", esc(w));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn escapes_and_colours() {
        assert_eq!(
            super::esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(super::heat(0.0), "#fff5f0");
        assert_eq!(super::heat(1.0), "#a50f15");
    }
}
