//! One exporter per format, each fed a finished [`Report`] and returning the
//! bytes to write (the layout of hyperfine's `src/export/`).

use crate::model::Report;

pub mod csv;
pub mod diff;
pub mod html;
pub mod json;
pub mod prose;
pub mod regions;
pub mod source;
pub mod text;

/// Regions the text and HTML reports list (by load imbalance).
pub const TOP_REGIONS: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Csv,
    Html,
}

impl ReportFormat {
    /// The format a file name asks for, by its extension.
    pub fn from_path(path: &std::path::Path) -> Option<ReportFormat> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "txt" => Some(ReportFormat::Text),
            "json" => Some(ReportFormat::Json),
            "csv" => Some(ReportFormat::Csv),
            "html" | "htm" => Some(ReportFormat::Html),
            _ => None,
        }
    }
}

/// How to export.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Sites to show; `None`: the format's default (20 for text and HTML,
    /// all for JSON and CSV).
    pub top: Option<usize>,
    /// ANSI colour (text only).
    pub color: bool,
}

pub fn export(report: &Report, format: ReportFormat, opts: &ExportOptions) -> Vec<u8> {
    match format {
        ReportFormat::Text => text::export(report, opts),
        ReportFormat::Json => json::export(report, opts),
        ReportFormat::Csv => csv::export(report, opts),
        ReportFormat::Html => html::export(report, opts),
    }
}

/// For each file path, the shortest trailing part (whole path components)
/// that no other path in the set shares: `halo.c`, or `a/util.c` next to
/// `b/util.c`.
pub fn short_paths<'a>(
    paths: impl IntoIterator<Item = &'a str>,
) -> std::collections::HashMap<String, String> {
    let mut all: Vec<&str> = paths.into_iter().collect();
    all.sort_unstable();
    all.dedup();
    let suffix = |p: &str, k: usize| -> String {
        let parts: Vec<&str> = p.split('/').filter(|s| !s.is_empty()).collect();
        let k = k.min(parts.len());
        parts[parts.len() - k..].join("/")
    };
    let mut out = std::collections::HashMap::new();
    for p in &all {
        let mut k = 1;
        loop {
            let s = suffix(p, k);
            let clash = all.iter().any(|q| q != p && (suffix(q, k) == s));
            if !clash || s.len() >= p.trim_start_matches('/').len() {
                out.insert(p.to_string(), s);
                break;
            }
            k += 1;
        }
    }
    out
}

/// The methods line's note on the materiality threshold of significance.
pub(crate) fn negligible(min_share: f64) -> String {
    if min_share > 0.0 {
        format!(
            "; a significant site with overhead below {} of the MPI time is marked negligible",
            crate::units::pct(min_share)
        )
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_paths_are_unique() {
        let m = short_paths(["/a/x/util.c", "/a/y/util.c", "/a/main.c"]);
        assert_eq!(m["/a/x/util.c"], "x/util.c");
        assert_eq!(m["/a/y/util.c"], "y/util.c");
        assert_eq!(m["/a/main.c"], "main.c");
        let m = short_paths(["main.c"]);
        assert_eq!(m["main.c"], "main.c");
    }

    #[test]
    fn formats_from_extensions() {
        use std::path::Path;
        assert_eq!(
            ReportFormat::from_path(Path::new("r.HTML")),
            Some(ReportFormat::Html)
        );
        assert_eq!(
            ReportFormat::from_path(Path::new("r.csv")),
            Some(ReportFormat::Csv)
        );
        assert_eq!(ReportFormat::from_path(Path::new("r")), None);
    }
}
