//! CSV: one row per site, RFC 4180 quoting, times in seconds.

use super::ExportOptions;
use crate::model::Report;

/// The JSON's keys (`docs/report-format.md`). Renamed columns keep their
/// place; their old names follow at the end for one schema version, so that
/// readers by position and readers by name both keep working.
const HEADER: &[&str] = &[
    "position",
    "mpi_function",
    "file",
    "line",
    "function",
    "location",
    "calls",
    "time_s",
    "bytes",
    "overhead_s",
    "tmax_sum_s",
    "exceed_fraction",
    "expected_exceed_fraction",
    "calls_over_tmax",
    "overhead_share_of_mpi",
    "overhead_share_of_app",
    "wait_state",
    "late_ranks",
    "significant",
    "significance",
    "p_value",
    "q_value",
    "min_call_s",
    "max_call_s",
    "ranks",
    "time_min_s",
    "time_median_s",
    "time_max_s",
    "time_min_rank",
    "time_max_rank",
    "overhead_min_s",
    "overhead_median_s",
    "overhead_max_s",
    "worst_rank",
    "function_signature",
    // Deprecated, removed with `mpiover-report/3`.
    "rank",
    "tmax_s",
    "share_of_mpi_time",
    "share_of_app_time",
];

/// `header` and `rows`, quoted as RFC 4180 asks (a field with a comma, a
/// quote, CR or LF in quotes, quotes doubled), one record per line.
pub fn write_rows<R, F>(header: &[&str], rows: impl IntoIterator<Item = R>) -> Vec<u8>
where
    R: IntoIterator<Item = F>,
    F: AsRef<[u8]>,
{
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing to memory cannot fail; a failed row would only be missing.
    let _ = w.write_record(header);
    for r in rows {
        let _ = w.write_record(r);
    }
    w.into_inner().unwrap_or_default()
}

fn opt<T: ToString>(v: &Option<T>) -> String {
    v.as_ref().map(|x| x.to_string()).unwrap_or_default()
}

/// Shortest round-trip form, with an exponent for very small or large values.
fn num(v: f64) -> String {
    format!("{v:?}")
}

fn optn(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

pub fn export(report: &Report, opts: &ExportOptions) -> Vec<u8> {
    let n = opts.top.unwrap_or(usize::MAX);
    let rows = report.sites.iter().take(n).map(|s| {
        let late: Vec<String> = s.late_ranks.iter().map(|r| r.to_string()).collect();
        let pr = &s.per_rank;
        [
            s.position.to_string(),
            s.mpi_function.clone(),
            opt(&s.file),
            opt(&s.line),
            opt(&s.function),
            s.location.clone(),
            s.calls.to_string(),
            num(s.time_s),
            s.bytes.to_string(),
            optn(s.overhead_s),
            optn(s.tmax_sum_s),
            optn(s.exceed_fraction),
            optn(s.expected_exceed_fraction),
            optn(s.calls_over_tmax),
            optn(s.overhead_share_of_mpi),
            optn(s.overhead_share_of_app),
            opt(&s.wait_state),
            late.join(" "),
            s.significant.to_string(),
            s.significance.to_string(),
            optn(s.p_value),
            optn(s.q_value),
            num(s.min_call_s),
            num(s.max_call_s),
            pr.ranks.to_string(),
            num(pr.time_min_s),
            num(pr.time_median_s),
            num(pr.time_max_s),
            pr.time_min_rank.to_string(),
            pr.time_max_rank.to_string(),
            optn(pr.overhead_min_s),
            optn(pr.overhead_median_s),
            optn(pr.overhead_max_s),
            pr.worst_rank.to_string(),
            opt(&s.function_signature),
            s.rank.to_string(),
            optn(s.tmax_s),
            optn(s.share_of_mpi_time),
            optn(s.share_of_app_time),
        ]
    });
    write_rows(HEADER, rows)
}

#[cfg(test)]
mod tests {
    use super::write_rows;

    #[test]
    fn quoting_follows_rfc_4180() {
        let out = write_rows(
            &["a", "b"],
            [
                ["a,b", "say \"x\""],
                ["plain", "two\rlines"],
                ["", "line\nbreak"],
            ],
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "a,b\n\"a,b\",\"say \"\"x\"\"\"\nplain,\"two\rlines\"\n,\"line\nbreak\"\n"
        );
    }
}
