//! Compares selection rules among the accepted models on synthetic samples from each family:
//! how often each rule picks each family, and the error of the tmax it gives against the true
//! q_max quantile of the generating distribution. Run with
//! `cargo run --release -p mpiover-stats --example selection_rules`.
use mpiover_stats::{fit, FitOptions, FitResult, Model, ModelFit, ModelKind, QMax};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Gamma, LogNormal, Poisson};

const NS: f64 = 1e-9;
const FLOOR: f64 = 10_000.0;

/// A generator of error ticks (1 ns) and the true 0.99 quantile of the error in seconds.
struct Gen {
    name: &'static str,
    draw: Box<dyn Fn(&mut StdRng) -> f64>,
    true_q_s: f64,
}

fn discrete_q(m: Model) -> f64 {
    m.class_quantile(QMax::new(0.99).unwrap()) as f64 * NS
}

fn gens() -> Vec<Gen> {
    let p = Poisson::new(2.0f64).unwrap();
    let e = Exp::new(1.0f64 / 1000.0).unwrap();
    let (m, r) = (30.0f64, 2.0f64);
    let g = Gamma::new(r, m / r).unwrap();
    let ln = LogNormal::new(1000f64.ln(), 0.8).unwrap();
    let body = Poisson::new(6.0f64).unwrap();
    let tail = Exp::new(1.0f64 / 300.0).unwrap();
    // Body plus delay (a convolution, not a member of any family): simulate its quantile.
    let delayed = move |rng: &mut StdRng| {
        let b = body.sample(rng);
        let t = if rand::RngExt::random::<f64>(rng) < 0.15 {
            tail.sample(rng).floor()
        } else {
            0.0
        };
        b + t
    };
    let mut rng = StdRng::seed_from_u64(99);
    let mut big: Vec<f64> = (0..2_000_000).map(|_| delayed(&mut rng)).collect();
    big.sort_by(f64::total_cmp);
    let delayed_q = big[(0.99 * big.len() as f64).ceil() as usize - 1] * NS;
    let mix = Model::Mixture {
        lambda: 6.0,
        tail_lambda: 1.0 / 300.0,
        tail_weight: 0.15,
        width_s: 1.0,
    };
    vec![
        Gen {
            name: "poisson(2)",
            draw: Box::new(move |rng| p.sample(rng)),
            true_q_s: discrete_q(Model::Poisson { lambda: 2.0 }),
        },
        Gen {
            name: "exp(1us)",
            draw: Box::new(move |rng| e.sample(rng).floor()),
            true_q_s: 100f64.ln() * 1000.0 * NS,
        },
        Gen {
            name: "negbin(30,2)",
            draw: Box::new(move |rng| {
                let lam = g.sample(rng);
                Poisson::new(lam.max(1e-9)).unwrap().sample(rng)
            }),
            true_q_s: discrete_q(Model::NegBinomial { mean: m, r }),
        },
        Gen {
            name: "lognorm(1us,.8)",
            draw: Box::new(move |rng| ln.sample(rng).floor()),
            true_q_s: 1000.0 * NS * (0.8f64 * 2.326_347_874).exp(),
        },
        Gen {
            name: "mixture",
            draw: Box::new(move |rng| {
                if rand::RngExt::random::<f64>(rng) < 0.15 {
                    tail.sample(rng).floor()
                } else {
                    body.sample(rng)
                }
            }),
            true_q_s: discrete_q(mix),
        },
        Gen {
            name: "body+delay",
            draw: Box::new(delayed),
            true_q_s: delayed_q,
        },
    ]
}

type Rule = fn(&FitResult) -> Option<&ModelFit>;

fn accepted(r: &FitResult) -> impl Iterator<Item = &ModelFit> {
    r.models.iter().filter(|m| m.accepted)
}

fn by_aic(r: &FitResult) -> Option<&ModelFit> {
    accepted(r).min_by(|a, b| a.aic.total_cmp(&b.aic))
}
fn by_bic(r: &FitResult) -> Option<&ModelFit> {
    let bic = |m: &ModelFit| m.kind.n_params() as f64 * (r.n as f64).ln() - 2.0 * m.log_likelihood;
    accepted(r).min_by(|a, b| bic(a).total_cmp(&bic(b)))
}
fn by_chi2(r: &FitResult) -> Option<&ModelFit> {
    accepted(r).min_by(|a, b| a.chi2.total_cmp(&b.chi2))
}
fn by_pvalue(r: &FitResult) -> Option<&ModelFit> {
    accepted(r).max_by(|a, b| {
        a.p_value
            .unwrap_or(0.0)
            .total_cmp(&b.p_value.unwrap_or(0.0))
    })
}
fn fewest(r: &FitResult) -> Option<&ModelFit> {
    accepted(r).min_by(|a, b| {
        a.kind
            .n_params()
            .cmp(&b.kind.n_params())
            .then(a.aic.total_cmp(&b.aic))
    })
}

fn main() {
    let rules: [(&str, Rule); 5] = [
        ("aic", by_aic),
        ("bic", by_bic),
        ("min chi2", by_chi2),
        ("max p", by_pvalue),
        ("fewest+aic", fewest),
    ];
    let reps = 200;
    for n in [200usize, 400, 1000] {
        println!("N = {n}, {reps} samples each; q_max 0.99; error of tmax - floor relative to the true quantile");
        for g in gens() {
            let mut rng = StdRng::seed_from_u64(7);
            let fits: Vec<FitResult> = (0..reps)
                .map(|_| {
                    let v: Vec<f64> = (0..n).map(|_| (FLOOR + (g.draw)(&mut rng)) * NS).collect();
                    fit(&v, &FitOptions::default()).unwrap()
                })
                .collect();
            let acc: Vec<usize> = ModelKind::ALL
                .iter()
                .map(|&k| {
                    fits.iter()
                        .filter(|r| r.model(k).is_some_and(|m| m.accepted))
                        .count()
                })
                .collect();
            println!(
                "  {:<16} accepted {:?} (of {reps}, order {:?})",
                g.name,
                acc,
                ModelKind::ALL.map(|k| k.name())
            );
            for (rname, rule) in rules {
                let mut counts = [0usize; 6];
                let mut se = 0.0;
                let mut bias = 0.0;
                for r in &fits {
                    let terr = rule(r).map_or(r.empirical_tmax_s, |m| m.tmax_s) - FLOOR * NS;
                    let rel = terr / g.true_q_s - 1.0;
                    se += rel * rel;
                    bias += rel;
                }
                for r in &fits {
                    let idx = rule(r).map_or(5, |m| {
                        ModelKind::ALL.iter().position(|&k| k == m.kind).unwrap()
                    });
                    counts[idx] += 1;
                }
                println!(
                    "    {:<11} chosen P/E/NB/LN/MIX/fallback {:?}  rel. error rms {:.3} bias {:+.3}",
                    rname,
                    counts,
                    (se / reps as f64).sqrt(),
                    bias / reps as f64
                );
            }
        }
    }
}
