//! Source lines around a site, for the HTML export's detail view.

use crate::model::Source;

/// `context` lines either side of `line` of `path`, if readable and small.
pub fn read_source(path: &str, line: u32, context: u32) -> Option<Source> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 16 << 20 {
        return None;
    }
    let text = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&text);
    let lo = line.saturating_sub(context).max(1);
    let hi = line + context;
    let lines: Vec<(u32, String)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u32 + 1, l))
        .filter(|(n, _)| *n >= lo && *n <= hi)
        .map(|(n, l)| (n, l.chars().take(200).collect()))
        .collect();
    if !lines.iter().any(|(n, _)| *n == line) {
        return None;
    }
    Some(Source {
        path: path.to_string(),
        lines,
        highlight: line,
    })
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
}
