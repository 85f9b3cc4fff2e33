//! Aligned tables with optional ANSI colour.

use std::fmt::Write;

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// ANSI styles, or nothing.
pub(crate) struct Style {
    pub(crate) on: bool,
}

impl Style {
    pub(crate) fn wrap(&self, code: &str, s: &str) -> String {
        if self.on && !s.trim().is_empty() {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub(crate) fn bold(&self, s: &str) -> String {
        self.wrap("1", s)
    }
    pub(crate) fn red(&self, s: &str) -> String {
        self.wrap("1;31", s)
    }
    pub(crate) fn dim(&self, s: &str) -> String {
        self.wrap("2", s)
    }
    pub(crate) fn yellow(&self, s: &str) -> String {
        self.wrap("33", s)
    }
}

/// A cell and the style to paint it with after padding.
pub(crate) type Cell = (String, Option<&'static str>);

pub(crate) fn plain(s: impl Into<String>) -> Cell {
    (s.into(), None)
}

pub(crate) struct Table {
    pub(crate) head: Vec<(&'static str, Align)>,
    pub(crate) rows: Vec<Vec<Cell>>,
}

impl Table {
    /// A table with these column headings and no rows. A heading that
    /// starts with `>` is right-aligned (the `>` is dropped: `">>tmax"` is
    /// the right-aligned `>tmax`); any other is left-aligned. One line per
    /// table keeps its columns readable next to the row that fills them.
    pub(crate) fn new(head: &[&'static str]) -> Table {
        let mut t = Table {
            head: Vec::with_capacity(head.len()),
            rows: Vec::new(),
        };
        t.extend_head(head);
        t
    }

    /// Further column headings, spelled as in [`Table::new`].
    pub(crate) fn extend_head(&mut self, head: &[&'static str]) {
        self.head
            .extend(head.iter().map(|h| match h.strip_prefix('>') {
                Some(right) => (right, Align::Right),
                None => (*h, Align::Left),
            }));
    }

    pub(crate) fn render(&self, out: &mut String, st: &Style, indent: &str) {
        let n = self.head.len();
        let mut w = vec![0usize; n];
        for (i, (h, _)) in self.head.iter().enumerate() {
            w[i] = h.chars().count();
        }
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.0.chars().count());
            }
        }
        let pad = |s: &str, i: usize, a: Align| -> String {
            let fill = w[i].saturating_sub(s.chars().count());
            match a {
                Align::Left => format!("{s}{}", " ".repeat(fill)),
                Align::Right => format!("{}{s}", " ".repeat(fill)),
            }
        };
        let line: Vec<String> = self
            .head
            .iter()
            .enumerate()
            .map(|(i, (h, a))| pad(h, i, *a))
            .collect();
        let _ = writeln!(out, "{indent}{}", st.bold(line.join("  ").trim_end()));
        for r in &self.rows {
            let cells: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, (s, style))| {
                    let p = pad(s, i, self.head[i].1);
                    match style {
                        Some(code) => st.wrap(code, &p),
                        None => p,
                    }
                })
                .collect();
            let _ = writeln!(out, "{indent}{}", cells.join("  ").trim_end());
        }
    }
}

pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let t: String = s.chars().take(max - 3).collect();
        format!("{t}...")
    }
}
