//! Tests of the model families: the Poisson and exponential closed forms, and every family's
//! pmf, tail, quantiles and MLE.
use statrs::function::gamma::gamma_lr;

use super::{negbin, Model, ModelKind};
use crate::histogram::{Binning, ErrorClasses};
use crate::sample::{QMax, Sample};

fn hist(ticks: &[u64], r: f64) -> ErrorClasses {
    let v: Vec<f64> = ticks.iter().map(|&k| 1e-6 + k as f64 * r).collect();
    let s = Sample::new(&v).unwrap();
    ErrorClasses::new(&s, Binning::choose(&s, r, Some(r)).unwrap()).unwrap()
}

#[test]
fn closed_form_mles() {
    let h = hist(&[0, 0, 1, 1, 2, 3, 0, 1], 1e-9); // k-bar = 1
    let p = ModelKind::Poisson.mle(&h).unwrap();
    assert!((p.lambda() - 1.0).abs() < 1e-12);
    let e = ModelKind::Exponential.mle(&h).unwrap();
    // rho = 1/2, lambda = ln 2 / w
    assert!((e.lambda() - std::f64::consts::LN_2 / 1e-9).abs() < 1e-3);
    assert!((e.mean_class() - 1.0).abs() < 1e-12);
}

/// The closed form really is the maximum: the log-likelihood is lower on either side.
#[test]
fn mle_maximizes_the_likelihood() {
    let ticks: Vec<u64> = (0..300u64).map(|i| (i * 7919) % 11 / 3).collect();
    let h = hist(&ticks, 1e-9);
    for kind in [ModelKind::Poisson, ModelKind::Exponential] {
        let m = kind.mle(&h).unwrap();
        let ll = |lam: f64| {
            let mm = kind.with_lambda(lam, h.width_s()).unwrap();
            h.occupied()
                .iter()
                .map(|&(k, c)| c as f64 * mm.ln_pmf(k))
                .sum::<f64>()
        };
        let l0 = ll(m.lambda());
        for f in [0.9, 0.99, 0.999, 1.001, 1.01, 1.1] {
            assert!(ll(m.lambda() * f) < l0, "{kind} factor {f}");
        }
    }
}

#[test]
fn pmf_sums_to_one_and_sf_is_the_tail() {
    for m in [
        Model::Poisson { lambda: 0.3 },
        Model::Poisson { lambda: 7.5 },
        Model::Poisson { lambda: 900.0 },
        Model::Exponential {
            lambda: 2e6,
            width_s: 1e-7,
        },
    ] {
        let mut cum = 0.0;
        for k in 0..3000u64 {
            let tail = 1.0 - cum;
            assert!(
                (m.sf(k) - tail).abs() < 1e-9,
                "{m:?} k {k}: {} vs {tail}",
                m.sf(k)
            );
            cum += m.pmf(k);
        }
        assert!((cum - 1.0).abs() < 1e-9, "{m:?}");
    }
}

#[test]
fn class_quantiles() {
    let q = QMax::new(0.99).unwrap();
    // Poisson(2): P[K <= 5] = 0.9834, P[K <= 6] = 0.9955.
    assert_eq!(Model::Poisson { lambda: 2.0 }.class_quantile(q), 6);
    assert_eq!(Model::Poisson { lambda: 0.011 }.class_quantile(q), 1); // e^-0.011 < 0.99
    assert_eq!(Model::Poisson { lambda: 0.01 }.class_quantile(q), 0); // e^-0.01 > 0.99
    assert_eq!(Model::Poisson { lambda: 0.001 }.class_quantile(q), 0);
    let big = Model::Poisson { lambda: 1e6 }.class_quantile(q);
    assert!((big as f64 - (1e6 + 2.326 * 1e3)).abs() < 5.0, "{big}");
    // Exponential with rho = 1/2: 1 - 2^-(k+1) >= 0.99 first at k = 6.
    let e = Model::Exponential {
        lambda: std::f64::consts::LN_2,
        width_s: 1.0,
    };
    assert_eq!(e.class_quantile(q), 6);
    assert_eq!(e.class_quantile(QMax::new(0.875).unwrap()), 2); // exactly 1 - 2^-3
}

