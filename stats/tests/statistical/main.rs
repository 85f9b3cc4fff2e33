//! Statistical properties of the whole fit on synthetic samples from known distributions
//! (what the statistics must do). Every loop is seeded, so the figures are reproducible; the
//! thresholds are a few standard errors wide around what the theory predicts.

use mpiover_stats::FitResult;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Exp, Poisson};

mod families;
mod inputs;
mod models;
mod significance;
mod stopping;

const NS: f64 = 1e-9;

/// floor + k r with k ~ Poisson(lambda): errors of whole timer ticks, the paper's Poisson case.
fn poisson_ticks(rng: &mut StdRng, n: usize, lambda: f64, r: f64) -> Vec<f64> {
    let d = Poisson::new(lambda).unwrap();
    (0..n).map(|_| (12_345.0 + d.sample(rng)) * r).collect()
}

/// floor + exponential error of the given mean, truncated to whole ticks of r as a timer does.
fn exponential_ticks(rng: &mut StdRng, n: usize, mean_s: f64, r: f64) -> Vec<f64> {
    let d = Exp::new(1.0 / mean_s).unwrap();
    (0..n)
        .map(|_| (12_345.0 + (d.sample(rng) / r).floor()) * r)
        .collect()
}

fn fraction(hits: usize, total: usize) -> f64 {
    hits as f64 / total as f64
}

/// Every number in the result is finite, tmax lies between min and the model's support.
fn check_sane(r: &FitResult) {
    let json = serde_json_like(r);
    assert!(!json.contains("NaN") && !json.contains("inf"), "{json}");
    assert!(r.tmax_s.is_finite() && r.tmax_s >= r.min_s);
    assert!(r.bin_width_s >= r.resolution_s * (1.0 - 1e-12));
    for m in &r.models {
        assert!(m.lambda > 0.0 && m.lambda.is_finite() && m.chi2.is_finite() && m.chi2 >= 0.0);
        assert_eq!(m.params.len(), m.kind.n_params());
        assert_eq!(m.params[0], m.lambda);
        assert!(
            m.params.iter().all(|p| *p > 0.0 && p.is_finite()),
            "{:?}",
            m.params
        );
        assert!(m.log_likelihood.is_finite() && m.log_likelihood <= 0.0);
        assert!(m.aic.is_finite() && m.tmax_s.is_finite() && m.mean_error_s.is_finite());
        let k = m.kind.n_params() as f64;
        assert!((m.aic - (2.0 * k - 2.0 * m.log_likelihood)).abs() < 1e-9 * m.aic.abs().max(1.0));
        assert!(
            (m.bic - (k * (r.n as f64).ln() - 2.0 * m.log_likelihood)).abs()
                < 1e-9 * m.bic.abs().max(1.0)
        );
        // The stored parameters rebuild the model, and it gives the same tmax.
        let model = m
            .kind
            .from_params(&m.params, r.bin_width_s)
            .expect("params rebuild");
        let q = mpiover_stats::QMax::new(r.q_max).unwrap();
        assert_eq!(
            r.min_s + model.terr_max_s(q, r.bin_width_s, r.resolution_s),
            m.tmax_s
        );
        // Refinement is kept only when it lowers chi-square.
        if m.refined {
            assert!(
                m.chi2 < m.chi2_mle,
                "{}: refined but chi2 {} >= {}",
                m.kind,
                m.chi2,
                m.chi2_mle
            );
        } else {
            assert_eq!(m.chi2, m.chi2_mle);
        }
        let total: f64 = m.classes.iter().map(|g| g.expected).sum();
        assert!((total - r.n as f64).abs() < 1e-6 * r.n as f64);
        if m.df > 0 {
            assert!(
                m.classes.iter().all(|g| g.expected >= 5.0 - 1e-9),
                "{}",
                m.kind
            );
            assert_eq!(m.df, m.classes.len() - 1 - m.kind.n_params());
        }
    }
}

/// Debug formatting is enough to find NaN/inf (no serde_json dependency needed here).
fn serde_json_like(r: &FitResult) -> String {
    format!("{r:?}")
}
