//! A duration histogram dense over the range of durations seen: cheap to
//! add to on the hot path, made sparse (the record's form) at the end.

use mpiover_common::histogram::{bucket_index, Bucket, Histogram};

/// (count, sum) of buckets `lo..lo + v.len()` of the record's log-scale
/// histogram (`mpiover_common::histogram`).
#[derive(Default)]
pub struct Buckets {
    pub lo: u32,
    pub v: Vec<[u64; 2]>,
}

impl Buckets {
    #[inline(always)]
    pub(crate) fn add(&mut self, dt: u64) {
        let i = bucket_index(dt) as u32;
        match self.v.get_mut(i.wrapping_sub(self.lo) as usize) {
            Some(b) => tally!(b[0], b[1], dt),
            None => self.grow(i, dt),
        }
    }

    /// A duration outside the range so far: the range grows to hold it (a
    /// few hundred buckets at most, `histogram::MAX_INDEX`).
    #[cold]
    #[inline(never)]
    fn grow(&mut self, i: u32, dt: u64) {
        if self.v.is_empty() {
            self.lo = i;
            self.v.push([1, dt]);
            return;
        }
        if i < self.lo {
            let extra = (self.lo - i) as usize;
            let mut v = Vec::with_capacity(self.v.len() + extra);
            v.resize(extra, [0, 0]);
            v.extend_from_slice(&self.v);
            self.v = v;
            self.lo = i;
        } else {
            let len = (i - self.lo) as usize + 1;
            self.v.resize(len, [0, 0]);
        }
        if let Some(b) = self.v.get_mut((i - self.lo) as usize) {
            b[0] += 1;
            b[1] = b[1].wrapping_add(dt);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.v.clear();
        self.lo = 0;
    }

    /// The non-empty buckets, as a record stores them.
    pub fn sparse(&self) -> Histogram {
        let buckets = self
            .v
            .iter()
            .enumerate()
            .filter(|(_, b)| b[0] > 0)
            .map(|(i, b)| Bucket(self.lo + i as u32, b[0], b[1]))
            .collect();
        Histogram { buckets }
    }
}
