//! The histogram of the error (the overhead paper §4, §6).
//!
//! Each run-time is t_i = t_min + e_i (eq. 1); with min(S) standing in for t_min the errors are
//! e_i = t_i - min(S) >= 0. They are sorted into classes of width w: class k holds the errors in
//! [k w, (k + 1) w).
//!
//! # Bin width
//!
//! w is never below the timer resolution r (§6). It is chosen as follows ([`BinRule`]):
//!
//! * given by the caller (`User`): used as is, but it must be >= r;
//! * otherwise from the spread of the sample by the Freedman-Diaconis rule
//!   w_FD = 2 IQR n^(-1/3) (IQR of the times; Scott's rule 3.49 s n^(-1/3) when more than half of
//!   the sample sits on one value so that IQR = 0), then rounded **down to a whole number of
//!   timer ticks**, w = m r with m = max(1, floor(w_FD / r)). Whole ticks matter: measured times
//!   are multiples of r, and a width of, say, 1.5 ticks would put one tick value into even
//!   classes and two into odd ones, a saw-tooth no model fits. Rounding down (never below one
//!   tick, rule `Resolution`) keeps the classes at least as fine as the rule asks.
//!
//! Freedman-Diaconis is robust to the long right tail of run-times (it uses the IQR, not the
//! standard deviation), gives about n^(1/3) classes across the body of the sample, and for
//! tick-quantized errors of a few ticks (the paper's Poisson case) it falls below one tick, so
//! that w = r and the class index is exactly the number of ticks.
//!
//! # Quantization-safe class index
//!
//! A time that lies exactly k bins above the minimum must land in class k. With times such as
//! 1.000000231e-6 = 1e-6 + 7 x 3.3e-8 stored as binary floating point, (t - min)/w comes out as
//! 6.999999999999 or 7.000000000001. [`class_index`] therefore snaps the quotient
//! x = (t - min) / w up to the next integer when it lies below it by less than
//!
//! tol = 1e-9 max(x, 1) + 8 eps max(|t|, |min|) / w   classes (eps = 2^-52),
//!
//! the rounding error of the computation: 1e-9 of the quotient for the subtraction and the
//! division, plus 8 ulps of the larger time, expressed in classes, for the rounding of t and
//! min themselves (decimal text read back). A genuine error that close below a boundary is
//! moved up by at most tol: 1e-9 of its class index (at least 1e-9 of a class) plus the ulps
//! term, which grows with the floor relative to w (t = 1 ms on w = 1 ns: 8 x 2.2e-16 x 1e6
//! = 1.8e-9 classes; t = 1 s on w = 1 ns: 1.8e-6 classes).
use serde::Serialize;

use crate::error::StatsError;
use crate::sample::Sample;

/// Relative snap tolerance of [`class_index`] (in classes, per class of quotient).
const SNAP_REL: f64 = 1e-9;
/// Classes above this index are clamped to it (2^52: every integer below is exact in f64).
pub const MAX_CLASS: u64 = 1 << 52;

/// How the bin width was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BinRule {
    /// Given by the caller.
    User,
    /// The spread-based rule asked for less than one timer tick: w = resolution.
    Resolution,
    /// Freedman-Diaconis, 2 IQR n^(-1/3), rounded down to whole ticks.
    FreedmanDiaconis,
    /// Scott, 3.49 sd n^(-1/3), rounded down to whole ticks (used when the IQR is 0).
    Scott,
}

impl BinRule {
    /// Short name as it appears in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            BinRule::User => "user",
            BinRule::Resolution => "resolution",
            BinRule::FreedmanDiaconis => "freedman_diaconis",
            BinRule::Scott => "scott",
        }
    }

    /// A sentence for people.
    pub fn describe(self) -> &'static str {
        match self {
            BinRule::User => "given on the command line",
            BinRule::Resolution => {
                "one timer tick (the Freedman-Diaconis width 2 IQR n^-1/3 is below the resolution)"
            }
            BinRule::FreedmanDiaconis => {
                "Freedman-Diaconis width 2 IQR n^-1/3, rounded down to whole timer ticks"
            }
            BinRule::Scott => {
                "Scott width 3.49 sd n^-1/3 (the IQR is 0), rounded down to whole timer ticks"
            }
        }
    }
}

