//! Byte-level mutations, for every format: what a disk, a network copy or an
//! editor can do to a file without knowing what it holds.

use mpiover_common::rng::Rng;

/// Bytes that matter to the readers: JSON's structure, invalid UTF-8, the
/// extremes of a byte, MessagePack's length markers.
const INTERESTING: &[u8] = &[
    0, 0xff, 0x7f, 0x80, b'"', b'{', b'}', b'[', b']', b',', b':', b'9', b'-', b'.', b'e', b'\\',
    b'\n', 0xc3, 0xe2, 0xf0, 0xc6, 0xdd, 0xdf,
];

/// Text that turns into a number or a token in a JSON or a sample file.
pub const TOKENS: &[&str] = &[
    "NaN",
    "nan",
    "inf",
    "-inf",
    "Infinity",
    "-Infinity",
    "1e308",
    "1e999",
    "-1e999",
    "1e-400",
    "-0",
    "-1",
    "0",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "4294967295",
    "4294967296",
    "2147483648",
    "1.7976931348623157e308",
    "4.9e-324",
    "null",
    "true",
    "\"\"",
    "[]",
    "{}",
    "\"\\ud800\"",
    "0x10",
];

/// One random byte-level change of `data` (`other`: another input of the
/// same format, for splices).
pub fn mutate(rng: &mut Rng, data: &mut Vec<u8>, other: &[u8]) {
    let n = data.len();
    let at = |rng: &mut Rng, n: usize| rng.below(n.max(1));
    match rng.below(11) {
        0 if n > 0 => {
            let i = at(rng, n);
            data[i] ^= 1 << rng.below(8);
        }
        1 if n > 0 => {
            let i = at(rng, n);
            data[i] = INTERESTING[rng.below(INTERESTING.len())];
        }
        2 => {
            // A cut at any length, the empty file included.
            let keep = rng.below(n + 1);
            data.truncate(keep);
        }
        3 if n > 0 => {
            let i = at(rng, n);
            let len = 1 + rng.below((n - i).min(256));
            data.drain(i..i + len);
        }
        4 if n > 0 => {
            // A chunk duplicated in place (a repeated write).
            let i = at(rng, n);
            let len = 1 + rng.below((n - i).min(512));
            let chunk = data[i..i + len].to_vec();
            let j = at(rng, n);
            data.splice(j..j, chunk);
        }
        5 => {
            // This input's head on another's tail (two files written over
            // one another).
            let i = rng.below(n + 1);
            let j = rng.below(other.len() + 1);
            data.truncate(i);
            data.extend_from_slice(&other[j..]);
        }
        6 => {
            let i = rng.below(n + 1);
            let tok = TOKENS[rng.below(TOKENS.len())].as_bytes();
            // Replace a run of digits or characters with the token.
            let len = rng.below(8).min(n - i);
            data.splice(i..i + len, tok.iter().copied());
        }
        7 => {
            // Deep nesting or a long run of one byte.
            let i = rng.below(n + 1);
            let b = [b'[', b'{', b'"', b'9', 0][rng.below(5)];
            let len = 1 << rng.below(17);
            data.splice(i..i, vec![b; len]);
        }
        8 if n >= 4 => {
            // A little-endian word set to an extreme (lengths, counts).
            let i = rng.below(n - 3);
            let v: u32 = [0, 1, 0x7fff_ffff, 0xffff_ffff, n as u32, n as u32 + 1][rng.below(6)];
            data[i..i + 4].copy_from_slice(&v.to_le_bytes());
        }
        9 => {
            let i = rng.below(n + 1);
            let k = 1 + rng.below(16);
            let junk: Vec<u8> = (0..k).map(|_| rng.next_u64() as u8).collect();
            data.splice(i..i, junk);
        }
        _ if n > 0 => {
            // Invalid UTF-8 in the middle of text.
            let i = at(rng, n);
            data.insert(i, [0xc3, 0x80, 0xfe, 0xed][rng.below(4)]);
        }
        _ => data.push(rng.next_u64() as u8),
    }
}
