//! Significance helpers for the report (issue 6): the binomial tail P(X >= k) and the
//! Benjamini-Hochberg step-up procedure for many simultaneous tests.
//!
//! Typical use: under ideal conditions a call exceeds tmax with probability 1 - q_max, so
//! among n calls of one site the number above tmax is ~ Binomial(n, 1 - q_max); a site with
//! k such calls is significant when `binomial_sf(k, n, 1 - q_max)` is small, and across many
//! sites the false discoveries are controlled with [`benjamini_hochberg`].
use crate::special::ln_binomial_pmf;

/// Largest number of terms summed in one tail (enough for n p (1 - p) up to ~1e12).
const MAX_TERMS: u64 = 20_000_000;

/// P(X >= k) for X ~ Binomial(n, p).
///
/// Accurate for large n and tiny p: the first term of the tail is the log-probability by
/// Loader's saddle-point formula (no cancellation in ln C(n, k)), the following terms come from
/// the ratio P(X = j+1) / P(X = j) = (n - j) p / ((j + 1)(1 - p)), and the sum is formed
/// relative to the first term, so a tail of 1e-300 keeps its digits and one below the
/// smallest double is 0. When k is below the mode the complement 1 - P(X <= k - 1) is summed
/// downward instead. `k = 0` gives 1, `k > n` gives 0; p is clamped into [0, 1] and a NaN p
/// gives 1 (a p-value that never claims significance).
pub fn binomial_sf(k: u64, n: u64, p: f64) -> f64 {
    if p.is_nan() {
        return 1.0;
    }
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    let p = p.clamp(0.0, 1.0);
    if p == 0.0 {
        return 0.0;
    }
    if p == 1.0 {
        return 1.0;
    }
    let (nf, q) = (n as f64, 1.0 - p);
    let mode = ((nf + 1.0) * p).floor();
    if (k as f64) > mode {
        // Upper tail, terms decreasing from j = k.
        let odds = p / q;
        let (mut term, mut sum) = (1.0f64, 1.0f64);
        let mut j = k;
        while j < n && j - k < MAX_TERMS {
            term *= (nf - j as f64) / (j as f64 + 1.0) * odds;
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
            j += 1;
        }
        (ln_binomial_pmf(k, n, p) + sum.ln()).exp().clamp(0.0, 1.0)
    } else {
        // 1 - P[X <= k - 1], terms decreasing downward from j = k - 1.
        let odds = q / p;
        let top = k - 1;
        let (mut term, mut sum) = (1.0f64, 1.0f64);
        let mut j = top;
        while j > 0 && top - j < MAX_TERMS {
            term *= j as f64 / (nf - j as f64 + 1.0) * odds;
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
            j -= 1;
        }
        let lower = (ln_binomial_pmf(top, n, p) + sum.ln()).exp();
        (1.0 - lower).clamp(0.0, 1.0)
    }
}

/// Benjamini-Hochberg step-up procedure at false-discovery rate `q`: with the m p-values
/// sorted, p_(1) <= ... <= p_(m), find the largest i with p_(i) <= i q / m and reject the
/// hypotheses of p_(1)..p_(i). Returns, in the input order, true for each rejected hypothesis
/// ("significant"). NaN p-values count as 1 (never rejected, but they count in m); a q
/// outside (0, 1] rejects nothing.
pub fn benjamini_hochberg(pvalues: &[f64], q: f64) -> Vec<bool> {
    let m = pvalues.len();
    let mut out = vec![false; m];
    if m == 0 || !(q > 0.0 && q <= 1.0) {
        return out;
    }
    let clean = |p: f64| if p.is_nan() { 1.0 } else { p };
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| clean(pvalues[a]).total_cmp(&clean(pvalues[b])));
    let mut cut = 0; // number rejected
    for (i, &idx) in order.iter().enumerate() {
        if clean(pvalues[idx]) <= (i + 1) as f64 * q / m as f64 {
            cut = i + 1;
        }
    }
    for &idx in &order[..cut] {
        out[idx] = true;
    }
    out
}