/// The chosen bin width and why.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Binning {
    /// w, seconds.
    pub width_s: f64,
    /// The timer resolution r the caller gave, seconds.
    pub resolution_s: f64,
    /// How w was chosen.
    pub rule: BinRule,
    /// The width the spread rule asked for before rounding to ticks (None for `User`).
    pub rule_width_s: Option<f64>,
    /// w / r when that is a whole number (always, unless the caller gave another width).
    pub ticks: Option<u64>,
}

impl Binning {
    /// Validates the resolution (and a caller's width) and chooses w for `sample`.
    pub fn choose(
        sample: &Sample,
        resolution_s: f64,
        bin_width_s: Option<f64>,
    ) -> Result<Binning, StatsError> {
        if !(resolution_s.is_finite() && resolution_s > 0.0) {
            return Err(StatsError::BadResolution(resolution_s));
        }
        if let Some(w) = bin_width_s {
            if !(w.is_finite() && w > 0.0) {
                return Err(StatsError::BadBinWidth(w));
            }
            if w < resolution_s * (1.0 - 1e-9) {
                return Err(StatsError::BinWidthBelowResolution {
                    bin_width_s: w,
                    resolution_s,
                });
            }
            let m = (w / resolution_s).round();
            let ticks = ((w / resolution_s - m).abs() <= 1e-9 * m && m <= MAX_CLASS as f64)
                .then_some(m as u64);
            return Ok(Binning {
                width_s: w,
                resolution_s,
                rule: BinRule::User,
                rule_width_s: None,
                ticks,
            });
        }
        let n = sample.len() as f64;
        let iqr = sample.quantile_linear(0.75) - sample.quantile_linear(0.25);
        let (rule, raw) = if iqr > 0.0 {
            (BinRule::FreedmanDiaconis, 2.0 * iqr * n.powf(-1.0 / 3.0))
        } else {
            (BinRule::Scott, 3.49 * sample.sd() * n.powf(-1.0 / 3.0))
        };
        let ratio = raw / resolution_s;
        let (rule, m) = if ratio.is_finite() && ratio >= 1.0 {
            (rule, (ratio * (1.0 + 1e-12)).floor().min(MAX_CLASS as f64))
        } else {
            (BinRule::Resolution, 1.0)
        };
        // m r, computed as m / (1/r) when 1/r is a whole number (1e9 for a 1 ns timer) so that
        // 230 ticks of 1 ns print as 2.3e-7 rather than 2.3000000000000002e-7.
        let per_second = (1.0 / resolution_s).round();
        let width_s = if per_second >= 1.0 && (per_second * resolution_s - 1.0).abs() < 1e-12 {
            m / per_second
        } else {
            m * resolution_s
        };
        Ok(Binning {
            width_s,
            resolution_s,
            rule,
            rule_width_s: Some(raw),
            ticks: Some(m as u64),
        })
    }
}

/// The class of a time `t_s` for a histogram starting at `min_s` with width `width_s`:
/// floor((t - min) / w), except that a quotient within rounding error below an integer k is
/// taken as k (see the module docs). Times below `min_s` are class 0; the result is clamped to
/// [`MAX_CLASS`].
pub fn class_index(t_s: f64, min_s: f64, width_s: f64) -> u64 {
    let x = (t_s - min_s) / width_s;
    if x.is_nan() || x <= 0.0 {
        return 0;
    }
    // Error of t and min themselves (a few ulps of the larger), expressed in classes, plus the
    // error of the subtraction and division (relative to the quotient).
    let scale = t_s.abs().max(min_s.abs());
    let tol = SNAP_REL * x.max(1.0) + 8.0 * f64::EPSILON * scale / width_s;
    let k = (x + tol).floor();
    if k >= MAX_CLASS as f64 {
        MAX_CLASS
    } else {
        k as u64
    }
}

/// The histogram of the errors: occupied classes only (a run-time sample is sparse in its
/// tail), with the class sum the maximum-likelihood estimators need.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorClasses {
    binning: Binning,
    min_s: f64,
    n: u64,
    /// (class, count) for every occupied class, classes ascending.
    occupied: Vec<(u64, u64)>,
    /// sum over the sample of the class index.
    class_sum: u128,
}

