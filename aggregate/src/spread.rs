//! What a bounded part of the aggregate keeps of every rank's row (quantile
//! sketches, a heat map of rank ranges, the wait matrix's dropped sums):
//! the types the site, region and aggregate totals hold, apart from the
//! bounding ([`crate::bounded`]) that fills them, which reads those totals.

use serde::{Deserialize, Serialize};

use crate::exact_sum::Fx;
use crate::packed_rows;
use crate::sketch::Sketch;

/// Columns of the per-rank heat map (rank ranges of equal width).
pub const HEAT_COLS: u32 = 128;

/// Ranks per column of the heat map of a job of `world` ranks, and the
/// number of columns.
pub fn heat_columns(world: u32) -> (u32, u32) {
    let world = world.max(1);
    let per_col = world.div_ceil(HEAT_COLS);
    (per_col, world.div_ceil(per_col))
}

pub(crate) fn heat_max(into: &mut [f32], col: usize, v: f32) {
    if let Some(c) = into.get_mut(col) {
        if c.is_nan() || v > *c {
            *c = v;
        }
    }
}

/// What a bounded site keeps of every rank's row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spread {
    /// Ranks of the job (the heat map's columns span them).
    pub world: u32,
    /// Time of each rank with a row (its `n`: the ranks at the site).
    pub time: Sketch,
    /// Overhead of each rank whose calls had a tmax.
    pub overhead: Sketch,
    /// Time per call of each rank with calls, and of those not the root.
    pub per_call: Sketch,
    pub per_call_nonroot: Sketch,
    /// Per heat-map column: the largest time, and the largest overhead
    /// (a row without one counts 0); NaN where no rank of it has a row.
    #[serde(with = "packed_rows::vec")]
    pub heat_time: Vec<f32>,
    #[serde(with = "packed_rows::vec")]
    pub heat_overhead: Vec<f32>,
    /// Rows kept per criterion where it was bounded: the late ranks by
    /// arrival beyond that many are not all kept, so a report lists no
    /// more.
    #[serde(default = "default_keep")]
    pub keep: u32,
}

/// Rows a bounded part keeps per criterion by default (largest time,
/// smallest time, ...; `crate::bounded`).
pub const KEEP_PER_CRITERION: usize = 32;

fn default_keep() -> u32 {
    KEEP_PER_CRITERION as u32
}

impl Spread {
    pub fn merge(&mut self, o: &Spread) {
        self.keep = self.keep.min(o.keep);
        self.time.merge(&o.time);
        self.overhead.merge(&o.overhead);
        self.per_call.merge(&o.per_call);
        self.per_call_nonroot.merge(&o.per_call_nonroot);
        for (i, &v) in o.heat_time.iter().enumerate() {
            if !v.is_nan() {
                heat_max(&mut self.heat_time, i, v);
            }
        }
        for (i, &v) in o.heat_overhead.iter().enumerate() {
            if !v.is_nan() {
                heat_max(&mut self.heat_overhead, i, v);
            }
        }
    }

    /// Whether it can describe a site's rows: sketches well formed, the
    /// heat map's width that of its world.
    pub fn is_consistent(&self) -> bool {
        let cols = heat_columns(self.world).1 as usize;
        [
            &self.time,
            &self.overhead,
            &self.per_call,
            &self.per_call_nonroot,
        ]
        .iter()
        .all(|s| s.is_consistent())
            && self.heat_time.len() == cols
            && self.heat_overhead.len() == cols
    }
}

/// What a bounded region keeps of every rank's row: its time.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RegionSpread {
    pub time: Sketch,
}

/// The wait matrix's cells dropped when bounding: their sums and how many
/// had a non-zero overhead and time, so that the matrix's total and count
/// stay exact.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct WaitDropped {
    pub overhead: Fx,
    pub time: Fx,
    pub cells_with_overhead: u64,
    pub cells_with_time: u64,
}
