//! Structure-aware mutations of JSON files (records, profiles, a job log's
//! header): a tree that, unlike `serde_json::Value`, can hold a key twice, a
//! number as any text (`NaN`, `1e999`) and a string that is not UTF-8, so
//! that the mutant reaches the reader's checks rather than stopping at the
//! first byte a JSON parser refuses.

use mpiover_common::rng::Rng;

use super::bytes::TOKENS;

#[derive(Debug, Clone)]
pub enum J {
    /// A scalar as its raw text: a number, `true`, `null`, or any token.
    Raw(String),
    Str(Vec<u8>),
    Arr(Vec<J>),
    Obj(Vec<(Vec<u8>, J)>),
}

impl J {
    pub fn from_value(v: &serde_json::Value) -> J {
        use serde_json::Value as V;
        match v {
            V::Null => J::Raw("null".into()),
            V::Bool(b) => J::Raw(b.to_string()),
            V::Number(n) => J::Raw(n.to_string()),
            V::String(s) => J::Str(s.as_bytes().to_vec()),
            V::Array(a) => J::Arr(a.iter().map(J::from_value).collect()),
            V::Object(o) => J::Obj(
                o.iter()
                    .map(|(k, v)| (k.as_bytes().to_vec(), J::from_value(v)))
                    .collect(),
            ),
        }
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        match self {
            J::Raw(s) => out.extend_from_slice(s.as_bytes()),
            J::Str(s) => write_str(s, out),
            J::Arr(a) => {
                out.push(b'[');
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    v.write(out);
                }
                out.push(b']');
            }
            J::Obj(o) => {
                out.push(b'{');
                for (i, (k, v)) in o.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    write_str(k, out);
                    out.push(b':');
                    v.write(out);
                }
                out.push(b'}');
            }
        }
    }

    /// Number of nodes (to pick one uniformly).
    fn size(&self) -> usize {
        1 + match self {
            J::Arr(a) => a.iter().map(J::size).sum(),
            J::Obj(o) => o.iter().map(|(_, v)| v.size()).sum(),
            _ => 0,
        }
    }

    /// The node numbered `i` in pre-order.
    fn nth(&mut self, mut i: usize) -> &mut J {
        self.find(&mut i).expect("a node of the tree")
    }

    /// One walk, counting `i` down (sizing each child first made picking a
    /// node quadratic in the depth).
    fn find(&mut self, i: &mut usize) -> Option<&mut J> {
        if *i == 0 {
            return Some(self);
        }
        *i -= 1;
        match self {
            J::Arr(a) => a.iter_mut().find_map(|c| c.find(i)),
            J::Obj(o) => o.iter_mut().find_map(|(_, c)| c.find(i)),
            _ => None,
        }
    }
}

/// Writes a JSON string; bytes that are not UTF-8 go out raw (which is
/// the point: a reader must refuse them cleanly).
fn write_str(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0..=0x1f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

/// A value of another type than the one expected, or an extreme one.
fn wrong_value(rng: &mut Rng) -> J {
    match rng.below(4) {
        0 => J::Raw(TOKENS[rng.below(TOKENS.len())].into()),
        1 => J::Str(
            [
                &b"x"[..],
                b"",
                b"\xff\xfe",
                b"MPI_Recv",
                b"mpiover-record/1",
            ][rng.below(5)]
            .to_vec(),
        ),
        2 => J::Arr(vec![J::Raw("1".into()); rng.below(4)]),
        _ => J::Obj(Vec::new()),
    }
}

/// One structural change of `root`; `keys` are the keys seen in the
/// format's inputs (a renamed key is often another real one).
pub fn mutate(rng: &mut Rng, root: &mut J, keys: &[Vec<u8>], donor: &J) {
    let n = root.size();
    // Copies and wrappers multiply: stacked, they made a 466 MB mutant of
    // a 5 KiB record. Past this many nodes a mutant only changes values.
    let grow = n < 50_000;
    let node = root.nth(rng.below(n));
    match rng.below(10) {
        0 => *node = wrong_value(rng),
        1 if grow => {
            // Wrapped in many arrays or objects: the readers' nesting limit.
            let depth = 1 << rng.below(12);
            let mut v = std::mem::replace(node, J::Raw("null".into()));
            for _ in 0..depth {
                v = match rng.below(2) {
                    0 => J::Arr(vec![v]),
                    _ => J::Obj(vec![(b"x".to_vec(), v)]),
                };
            }
            *node = v;
        }
        2 => {
            // A subtree of another input (or of this one) put here.
            let m = donor.size();
            let mut d = donor.clone();
            *node = d.nth(rng.below(m)).clone();
        }
        _ => match node {
            J::Obj(o) if !o.is_empty() => {
                let i = rng.below(o.len());
                match rng.below(4) {
                    0 => {
                        o.remove(i);
                    }
                    1 => {
                        // The same key twice, with its value or another.
                        let mut dup = o[i].clone();
                        if rng.below(2) == 0 {
                            dup.1 = wrong_value(rng);
                        }
                        let j = rng.below(o.len() + 1);
                        o.insert(j, dup);
                    }
                    2 if !keys.is_empty() => o[i].0 = keys[rng.below(keys.len())].clone(),
                    _ => o[i].1 = wrong_value(rng),
                }
            }
            J::Arr(a) if !a.is_empty() => {
                let i = rng.below(a.len());
                match rng.below(4) {
                    0 => {
                        a.remove(i);
                    }
                    1 if grow => {
                        // Many copies of one element: size fields that no
                        // longer match, and bounded work on long lists.
                        let copies = 1 << rng.below(10);
                        let v = a[i].clone();
                        a.splice(i..i, vec![v; copies]);
                    }
                    2 => {
                        let j = rng.below(a.len());
                        a.swap(i, j);
                    }
                    _ => a[i] = wrong_value(rng),
                }
            }
            J::Raw(_) => *node = J::Raw(TOKENS[rng.below(TOKENS.len())].into()),
            J::Str(s) => match rng.below(3) {
                0 => s.clear(),
                1 => s.extend_from_slice(b"\xc3"),
                _ => s.extend(vec![b'a'; 1 << rng.below(16)]),
            },
            _ => *node = wrong_value(rng),
        },
    }
}

/// Every key of a tree (for renames).
pub fn keys(j: &J, out: &mut Vec<Vec<u8>>) {
    match j {
        J::Arr(a) => a.iter().for_each(|v| keys(v, out)),
        J::Obj(o) => {
            for (k, v) in o {
                if !out.contains(k) {
                    out.push(k.clone());
                }
                keys(v, out);
            }
        }
        _ => {}
    }
}
