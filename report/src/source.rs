//! Source lines around a site, and of a region between two MPI calls, for
//! the HTML export's detail views.
//!
//! Read by the assembly, not by the exporter: the files are read once, when
//! the report is made (the report carries the lines), so that an exporter is
//! a function of the finished report alone.

use crate::model::{Excerpt, RegionEndReport, RegionRef, Source};

/// A region this long or shorter (lines, both ends included) is shown whole.
const REGION_LINES: u32 = 40;
/// Of a longer region, this many lines are shown at each end.
const REGION_EDGE: u32 = 18;
/// Lines shown either side of an end when a region is not one stretch of a
/// file (its ends in two files, or a loop's back edge).
const AROUND_END: u32 = 3;

/// The lines of `path` within `ranges` (inclusive, 1-based), if the file
/// is readable and small; each line cut at 200 characters.
fn read_lines(path: &str, ranges: &[(u32, u32)]) -> Option<Vec<(u32, String)>> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 16 << 20 {
        return None;
    }
    let text = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&text);
    Some(
        text.lines()
            .enumerate()
            .map(|(i, l)| (i as u32 + 1, l))
            .filter(|(n, _)| ranges.iter().any(|&(lo, hi)| *n >= lo && *n <= hi))
            .map(|(n, l)| (n, l.chars().take(200).collect()))
            .collect(),
    )
}

/// `context` lines either side of `line` of `path`, if readable and small.
pub fn read_source(path: &str, line: u32, context: u32) -> Option<Source> {
    let lo = line.saturating_sub(context).max(1);
    let lines = read_lines(path, &[(lo, line + context)])?;
    if !lines.iter().any(|(n, _)| *n == line) {
        return None;
    }
    Some(Source {
        path: path.to_string(),
        lines,
        highlight: line,
    })
}

/// `ranges` of `path` with `marks` marked, if every mark is in the file.
fn excerpt(path: &str, ranges: &[(u32, u32)], marks: &[u32]) -> Option<Excerpt> {
    let lines = read_lines(path, ranges)?;
    if !marks.iter().all(|m| lines.iter().any(|(n, _)| n == m)) {
        return None;
    }
    Some(Excerpt {
        path: path.to_string(),
        lines,
        marks: marks.to_vec(),
    })
}

fn around(line: u32) -> (u32, u32) {
    (line.saturating_sub(AROUND_END).max(1), line + AROUND_END)
}

/// The source of a region: when both ends are in one function with the
/// closing call below the opening one, the lines from one to the other (of
/// a long region its first and last lines); otherwise a few lines around
/// each end, the opening one first, or one stretch when they touch. Empty
/// when no end's file is readable here.
pub fn read_region(region: &RegionRef) -> Vec<Excerpt> {
    fn end(e: &RegionEndReport) -> Option<(&str, u32)> {
        Some((e.file.as_deref()?, e.line?))
    }
    let (from, to) = (end(&region.from), end(&region.to));
    if let (Some((f, a)), Some((g, b))) = (from, to) {
        if f == g && a < b && region.function().is_some() {
            let ranges = if b - a < REGION_LINES {
                vec![(a, b)]
            } else {
                vec![(a, a + REGION_EDGE - 1), (b + 1 - REGION_EDGE, b)]
            };
            return excerpt(f, &ranges, &[a, b]).into_iter().collect();
        }
        let (x, y) = (around(a), around(b));
        if f == g && x.0.max(y.0) <= x.1.min(y.1) + 1 {
            // A loop's back edge, or ends a few lines apart: one stretch.
            let marks: Vec<u32> = if a == b { vec![a] } else { vec![a, b] };
            return excerpt(f, &[(x.0.min(y.0), x.1.max(y.1))], &marks)
                .into_iter()
                .collect();
        }
    }
    [from, to]
        .into_iter()
        .flatten()
        .filter_map(|(f, l)| excerpt(f, &[around(l)], &[l]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::read_source;

    #[test]
    fn source_lines_around_a_site() {
        let p = std::env::temp_dir().join(format!("mpiover-src-{}.c", std::process::id()));
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let s = read_source(p.to_str().unwrap(), 10, 2).unwrap();
        assert_eq!(
            s.lines.iter().map(|l| l.0).collect::<Vec<_>>(),
            vec![8, 9, 10, 11, 12]
        );
        assert_eq!(s.lines[2].1, "line 10");
        assert!(read_source(p.to_str().unwrap(), 99, 2).is_none());
        assert!(read_source("/nonexistent/x.c", 1, 2).is_none());
        let _ = std::fs::remove_file(p);
    }

    fn end(file: &str, line: u32, function: &str) -> crate::model::RegionEndReport {
        crate::model::RegionEndReport {
            file: Some(file.into()),
            line: Some(line),
            function: Some(function.into()),
            mpi_function: "MPI_Send".into(),
            location: format!("{file}:{line}"),
        }
    }

    fn numbers(e: &crate::model::Excerpt) -> Vec<u32> {
        e.lines.iter().map(|l| l.0).collect()
    }

    #[test]
    fn source_lines_of_a_region() {
        use crate::model::RegionRef;
        let p = std::env::temp_dir().join(format!("mpiover-region-{}.c", std::process::id()));
        let text: String = (1..=200).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let f = p.to_str().unwrap();
        let region = |a, fa, b, fb| RegionRef {
            from: end(f, a, fa),
            to: end(f, b, fb),
        };
        // One function, downwards: the lines between, both ends marked.
        let e = super::read_region(&region(10, "f", 14, "f"));
        assert_eq!(e.len(), 1);
        assert_eq!(numbers(&e[0]), vec![10, 11, 12, 13, 14]);
        assert_eq!(e[0].marks, vec![10, 14]);
        // A long region: its first and last lines.
        let e = super::read_region(&region(10, "f", 110, "f"));
        assert_eq!(e[0].lines.len(), 36);
        assert_eq!((e[0].lines[17].0, e[0].lines[18].0), (27, 93));
        // A back edge a few lines up: one stretch around both ends.
        let e = super::read_region(&region(40, "f", 35, "f"));
        assert_eq!(numbers(&e[0]), (32..=43).collect::<Vec<_>>());
        // Far apart, or in two functions: around each end, the opening one
        // first.
        let e = super::read_region(&region(150, "f", 20, "f"));
        assert_eq!(numbers(&e[0]), (147..=153).collect::<Vec<_>>());
        assert_eq!(numbers(&e[1]), (17..=23).collect::<Vec<_>>());
        let e = super::read_region(&region(20, "f", 150, "main"));
        assert_eq!((e.len(), e[0].marks.clone()), (2, vec![20]));
        // Unreadable ends give nothing.
        let mut r = region(20, "f", 30, "f");
        r.from.file = Some("/nonexistent/x.c".into());
        r.to.file = Some("/nonexistent/x.c".into());
        assert!(super::read_region(&r).is_empty());
        let _ = std::fs::remove_file(p);
    }
}