/// Benjamini-Hochberg adjusted p-values (q-values): adj_(i) = min over j >= i of
/// p_(j) m / j, capped at 1, in the input order. A hypothesis is rejected at FDR q exactly when
/// its adjusted p-value is <= q, the same decision as [`benjamini_hochberg`]. NaN counts as 1.
pub fn benjamini_hochberg_adjusted(pvalues: &[f64]) -> Vec<f64> {
    let m = pvalues.len();
    let clean = |p: f64| if p.is_nan() { 1.0 } else { p.clamp(0.0, 1.0) };
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| clean(pvalues[a]).total_cmp(&clean(pvalues[b])));
    let mut out = vec![1.0; m];
    let mut running = 1.0f64;
    for (rank0, &idx) in order.iter().enumerate().rev() {
        let adj = clean(pvalues[idx]) * m as f64 / (rank0 + 1) as f64;
        running = running.min(adj).min(1.0);
        out[idx] = running;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use statrs::function::beta::beta_reg;
    use statrs::function::gamma::ln_gamma;

    fn direct_sf(k: u64, n: u64, p: f64) -> f64 {
        (k..=n)
            .map(|j| {
                (ln_gamma(n as f64 + 1.0)
                    - ln_gamma(j as f64 + 1.0)
                    - ln_gamma((n - j) as f64 + 1.0)
                    + j as f64 * p.ln()
                    + (n - j) as f64 * (1.0 - p).ln())
                .exp()
            })
            .sum()
    }

    fn rel(a: f64, b: f64) -> f64 {
        if b == 0.0 {
            a.abs()
        } else {
            ((a - b) / b).abs()
        }
    }

    #[test]
    fn edges() {
        assert_eq!(binomial_sf(0, 10, 0.3), 1.0);
        assert_eq!(binomial_sf(11, 10, 0.3), 0.0);
        assert_eq!(binomial_sf(1, 10, 0.0), 0.0);
        assert_eq!(binomial_sf(10, 10, 1.0), 1.0);
        assert_eq!(binomial_sf(3, 10, f64::NAN), 1.0);
        assert_eq!(binomial_sf(0, 0, 0.5), 1.0);
        assert!((binomial_sf(10, 10, 0.5) - 0.5f64.powi(10)).abs() < 1e-18);
        assert!((binomial_sf(1, 10, 0.5) - (1.0 - 0.5f64.powi(10))).abs() < 1e-15);
    }

    #[test]
    fn matches_direct_sum_for_small_n() {
        for &n in &[1u64, 2, 5, 20, 100, 500] {
            for &p in &[1e-6, 0.01, 0.2, 0.5, 0.9, 0.999] {
                for k in 0..=n {
                    let (a, b) = (binomial_sf(k, n, p), direct_sf(k, n, p));
                    assert!(
                        (a - b).abs() < 1e-13 || rel(a, b) < 1e-9,
                        "n {n} p {p} k {k}: {a} vs {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn matches_incomplete_beta_for_moderate_n() {
        // P[X >= k] = I_p(k, n - k + 1); statrs' continued fraction converges in this range.
        for &(n, p) in &[(1000u64, 0.01), (5000, 0.3), (200, 0.75)] {
            for k in (1..=n).step_by((n / 50) as usize) {
                let want = beta_reg(k as f64, (n - k + 1) as f64, p);
                let got = binomial_sf(k, n, p);
                assert!(
                    (got - want).abs() < 1e-10 || rel(got, want) < 1e-8,
                    "n {n} k {k}"
                );
            }
        }
    }

    #[test]
    fn large_n_tiny_p_approaches_poisson() {
        // Binomial(1e9, 2e-9) ~ Poisson(2): P[X >= 5] = 1 - e^-2 (1 + 2 + 2 + 4/3 + 2/3).
        let want = 1.0 - (-2.0f64).exp() * (1.0 + 2.0 + 2.0 + 4.0 / 3.0 + 2.0 / 3.0);
        let got = binomial_sf(5, 1_000_000_000, 2e-9);
        assert!(rel(got, want) < 1e-6, "{got} vs {want}");
        // Far tail: Binomial(1e6, 1e-6), P[X >= 30] ~ Poisson(1) tail ~ e^-1 / 30! (1 + 1/31 + ...).
        let mut pois = 0.0;
        let mut ln_term = -1.0 - ln_gamma(31.0);
        for j in 30..60 {
            pois += ln_term.exp();
            ln_term -= f64::from(j + 1).ln();
        }
        let got = binomial_sf(30, 1_000_000, 1e-6);
        assert!(got > 0.0 && rel(got, pois) < 2e-3, "{got} vs {pois}"); // differs by O(k^2/n)
                                                                        // So small that it underflows: exactly 0, not NaN.
        let tiny = binomial_sf(5_000, 1_000_000, 1e-9);
        assert_eq!(tiny, 0.0);
    }

    #[test]
    fn huge_n_near_the_mean() {
        // n = 1e12, p = 0.01: P[X >= mean] ~ 1/2 (slightly below, by the skew).
        let n = 1_000_000_000_000u64;
        let v = binomial_sf(10_000_000_000, n, 0.01);
        assert!((v - 0.5).abs() < 0.01, "{v}");
        // Monotone in k.
        let mut last = 1.0;
        for k in (9_999_000_000..10_001_000_000u64).step_by(100_000) {
            let s = binomial_sf(k, n, 0.01);
            assert!(s <= last + 1e-12 && s.is_finite());
            last = s;
        }
    }

    #[test]
    fn ten_million_calls() {
        // n = 1e7, p = 0.1: mean 1e6, sd 948.7; +-10 000 is more than 10 sd.
        let n = 10_000_000;
        let mid = binomial_sf(1_000_000, n, 0.1);
        assert!((mid - 0.5).abs() < 0.01, "{mid}");
        assert!(binomial_sf(1_010_000, n, 0.1) < 1e-20);
        // 1 - 1e-20 is 1 in double precision: the complement is what can be checked.
        assert_eq!(binomial_sf(990_000, n, 0.1), 1.0);
        // 5.27 sd below the mean: the lower tail is about Phi(-5.27) = 6.8e-8.
        let lower = 1.0 - binomial_sf(995_000, n, 0.1);
        assert!(lower > 3e-8 && lower < 1.5e-7, "{lower}");
        // One sd above the mean: 1 - Phi(1) = 0.1587 (to the normal approximation's accuracy).
        let one_sd = binomial_sf(1_000_949, n, 0.1);
        assert!((one_sd - 0.1587).abs() < 0.002, "{one_sd}");
    }

    #[test]
    fn adjusted_p_values_agree_with_the_decision() {
        let p = [0.01, 0.04, 0.03, 0.005, 0.5];
        let adj = benjamini_hochberg_adjusted(&p);
        let want = [0.025, 0.05, 0.05, 0.025, 0.5];
        for (a, b) in adj.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{adj:?}");
        }
        for q in [0.01, 0.025, 0.04, 0.05, 0.1] {
            let by_adj: Vec<bool> = adj.iter().map(|&a| a <= q).collect();
            assert_eq!(by_adj, benjamini_hochberg(&p, q), "q {q}");
        }
        assert_eq!(
            benjamini_hochberg_adjusted(&[f64::NAN, 0.0]),
            vec![1.0, 0.0]
        );
        assert!(benjamini_hochberg_adjusted(&[]).is_empty());
    }

    #[test]
    fn bh_textbook_example() {
        // Benjamini & Hochberg (1995), 15 p-values, q = 0.05: the first four are rejected.
        let p = [
            0.0001, 0.0004, 0.0019, 0.0095, 0.0201, 0.0278, 0.0298, 0.0344, 0.0459, 0.3240, 0.4262,
            0.5719, 0.6528, 0.7590, 1.0,
        ];
        let r = benjamini_hochberg(&p, 0.05);
        assert_eq!(r.iter().filter(|&&x| x).count(), 4);
        assert!(r[..4].iter().all(|&x| x));
    }

    #[test]
    fn bh_step_up_and_order() {
        // Step-up: p_(2) = 0.025 <= 2 * 0.05 / 3 rejects p_(1) = 0.02 too although 0.02 > 0.05 / 3.
        let r = benjamini_hochberg(&[0.9, 0.025, 0.02], 0.05);
        assert_eq!(r, vec![false, true, true]);
        assert_eq!(benjamini_hochberg(&[], 0.05), Vec::<bool>::new());
        assert_eq!(
            benjamini_hochberg(&[0.01, f64::NAN], 0.05),
            vec![true, false]
        );
        assert_eq!(benjamini_hochberg(&[0.0, 0.0], 0.0), vec![false, false]);
        assert_eq!(
            benjamini_hochberg(&[0.0, 0.0], f64::NAN),
            vec![false, false]
        );
    }
}
