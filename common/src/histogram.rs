//! Log-scale duration histogram with 128 sub-buckets per power of two.
//!
//! The interposer must keep, per key, enough of the call-time distribution that
//! `sum(max(0, t - tmax))` can be recomputed later for *any* tmax (a report can
//! be re-run against another profile). Storing every duration is unbounded, so
//! durations go into buckets whose width is at most 1/128 (0.78 %) of their
//! lower bound, the scheme of HdrHistogram: the bucket of a raw value `v` is
//! found with one `leading_zeros` and a shift, no floating point on the hot path.
//!
//! Each bucket keeps its count *and the sum of its values*. For buckets entirely
//! above tmax the overhead is then exact (`sum - count * tmax`); only the one
//! bucket that straddles tmax is estimated (values assumed uniform in it), so the
//! error of the overhead is at most `count_in_that_bucket * width / 2`, i.e.
//! below 0.4 % of tmax per call in that bucket.
//!
//! Raw values are in an arbitrary unit (timer ticks in the interposer); the
//! `unit_s` of the record converts them to seconds.
//!
//! Index layout: values below 256 have their own bucket (`index == value`);
//! above, `e = msb - 7`, `m = v >> e` (in 128..256) and
//! `index = 128 * (e + 1) + (m - 128)`. A bucket covers `[m << e, (m + 1) << e)`.

use serde::{Deserialize, Serialize};

/// Number of sub-buckets per power of two (2^SUB_BITS).
pub const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
/// One past the largest index any u64 value can map to.
pub const MAX_INDEX: usize = (SUB as usize) * (64 - SUB_BITS as usize + 1);

/// Bucket index of a raw value. Pure integer arithmetic: safe on the hot path.
/// Without a branch: `128 * (e + 1) + (m - 128)` is `128 * e + m`, and with
/// `e` floored at 0 the values below 256 come out as themselves (`m == v`).
/// The floor costs nothing: with bit 7 set before the bit scan, `msb` is at
/// least 7 (values below 256 give exactly 7, the others their own), so
/// `e = msb - 7` needs no saturation (a compare and a select less).
#[inline(always)]
pub fn bucket_index(v: u64) -> usize {
    let msb = 63 - (v | SUB).leading_zeros();
    let e = msb - SUB_BITS;
    ((v >> e) + ((e as u64) << SUB_BITS)) as usize
}

/// `[lower, upper)` bounds of a bucket, in raw units.
pub fn bucket_bounds(index: usize) -> (u64, u64) {
    if index < 2 * SUB as usize {
        return (index as u64, index as u64 + 1);
    }
    let e = (index as u64 / SUB) - 1;
    let m = index as u64 % SUB + SUB;
    let lo = m << e;
    let hi = lo.saturating_add(1 << e);
    (lo, hi)
}

/// One non-empty bucket: index, number of values, sum of the raw values.
/// Serialized as a 3-element array to keep records small.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bucket(pub u32, pub u64, pub u64);

impl Bucket {
    pub fn index(&self) -> usize {
        self.0 as usize
    }
    pub fn count(&self) -> u64 {
        self.1
    }
    pub fn sum(&self) -> u64 {
        self.2
    }
}

/// A sparse histogram as stored in a record: non-empty buckets in increasing
/// index order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Histogram {
    pub buckets: Vec<Bucket>,
}

/// Overhead of the calls in a histogram against one tmax.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Excess {
    /// Sum of max(0, t - tmax), seconds.
    pub overhead_s: f64,
    /// Estimated number of calls with t > tmax.
    pub calls_over: f64,
}

impl Histogram {
    /// Adds one value (used by tests and by tools; the interposer keeps a dense
    /// array and converts once at the end).
    pub fn record(&mut self, v: u64) {
        let idx = bucket_index(v) as u32;
        match self.buckets.binary_search_by_key(&idx, |b| b.0) {
            Ok(i) => {
                self.buckets[i].1 += 1;
                self.buckets[i].2 = self.buckets[i].2.saturating_add(v);
            }
            Err(i) => self.buckets.insert(i, Bucket(idx, 1, v)),
        }
    }

    /// Adds every bucket of `other` into `self`.
    pub fn merge(&mut self, other: &Histogram) {
        let mut out = Vec::with_capacity(self.buckets.len() + other.buckets.len());
        let (mut a, mut b) = (
            self.buckets.iter().peekable(),
            other.buckets.iter().peekable(),
        );
        loop {
            match (a.peek(), b.peek()) {
                (Some(x), Some(y)) if x.0 == y.0 => {
                    out.push(Bucket(x.0, x.1 + y.1, x.2.saturating_add(y.2)));
                    a.next();
                    b.next();
                }
                (Some(x), Some(y)) if x.0 < y.0 => {
                    out.push(**x);
                    a.next();
                }
                (Some(_), Some(y)) => {
                    out.push(**y);
                    b.next();
                }
                (Some(x), None) => {
                    out.push(**x);
                    a.next();
                }
                (None, Some(y)) => {
                    out.push(**y);
                    b.next();
                }
                (None, None) => break,
            }
        }
        self.buckets = out;
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().map(|b| b.1).sum()
    }

