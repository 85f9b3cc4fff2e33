//! A quantile sketch of non-negative values (seconds) whose size does not
//! grow with the values added: log-spaced buckets, each counting the values
//! whose logarithm falls in it. Two sketches merge by adding their counts,
//! exactly and in any order, so the ranks of a job can merge theirs up the
//! tree. A quantile is read from the bucket holding the value of that
//! position, which makes its error relative: the value returned is within
//! [`SKETCH_ALPHA`] of the true one (or within [`SKETCH_FLOOR_S`] for values
//! below it, which are counted as zero).

use serde::{Deserialize, Serialize};

use crate::packed_rows;

/// Relative error of a quantile read from a sketch: 0.5 %.
pub const SKETCH_ALPHA: f64 = 0.005;

/// Values at or below this (seconds) are counted as zero.
pub const SKETCH_FLOOR_S: f64 = 1e-12;

/// Bucket i holds the values in (GAMMA^(i-1), GAMMA^i].
const GAMMA: f64 = (1.0 + SKETCH_ALPHA) / (1.0 - SKETCH_ALPHA);

#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sketch {
    /// Values added (the zeros included).
    pub n: u64,
    zeros: u64,
    /// (bucket, count), sorted by bucket, no zero counts.
    #[serde(with = "packed_rows::vec")]
    buckets: Vec<(i32, u64)>,
}

fn bucket_of(v: f64) -> Option<i32> {
    (v > SKETCH_FLOOR_S && v.is_finite()).then(|| (v.ln() / GAMMA.ln()).ceil() as i32)
}

/// The value a bucket stands for: the point whose relative distance to
/// both ends is SKETCH_ALPHA.
fn value_of(bucket: i32) -> f64 {
    2.0 * GAMMA.powi(bucket) / (GAMMA + 1.0)
}

impl Sketch {
    /// A sketch of `values` (in any order).
    pub fn of(values: impl Iterator<Item = f64>) -> Sketch {
        let mut s = Sketch::default();
        let mut idx: Vec<i32> = Vec::new();
        for v in values {
            s.n += 1;
            match bucket_of(v) {
                Some(b) => idx.push(b),
                None => s.zeros += 1,
            }
        }
        idx.sort_unstable();
        for b in idx {
            match s.buckets.last_mut() {
                Some((last, c)) if *last == b => *c += 1,
                _ => s.buckets.push((b, 1)),
            }
        }
        s
    }

    pub fn merge(&mut self, o: &Sketch) {
        self.n += o.n;
        self.zeros += o.zeros;
        let (a, b) = (&self.buckets, &o.buckets);
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            match (a.get(i), b.get(j)) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    out.push((x.0, x.1 + y.1));
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    out.push(*x);
                    i += 1;
                }
                (Some(x), None) => {
                    out.push(*x);
                    i += 1;
                }
                (_, Some(y)) => {
                    out.push(*y);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        self.buckets = out;
    }

    /// The `k`-th smallest value (0-based), within SKETCH_ALPHA; 0 when
    /// there are not that many.
    pub fn nth(&self, k: u64) -> f64 {
        if k < self.zeros {
            return 0.0;
        }
        let mut seen = self.zeros;
        for &(b, c) in &self.buckets {
            seen += c;
            if k < seen {
                return value_of(b);
            }
        }
        0.0
    }

    /// The median as the report computes it from every value (the mean of
    /// the two middle ones of an even count), within SKETCH_ALPHA.
    pub fn median(&self) -> f64 {
        match self.n {
            0 => 0.0,
            n if n % 2 == 1 => self.nth(n / 2),
            n => (self.nth(n / 2 - 1) + self.nth(n / 2)) / 2.0,
        }
    }

    /// Whether the sketch is well formed (buckets sorted, counts adding up):
    /// a damaged payload must not mislead the report.
    pub fn is_consistent(&self) -> bool {
        let sorted = self.buckets.windows(2).all(|w| w[0].0 < w[1].0);
        let total = self
            .buckets
            .iter()
            .try_fold(self.zeros, |t, &(_, c)| t.checked_add(c));
        sorted && total == Some(self.n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact_nth(v: &[f64], k: usize) -> f64 {
        let mut s = v.to_vec();
        s.sort_by(f64::total_cmp);
        s[k]
    }

    #[test]
    fn quantiles_are_within_the_stated_relative_error() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let vals: Vec<f64> = (0..10_001)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                1e-7 * (1.0 + (x % 1_000_000) as f64)
            })
            .collect();
        let s = Sketch::of(vals.iter().copied());
        for k in [0usize, 17, 5000, 9999, 10_000] {
            let (e, t) = (s.nth(k as u64), exact_nth(&vals, k));
            assert!((e - t).abs() <= SKETCH_ALPHA * t, "{k}: {e} vs {t}");
        }
    }

    #[test]
    fn merging_is_the_sketch_of_the_union_in_any_order() {
        let a: Vec<f64> = (1..500).map(|i| i as f64 * 1e-6).collect();
        let b: Vec<f64> = (0..300).map(|i| i as f64 * 3e-5).collect();
        let mut ab = Sketch::of(a.iter().copied());
        ab.merge(&Sketch::of(b.iter().copied()));
        let mut ba = Sketch::of(b.iter().copied());
        ba.merge(&Sketch::of(a.iter().copied()));
        let all = Sketch::of(a.iter().chain(&b).copied());
        assert_eq!(ab, all);
        assert_eq!(ba, all);
        assert!(all.is_consistent());
        assert_eq!(all.nth(0), 0.0);
    }
}
