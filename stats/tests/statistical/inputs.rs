//! Awkward inputs: odd timer resolutions, degenerate samples, untestable
//! models.

use mpiover_stats::{fit, FitOptions, ModelKind, StatsError};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Poisson};

use super::{check_sane, NS};

/// Tick-quantized data at an odd resolution: the classes are exactly the tick counts, so the
/// Poisson MLE equals the mean tick count to the last digit.
#[test]
pub(crate) fn quantized_odd_resolution_end_to_end() {
    let r = 3.3e-8;
    let mut rng = StdRng::seed_from_u64(9);
    let d = Poisson::new(1.2f64).unwrap();
    let ticks: Vec<u64> = (0..2000).map(|_| d.sample(&mut rng) as u64).collect();
    // As a profile would store them: decimal text, read back.
    let v: Vec<f64> = ticks
        .iter()
        .map(|&k| format!("{:e}", (30_303 + k) as f64 * r).parse().unwrap())
        .collect();
    let kmin = *ticks.iter().min().unwrap();
    let want = ticks.iter().map(|&k| (k - kmin) as f64).sum::<f64>() / ticks.len() as f64;
    let opts = FitOptions {
        resolution_s: r,
        ..FitOptions::default()
    };
    let res = fit(&v, &opts).unwrap();
    assert_eq!(res.bin_width_s, r);
    assert_eq!(res.model(ModelKind::Poisson).unwrap().lambda_mle, want);
    assert_eq!(res.max_class, ticks.iter().max().unwrap() - kmin);
    // Twice the resolution as bin width: classes are tick pairs.
    let res2 = fit(
        &v,
        &FitOptions {
            bin_width_s: Some(2.0 * r),
            ..opts
        },
    )
    .unwrap();
    let want2 = ticks.iter().map(|&k| ((k - kmin) / 2) as f64).sum::<f64>() / ticks.len() as f64;
    assert_eq!(res2.mean_class, want2);
}

#[test]
pub(crate) fn degenerate_inputs_are_clear_errors() {
    let o = FitOptions::default();
    let ok: Vec<f64> = (0..100).map(|i| 1e-6 + f64::from(i % 7) * NS).collect();
    assert_eq!(
        fit(&ok[..10], &o).unwrap_err(),
        StatsError::TooFewSamples { n: 10, min: 50 }
    );
    assert_eq!(
        fit(&[], &o).unwrap_err(),
        StatsError::TooFewSamples { n: 0, min: 50 }
    );
    assert!(matches!(
        fit(&[3e-6; 80], &o),
        Err(StatsError::AllEqual { n: 80, .. })
    ));
    let mut bad = ok.clone();
    bad[42] = f64::NAN;
    assert!(matches!(
        fit(&bad, &o),
        Err(StatsError::NonFinite { index: 42, .. })
    ));
    bad[42] = -1e-6;
    assert!(matches!(
        fit(&bad, &o),
        Err(StatsError::Negative { index: 42, .. })
    ));
    for res in [0.0, -1.0, f64::NAN] {
        let e = fit(
            &ok,
            &FitOptions {
                resolution_s: res,
                ..o.clone()
            },
        )
        .unwrap_err();
        assert!(matches!(e, StatsError::BadResolution(_)));
    }
    for q in [0.5, 1.0, 0.7999] {
        let e = fit(
            &ok,
            &FitOptions {
                q_max: q,
                ..o.clone()
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("0.8 <= q_max < 1"), "{e}");
    }
    for a in [0.0, 1.0, -0.1, f64::NAN] {
        assert!(matches!(
            fit(
                &ok,
                &FitOptions {
                    alpha: a,
                    ..o.clone()
                }
            ),
            Err(StatsError::BadAlpha(_))
        ));
    }
    let e = fit(
        &ok,
        &FitOptions {
            bin_width_s: Some(1e-10),
            ..o.clone()
        },
    )
    .unwrap_err();
    assert!(matches!(e, StatsError::BinWidthBelowResolution { .. }));
    let e = fit(
        &ok,
        &FitOptions {
            bin_width_s: Some(1e-3),
            ..o.clone()
        },
    )
    .unwrap_err();
    assert!(matches!(e, StatsError::SingleClass { n: 100, .. }), "{e}");
    // Messages say what and how many.
    assert_eq!(
        StatsError::TooFewSamples { n: 10, min: 50 }.to_string(),
        "too few samples: 10 given, at least 50 needed"
    );
}

/// A two-valued sample: both models have a single class after merging and cannot be tested.
#[test]
pub(crate) fn untestable_models_fall_back() {
    let v: Vec<f64> = (0..60)
        .map(|i| if i % 10 == 0 { 1e-6 + NS } else { 1e-6 })
        .collect();
    let r = fit(&v, &FitOptions::default()).unwrap();
    check_sane(&r);
    assert!(r
        .models
        .iter()
        .all(|m| m.verdict == mpiover_stats::Verdict::Untestable));
    assert!(r.fallback);
    assert!(
        r.notes.iter().any(|s| s.contains("too few to test")),
        "{:?}",
        r.notes
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 200,
        rng_seed: proptest::test_runner::RngSeed::Fixed(3),
        ..ProptestConfig::default()
    })]

    /// Whatever the (valid) input, fit returns a sane result or an error: never a panic, never
    /// a NaN or infinity.
    #[test]
    fn fit_is_total(
        raw in proptest::collection::vec(0.0f64..1.0, 0..400),
        scale_exp in -9i32..0,
        floor in 0.0f64..1e-3,
        res_exp in -10i32..-5,
        q in 0.8f64..0.9999,
        refine in any::<bool>(),
    ) {
        let scale = 10f64.powi(scale_exp);
        let v: Vec<f64> = raw.iter().map(|u| floor + u * u * u * scale).collect();
        let opts = FitOptions { resolution_s: 10f64.powi(res_exp), q_max: q, refine, ..FitOptions::default() };
        if let Ok(r) = fit(&v, &opts) {
            check_sane(&r);
            prop_assert!(r.tmax_s <= r.max_s + r.bin_width_s * 1e6);
        }
    }
}
