//! The null distribution of the Anderson-Darling statistic for a GPD whose shape and scale were
//! both estimated from the same exceedances, and the p-value it gives.
//!
//! With estimated parameters A^2 no longer has its case-0 distribution, and its distribution
//! depends on the true shape (not on the scale, which the statistic is invariant to). Choulakian
//! & Stephens (2001, "Goodness-of-fit tests for the generalized Pareto distribution",
//! Technometrics 43: 478-484) tabulated it by simulation, per shape, and found it to depend little
//! on the number of exceedances once there are a few dozen. The same is done here, by this
//! crate's own fit, so that the test and the estimator always agree: for each shape of
//! [`XI_GRID`], [`REPLICATES`] samples of [`K_SIM`] exceedances are drawn from a GPD with that
//! shape, each is refitted, and its A^2 kept. The p-value of an observed A^2 is the share of the
//! simulated values at or above it, interpolated linearly in the fitted shape between the two
//! nearest grid shapes. The simulation is deterministic (a fixed seed), runs once per process
//! when a tail is first tested (about half a second), and the test's size is checked in the
//! crate's tests at 20 to 200 exceedances.
use std::sync::OnceLock;

use super::gpd::{anderson_darling, fit_mle, Gpd};

/// The shapes simulated.
pub const XI_GRID: [f64; 10] = [-0.4, -0.2, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4];
/// Exceedances per simulated sample.
pub const K_SIM: usize = 50;
/// Simulated samples per shape.
pub const REPLICATES: usize = 800;
const SEED: u64 = 0x006d_7069_6f76_6572;

/// SplitMix64 (Steele, Lea & Flood 2014): a small, fast generator whose output is the same on
/// every platform, which is all a reproducible simulation needs.
pub(crate) struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A^2 of one simulated sample of `k` exceedances from a GPD of shape `xi` (scale 1).
pub(crate) fn simulated_a2(rng: &mut SplitMix, xi: f64, k: usize) -> Option<f64> {
    let g = Gpd { xi, sigma: 1.0 };
    let y: Vec<f64> = (0..k)
        .map(|_| g.from_uniform(rng.uniform()).max(f64::MIN_POSITIVE))
        .collect();
    fit_mle(&y).map(|f| anderson_darling(&y, &f))
}

fn table() -> &'static Vec<Vec<f64>> {
    static TABLE: OnceLock<Vec<Vec<f64>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        XI_GRID
            .iter()
            .enumerate()
            .map(|(i, &xi)| {
                let mut rng = SplitMix(SEED ^ (i as u64).wrapping_mul(0x1000_0001));
                let mut v: Vec<f64> = (0..REPLICATES)
                    .filter_map(|_| simulated_a2(&mut rng, xi, K_SIM))
                    .collect();
                v.sort_unstable_by(f64::total_cmp);
                v
            })
            .collect()
    })
}

/// Simulates the null distribution now, if it was not yet (it is otherwise made at the first
/// test): for a program that should not pause later.
pub fn warm() {
    let _ = table();
}

/// Share of the simulated A^2 at shape `XI_GRID[i]` that are >= `a2`.
fn tail_share(i: usize, a2: f64) -> f64 {
    let v = &table()[i];
    if v.is_empty() {
        return 1.0;
    }
    let below = v.partition_point(|&x| x < a2);
    (v.len() - below) as f64 / v.len() as f64
}

/// The p-value of an observed `a2` for exceedances whose fitted shape is `xi`.
pub fn p_value(a2: f64, xi: f64) -> f64 {
    let last = XI_GRID.len() - 1;
    let xi = xi.clamp(XI_GRID[0], XI_GRID[last]);
    let hi = XI_GRID.partition_point(|&g| g < xi).clamp(1, last);
    let lo = hi - 1;
    let w = (xi - XI_GRID[lo]) / (XI_GRID[hi] - XI_GRID[lo]);
    (1.0 - w) * tail_share(lo, a2) + w * tail_share(hi, a2)
}
