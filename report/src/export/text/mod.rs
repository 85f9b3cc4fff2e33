//! Text for the terminal: aligned tables, human units, colour on request.

use std::collections::HashMap;
use std::fmt::Write;

use super::ExportOptions;
use crate::model::{RankedBy, Report, SiteReport};
use crate::prose::paths::{report_files, short_paths};
use crate::units::secs;

mod regions;
mod sections;
mod table;

use regions::*;
use sections::*;
use table::*;

/// What every section needs.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    r: &'a Report,
    st: &'a Style,
    overhead_known: bool,
    /// Sites shown.
    top: usize,
    /// Source paths shortened to what tells them apart.
    shorts: &'a HashMap<String, String>,
}

impl Ctx<'_> {
    /// A site's location with its path shortened.
    fn loc(&self, s: &SiteReport) -> String {
        match (&s.file, s.line) {
            (Some(f), Some(l)) => {
                format!(
                    "{}:{l}",
                    self.shorts.get(f).map_or(f.as_str(), |x| x.as_str())
                )
            }
            (Some(f), None) => self.shorts.get(f).cloned().unwrap_or_else(|| f.clone()),
            _ => s.location.clone(),
        }
    }
}

/// A section's title in bold and, after it, what the section shows. Here
/// beside `Ctx` rather than with the sections, so that the root-cause
/// sections in `regions` and the others in `sections` share it without
/// depending on each other for it.
fn heading(o: &mut String, c: &Ctx, title: &str, what: impl std::fmt::Display) {
    let _ = writeln!(o, "{}  ({what})", c.st.bold(title));
}

fn opt_secs(v: Option<f64>) -> String {
    v.map(secs).unwrap_or_else(|| "-".into())
}

pub fn export(r: &Report, opts: &ExportOptions) -> Vec<u8> {
    let st = Style { on: opts.color };
    let mut o = String::new();
    let shorts = short_paths(report_files(r));
    let c = Ctx {
        r,
        st: &st,
        overhead_known: r.summary.ranked_by == RankedBy::Overhead,
        top: opts.top.unwrap_or(20).min(r.sites.len()),
        shorts: &shorts,
    };
    header(&mut o, &c);
    summary(&mut o, &c);
    sites(&mut o, &c);
    spread(&mut o, &c);
    regions(&mut o, &c);
    ranks(&mut o, &c);
    wait_matrix(&mut o, &c);
    methods(&mut o, &c);
    let _ = st.dim("");
    o.into_bytes()
}

#[cfg(test)]
mod tests {
    use crate::export::fixture::fixture_report;
    use crate::export::ExportOptions;

    /// A slow `MPI_Init_thread` or `MPI_Finalize` is start-up/shut-down, on
    /// a line of its own (the analysis keeps it out of MPI time).
    #[test]
    fn startup_and_shutdown_on_their_own_line() {
        let mut r = fixture_report();
        let text = |r: &crate::model::Report| {
            String::from_utf8(super::export(r, &ExportOptions::default())).unwrap()
        };
        (r.summary.startup_s, r.summary.shutdown_s) = (0.0, 0.0);
        assert!(!text(&r).contains("Start-up/shut-down"));
        r.summary.startup_s = 5.0;
        r.summary.shutdown_s = 0.5;
        let out = text(&r);
        assert!(out.contains("Start-up/shut-down"), "{out}");
    }
}
