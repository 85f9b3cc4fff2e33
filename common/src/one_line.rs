//! Error messages are one line: the `mpiover` command prints each as
//! `mpiover: error: ...`, and scripts and people read one line per error.
//! A message that quotes a damaged file (a string holding a newline, an
//! unknown value serde repeats back) could otherwise span several.

/// `s` with its line breaks and other control characters escaped as Rust
/// writes them (`\n`, `\r`, `\u{1b}`); tabs stay.
pub fn one_line(s: &str) -> String {
    if !s.chars().any(breaks) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match breaks(c) {
            true => out.extend(c.escape_default()),
            false => out.push(c),
        }
    }
    out
}

fn breaks(c: char) -> bool {
    (c.is_control() && c != '\t') || c == '\u{2028}' || c == '\u{2029}'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_are_escaped_and_the_rest_kept() {
        assert_eq!(one_line("a\tb é"), "a\tb é");
        assert_eq!(one_line("x\ny\r\u{1b}"), "x\\ny\\r\\u{1b}");
        assert_eq!(one_line("a\u{2028}b").lines().count(), 1);
    }
}
