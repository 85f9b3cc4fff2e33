//! Special functions the tests of the method need, built on `statrs` and written so that they
//! never panic and never return NaN for the arguments the crate passes:
//!
//! * the standard normal upper quantile z_alpha = Phi^-1(1 - alpha);
//! * the chi-square survival function (the p-value of a chi-square test),
//!   Q(nu/2, x/2) with Q the regularized upper incomplete gamma function;
//! * the *exact* chi-square critical value chi2_{nu; 1-alpha}, found by a safeguarded Newton
//!   iteration on Q (statrs' own `inverse_cdf` stops after a fixed handful of steps);
//! * the Wilson-Hilferty approximation the paper uses for nu > 30 (the overhead paper §7, eq. 9);
//! * the log binomial probability by Loader's saddle-point method (`stirlerr`, `bd0`), which
//!   stays accurate for huge n and tiny p where `ln C(n, k)` by log-gamma differences does not;
//! * the regularized incomplete beta function I_x(a, b) with 1 - x passed separately (the
//!   negative binomial's tail), by the continued fraction with a convergence test
//!   (statrs' stops after 140 terms, too few for the large shape parameters a negative binomial
//!   near its Poisson limit has);
//! * the normal upper tail Q(z) = erfc(z / sqrt 2) / 2, with erfc's relative precision
//!   (about 1e-10 in statrs) far into the tail, where 1 - Phi(z) would have none.
use statrs::function::erf::{erfc, erfc_inv};
use statrs::function::gamma::{gamma_lr, gamma_ur, ln_gamma};

const LN_2PI: f64 = 1.837_877_066_409_345_5;

/// z_alpha with P(Z > z_alpha) = alpha for a standard normal Z; alpha is clamped into
/// [1e-300, 1 - 1e-16] so that the result is always finite.
pub fn normal_upper_quantile(alpha: f64) -> f64 {
    let a = if alpha.is_nan() {
        0.5
    } else {
        alpha.clamp(1e-300, 1.0 - 1e-16)
    };
    std::f64::consts::SQRT_2 * erfc_inv(2.0 * a)
}

/// Q(z) = P(Z > z) for a standard normal Z, with full relative precision in the upper tail
/// (erfc, not 1 - Phi).
pub fn normal_sf(z: f64) -> f64 {
    if z.is_nan() {
        return 0.5;
    }
    0.5 * erfc(z * std::f64::consts::FRAC_1_SQRT_2)
}

/// The regularized incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1], with
/// y = 1 - x given by the caller so that x close to 1 loses no digits. Evaluated by the
/// continued fraction (Numerical Recipes' betacf, modified Lentz) on I_x(a, b) when
/// x < (a + 1) / (a + b + 2) and on 1 - I_y(b, a) otherwise, so that the small side is always
/// the one computed directly (full relative precision in the tail). The fraction converges in
/// O(sqrt(max(a, b))) terms; up to 20,000 are taken. Out-of-domain arguments give 0 or 1
/// (never NaN).
pub fn beta_reg(a: f64, b: f64, x: f64, y: f64) -> f64 {
    if !(a > 0.0 && b > 0.0) || x.is_nan() || y.is_nan() || x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    if x < (a + 1.0) / (a + b + 2.0) {
        beta_cf_side(a, b, x, y)
    } else {
        (1.0 - beta_cf_side(b, a, y, x)).clamp(0.0, 1.0)
    }
}

/// ln B(a, b). When one argument is a small whole number n (a tail class of a negative
/// binomial), ln Gamma(n) - sum of ln(b + j) for j < n, which keeps its digits where the
/// difference ln Gamma(b) - ln Gamma(n + b) of two large values would lose them at large b.
fn ln_beta(a: f64, b: f64) -> f64 {
    let small_int = |v: f64| v <= 32.0 && v == v.floor();
    let (n, other) = if small_int(a) {
        (a, b)
    } else if small_int(b) {
        (b, a)
    } else {
        return ln_gamma(a) + ln_gamma(b) - ln_gamma(a + b);
    };
    let rising: f64 = (0..n as u32).map(|j| (other + f64::from(j)).ln()).sum();
    ln_gamma(n) - rising
}

