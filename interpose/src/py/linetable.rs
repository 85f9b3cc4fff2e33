//! The line of an instruction from a CPython 3.11 code object's location
//! table (`co_linetable`), decoded without the interpreter.
//!
//! The format (CPython's `Objects/locations.md`): a sequence of entries, each
//! starting with a byte whose bit 7 is set; bits 3-6 are the entry's kind,
//! bits 0-2 the number of code units it covers minus one. The line is kept
//! as a running value, starting at `co_firstlineno`:
//!
//! | kind | line | bytes after the first |
//! |---|---|---|
//! | 0-9 (short form) | unchanged | 1 (columns) |
//! | 10, 11, 12 (one-line form) | + kind - 10 | 2 (columns) |
//! | 13 (no columns) | + signed varint | the varint |
//! | 14 (long form) | + signed varint | the varint, then end-line delta, start and end column (varints) |
//! | 15 (no location) | unchanged; the instructions have no line | none |
//!
//! A varint is little-endian 6-bit chunks, bit 6 set on every chunk but the
//! last; a signed varint is an unsigned one whose bit 0 is the sign (set:
//! negative) and the rest the magnitude. Bytes after the first never have
//! bit 7 set, so an entry ends at the next byte that has it.

/// Reads an unsigned varint at `*i`, advancing it.
fn varint(t: &[u8], i: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    let mut shift = 0u32;
    loop {
        let b = *t.get(*i)?;
        *i += 1;
        v |= ((b & 63) as u64) << shift;
        if b & 64 == 0 {
            return Some(v);
        }
        shift += 6;
        if shift > 60 {
            return None;
        }
    }
}

/// Reads a signed varint at `*i`, advancing it.
fn svarint(t: &[u8], i: &mut usize) -> Option<i64> {
    let u = varint(t, i)?;
    let m = (u >> 1) as i64;
    Some(if u & 1 != 0 { -m } else { m })
}

/// The source line of the instruction at byte offset `addr` of the code
/// (code units are 2 bytes), or `None` when the table says it has none or
/// the table is malformed or too short.
pub fn line_at(table: &[u8], firstlineno: i64, addr: usize) -> Option<u32> {
    let mut line = firstlineno;
    let mut start = 0usize;
    let mut i = 0usize;
    while let Some(&b) = table.get(i) {
        if b & 0x80 == 0 {
            return None;
        }
        let kind = (b >> 3) & 15;
        let end = start + ((b & 7) as usize + 1) * 2;
        i += 1;
        let delta = match kind {
            13 | 14 => {
                let mut j = i;
                svarint(table, &mut j)?
            }
            10..=12 => kind as i64 - 10,
            _ => 0,
        };
        line += delta;
        if addr < end {
            return if kind == 15 {
                None
            } else {
                u32::try_from(line).ok()
            };
        }
        start = end;
        while table.get(i).is_some_and(|&c| c & 0x80 == 0) {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kind: u8, units: u8) -> u8 {
        0x80 | (kind << 3) | (units - 1)
    }

    #[test]
    fn varints_decode_chunks_and_sign() {
        let mut i = 0;
        assert_eq!(varint(&[5], &mut i), Some(5));
        // 70 = 6 + (1 << 6): chunk 6 with continuation, then 1.
        let mut i = 0;
        assert_eq!(varint(&[64 | 6, 1], &mut i), Some(70));
        assert_eq!(i, 2);
        let mut i = 0;
        assert_eq!(svarint(&[7], &mut i), Some(-3));
        let mut i = 0;
        assert_eq!(svarint(&[6], &mut i), Some(3));
        let mut i = 0;
        assert_eq!(varint(&[64], &mut i), None, "truncated");
    }

    #[test]
    fn each_entry_kind_moves_the_line_as_specified() {
        let t = [
            // 1 unit, short form: line 10.
            entry(3, 1),
            0x12,
            // 2 units, one-line form +2: line 12.
            entry(12, 2),
            4,
            9,
            // 1 unit, no columns, delta -5 (svarint 11): line 7.
            entry(13, 1),
            11,
            // 3 units, long form, delta +20 (svarint 40): line 27; end-line
            // delta 0, columns 1 and 70 (two chunks).
            entry(14, 3),
            40,
            0,
            1,
            64 | 6,
            1,
            // 1 unit, no location.
            entry(15, 1),
            // 1 unit, one-line form +0: line 27.
            entry(10, 1),
            0,
            3,
        ];
        let lines: Vec<Option<u32>> = (0..10).map(|u| line_at(&t, 10, u * 2)).collect();
        assert_eq!(
            lines,
            vec![
                Some(10),
                Some(12),
                Some(12),
                Some(7),
                Some(27),
                Some(27),
                Some(27),
                None,
                Some(27),
                None
            ]
        );
        // The odd byte of a code unit is the same instruction.
        assert_eq!(line_at(&t, 10, 3), Some(12));
    }

    #[test]
    fn malformed_tables_give_no_line() {
        assert_eq!(line_at(&[], 1, 0), None);
        assert_eq!(line_at(&[0x12], 1, 0), None, "no entry start");
        assert_eq!(line_at(&[entry(13, 1)], 1, 0), None, "truncated varint");
        assert_eq!(
            line_at(&[entry(13, 1), 11], 1, 0),
            None,
            "a line below 0 is no line"
        );
    }

    /// Every instruction of every code object of a few standard-library
    /// modules, as the installed CPython 3.11 itself locates them
    /// (`co_lines()`), against this decoder; skipped without a 3.11 `python3`.
    #[test]
    fn lines_agree_with_the_interpreter() {
        const SCRIPT: &str = r#"
import sys, types, inspect, json, argparse, dataclasses
if sys.version_info[:2] != (3, 11):
    print("skip"); sys.exit(0)
def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)
for m in (inspect, json.decoder, argparse, dataclasses):
    src = open(m.__file__).read()
    for co in walk(compile(src, m.__file__, "exec")):
        lines = [-1] * (len(co.co_code) // 2)
        for start, end, line in co.co_lines():
            for u in range(start // 2, end // 2):
                lines[u] = -1 if line is None else line
        print(co.co_firstlineno, co.co_linetable.hex(), ",".join(map(str, lines)))
"#;
        let Ok(out) = std::process::Command::new("python3")
            .args(["-c", SCRIPT])
            .output()
        else {
            eprintln!("no python3: not checked");
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || text.trim() == "skip" {
            eprintln!("python3 is not 3.11: not checked");
            return;
        }
        let (mut codes, mut units) = (0, 0);
        for l in text.lines() {
            let mut f = l.split(' ');
            let first: i64 = f.next().and_then(|x| x.parse().ok()).expect("first line");
            let hex = f.next().expect("table");
            let table: Vec<u8> = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
                .collect();
            let want: Vec<i64> = f
                .next()
                .unwrap_or("")
                .split(',')
                .filter(|x| !x.is_empty())
                .map(|x| x.parse().expect("line"))
                .collect();
            for (u, &w) in want.iter().enumerate() {
                let got = line_at(&table, first, u * 2).map_or(-1, i64::from);
                assert_eq!(got, w, "code at line {first}, unit {u}");
            }
            codes += 1;
            units += want.len();
        }
        assert!(codes > 100, "{codes} code objects");
        eprintln!("{codes} code objects, {units} instructions agree");
    }
}
