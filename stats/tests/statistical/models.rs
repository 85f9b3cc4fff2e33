//! The fit on samples of known models: parameters recovered, the right model
//! chosen, the test's size, the fallback and its interval.

use mpiover_stats::{fit, quantile_ci, FitOptions, ModelKind, Sample};
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::{check_sane, exponential_ticks, fraction, poisson_ticks, NS};

#[test]
pub(crate) fn poisson_lambda_is_recovered() {
    let mut rng = StdRng::seed_from_u64(1);
    let (n, reps) = (1000usize, 150usize);
    let mut within_196 = 0;
    for _ in 0..reps {
        let lambda = rng.random_range(0.3..3.0);
        let r = fit(
            &poisson_ticks(&mut rng, n, lambda, NS),
            &FitOptions::default(),
        )
        .unwrap();
        check_sane(&r);
        assert_eq!(
            r.bin_width_s, NS,
            "tick errors of a few ticks are binned one tick wide"
        );
        let m = r.model(ModelKind::Poisson).unwrap();
        let se = (lambda / n as f64).sqrt();
        assert!(
            (m.lambda_mle - lambda).abs() < 4.5 * se,
            "lambda {lambda}: {}",
            m.lambda_mle
        );
        assert!((m.lambda - lambda).abs() < 5.0 * se, "refined {}", m.lambda);
        within_196 += usize::from((m.lambda_mle - lambda).abs() <= 1.96 * se);
    }
    // 95 % expected; 0.9 is more than 3 standard errors below.
    assert!(fraction(within_196, reps) >= 0.9, "{within_196}/{reps}");
}

#[test]
pub(crate) fn exponential_lambda_is_recovered() {
    let mut rng = StdRng::seed_from_u64(2);
    let (n, reps) = (1000usize, 150usize);
    let mut within_196 = 0;
    for _ in 0..reps {
        let mean = rng.random_range(0.2e-6..5e-6);
        let lambda = 1.0 / mean;
        let r = fit(
            &exponential_ticks(&mut rng, n, mean, NS),
            &FitOptions::default(),
        )
        .unwrap();
        check_sane(&r);
        let m = r.model(ModelKind::Exponential).unwrap();
        let se = lambda / (n as f64).sqrt();
        assert!(
            (m.lambda_mle - lambda).abs() < 4.5 * se,
            "lambda {lambda}: {}",
            m.lambda_mle
        );
        within_196 += usize::from((m.lambda_mle - lambda).abs() <= 1.96 * se);
        // tmax of the chosen exponential is the continuous quantile.
        if r.chosen_kind() == Some(ModelKind::Exponential) {
            let want = r.min_s - (1.0f64 - 0.99).ln() / m.lambda;
            assert!((r.tmax_s - want).abs() < 1e-15);
        }
    }
    assert!(fraction(within_196, reps) >= 0.9, "{within_196}/{reps}");
}

#[test]
pub(crate) fn generating_model_is_chosen_at_n_1000() {
    let mut rng = StdRng::seed_from_u64(3);
    let (n, reps) = (1000usize, 150usize);
    let mut chosen = [0usize; 2];
    for i in 0..reps {
        let lambda = [0.5, 1.0, 2.0, 3.0][i % 4];
        let r = fit(
            &poisson_ticks(&mut rng, n, lambda, NS),
            &FitOptions::default(),
        )
        .unwrap();
        chosen[0] += usize::from(r.chosen_kind() == Some(ModelKind::Poisson));
        if r.chosen_kind() == Some(ModelKind::Poisson) {
            // tmax = min + k_q w with w = r (the last tick of class k_q).
            let m = r.model(ModelKind::Poisson).unwrap();
            assert!((r.tmax_s - (r.min_s + m.quantile_class as f64 * NS)).abs() < 1e-18);
        }
        let mean = [0.1e-6, 1e-6, 20e-6][i % 3];
        let r = fit(
            &exponential_ticks(&mut rng, n, mean, NS),
            &FitOptions::default(),
        )
        .unwrap();
        chosen[1] += usize::from(r.chosen_kind() == Some(ModelKind::Exponential));
    }
    println!(
        "chosen: poisson {}/{reps}, exponential {}/{reps}",
        chosen[0], chosen[1]
    );
    assert!(
        fraction(chosen[0], reps) >= 0.9,
        "poisson chosen {}/{reps}",
        chosen[0]
    );
    assert!(
        fraction(chosen[1], reps) >= 0.9,
        "exponential chosen {}/{reps}",
        chosen[1]
    );
}

/// The size of the test: a correct model is rejected at about alpha of the time.
#[test]
pub(crate) fn test_size_is_alpha() {
    let mut rng = StdRng::seed_from_u64(4);
    let (n, reps) = (500usize, 400usize);
    for alpha in [0.05, 0.10] {
        let opts = FitOptions {
            alpha,
            ..FitOptions::default()
        };
        let mut rejected = [0usize; 2];
        for i in 0..reps {
            let lambda = [0.8, 1.5, 2.5][i % 3];
            let r = fit(&poisson_ticks(&mut rng, n, lambda, NS), &opts).unwrap();
            rejected[0] += usize::from(!r.model(ModelKind::Poisson).unwrap().accepted);
            let r = fit(&exponential_ticks(&mut rng, n, 1e-6, NS), &opts).unwrap();
            rejected[1] += usize::from(!r.model(ModelKind::Exponential).unwrap().accepted);
        }
        for (name, k) in ["poisson", "exponential"].iter().zip(rejected) {
            let rate = fraction(k, reps);
            println!("alpha {alpha}: {name} rejected {rate:.3}");
            // Standard error sqrt(alpha (1 - alpha) / 400) is 1.1 to 1.5 points: allow 3 points.
            assert!(
                (rate - alpha).abs() <= 0.03,
                "alpha {alpha}: {name} rejected at {rate}"
            );
        }
    }
}