    /// True when indices are strictly increasing, in range, and no bucket is
    /// empty or holds a sum outside its bounds: what a reader checks.
    pub fn is_valid(&self) -> bool {
        let mut last: Option<u32> = None;
        for b in &self.buckets {
            if (b.0 as usize) >= MAX_INDEX || b.1 == 0 || last.is_some_and(|l| l >= b.0) {
                return false;
            }
            let (lo, hi) = bucket_bounds(b.index());
            let (c, s) = (b.1 as u128, b.2 as u128);
            if s < c * lo as u128 || s > c * hi as u128 {
                return false;
            }
            last = Some(b.0);
        }
        true
    }

    /// Sum of max(0, t - tmax) and the number of calls above tmax, with raw
    /// values converted to seconds by `unit_s`. Exact for every bucket that
    /// lies wholly above or below tmax; the straddling bucket assumes its
    /// values are spread uniformly.
    pub fn excess(&self, unit_s: f64, tmax_s: f64) -> Excess {
        let mut ex = Excess::default();
        for b in &self.buckets {
            let (lo, hi) = bucket_bounds(b.index());
            let (lo, hi) = (lo as f64 * unit_s, hi as f64 * unit_s);
            let (c, s) = (b.1 as f64, b.2 as f64 * unit_s);
            if lo >= tmax_s {
                ex.overhead_s += (s - c * tmax_s).max(0.0);
                ex.calls_over += c;
            } else if hi > tmax_s {
                let frac = (hi - tmax_s) / (hi - lo);
                ex.calls_over += c * frac;
                ex.overhead_s += c * frac * (hi - tmax_s) / 2.0;
            }
        }
        ex
    }

    /// Approximate q-quantile in seconds (mean of the bucket that holds it).
    pub fn quantile(&self, unit_s: f64, q: f64) -> Option<f64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let target = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for b in &self.buckets {
            seen += b.1;
            if seen >= target {
                return Some(b.2 as f64 / b.1 as f64 * unit_s);
            }
        }
        self.buckets
            .last()
            .map(|b| b.2 as f64 / b.1 as f64 * unit_s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The layout of the module's docs, written out with its branch.
    fn index_as_documented(v: u64) -> usize {
        if v < 2 * SUB {
            return v as usize;
        }
        let e = 63 - v.leading_zeros() - SUB_BITS;
        (SUB as usize) * (e as usize + 1) + ((v >> e) - SUB) as usize
    }

    #[test]
    fn the_branch_free_index_is_the_documented_layout() {
        for v in (0..100_000u64).chain((0..64).flat_map(|b| {
            let p = 1u64 << b;
            [p - 1, p, p + 1, p | (p >> 1), p.wrapping_mul(3) / 2]
        })) {
            assert_eq!(bucket_index(v), index_as_documented(v), "{v}");
        }
        assert_eq!(bucket_index(u64::MAX), index_as_documented(u64::MAX));
    }

    #[test]
    fn small_values_are_exact() {
        for v in 0..256u64 {
            assert_eq!(bucket_index(v), v as usize);
            assert_eq!(bucket_bounds(v as usize), (v, v + 1));
        }
    }

    #[test]
    fn largest_value_fits() {
        assert!(bucket_index(u64::MAX) < MAX_INDEX);
    }

    proptest! {
        #[test]
        fn value_lies_in_its_bucket(v in any::<u64>()) {
            let (lo, hi) = bucket_bounds(bucket_index(v));
            prop_assert!(lo <= v);
            prop_assert!(v < hi || hi == u64::MAX);
        }

        #[test]
        fn relative_width_below_one_percent(v in 256u64..u64::MAX / 2) {
            let (lo, hi) = bucket_bounds(bucket_index(v));
            prop_assert!(((hi - lo) as f64) / (lo as f64) <= 1.0 / 128.0 + 1e-12);
        }

        #[test]
        fn index_is_monotone(a in any::<u64>(), b in any::<u64>()) {
            let (a, b) = (a.min(b), a.max(b));
            prop_assert!(bucket_index(a) <= bucket_index(b));
        }

        /// The requirement on the histogram: for realistic samples the overhead
        /// recomputed from the histogram is within 1 % of the exact value.
        #[test]
        fn excess_within_one_percent(seed in any::<u64>(), tmax_ns in 1_000u64..50_000) {
            // Exponentially distributed durations around 10 us (xorshift, no rand dep).
            let mut x = seed | 1;
            let mut h = Histogram::default();
            let mut exact = 0.0;
            for _ in 0..5000 {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let t = 2_000.0 - 10_000.0 * (1.0 - u).ln();
                let t = t as u64;
                h.record(t);
                exact += (t as f64 - tmax_ns as f64).max(0.0);
            }
            let est = h.excess(1e-9, tmax_ns as f64 * 1e-9).overhead_s / 1e-9;
            prop_assert!((est - exact).abs() <= 0.01 * exact + 1e-9, "est {est} exact {exact}");
        }

        #[test]
        fn merge_adds_counts(a in proptest::collection::vec(any::<u32>(), 0..200),
                             b in proptest::collection::vec(any::<u32>(), 0..200)) {
            let mut ha = Histogram::default();
            let mut hb = Histogram::default();
            let mut hab = Histogram::default();
            for &v in &a { ha.record(v as u64); hab.record(v as u64); }
            for &v in &b { hb.record(v as u64); hab.record(v as u64); }
            ha.merge(&hb);
            prop_assert_eq!(&ha, &hab);
            prop_assert!(ha.is_valid());
        }
    }
}