/// The continuous quantile is the class quantile before rounding up, and it is continuous
/// in lambda where the class quantile jumps.
#[test]
fn continuous_class_quantile() {
    let q = QMax::new(0.99).unwrap();
    for lambda in [0.05, 0.3, 1.0, 1.7, 2.0, 2.3, 5.0, 40.0, 1e4] {
        let m = Model::Poisson { lambda };
        let x = m.class_quantile_continuous(q);
        let k = m.class_quantile(q);
        // ceil(x) = k_q, with a little room for the bisection's last digits.
        assert!(
            x <= k as f64 + 1e-9 && x > k as f64 - 1.0,
            "lambda {lambda}: x {x} k {k}"
        );
        // At x the extended CDF equals q.
        let f = 1.0 - gamma_lr(x + 1.0, lambda);
        assert!((f - q.get()).abs() < 1e-9, "lambda {lambda}: F(x) = {f}");
    }
    // Across the jump of k_q from 5 to 6 (near lambda = 1.79) x_q moves by a sliver.
    let (a, b) = (
        Model::Poisson { lambda: 1.780 },
        Model::Poisson { lambda: 1.790 },
    );
    assert_eq!((a.class_quantile(q), b.class_quantile(q)), (5, 6));
    let dx = b.class_quantile_continuous(q) - a.class_quantile_continuous(q);
    assert!(dx > 0.0 && dx < 0.05, "{dx}");
    // Poisson: at an integer x the continuous terr,max is the class one.
    let r = 1e-9;
    let m = Model::Poisson { lambda: 2.0 };
    let x = m.class_quantile_continuous(q);
    assert!((m.terr_max_continuous_s(q, r, r) - x * r).abs() < 1e-21);
    assert!(m.terr_max_continuous_s(q, r, r) <= m.terr_max_s(q, r, r));
    // Exponential with rho = 1/2: x = ln(100)/ln(2) - 1; terr,max unchanged.
    let e = Model::Exponential {
        lambda: std::f64::consts::LN_2,
        width_s: 1.0,
    };
    let want = 100f64.ln() / std::f64::consts::LN_2 - 1.0;
    assert!((e.class_quantile_continuous(q) - want).abs() < 1e-12);
    assert_eq!(
        e.terr_max_continuous_s(q, 1.0, 0.1),
        e.terr_max_s(q, 1.0, 0.1)
    );
}

#[test]
fn terr_max_definitions() {
    let q = QMax::new(0.99).unwrap();
    let p = Model::Poisson { lambda: 2.0 };
    // w = r: k_q w
    assert!((p.terr_max_s(q, 1e-9, 1e-9) - 6e-9).abs() < 1e-21);
    // w = 4 r: the last tick of class 6
    assert!((p.terr_max_s(q, 4e-9, 1e-9) - 27e-9).abs() < 1e-21);
    let e = Model::Exponential {
        lambda: 1e6,
        width_s: 1e-7,
    };
    assert!((e.terr_max_s(q, 1e-7, 1e-9) - 100f64.ln() * 1e-6).abs() < 1e-18);
}

#[test]
fn invalid_lambda_gives_no_model() {
    for l in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(ModelKind::Poisson.with_lambda(l, 1.0).is_none());
        assert!(ModelKind::Exponential.with_lambda(l, 1.0).is_none());
    }
    // with_lambda is for the one-parameter families only.
    assert!(ModelKind::NegBinomial.with_lambda(1.0, 1.0).is_none());
}

/// One model of each new family with a moderate and an extreme parameter set.
fn new_family_models() -> Vec<Model> {
    let w = 1e-7;
    vec![
        Model::NegBinomial { mean: 3.0, r: 2.0 },
        Model::NegBinomial { mean: 20.0, r: 0.3 },
        Model::NegBinomial { mean: 0.2, r: 5.0 },
        Model::NegBinomial {
            mean: 4.0,
            r: negbin::R_MAX,
        },
        Model::LogNormal {
            median_s: 5.0 * w,
            sigma: 0.8,
            width_s: w,
        },
        Model::LogNormal {
            median_s: 0.3 * w,
            sigma: 0.2,
            width_s: w,
        },
        Model::LogNormal {
            median_s: 40.0 * w,
            sigma: 0.05,
            width_s: w,
        },
        Model::Mixture {
            lambda: 4.0,
            tail_lambda: 1.0 / (20.0 * w),
            tail_weight: 0.15,
            width_s: w,
        },
        Model::Mixture {
            lambda: 0.5,
            tail_lambda: 1.0 / (2.0 * w),
            tail_weight: 0.9,
            width_s: w,
        },
    ]
}

