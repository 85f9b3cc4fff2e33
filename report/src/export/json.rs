//! JSON: the [`Report`] as it is (`mpiover-report/2`), pretty-printed.

use super::ExportOptions;
use crate::model::Report;

pub fn export(report: &Report, opts: &ExportOptions) -> Vec<u8> {
    let mut out = match opts.top {
        Some(n) if n < report.sites.len() => {
            let mut r = report.clone();
            r.sites.truncate(n);
            serde_json::to_vec_pretty(&r)
        }
        _ => serde_json::to_vec_pretty(report),
    }
    .expect("a report serializes");
    out.push(b'\n');
    out
}
