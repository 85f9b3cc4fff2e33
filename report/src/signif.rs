//! The significance test of a site: are its calls over tmax more than the
//! (1 - q_max) share expected by chance?
//!
//! Under the calibration, a call of an undisturbed site exceeds tmax with
//! probability `1 - q_max`. With `n` calls of which `k` exceed tmax, the
//! one-sided p-value is `P(X >= k)` for `X ~ Binomial(n, 1 - q_max)`. Sites are
//! then tested together with Benjamini-Hochberg at false discovery rate alpha.
//!
//! These are local until `mpiover-stats` exports its own `binomial_sf` and
//! `benjamini_hochberg`; the tests below pin the values either must give.

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; ~1e-15 relative).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    // Converges in O(sqrt(max(a, b))) steps.
    let max_iter = 1000 + 10 * (a.max(b).sqrt() as usize);
    for m in 1..=max_iter {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

/// Regularized incomplete beta I_x(a, b).
pub fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_bt = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let bt = ln_bt.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        bt * beta_cf(a, b, x) / a
    } else {
        1.0 - bt * beta_cf(b, a, 1.0 - x) / b
    }
}

/// One-sided binomial p-value: P(X >= k) for X ~ Binomial(n, p).
pub fn binomial_upper_tail(k: u64, n: u64, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    if p <= 0.0 {
        return 0.0;
    }
    if p >= 1.0 {
        return 1.0;
    }
    // P(X >= k) = I_p(k, n - k + 1)
    inc_beta(k as f64, (n - k + 1) as f64, p).clamp(0.0, 1.0)
}

/// Benjamini-Hochberg adjusted p-values (q-values), in the input order: a
/// hypothesis is rejected at false discovery rate alpha when its q-value is
/// at most alpha.
pub fn bh_adjust(pvalues: &[f64]) -> Vec<f64> {
    let m = pvalues.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| pvalues[a].total_cmp(&pvalues[b]));
    let mut q = vec![1.0; m];
    let mut running = 1.0f64;
    for (pos, &i) in order.iter().enumerate().rev() {
        let v = (pvalues[i] * m as f64 / (pos + 1) as f64).min(1.0);
        running = running.min(v);
        q[i] = running;
    }
    q
}

/// The smallest number of calls at which the test can reject at all: with
/// fewer, even every call over tmax gives a p-value above alpha.
pub fn min_calls(q_max: f64, alpha: f64) -> u64 {
    let p0 = 1.0 - q_max;
    if p0 <= 0.0 {
        return 1;
    }
    if p0 >= 1.0 {
        return u64::MAX;
    }
    // p0^n <= alpha  <=>  n >= ln(alpha) / ln(p0)
    (alpha.ln() / p0.ln()).ceil().max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact_tail(k: u64, n: u64, p: f64) -> f64 {
        // Sum of the pmf, in logs, for small n.
        (k..=n)
            .map(|i| {
                (ln_gamma(n as f64 + 1.0) - ln_gamma(i as f64 + 1.0) - ln_gamma((n - i) as f64 + 1.0)
                    + i as f64 * p.ln()
                    + (n - i) as f64 * (1.0 - p).ln())
                .exp()
            })
            .sum()
    }

    #[test]
    fn gamma_matches_factorials() {
        let mut f = 1.0f64;
        for n in 1..30u32 {
            f *= n as f64;
            assert!((ln_gamma(n as f64 + 1.0) - f.ln()).abs() < 1e-10, "{n}");
        }
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
    }

    #[test]
    fn binomial_tail_matches_the_sum() {
        for &(n, p) in &[(10u64, 0.1), (50, 0.2), (200, 0.05), (7, 0.5)] {
            for k in 0..=n {
                let a = binomial_upper_tail(k, n, p);
                let b = exact_tail(k, n, p);
                assert!((a - b).abs() < 1e-9 * b.max(1e-300) + 1e-14, "n {n} p {p} k {k}: {a} vs {b}");
            }
        }
        // Known value: P(X >= 3 | 10, 0.1) = 0.0701908264
        assert!((binomial_upper_tail(3, 10, 0.1) - 0.070_190_826_4).abs() < 1e-9);
    }

    #[test]
    fn binomial_tail_for_many_calls() {
        // n = 1e7 calls, p = 0.1: the mean is 1e6, sd ~ 948.7.
        let n = 10_000_000;
        let mid = binomial_upper_tail(1_000_000, n, 0.1);
        assert!((mid - 0.5).abs() < 0.01, "{mid}");
        assert!(binomial_upper_tail(1_010_000, n, 0.1) < 1e-20);
        assert!(binomial_upper_tail(990_000, n, 0.1) > 1.0 - 1e-20);
    }

    #[test]
    fn bh_matches_a_worked_example() {
        // p-values of the classic example; q = p * m / rank, made monotone.
        let p = [0.01, 0.04, 0.03, 0.005, 0.5];
        let q = bh_adjust(&p);
        let want = [0.025, 0.05, 0.05, 0.025, 0.5];
        for (a, b) in q.iter().zip(want) {
            assert!((a - b).abs() < 1e-12, "{q:?}");
        }
    }

    #[test]
    fn min_calls_for_q_09() {
        assert_eq!(min_calls(0.9, 0.05), 2);
        assert_eq!(min_calls(0.5, 0.05), 5);
        assert!(binomial_upper_tail(5, 5, 0.5) <= 0.05);
        assert!(binomial_upper_tail(4, 4, 0.5) > 0.05);
    }
}