#[test]
fn new_families_pmf_sums_to_one_and_sf_is_the_tail() {
    for m in new_family_models() {
        let mut cum = 0.0;
        for k in 0..3000u64 {
            let tail = 1.0 - cum;
            assert!(
                (m.sf(k) - tail).abs() < 1e-9,
                "{m:?} k {k}: {} vs {tail}",
                m.sf(k)
            );
            cum += m.pmf(k);
        }
        assert!((cum - 1.0).abs() < 1e-9, "{m:?}");
        // The tail far out is still a positive, decreasing number (no cancellation to 0).
        let far = m.class_quantile(QMax::new(0.999_999).unwrap()) + 1;
        let (a, b) = (m.sf(far), m.sf(far + 1));
        assert!(
            a > 0.0 && b > 0.0 && b < a && a <= 1e-6 * (1.0 + 1e-6),
            "{m:?}: {a} {b}"
        );
    }
}

/// The negative binomial's special cases: r = 1 is the geometric, large r the Poisson.
#[test]
fn negbin_contains_geometric_and_poisson() {
    let w = 1e-9;
    let g = ModelKind::Exponential
        .with_lambda((1.0f64 / 2.5).ln_1p() / w, w)
        .unwrap();
    let nb = Model::NegBinomial { mean: 2.5, r: 1.0 };
    let p = Model::Poisson { lambda: 2.5 };
    let nbp = Model::NegBinomial {
        mean: 2.5,
        r: negbin::R_MAX,
    };
    for k in 0..40 {
        assert!((nb.ln_pmf(k) - g.ln_pmf(k)).abs() < 1e-12, "k {k}");
        assert!((nb.sf(k) - g.sf(k)).abs() < 1e-12, "k {k}");
        // Relative difference about (k - m)^2 / (2 r) near the mode.
        assert!(
            (nbp.pmf(k) - p.pmf(k)).abs() < 2e-3 * p.pmf(k).max(1e-12),
            "k {k}"
        );
    }
}

#[test]
fn params_names_and_round_trips() {
    for kind in ModelKind::ALL {
        assert_eq!(ModelKind::from_name(kind.name()), Some(kind));
        assert_eq!(kind.param_names().len(), kind.param_units().len());
        assert_eq!(kind.n_params(), kind.param_names().len());
        assert_eq!(kind.lambda_unit(), kind.param_units()[0]);
    }
    assert_eq!(ModelKind::from_name("Poisson"), None);
    assert_eq!(ModelKind::from_name("gamma"), None);
    let w = 1e-7;
    let mut all = new_family_models();
    all.push(Model::Poisson { lambda: 2.0 });
    all.push(Model::Exponential {
        lambda: 3e6,
        width_s: w,
    });
    for m in all {
        let kind = m.kind();
        let p = m.params();
        assert_eq!(p[0], m.lambda());
        assert_eq!(kind.from_params(&p, w), Some(m), "{m:?}");
        // Wrong length, or any parameter out of its domain: None.
        assert_eq!(kind.from_params(&p[1..], w), None);
        for i in 0..p.len() {
            for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
                let mut q = p.clone();
                q[i] = bad;
                assert_eq!(kind.from_params(&q, w), None, "{kind} param {i} = {bad}");
            }
        }
        assert_eq!(kind.from_params(&p, 0.0), None);
    }
    assert_eq!(ModelKind::Mixture.from_params(&[1.0, 1e6, 1.0], w), None);
    assert_eq!(ModelKind::LogNormal.from_params(&[1e-6, 21.0], w), None);
}

#[test]
fn new_family_quantiles_are_consistent() {
    for q in [0.8, 0.99, 0.9999] {
        let qm = QMax::new(q).unwrap();
        for m in new_family_models() {
            let k = m.class_quantile(qm);
            // k_q = min{k : P(K <= k) >= q}
            assert!(m.sf(k + 1) <= 1.0 - q + 1e-12, "{m:?} q {q} k {k}");
            if k > 0 {
                assert!(m.sf(k) > 1.0 - q - 1e-12, "{m:?} q {q} k {k}");
            }
            let x = m.class_quantile_continuous(qm);
            assert!(
                x <= k as f64 + 1e-9 && x > k as f64 - 1.0 - 1e-9,
                "{m:?}: x {x} k {k}"
            );
            let (w, r) = (1e-7, 1e-9);
            let t = m.terr_max_s(qm, w, r);
            let tc = m.terr_max_continuous_s(qm, w, r);
            assert!(t.is_finite() && tc.is_finite() && tc <= t + 1e-18, "{m:?}");
            assert!(t >= tc - w - 1e-18, "{m:?}");
        }
    }
    // The log-normal's quantile is the continuous one: median e^(sigma z_q).
    let m = Model::LogNormal {
        median_s: 1e-6,
        sigma: 0.5,
        width_s: 1e-7,
    };
    let q = QMax::new(0.99).unwrap();
    let want = 1e-6 * (0.5f64 * 2.326_347_874_040_841).exp();
    assert!((m.terr_max_s(q, 1e-7, 1e-9) / want - 1.0).abs() < 1e-9);
    assert_eq!(m.class_quantile(q), (want / 1e-7).ceil() as u64 - 1);
}

