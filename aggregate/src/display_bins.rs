//! The display histogram of a site's call times: log-spaced bins, 20 per
//! decade from 1 ns to 10^4 s (only the HTML export shows them).

use mpiover_common::histogram::{bucket_bounds, MAX_INDEX};

/// Lower edge of the first bin (s).
pub const DIST_LO: f64 = 1e-9;
pub const DIST_PER_DECADE: f64 = 20.0;
pub const DIST_BINS: usize = 13 * 20;

/// The bin of a time (s).
pub fn dist_bin(t: f64) -> usize {
    if t <= DIST_LO {
        return 0;
    }
    (((t / DIST_LO).log10() * DIST_PER_DECADE) as usize).min(DIST_BINS - 1)
}

/// The lower edge of bin `i` (s).
pub fn dist_edge(i: usize) -> f64 {
    DIST_LO * 10f64.powf(i as f64 / DIST_PER_DECADE)
}

/// The bin whose lower edge is `edge` (the inverse of [`dist_edge`]).
pub fn dist_index_of_edge(edge: f64) -> usize {
    (((edge / DIST_LO).log10() * DIST_PER_DECADE)
        .round()
        .max(0.0) as usize)
        .min(DIST_BINS - 1)
}

/// The display bin of each histogram bucket for one timer unit, computed
/// on first use: saves a logarithm per bucket folded.
#[derive(Debug, Default)]
pub(crate) struct BucketBins {
    /// `u16::MAX`: not computed yet.
    bins: Vec<u16>,
    unit: f64,
}

impl BucketBins {
    /// Display bin of a histogram bucket (its midpoint) for timer unit `unit`.
    pub(crate) fn bin(&mut self, index: usize, unit: f64) -> usize {
        if self.unit != unit || self.bins.is_empty() {
            self.bins.clear();
            self.bins.resize(MAX_INDEX, u16::MAX);
            self.unit = unit;
        }
        let Some(c) = self.bins.get_mut(index) else {
            // Not a bucket of this histogram format: computed each time.
            return midpoint_bin(index, unit);
        };
        if *c == u16::MAX {
            *c = midpoint_bin(index, unit) as u16;
        }
        *c as usize
    }
}

fn midpoint_bin(index: usize, unit: f64) -> usize {
    let (lo, hi) = bucket_bounds(index);
    dist_bin((lo as f64 + hi as f64) / 2.0 * unit)
}
