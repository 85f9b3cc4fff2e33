//! One exporter per format, each fed a finished [`Report`] and returning the
//! bytes to write (the layout of hyperfine's `src/export/`).

use crate::model::Report;

pub mod csv;
pub mod diff;
#[cfg(test)]
mod fixture;
pub mod html;
pub mod json;
pub mod text;

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

#[cfg(test)]
mod tests {
    use super::ReportFormat;

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
