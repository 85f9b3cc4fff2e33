//! Two-sample tests for comparing runs (`mpiover diff`).
//!
//! A site's figure changes between two runs for two reasons: the program
//! changed, or the machine did (another placement, another moment on a shared
//! node: the run-to-run variation that separate `mpirun` invocations show,
//! Hunold & Carpen-Amarie 2016). The tests here say whether a difference is
//! larger than the variation the data can show:
//!
//! [`mann_whitney_binned`] compares per-call durations, binned alike on both
//! sides (the Wilcoxon-Mann-Whitney rank-sum test with mid-ranks for the
//! calls that share a bin and the tie-corrected normal approximation; Mann &
//! Whitney 1947). It sees the variation among calls, not between runs: a
//! shift of the whole machine is "significant" to it, which is why the
//! caller also demands that the runs of the two sides do not overlap (when
//! there are several) and a minimum effect size. A t-test on per-run totals
//! was tried first: with the two or three runs a user has, its degrees of
//! freedom leave it no power (a 4x cut of a 200 ms wait came out p = 0.02,
//! q = 0.09 over four sites).
//!
//! It returns a two-sided p-value in [0, 1], and `None` when a side is empty.

use statrs::function::erf::erfc;

/// The two-sided p-value of the rank-sum test of two samples given as counts
/// per bin over the same ordered bins (`a[i]` and `b[i]` count the values of
/// bin `i`), or `None` when a side is empty. Values in one bin are ties.
pub fn mann_whitney_binned(a: &[u64], b: &[u64]) -> Option<f64> {
    let n1: f64 = a.iter().map(|&c| c as f64).sum();
    let n2: f64 = b.iter().map(|&c| c as f64).sum();
    if n1 == 0.0 || n2 == 0.0 {
        return None;
    }
    let n = n1 + n2;
    let (mut below, mut r1, mut ties) = (0.0f64, 0.0f64, 0.0f64);
    for i in 0..a.len().max(b.len()) {
        let ca = a.get(i).copied().unwrap_or(0) as f64;
        let cb = b.get(i).copied().unwrap_or(0) as f64;
        let t = ca + cb;
        if t == 0.0 {
            continue;
        }
        // Every value of the bin gets the mean of the ranks the bin spans.
        r1 += ca * (below + (t + 1.0) / 2.0);
        ties += t * t * t - t;
        below += t;
    }
    let u = r1 - n1 * (n1 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var.is_nan() || var <= 0.0 {
        // Every value in one bin: nothing tells the sides apart.
        return Some(1.0);
    }
    // Continuity correction: half a rank towards the mean.
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    Some(erfc(z / std::f64::consts::SQRT_2).clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_sum_of_one_sample_against_itself_is_not_significant() {
        let a = [0, 5, 40, 300, 80, 7, 1];
        let p = mann_whitney_binned(&a, &a).unwrap();
        assert!(p > 0.99, "{p}");
    }

    #[test]
    fn rank_sum_finds_a_shift_of_one_bin_in_many_calls() {
        let a = [0, 100, 800, 100, 0];
        let b = [0, 0, 100, 800, 100];
        let p = mann_whitney_binned(&a, &b).unwrap();
        assert!(p < 1e-100, "{p}");
        assert_eq!(mann_whitney_binned(&b, &a), Some(p));
    }

    #[test]
    fn rank_sum_of_separated_small_samples_matches_the_normal_approximation() {
        // 3 vs 3 fully separated: U = 0, mean 4.5, var 5.25, z = (4.5 - 0.5)
        // / sqrt(5.25) = 1.7457, two-sided p = 0.0809.
        let p = mann_whitney_binned(&[1, 1, 1, 0, 0, 0], &[0, 0, 0, 1, 1, 1]).unwrap();
        assert!((p - 0.0809).abs() < 5e-4, "{p}");
    }

    #[test]
    fn rank_sum_of_an_empty_side_or_one_bin_is_no_test() {
        assert_eq!(mann_whitney_binned(&[0, 0], &[1, 2]), None);
        assert_eq!(mann_whitney_binned(&[0, 4], &[0, 9]), Some(1.0));
    }
}
