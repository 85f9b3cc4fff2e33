//! Text for the terminal: aligned tables, human units, colour on request.

use std::collections::HashMap;
use std::fmt::Write;

use super::{short_paths, ExportOptions};
use crate::model::{Metric, ProfileSource, RankedBy, Report, Significance, SiteReport, WaitState};
use crate::units::{bytes, count, pct, secs};

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

fn opt_secs(v: Option<f64>) -> String {
    v.map(secs).unwrap_or_else(|| "-".into())
}

pub fn export(r: &Report, opts: &ExportOptions) -> Vec<u8> {
    let st = Style { on: opts.color };
    let mut o = String::new();
    let shorts = short_paths(super::regions::report_files(r));
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