/// Draws from a model by inverting its tail: the smallest k with P(K >= k + 1) <= 1 - u.
fn draw(m: &Model, rng: &mut rand::rngs::StdRng) -> u64 {
    use rand::RngExt;
    let u: f64 = rng.random();
    let mut k = 0;
    while m.sf(k + 1) > 1.0 - u && k < 100_000 {
        k += 1;
    }
    k
}

/// None when every draw fell into one class.
fn hist_of(m: &Model, n: usize, seed: u64, w: f64) -> Option<ErrorClasses> {
    use rand::SeedableRng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let v: Vec<f64> = (0..n)
        .map(|_| 1e-5 + draw(m, &mut rng) as f64 * w)
        .collect();
    let s = Sample::new(&v).unwrap();
    ErrorClasses::new(&s, Binning::choose(&s, w, Some(w)).unwrap()).ok()
}

/// On a sample from the family, the MLE has a higher likelihood than every perturbation of
/// each of its parameters by 1-10 %.
#[test]
fn every_mle_maximizes_the_likelihood() {
    let w = 1e-7;
    for (i, gen) in new_family_models().iter().enumerate() {
        if matches!(gen, Model::NegBinomial { r, .. } if *r >= negbin::R_MAX) {
            continue; // the Poisson limit: the maximum is on the boundary
        }
        let Some(h) = hist_of(gen, 600, 100 + i as u64, w) else {
            continue; // a spike within one class: nothing to fit
        };
        let kind = gen.kind();
        let m = kind.mle(&h).unwrap();
        let l0 = m.log_likelihood(&h);
        let p = m.params();
        for j in 0..p.len() {
            for f in [0.9, 0.99, 1.01, 1.1] {
                let mut q = p.clone();
                q[j] *= f;
                let Some(mm) = kind.from_params(&q, w) else {
                    continue;
                };
                let l = mm.log_likelihood(&h);
                assert!(
                    l < l0,
                    "{kind} from {gen:?}: param {j} x {f}: {l} >= {l0} at {p:?}"
                );
            }
        }
    }
}

/// A sample holding one absurd run-time (1e308 s, a bad line of an
/// `mpiover fit` file) put the Poisson's mean at 6e13 classes, where the
/// gamma function's series took 4 s per fit (and more up to the histogram's
/// 2^52 classes): the tails are the normal approximation's there, quick and
/// still right.
#[test]
fn a_poisson_of_2_to_52_classes_is_evaluated_in_milliseconds() {
    let lambda = (1u64 << 52) as f64;
    let m = Model::Poisson { lambda };
    let q = QMax::new(0.99).unwrap();
    let start = std::time::Instant::now();
    let k = m.class_quantile(q) as f64;
    let median = m.sf(lambda as u64);
    let x = m.class_quantile_continuous(q);
    assert!(start.elapsed() < std::time::Duration::from_secs(1));
    // q99 of a normal: lambda + 2.326 sd.
    let want = lambda + 2.3263 * lambda.sqrt();
    assert!((k - want).abs() < 1e-4 * lambda.sqrt(), "{k} vs {want}");
    assert!((x - want).abs() < 1e-4 * lambda.sqrt(), "{x} vs {want}");
    assert!((median - 0.5).abs() < 1e-3, "{median}");
    // Just below the switch the gamma function agrees with it.
    let near = 0.99e8;
    let g = Model::Poisson { lambda: near }.sf(near as u64 + 10_000);
    let n = crate::special::normal_sf((10_000.0 - 0.5) / near.sqrt());
    assert!((g - n).abs() < 1e-4, "{g} vs {n}");
}
