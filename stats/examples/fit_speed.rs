//! Micro-benchmark of the fit: samples per second for N = 1,000 and 100,000, and the cost of
//! one stopping-rule check. Run with
//! `cargo run --release -p mpiover-stats --example fit_speed`.
use std::hint::black_box;
use std::time::{Duration, Instant};

use mpiover_stats::{fit, FitOptions, Stop, StoppingRule};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp, Poisson};

/// 10 us floor plus exponential errors of mean 1 us, on a 1 ns timer.
fn exponential(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let d = Exp::new(1.0f64).unwrap();
    (0..n)
        .map(|_| (10_000.0 + (1000.0 * d.sample(&mut rng)).floor()) * 1e-9)
        .collect()
}

/// 10 us floor plus Poisson(2) ticks of 1 ns.
fn poisson(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    let d = Poisson::new(2.0f64).unwrap();
    (0..n)
        .map(|_| (10_000.0 + d.sample(&mut rng)) * 1e-9)
        .collect()
}

/// Mean time of `f` over at least `min_time` (and 3 calls).
fn time<F: FnMut()>(mut f: F, min_time: Duration) -> Duration {
    f(); // warm-up
    let start = Instant::now();
    let mut calls = 0u32;
    while calls < 3 || start.elapsed() < min_time {
        f();
        calls += 1;
    }
    start.elapsed() / calls
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    format!("{model}, {cpus} cores available")
}

fn main() {
    println!("machine: {}", machine());
    if cfg!(debug_assertions) {
        println!("warning: debug build; use --release for meaningful figures");
    }
    let opts = FitOptions::default();
    println!(
        "{:<12} {:>9} {:>12} {:>16} {:>10}",
        "errors", "N", "time/fit", "samples/s", "chosen"
    );
    for (name, gen) in [
        ("exponential", exponential as fn(usize, u64) -> Vec<f64>),
        ("poisson", poisson),
    ] {
        for n in [1_000usize, 100_000] {
            let v = gen(n, 42);
            let r = fit(&v, &opts).expect("fit");
            let t = time(
                || drop(black_box(fit(black_box(&v), &opts))),
                Duration::from_millis(700),
            );
            println!(
                "{:<12} {:>9} {:>9.1} us {:>16.3e} {:>10}",
                name,
                n,
                t.as_secs_f64() * 1e6,
                n as f64 / t.as_secs_f64(),
                r.chosen.as_deref().unwrap_or("fallback")
            );
        }
    }
    let rule = StoppingRule::default();
    for n in [200usize, 1_000, 5_000] {
        let v = exponential(n, 7);
        let t = time(
            || {
                black_box(rule.check(black_box(&v), &opts));
            },
            Duration::from_millis(500),
        );
        let verdict = match rule.check(&v, &opts) {
            Stop::Continue { .. } => "continue",
            Stop::Stable { .. } => "stable",
            Stop::Exhausted { .. } => "exhausted",
        };
        println!(
            "stopping-rule check at N = {n:>5}: {:>8.1} us ({verdict})",
            t.as_secs_f64() * 1e6
        );
    }
}
