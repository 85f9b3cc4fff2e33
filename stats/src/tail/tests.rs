use super::gpd::{anderson_darling, fit_mle, Gpd};
use super::null::{p_value, simulated_a2, SplitMix};
use super::{fit_tail, terr_max_from_params, LEVELS, MIN_EXCEEDANCES, MIN_SAMPLE};
use crate::sample::{QMax, Sample};

/// The fit and test of `y` reject it at 5 %; no fit (a shape on the heavy edge) counts as a
/// rejection.
fn rejected(y: &[f64]) -> bool {
    match fit_mle(y) {
        None => true,
        Some(g) => p_value(anderson_darling(y, &g), g.xi) < 0.05,
    }
}

fn draws(rng: &mut SplitMix, g: Gpd, k: usize) -> Vec<f64> {
    (0..k)
        .map(|_| g.from_uniform(rng.uniform()).max(1e-300))
        .collect()
}

#[test]
fn mle_recovers_shape_and_scale_of_large_samples() {
    let mut rng = SplitMix(7);
    for &(xi, sigma) in &[(0.0, 1e-6), (0.3, 2e-6), (-0.2, 5e-7), (0.8, 1e-6)] {
        let y = draws(&mut rng, Gpd { xi, sigma }, 5000);
        let g = fit_mle(&y).expect("a fit");
        assert!((g.xi - xi).abs() < 0.06, "xi {xi}: fitted {}", g.xi);
        assert!(
            (g.sigma / sigma - 1.0).abs() < 0.08,
            "sigma {sigma}: fitted {}",
            g.sigma
        );
    }
}

#[test]
fn upper_quantile_inverts_the_cdf() {
    for &xi in &[-0.4, 0.0, 1e-12, 0.5, 1.4] {
        let g = Gpd { xi, sigma: 3.0 };
        for &p in &[0.5, 0.1, 0.01, 1e-4] {
            let y = g.upper_quantile(p);
            assert!(
                (1.0 - g.cdf(y) - p).abs() < 1e-9 * p.max(1e-3),
                "xi {xi} p {p}"
            );
        }
    }
}

#[test]
fn the_test_rejects_true_gpd_samples_about_alpha_of_the_time() {
    // The size of the test with the simulated null (made at 50 exceedances) at other k.
    let mut rng = SplitMix(11);
    for &k in &[20, 50, 200] {
        for &xi in &[0.0, 0.3, -0.2] {
            let runs = 300;
            let rejected = (0..runs)
                .filter(|_| {
                    let y = draws(&mut rng, Gpd { xi, sigma: 1.0 }, k);
                    rejected(&y)
                })
                .count();
            let rate = rejected as f64 / runs as f64;
            assert!(
                (0.015..=0.10).contains(&rate),
                "k {k}, xi {xi}: rejected {rate}"
            );
        }
    }
}

#[test]
fn the_test_rejects_exceedances_with_a_second_mode() {
    // 70 % exponential delays, 30 % at a second level ten scales out: not a GPD.
    let mut rng = SplitMix(13);
    let runs = 100;
    let rejected = (0..runs)
        .filter(|_| {
            let y: Vec<f64> = (0..80)
                .map(|_| {
                    let u = rng.uniform();
                    if rng.uniform() < 0.7 {
                        -(1.0 - u).ln()
                    } else {
                        10.0 + 0.2 * u
                    }
                })
                .collect();
            rejected(&y)
        })
        .count();
    assert!(rejected >= 90, "rejected {rejected} of {runs}");
}

#[test]
fn simulated_statistics_are_reproducible() {
    let a = simulated_a2(&mut SplitMix(5), 0.2, 40);
    let b = simulated_a2(&mut SplitMix(5), 0.2, 40);
    assert_eq!(a, b);
    assert!(a.is_some_and(|v| v > 0.0));
}

/// A multimodal body (three latency levels) and a GPD tail above the top level: the body
/// models fail there, the tail model should give the true 0.99 quantile.
fn levels_and_tail(rng: &mut SplitMix, n: usize) -> (Vec<f64>, f64) {
    let tail = Gpd {
        xi: 0.2,
        sigma: 0.4e-6,
    };
    let v = (0..n)
        .map(|_| {
            let u = rng.uniform();
            match rng.uniform() {
                r if r < 0.4 => 1e-6 + 0.02e-6 * u,
                r if r < 0.65 => 1.5e-6 + 0.02e-6 * u,
                r if r < 0.8 => 2.2e-6 + 0.02e-6 * u,
                _ => 2.3e-6 + tail.from_uniform(u),
            }
        })
        .collect();
    // P(T > x) = 0.2 P(Y > x - 2.3 us) = 0.01.
    (v, 2.3e-6 + tail.upper_quantile(0.05))
}

#[test]
fn a_gpd_tail_above_a_multimodal_body_gives_the_true_quantile() {
    let mut rng = SplitMix(17);
    let q = QMax::new(0.99).unwrap();
    let mut errs = Vec::new();
    for _ in 0..40 {
        let (v, truth) = levels_and_tail(&mut rng, 400);
        let s = Sample::new(&v).unwrap();
        let t = fit_tail(&s, q, 0.05).expect("a tail fit");
        if t.accepted {
            errs.push((t.tmax_s / truth - 1.0).abs());
            let again = terr_max_from_params(&t.params(), 0.99).unwrap();
            assert!((s.min() + again - t.tmax_s).abs() < 1e-15);
        }
    }
    assert!(errs.len() >= 30, "accepted on {} of 40", errs.len());
    errs.sort_by(f64::total_cmp);
    let median = errs[errs.len() / 2];
    assert!(median < 0.15, "median relative error of tmax {median}");
}

#[test]
fn parameters_that_are_not_a_tail_model_give_none() {
    assert!(terr_max_from_params(&[1e-6, 0.1, 1e-6], 0.99).is_none());
    assert!(terr_max_from_params(&[1e-6, 0.1, -1e-6, 0.1], 0.99).is_none());
    assert!(terr_max_from_params(&[1e-6, 0.1, 1e-6, 0.005], 0.99).is_none());
    assert!(terr_max_from_params(&[1e-6, f64::NAN, 1e-6, 0.1], 0.99).is_none());
    assert!(terr_max_from_params(&[1e-6, 9.0, 1e-6, 0.1], 0.99).is_none());
    assert!(terr_max_from_params(&[1e-6, 0.1, 1e-6, 0.1], 0.99).is_some());
}

#[test]
fn min_sample_follows_the_lowest_threshold() {
    let needed = (MIN_EXCEEDANCES as f64 / (1.0 - LEVELS[0])).ceil() as usize;
    assert_eq!(MIN_SAMPLE, needed);
}
