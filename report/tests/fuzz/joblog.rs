//! Mutations of a job log (`docs/log-format.md`) that know its layout: its
//! length and offset fields set to extremes, and changes inside the
//! compressed payload or the header that are framed again with consistent
//! lengths, so that they reach the MessagePack and JSON readers behind the
//! framing checks.

use mpiover_common::rng::Rng;

use super::{bytes, json};

/// A log taken apart: its version, header JSON, frames, index rows.
#[derive(Clone)]
pub struct Parts {
    version: u32,
    header: Vec<u8>,
    frames: Vec<(u32, Vec<u8>)>,
    /// (rank, frame number) per index row.
    rows: Vec<(u32, usize)>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

impl Parts {
    /// Takes a well-formed log apart (the seed inputs are; panics otherwise).
    pub fn of(log: &[u8]) -> Parts {
        let hlen = u32_at(log, 12) as usize;
        let index_at = u64_at(log, log.len() - 16);
        let mut frames = Vec::new();
        let mut offsets = Vec::new();
        let mut at = 16 + hlen;
        while at < index_at {
            let len = u64_at(log, at + 8);
            offsets.push(at);
            frames.push((u32_at(log, at), log[at + 16..at + 16 + len].to_vec()));
            at += 16 + len;
        }
        let count = u32_at(log, index_at) as usize;
        let rows = (0..count)
            .map(|i| {
                let r = index_at + 4 + 24 * i;
                let off = u64_at(log, r + 8);
                let k = offsets
                    .iter()
                    .position(|&o| o == off)
                    .expect("row at a frame");
                (u32_at(log, r), k)
            })
            .collect();
        Parts {
            version: u32_at(log, 8),
            header: log[16..16 + hlen].to_vec(),
            frames,
            rows,
        }
    }

    /// The file, with every length and offset consistent.
    pub fn build(&self) -> Vec<u8> {
        let mut out = b"MPIOVLOG".to_vec();
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&(self.header.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.header);
        let mut offsets = Vec::new();
        for (rank, p) in &self.frames {
            offsets.push(out.len() as u64);
            out.extend_from_slice(&rank.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&(p.len() as u64).to_le_bytes());
            out.extend_from_slice(p);
        }
        let index_at = out.len() as u64;
        out.extend_from_slice(&(self.rows.len() as u32).to_le_bytes());
        for &(rank, k) in &self.rows {
            let k = k.min(self.frames.len().saturating_sub(1));
            let (off, len) = match self.frames.get(k) {
                Some((_, p)) => (offsets[k], p.len() as u64),
                None => (0, 0),
            };
            out.extend_from_slice(&rank.to_le_bytes());
            out.extend_from_slice(&0u32.to_le_bytes());
            out.extend_from_slice(&off.to_le_bytes());
            out.extend_from_slice(&len.to_le_bytes());
        }
        out.extend_from_slice(&index_at.to_le_bytes());
        out.extend_from_slice(b"MPIOVIDX");
        out
    }

    /// Where the length and offset fields are in the built file, with
    /// their widths.
    fn fields(&self) -> Vec<(usize, usize)> {
        let mut f = vec![(12, 4)];
        let mut at = 16 + self.header.len();
        for (_, p) in &self.frames {
            f.push((at + 8, 8));
            at += 16 + p.len();
        }
        f.push((at, 4));
        for i in 0..self.rows.len() {
            let r = at + 4 + 24 * i;
            f.extend([(r, 4), (r + 8, 8), (r + 16, 8)]);
        }
        f.push((at + 4 + 24 * self.rows.len(), 8));
        f
    }
}

/// MessagePack markers followed by a length (bin, str, array, map, ext):
/// the byte and the width of its length.
const LENGTH_MARKERS: &[(u8, usize)] = &[
    (0xc4, 1),
    (0xc5, 2),
    (0xc6, 4),
    (0xd9, 1),
    (0xda, 2),
    (0xdb, 4),
    (0xdc, 2),
    (0xdd, 4),
    (0xde, 2),
    (0xdf, 4),
];

/// A MessagePack length (of a byte string, string, array or map) set to
/// its largest value: the decoder must not believe it before the bytes are
/// there.
fn huge_length(rng: &mut Rng, packed: &mut [u8]) {
    let at: Vec<usize> = (0..packed.len())
        .filter(|&i| LENGTH_MARKERS.iter().any(|m| m.0 == packed[i]))
        .collect();
    if at.is_empty() {
        return;
    }
    let i = at[rng.below(at.len())];
    let w = LENGTH_MARKERS.iter().find(|m| m.0 == packed[i]).unwrap().1;
    let end = (i + 1 + w).min(packed.len());
    let big = [0xffu8, 0xff, 0xff, 0xff, 0x7f];
    let k = rng.below(2);
    packed[i + 1..end].copy_from_slice(&big[k..k + end - i - 1]);
}

/// One layout-aware change of a log.
pub fn mutate(rng: &mut Rng, seed: &Parts, keys: &[Vec<u8>], other: &[u8]) -> Vec<u8> {
    let mut p = seed.clone();
    match rng.below(6) {
        0 | 1 => {
            // A length or offset field pointing anywhere, past the end
            // included.
            let mut out = p.build();
            let fields = p.fields();
            let (at, w) = fields[rng.below(fields.len())];
            let n = out.len() as u64;
            let v: u64 = [
                0,
                1,
                n - 1,
                n,
                n + 1,
                u32::MAX as u64,
                u64::MAX,
                u64::MAX / 2,
                1 << 31,
                rng.next_u64() % (2 * n),
            ][rng.below(10)];
            out[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
            return out;
        }
        2 | 3 if !p.frames.is_empty() => {
            // Inside the payload, compressed again so that the change
            // reaches the decoder.
            let k = rng.below(p.frames.len());
            let mut packed = zstd::stream::decode_all(p.frames[k].1.as_slice()).unwrap();
            for _ in 0..1 + rng.below(3) {
                match rng.below(3) {
                    0 => huge_length(rng, &mut packed),
                    _ => bytes::mutate(rng, &mut packed, other),
                }
            }
            p.frames[k].1 = zstd::bulk::compress(&packed, 1).unwrap();
        }
        4 => {
            let v: serde_json::Value = serde_json::from_slice(&p.header).unwrap();
            let mut j = json::J::from_value(&v);
            let donor = j.clone();
            json::mutate(rng, &mut j, keys, &donor);
            p.header.clear();
            j.write(&mut p.header);
        }
        _ => {
            // The index: a row lost, doubled, or given another rank.
            if p.rows.is_empty() {
                p.rows.push((0, 0));
            }
            let i = rng.below(p.rows.len());
            match rng.below(4) {
                0 => {
                    p.rows.remove(i);
                }
                1 => p.rows.insert(i, p.rows[i]),
                2 => p.rows[i].0 = [1, 2, 7, u32::MAX][rng.below(4)],
                _ => p.version = [1, 2, 3, 0][rng.below(4)],
            }
        }
    }
    p.build()
}
