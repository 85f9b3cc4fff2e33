//! CSV: one row per site, RFC 4180 quoting, times in seconds.

use super::ExportOptions;
use crate::model::Report;

const HEADER: &[&str] = &[
    "rank",
    "mpi_function",
    "file",
    "line",
    "function",
    "location",
    "calls",
    "time_s",
    "bytes",
    "overhead_s",
    "tmax_s",
    "exceed_fraction",
    "expected_exceed_fraction",
    "calls_over_tmax",
    "share_of_mpi_time",
    "share_of_app_time",
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
];

fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
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
    let mut out = String::new();
    out.push_str(&HEADER.join(","));
    out.push('\n');
    let n = opts.top.unwrap_or(usize::MAX);
    for s in report.sites.iter().take(n) {
        let late: Vec<String> = s.late_ranks.iter().map(|r| r.to_string()).collect();
        let pr = &s.per_rank;
        let row = [
            s.rank.to_string(),
            s.mpi_function.clone(),
            opt(&s.file),
            opt(&s.line),
            opt(&s.function),
            s.location.clone(),
            s.calls.to_string(),
            num(s.time_s),
            s.bytes.to_string(),
            optn(s.overhead_s),
            optn(s.tmax_s),
            optn(s.exceed_fraction),
            optn(s.expected_exceed_fraction),
            optn(s.calls_over_tmax),
            optn(s.share_of_mpi_time),
            optn(s.share_of_app_time),
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
        ];
        let row: Vec<String> = row.iter().map(|f| field(f)).collect();
        out.push_str(&row.join(","));
        out.push('\n');
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    #[test]
    fn quoting() {
        assert_eq!(super::field("a,b"), "\"a,b\"");
        assert_eq!(super::field("say \"x\""), "\"say \"\"x\"\"\"");
        assert_eq!(super::field("plain"), "plain");
    }
}