impl ErrorClasses {
    /// Sorts the errors of `sample` into classes of `binning.width_s`. Errors when all of
    /// them fall into class 0 (nothing to fit).
    pub fn new(sample: &Sample, binning: Binning) -> Result<ErrorClasses, StatsError> {
        let min_s = sample.min();
        let w = binning.width_s;
        let mut occupied: Vec<(u64, u64)> = Vec::new();
        let mut class_sum: u128 = 0;
        for &t in sample.sorted() {
            let k = class_index(t, min_s, w);
            class_sum += u128::from(k);
            match occupied.last_mut() {
                Some((c, count)) if *c == k => *count += 1,
                // The sample is sorted and class_index is monotone, so classes only grow.
                _ => occupied.push((k, 1)),
            }
        }
        if occupied.len() == 1 {
            return Err(StatsError::SingleClass {
                n: sample.len(),
                bin_width_s: w,
                max_error_s: sample.max() - min_s,
            });
        }
        Ok(ErrorClasses {
            binning,
            min_s,
            n: sample.len() as u64,
            occupied,
            class_sum,
        })
    }

    /// The binning used.
    pub fn binning(&self) -> &Binning {
        &self.binning
    }

    /// w, seconds.
    pub fn width_s(&self) -> f64 {
        self.binning.width_s
    }

    /// min(S), the origin of class 0.
    pub fn min_s(&self) -> f64 {
        self.min_s
    }

    /// Number of errors N.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Occupied classes and their counts, ascending.
    pub fn occupied(&self) -> &[(u64, u64)] {
        &self.occupied
    }

    /// Highest occupied class.
    pub fn max_class(&self) -> u64 {
        self.occupied.last().map_or(0, |&(k, _)| k)
    }

    /// Mean class index k-bar = (1/N) sum k_i (the sufficient statistic of both models).
    pub fn mean_class(&self) -> f64 {
        self.class_sum as f64 / self.n as f64
    }

    /// Number of errors in classes first..end (end exclusive; `u64::MAX` for no upper end).
    pub fn count_in(&self, first: u64, end: u64) -> u64 {
        let a = self.occupied.partition_point(|&(k, _)| k < first);
        let b = self.occupied.partition_point(|&(k, _)| k < end);
        self.occupied[a..b].iter().map(|&(_, c)| c).sum()
    }

    /// Counts of classes 0..=max_class as a dense vector (for display and tests; the caller
    /// bounds the size with `limit`, the classes above it are summed into the last entry).
    pub fn dense(&self, limit: usize) -> Vec<u64> {
        let len = (self.max_class() as usize)
            .saturating_add(1)
            .min(limit.max(1));
        let mut v = vec![0u64; len];
        for &(k, c) in &self.occupied {
            let i = (k as usize).min(len - 1);
            v[i] += c;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample(v: &[f64]) -> Sample {
        Sample::new(v).unwrap()
    }

    #[test]
    fn exact_multiples_of_one_ns_land_in_their_class() {
        let min = 1.234_567e-3;
        for k in 0..5000u64 {
            let t = min + k as f64 * 1e-9;
            assert_eq!(class_index(t, min, 1e-9), k, "k = {k}");
        }
    }

    #[test]
    fn odd_resolution_3_3e_8_parsed_from_text() {
        // Times as a timer of resolution 33 ns would write them, read back from decimal text.
        let r = 3.3e-8;
        for base_ticks in [1u64, 7, 30_303, 123_456_789] {
            let min: f64 = format!("{:e}", base_ticks as f64 * r).parse().unwrap();
            for k in 0..2000u64 {
                let t: f64 = format!("{:e}", (base_ticks + k) as f64 * r)
                    .parse()
                    .unwrap();
                assert_eq!(class_index(t, min, r), k, "base {base_ticks} k {k}");
                // Two ticks per class: tick k is in class k / 2.
                assert_eq!(
                    class_index(t, min, 2.0 * r),
                    k / 2,
                    "base {base_ticks} k {k}"
                );
            }
        }
    }

    #[test]
    fn errors_between_boundaries_are_floored() {
        assert_eq!(class_index(1.0 + 2.5e-9, 1.0, 1e-9), 2);
        assert_eq!(class_index(1.0 + 2.999e-9, 1.0, 1e-9), 2);
        assert_eq!(class_index(0.5, 1.0, 1e-9), 0);
        assert_eq!(class_index(1e300, 0.0, 1e-300), MAX_CLASS);
    }

    #[test]
    fn resolution_and_user_width_are_checked() {
        let s = sample(&[1.0, 2.0, 3.0]);
        for r in [0.0, -1e-9, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                Binning::choose(&s, r, None),
                Err(StatsError::BadResolution(_))
            ));
        }
        assert!(matches!(
            Binning::choose(&s, 1e-6, Some(1e-7)),
            Err(StatsError::BinWidthBelowResolution { .. })
        ));
        assert!(matches!(
            Binning::choose(&s, 1e-6, Some(0.0)),
            Err(StatsError::BadBinWidth(_))
        ));
        let b = Binning::choose(&s, 1e-6, Some(3e-6)).unwrap();
        assert_eq!((b.rule, b.ticks), (BinRule::User, Some(3)));
        let b = Binning::choose(&s, 1e-6, Some(2.5e-6)).unwrap();
        assert_eq!(b.ticks, None);
    }