#[test]
pub(crate) fn bimodal_sample_is_rejected_by_both_and_falls_back() {
    let mut rng = StdRng::seed_from_u64(5);
    let n = 1000;
    // Two modes 2 us apart (say eager vs. rendezvous path), each with small exponential noise.
    let mut v = exponential_ticks(&mut rng, n / 2, 50e-9, NS);
    v.extend(
        exponential_ticks(&mut rng, n / 2, 50e-9, NS)
            .iter()
            .map(|t| t + 2e-6),
    );
    // The upper mode's errors are exponential: the tail model fits them.
    let with_tail = fit(&v, &FitOptions::default()).unwrap();
    check_sane(&with_tail);
    assert!(!with_tail.fallback && with_tail.tail.as_ref().is_some_and(|t| t.accepted));
    // Without it, the empirical quantile.
    let no_tail = FitOptions {
        tail: false,
        ..FitOptions::default()
    };
    let r = fit(&v, &no_tail).unwrap();
    check_sane(&r);
    assert!(r.models.iter().all(|m| !m.accepted), "{:?}", r.models);
    assert!(r.fallback);
    assert_eq!(r.chosen, None);
    let s = Sample::new(&v).unwrap();
    assert_eq!(r.tmax_s, s.quantile_inverse_cdf(0.99));
    assert_eq!(r.tmax_s, r.empirical_tmax_s);
    let (lo, hi) = r
        .fallback_ci
        .expect("n = 1000 allows a 95% CI of the 0.99 quantile");
    let (rl, rh) = quantile_ci(n, 0.99, 0.95).unwrap();
    assert_eq!((lo, hi), (s.order_stat(rl), s.order_stat(rh)));
    assert!(lo <= r.tmax_s && r.tmax_s <= hi);
    assert_eq!(r.fallback_ci_nominal, Some(true));
    let cov = r.fallback_ci_coverage.unwrap();
    assert!((0.94..1.0).contains(&cov), "{cov}");
    assert!(r.decision().contains("no model fits"));
}

/// At the calibration's usual n = 200 no 95 % interval of the 0.99 quantile exists; the
/// fallback gives the widest interval, [x_(195), x_(200)], with its exact coverage (hand
/// computation in `quantile::tests::widest_interval_at_n_200`) and says so.
#[test]
pub(crate) fn fallback_at_n_200_gives_the_widest_interval_and_its_coverage() {
    let mut rng = StdRng::seed_from_u64(6);
    let mut v = exponential_ticks(&mut rng, 100, 50e-9, NS);
    v.extend(
        exponential_ticks(&mut rng, 100, 50e-9, NS)
            .iter()
            .map(|t| t + 2e-6),
    );
    let no_tail = FitOptions {
        tail: false,
        ..FitOptions::default()
    };
    let r = fit(&v, &no_tail).unwrap();
    check_sane(&r);
    assert!(r.fallback);
    let s = Sample::new(&v).unwrap();
    assert_eq!(r.fallback_ci, Some((s.order_stat(195), s.max())));
    assert_eq!(r.fallback_ci_nominal, Some(false));
    let cov = r.fallback_ci_coverage.unwrap();
    // 1 - P(A >= 6) - 0.99^200 with A ~ Bin(200, 0.01): 1 - 0.01602 - 0.13398 = 0.85000.
    assert!((cov - 0.85000).abs() < 5e-5, "{cov}");
    assert!(cov < 1.0 - 0.99f64.powi(200));
    assert!(
        r.notes
            .iter()
            .any(|s| s.contains("too few for a 95% confidence interval")
                && s.contains("widest")
                && s.contains("85.0%")),
        "{:?}",
        r.notes
    );
}

/// The stated coverage is the real one: over many samples of 200 uniform values the widest
/// interval [x_(195), x_(200)] contains the true 0.99 quantile (0.99) at the stated rate.
#[test]
pub(crate) fn widest_interval_covers_at_its_stated_rate() {
    let ci = mpiover_stats::quantile_ci_with_coverage(200, 0.99, 0.95).unwrap();
    assert_eq!((ci.lo_rank, ci.hi_rank), (195, 200));
    let mut rng = StdRng::seed_from_u64(66);
    let reps = 4000;
    let mut hits = 0;
    for _ in 0..reps {
        let mut u: Vec<f64> = (0..200).map(|_| rng.random::<f64>()).collect();
        u.sort_unstable_by(f64::total_cmp);
        hits += usize::from(u[ci.lo_rank - 1] <= 0.99 && 0.99 <= u[ci.hi_rank - 1]);
    }
    let rate = fraction(hits, reps);
    println!(
        "widest interval: stated coverage {:.4}, observed {rate:.4}",
        ci.coverage
    );
    // Standard error sqrt(0.85 * 0.15 / 4000) = 0.0056: allow 3.5 of them.
    assert!(
        (rate - ci.coverage).abs() < 0.02,
        "{rate} vs {}",
        ci.coverage
    );
}