/// x^a y^b / (a B(a, b)) times the continued fraction of I_x(a, b).
fn beta_cf_side(a: f64, b: f64, x: f64, y: f64) -> f64 {
    const FPMIN: f64 = 1e-300;
    let ln_front = a * x.ln() + b * y.ln() - ln_beta(a, b);
    let front = ln_front.exp();
    if front == 0.0 {
        return 0.0;
    }
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < FPMIN {
        d = FPMIN;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..20_000u32 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < FPMIN {
            d = FPMIN;
        }
        c = 1.0 + aa / c;
        if c.abs() < FPMIN {
            c = FPMIN;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < FPMIN {
            d = FPMIN;
        }
        c = 1.0 + aa / c;
        if c.abs() < FPMIN {
            c = FPMIN;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (front * h / a).clamp(0.0, 1.0)
}

/// P(X >= x) for X ~ chi-square with `df` degrees of freedom (the p-value of a statistic x).
/// df = 0 is the point mass at 0.
pub fn chi2_sf(x: f64, df: f64) -> f64 {
    if x.is_nan() || df.is_nan() {
        return 1.0;
    }
    if x <= 0.0 {
        return 1.0;
    }
    if df <= 0.0 || x == f64::INFINITY {
        return 0.0;
    }
    gamma_ur(df / 2.0, x / 2.0).clamp(0.0, 1.0)
}

/// P(X <= x), the chi-square CDF.
pub fn chi2_cdf(x: f64, df: f64) -> f64 {
    if x.is_nan() || df.is_nan() || x <= 0.0 {
        return 0.0;
    }
    if df <= 0.0 || x == f64::INFINITY {
        return 1.0;
    }
    gamma_lr(df / 2.0, x / 2.0).clamp(0.0, 1.0)
}

/// ln of the chi-square density.
fn chi2_ln_pdf(x: f64, df: f64) -> f64 {
    let k = df / 2.0;
    (k - 1.0) * x.ln() - x / 2.0 - k * std::f64::consts::LN_2 - ln_gamma(k)
}

/// The Wilson-Hilferty approximation of the upper-alpha chi-square quantile (the overhead paper eq. 9):
/// chi2_nu ~ nu (1 - 2/(9 nu) + z_alpha sqrt(2/(9 nu)))^3. The paper uses it for nu > 30.
pub fn chi2_critical_wilson_hilferty(df: usize, alpha: f64) -> f64 {
    if df == 0 {
        return 0.0;
    }
    let nu = df as f64;
    let z = normal_upper_quantile(alpha);
    let c = 2.0 / (9.0 * nu);
    let base = (1.0 - c + z * c.sqrt()).max(0.0);
    nu * base * base * base
}

/// The exact chi-square critical value: the x with P(X > x) = alpha for `df` degrees of
/// freedom. Solved on the survival function (so that tiny alpha keeps its digits) by Newton
/// steps safeguarded with bisection, to a relative precision of 1e-13. Returns 0 for df = 0.
pub fn chi2_critical(df: usize, alpha: f64) -> f64 {
    if df == 0 {
        return 0.0;
    }
    let nu = df as f64;
    let alpha = if alpha.is_nan() {
        0.05
    } else {
        alpha.clamp(1e-300, 1.0 - 1e-16)
    };
    // h(x) = sf(x) - alpha is decreasing in x; bracket its root.
    let h = |x: f64| chi2_sf(x, nu) - alpha;
    let mut x = chi2_critical_wilson_hilferty(df, alpha).max(1e-300);
    let (mut lo, mut hi) = (x, x);
    let mut guard = 0;
    while h(lo) < 0.0 && guard < 2000 {
        lo /= 2.0;
        guard += 1;
    }
    guard = 0;
    while h(hi) > 0.0 && guard < 2000 {
        hi = hi * 2.0 + 1.0;
        guard += 1;
    }
    if lo.is_nan() || hi.is_nan() || lo >= hi {
        return x;
    }
    for _ in 0..200 {
        let fx = h(x);
        if fx == 0.0 {
            return x;
        }
        if fx > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        // Newton step: h'(x) = -pdf(x).
        let pdf = chi2_ln_pdf(x, nu).exp();
        let mut next = if pdf > 0.0 && pdf.is_finite() {
            x + fx / pdf
        } else {
            f64::NAN
        };
        if !(next > lo && next < hi) {
            next = 0.5 * (lo + hi);
        }
        if (next - x).abs() <= 1e-13 * next.abs() || (hi - lo) <= 1e-15 * hi {
            return next;
        }
        x = next;
    }
    x
}

/// Loader's Stirling-formula error: ln(n!) - ln(sqrt(2 pi n) (n/e)^n), for n >= 1.
fn stirlerr(n: f64) -> f64 {
    const S0: f64 = 1.0 / 12.0;
    const S1: f64 = 1.0 / 360.0;
    const S2: f64 = 1.0 / 1260.0;
    const S3: f64 = 1.0 / 1680.0;
    const S4: f64 = 1.0 / 1188.0;
    if n <= 15.0 {
        return ln_gamma(n + 1.0) - (n + 0.5) * n.ln() + n - 0.5 * LN_2PI;
    }
    let nn = n * n;
    if n > 500.0 {
        (S0 - S1 / nn) / n
    } else if n > 80.0 {
        (S0 - (S1 - S2 / nn) / nn) / n
    } else if n > 35.0 {
        (S0 - (S1 - (S2 - S3 / nn) / nn) / nn) / n
    } else {
        (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / n
    }
}

/// Loader's deviance term x ln(x/m) + m - x, computed without cancellation when x ~ m.
fn bd0(x: f64, m: f64) -> f64 {
    if (x - m).abs() < 0.1 * (x + m) {
        let v = (x - m) / (x + m);
        let mut s = (x - m) * v;
        let mut ej = 2.0 * x * v;
        let v2 = v * v;
        for j in 1..1000 {
            ej *= v2;
            let s1 = s + ej / f64::from(2 * j + 1);
            if s1 == s {
                return s1;
            }
            s = s1;
        }
        s
    } else {
        x * (x / m).ln() + m - x
    }
}

/// ln P(X = k) for X ~ Binomial(n, p), 0 < p < 1, k <= n (Loader 2000, as in R's dbinom).
pub(crate) fn ln_binomial_pmf(k: u64, n: u64, p: f64) -> f64 {
    let q = 1.0 - p;
    let (kf, nf) = (k as f64, n as f64);
    if k == 0 {
        return nf * (-p).ln_1p();
    }
    if k == n {
        return nf * p.ln();
    }
    let lc =
        stirlerr(nf) - stirlerr(kf) - stirlerr(nf - kf) - bd0(kf, nf * p) - bd0(nf - kf, nf * q);
    let lf = LN_2PI + kf.ln() + (-kf / nf).ln_1p();
    lc - 0.5 * lf
}

#[cfg(test)]
mod tests {
    use super::*;
    use statrs::distribution::{ChiSquared, ContinuousCDF};

    fn rel(a: f64, b: f64) -> f64 {
        ((a - b) / b).abs()
    }

    #[test]
    fn normal_quantiles_match_tables() {
        assert!((normal_upper_quantile(0.05) - 1.644_853_626_951_472).abs() < 1e-12);
        assert!((normal_upper_quantile(0.025) - 1.959_963_984_540_054).abs() < 1e-12);
        assert!((normal_upper_quantile(0.001) - 3.090_232_306_167_813).abs() < 1e-11);
        assert!(normal_upper_quantile(0.5).abs() < 1e-15);
        assert!(normal_upper_quantile(0.0).is_finite());
        assert!(normal_upper_quantile(1.0).is_finite());
    }

    #[test]
    fn chi2_critical_matches_tables() {
        // Values from standard tables (e.g. Abramowitz & Stegun 26.8), 1 - alpha = 0.95 / 0.99.
        let table = [
            (1, 0.05, 3.841_458_820_694_124),
            (2, 0.05, 5.991_464_547_107_979),
            (5, 0.05, 11.070_497_693_516_35),
            (10, 0.05, 18.307_038_053_275_15),
            (30, 0.05, 43.772_971_825_742_18),
            (100, 0.05, 124.342_113_404_259_5),
            (1, 0.01, 6.634_896_601_021_214),
            (10, 0.01, 23.209_251_158_954_36),
            (100, 0.01, 135.806_722_595_236_6),
        ];
        for (df, alpha, want) in table {
            let got = chi2_critical(df, alpha);
            assert!(
                rel(got, want) < 1e-8,
                "df {df} alpha {alpha}: {got} vs {want}"
            );
            assert!((chi2_sf(got, df as f64) - alpha).abs() < 1e-12);
        }
        assert_eq!(chi2_critical(0, 0.05), 0.0);
        assert!(chi2_critical(3, 1e-12).is_finite());
        assert!(chi2_critical(3, 0.999_999).is_finite());
    }

    #[test]
    fn chi2_critical_agrees_with_statrs_inverse_cdf() {
        for df in [1usize, 2, 3, 7, 31, 64, 250, 1000] {
            for alpha in [0.1, 0.05, 0.01] {
                let ours = chi2_critical(df, alpha);
                let theirs = ChiSquared::new(df as f64).unwrap().inverse_cdf(1.0 - alpha);
                assert!(
                    rel(ours, theirs) < 1e-6,
                    "df {df} alpha {alpha}: {ours} vs {theirs}"
                );
            }
        }
    }

    /// The overhead paper (§7) uses Wilson-Hilferty (eq. 9) for more than 30 classes: check it agrees with
    /// the exact quantile within 1 % for every nu > 30 at the usual significance levels.
    #[test]
    fn wilson_hilferty_within_one_percent_above_30() {
        let mut worst: f64 = 0.0;
        for df in 31..=2000usize {
            for alpha in [0.2, 0.1, 0.05, 0.025, 0.01, 0.005, 0.001] {
                let exact = chi2_critical(df, alpha);
                let wh = chi2_critical_wilson_hilferty(df, alpha);
                let e = rel(wh, exact);
                worst = worst.max(e);
                assert!(e < 0.01, "df {df} alpha {alpha}: WH {wh} exact {exact}");
            }
        }
        // It is in fact far better than 1 % there.
        assert!(worst < 0.002, "worst relative error {worst}");
    }

    #[test]
    fn chi2_sf_edges() {
        assert_eq!(chi2_sf(0.0, 3.0), 1.0);
        assert_eq!(chi2_sf(-1.0, 3.0), 1.0);
        assert_eq!(chi2_sf(f64::INFINITY, 3.0), 0.0);
        assert_eq!(chi2_sf(f64::NAN, 3.0), 1.0);
        assert!((chi2_sf(3.841_458_820_694_124, 1.0) - 0.05).abs() < 1e-12);
        assert!((chi2_cdf(3.841_458_820_694_124, 1.0) - 0.95).abs() < 1e-12);
    }

    #[test]
    fn binomial_pmf_matches_direct_formula() {
        for &(n, p) in &[(10u64, 0.3), (50, 0.01), (200, 0.5), (1000, 0.999)] {
            let mut total = 0.0;
            for k in 0..=n {
                let direct = ln_gamma(n as f64 + 1.0)
                    - ln_gamma(k as f64 + 1.0)
                    - ln_gamma((n - k) as f64 + 1.0)
                    + k as f64 * f64::ln(p)
                    + (n - k) as f64 * f64::ln(1.0 - p);
                let ours = ln_binomial_pmf(k, n, p);
                if direct > -700.0 {
                    assert!(
                        (ours - direct).abs() < 1e-9 * direct.abs().max(1.0),
                        "n {n} k {k}"
                    );
                }
                total += ours.exp();
            }
            assert!((total - 1.0).abs() < 1e-12, "n {n} p {p}: {total}");
        }
    }

    #[test]
    fn incomplete_beta_matches_statrs_and_sums() {
        use statrs::function::beta::beta_reg as statrs_beta_reg;
        for &(a, b, x) in &[
            (0.5, 0.5, 0.3),
            (2.0, 3.0, 0.4),
            (10.0, 1.5, 0.9),
            (30.0, 40.0, 0.45),
            (1.0, 7.0, 0.01),
        ] {
            let ours = beta_reg(a, b, x, 1.0 - x);
            let theirs = statrs_beta_reg(a, b, x);
            assert!(
                (ours - theirs).abs() < 1e-13,
                "{a} {b} {x}: {ours} vs {theirs}"
            );
            // I_x(a, b) + I_(1-x)(b, a) = 1.
            let sym = beta_reg(b, a, 1.0 - x, x);
            assert!((ours + sym - 1.0).abs() < 1e-13);
        }
        // Large shape parameters, where 140 terms are not enough: I_x(1, b) = 1 - (1-x)^b.
        let b: f64 = 2.0e5;
        let x: f64 = 3e-6;
        let y = 1.0 - x;
        let x = 1.0 - y; // exact (Sterbenz), so that x + y = 1 holds to the last bit
        let want = -(b * y.ln()).exp_m1();
        assert!((beta_reg(1.0, b, x, y) - want).abs() < 1e-13);
        // Deep tail keeps its relative precision: I_x(a, 1) = x^a.
        assert!((beta_reg(60.0, 1.0, 0.5, 0.5) / 0.5f64.powi(60) - 1.0).abs() < 1e-12);
        assert_eq!(beta_reg(1.0, 1.0, 0.0, 1.0), 0.0);
        assert_eq!(beta_reg(1.0, 1.0, 1.0, 0.0), 1.0);
        assert_eq!(beta_reg(-1.0, 1.0, 0.5, 0.5), 0.0);
    }

    #[test]
    fn normal_tail() {
        assert!((normal_sf(0.0) - 0.5).abs() < 1e-16);
        // statrs' erfc is good to about 5e-11 relative.
        assert!((normal_sf(1.959_963_984_540_054) / 0.025 - 1.0).abs() < 1e-9);
        // Q(10) = 7.6198530241605e-24, kept to relative precision.
        assert!((normal_sf(10.0) / 7.619_853_024_160_527e-24 - 1.0).abs() < 1e-9);
        assert!((normal_sf(-3.0) - (1.0 - normal_sf(3.0))).abs() < 1e-12);
    }
}