    #[test]
    fn rule_width_is_whole_ticks_and_never_below_resolution() {
        // Spread of ~1000 ticks: FD asks for many ticks; the width is a whole number of them.
        let v: Vec<f64> = (0..1000)
            .map(|i| 1e-6 + f64::from(i % 997) * 1e-9)
            .collect();
        let b = Binning::choose(&sample(&v), 1e-9, None).unwrap();
        assert_eq!(b.rule, BinRule::FreedmanDiaconis);
        let m = b.ticks.unwrap();
        assert!(m >= 2);
        assert!((b.width_s - m as f64 * 1e-9).abs() < 1e-24);
        assert!(b.width_s <= b.rule_width_s.unwrap());
        // A spread of a few ticks: FD asks for less than one tick.
        let v: Vec<f64> = (0..1000).map(|i| 1e-6 + f64::from(i % 4) * 1e-9).collect();
        let b = Binning::choose(&sample(&v), 1e-9, None).unwrap();
        assert_eq!(
            (b.rule, b.ticks, b.width_s),
            (BinRule::Resolution, Some(1), 1e-9)
        );
        // IQR = 0 (most values on the minimum): Scott's rule.
        let mut v = vec![1e-6; 900];
        v.extend((1..=100).map(|i| 1e-6 + f64::from(i) * 1e-7));
        let b = Binning::choose(&sample(&v), 1e-9, None).unwrap();
        assert_eq!(b.rule, BinRule::Scott);
    }

    #[test]
    fn histogram_counts_and_class_sum() {
        let r = 3.3e-8;
        let ticks = [0u64, 0, 1, 1, 1, 2, 5, 5, 9];
        let v: Vec<f64> = ticks.iter().map(|&k| 1e-5 + k as f64 * r).collect();
        let s = sample(&v);
        let h = ErrorClasses::new(&s, Binning::choose(&s, r, Some(r)).unwrap()).unwrap();
        assert_eq!(h.occupied(), &[(0, 2), (1, 3), (2, 1), (5, 2), (9, 1)]);
        assert_eq!(h.n(), 9);
        assert!((h.mean_class() - 24.0 / 9.0).abs() < 1e-15);
        assert_eq!(h.count_in(1, 6), 6);
        assert_eq!(h.count_in(6, u64::MAX), 1);
        assert_eq!(h.dense(100), vec![2, 3, 1, 0, 0, 2, 0, 0, 0, 1]);
        assert_eq!(h.dense(3), vec![2, 3, 4]);
        assert_eq!(h.max_class(), 9);
    }

    #[test]
    fn single_class_is_an_error() {
        let s = sample(&[1e-6, 1.5e-6, 1.9e-6]);
        let b = Binning::choose(&s, 1e-6, None).unwrap();
        assert!(matches!(
            ErrorClasses::new(&s, b),
            Err(StatsError::SingleClass { n: 3, .. })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, rng_seed: proptest::test_runner::RngSeed::Fixed(4004), ..ProptestConfig::default() })]

        /// Any tick-quantized time, written to text and read back, lands in the class of its
        /// tick count: for 1 ns ticks, for an odd resolution, and for widths of m ticks.
        #[test]
        fn quantized_times_land_in_their_class(
            base in 0u64..2_000_000_000,
            k in 0u64..100_000,
            res_idx in 0usize..4,
            m in 1u64..7,
        ) {
            let r = [1e-9, 3.3e-8, 1e-6, 2.5e-7][res_idx];
            let min: f64 = format!("{:e}", base as f64 * r).parse().unwrap();
            let t: f64 = format!("{:e}", (base + k) as f64 * r).parse().unwrap();
            prop_assert_eq!(class_index(t, min, r), k);
            prop_assert_eq!(class_index(t, min, m as f64 * r), k / m);
        }
    }
}
