//! The machine's latency level during the run against the calibration's
//! (`docs/method.md`, "The machine's level at record time").
//!
//! A calibration sees the machine at one latency level; a virtual machine
//! switches between levels within seconds, and a run at a slower one has
//! every call slower than calibrated, which the test would take for
//! overhead. The run's histograms tell: per (function, p, bytes), all sites
//! merged over a sample of at most 64 ranks ([`sampled`]), the run's fast calls (its 10th percentile) against the profile's
//! median of the same key. At the calibrated level at least half the
//! calibration's calls are slower than its median, and the run's fast tenth
//! is faster still; when even that tenth is slower than the calibration's
//! median, the key ran slower by at least `ratio` (a lower bound of the
//! shift whether it scales or adds to the calls).
//!
//! One key proves nothing: a site whose every call waits lifts its key. The
//! level is the median ratio over the keys, so it moves only when most keys
//! (posts, which never wait, among them) ran slower; a key beyond
//! [`MAX_LEVEL`] is waiting, not a level, and does not count.

use mpiover_aggregate::{Aggregate, KeyAcc, KeyId};
use mpiover_common::completion::{resolve, KeyRef};
use mpiover_common::histogram::Histogram;
use mpiover_common::profile::{Profile, ProfileEntry};

use crate::model::{Level, LevelKey};
use crate::tmax::TmaxSource;

/// Ranks whose keys the report keeps (evenly spaced over the records): the
/// level and the sites' figures against a wider tmax are read from them, so
/// that a job of 100,000 ranks costs no more than one of this many.
const SAMPLED_RANKS: usize = 64;

/// Whether the `i`-th of `n` records is among the sampled ones.
pub(crate) fn sampled(i: usize, n: usize) -> bool {
    i.is_multiple_of(n.div_ceil(SAMPLED_RANKS).max(1))
}

/// The quantile of a key's calls that stands for its fastest.
pub(crate) const FAST_QUANTILE: f64 = 0.1;

/// Fewer calls than this leave a key's fast tenth to a handful of calls.
const MIN_CALLS: u64 = 50;

/// The largest ratio a latency level explains. This VM's two levels are
/// about three times apart (`docs/method.md`, section 4a); a key whose fast
/// calls are five times the calibration's median has its calls waiting.
pub(crate) const MAX_LEVEL: f64 = 5.0;

/// Below this the run's level is the calibration's, within the statistics
/// of a median.
const MIN_SHIFT: f64 = 1.1;

/// Keys that must count before a factor is believed.
const MIN_KEYS: usize = 2;

/// The level of the run folded into `agg`, against the profile given to the
/// report, else the one the records were made with (when it is still where
/// they read it).
pub(crate) fn of_run(agg: &Aggregate, tmax: Option<&dyn TmaxSource>) -> Option<Level> {
    let loaded;
    let profile = match tmax {
        Some(src) => src.profile()?,
        None => {
            let path = &agg.ranks.iter().find_map(|r| r.profile.as_ref())?.0;
            loaded = Profile::load(path).ok()?;
            &loaded
        }
    };
    let reference = Reference::of(profile);
    measure(agg.keys.iter().chain(&agg.keys_cross_host), &reference)
}

/// The profile's fastest and median call per key, looked up (and composed,
/// for completions) as tmax is: two copies of the profile whose tmax holds
/// the one or the other.
pub(crate) struct Reference {
    min: Profile,
    median: Profile,
}

impl Reference {
    pub(crate) fn of(p: &Profile) -> Reference {
        let with = |pick: fn(&ProfileEntry) -> f64| {
            let mut q = Profile::new(p.environment.clone(), p.method.clone());
            for e in &p.entries {
                let mut e = e.clone();
                e.samples = None;
                e.runs.clear();
                e.tmax_s = pick(&e);
                q.push_entry(e);
            }
            q
        };
        Reference {
            min: with(|e| e.min_s),
            median: with(|e| e.median_s),
        }
    }

    /// (fastest, median) of one call of the key.
    fn at(&self, k: &KeyRef) -> Option<(f64, f64)> {
        let min = resolve(&self.min, k).ok()?.lookup.tmax_s;
        let median = resolve(&self.median, k).ok()?.lookup.tmax_s;
        (min.is_finite() && median.is_finite() && median > 0.0).then_some((min, median))
    }
}

/// A key of the run without its site: (function, p, bytes, role, completes,
/// requests).
type Bare = (
    String,
    u32,
    u64,
    Option<String>,
    Option<String>,
    Option<mpiover_common::completion::Requests>,
);

/// The run's level from its keys (every site's, merged over ranks).
pub(crate) fn measure<'a>(
    keys: impl Iterator<Item = (&'a KeyId, &'a KeyAcc)>,
    reference: &Reference,
) -> Option<Level> {
    let mut merged: mpiover_aggregate::HashMap<Bare, (f64, Histogram)> = Default::default();
    for ((_, function, p, bytes, role, completes, requests), k) in keys {
        if function == "other" {
            continue;
        }
        let bare = (
            function.clone(),
            *p,
            *bytes,
            role.clone(),
            completes.clone(),
            *requests,
        );
        let slot = merged
            .entry(bare)
            .or_insert_with(|| (k.unit_s, Histogram::default()));
        slot.1.merge(&k.entry.hist);
    }
    let mut rows = Vec::new();
    for ((function, p, bytes, role, completes, requests), (unit, hist)) in &merged {
        let calls = hist.count();
        if calls < MIN_CALLS {
            continue;
        }
        let key = KeyRef {
            function,
            p: *p,
            bytes: *bytes,
            role: role.as_deref(),
            completes: completes.as_deref(),
            requests: *requests,
        };
        let (Some((min, median)), Some(fast)) =
            (reference.at(&key), hist.quantile(*unit, FAST_QUANTILE))
        else {
            continue;
        };
        let ratio = fast / median;
        rows.push(LevelKey {
            function: function.clone(),
            p: *p,
            bytes: *bytes,
            role: role.clone().or_else(|| completes.clone()),
            calls,
            run_fast_s: fast,
            profile_min_s: min,
            profile_median_s: median,
            ratio,
            counted: ratio <= MAX_LEVEL,
        });
    }
    if rows.is_empty() {
        return None;
    }
    // The map's order is the hasher's: the report's is the key's.
    rows.sort_by(|a, b| {
        (&a.function, a.p, a.bytes, &a.role).cmp(&(&b.function, b.p, b.bytes, &b.role))
    });
    let factor = level_factor(&rows);
    Some(Level {
        factor,
        shifted: factor >= MIN_SHIFT,
        fast_quantile: FAST_QUANTILE,
        keys: rows,
    })
}

/// The median ratio of the counted keys, at least 1; 1 with fewer than
/// [`MIN_KEYS`] of them.
fn level_factor(rows: &[LevelKey]) -> f64 {
    let mut r: Vec<f64> = rows.iter().filter(|k| k.counted).map(|k| k.ratio).collect();
    if r.len() < MIN_KEYS {
        return 1.0;
    }
    r.sort_by(f64::total_cmp);
    let n = r.len();
    let median = if n % 2 == 1 {
        r[n / 2]
    } else {
        // The lower of the two middle ones: a tie between slower and not
        // is no consistent shift.
        r[n / 2 - 1]
    };
    median.max(1.0)
}

/// The warning a shifted level gives, once.
pub(crate) fn warning(level: &Level) -> Option<String> {
    if !level.shifted {
        return None;
    }
    let counted: Vec<&LevelKey> = level.keys.iter().filter(|k| k.counted).collect();
    let slower = counted.iter().filter(|k| k.ratio > 1.0).count();
    Some(format!(
        "calls ran ~{:.1}x slower than calibrated: on {slower} of {} keys the run's fastest \
         tenth of the calls was slower than the profile's median call (the machine ran at \
         another latency level than when it was calibrated: a virtual machine, a busy \
         neighbour, another placement); sites whose overhead lies within that shift are \
         `within level shift`, not significant; calibrate again just before the run, or in \
         rounds (`--rounds 6 --spread 30`) to measure both levels",
        level.factor,
        counted.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ratio: f64) -> LevelKey {
        LevelKey {
            function: "MPI_Isend".into(),
            p: 2,
            bytes: 8,
            role: None,
            calls: 1000,
            run_fast_s: ratio * 1e-6,
            profile_min_s: 0.5e-6,
            profile_median_s: 1e-6,
            ratio,
            counted: ratio <= MAX_LEVEL,
        }
    }

    #[test]
    fn level_is_the_median_of_the_counted_keys() {
        // Three keys slower by about 2: the level.
        let rows: Vec<LevelKey> = [2.1, 1.9, 2.4].map(key).into();
        assert!((level_factor(&rows) - 2.1).abs() < 1e-12);
        // One key waits (its fast calls 5000 times the median), the others
        // ran at the calibrated level: no shift.
        let rows: Vec<LevelKey> = [5000.0, 0.7, 0.8].map(key).into();
        assert_eq!(level_factor(&rows), 1.0);
        // A wait lifting one key of two does not make a level either.
        let rows: Vec<LevelKey> = [3.0, 0.6].map(key).into();
        assert_eq!(level_factor(&rows), 1.0);
        // One key alone proves nothing.
        let rows: Vec<LevelKey> = [2.5].map(key).into();
        assert_eq!(level_factor(&rows), 1.0);
        // Faster than calibrated is no shift.
        let rows: Vec<LevelKey> = [0.5, 0.6, 0.7].map(key).into();
        assert_eq!(level_factor(&rows), 1.0);
    }

    #[test]
    fn sample_spans_the_ranks() {
        assert!((0..64).all(|i| sampled(i, 64)));
        let picked: Vec<usize> = (0..1000).filter(|&i| sampled(i, 1000)).collect();
        assert!(
            picked.len() <= SAMPLED_RANKS && picked.len() >= 60,
            "{picked:?}"
        );
        assert_eq!(picked[0], 0);
        assert!(*picked.last().unwrap() >= 900, "{picked:?}");
    }

    #[test]
    fn warning_says_the_factor_once_shifted() {
        let level = Level {
            factor: 2.1,
            shifted: true,
            fast_quantile: FAST_QUANTILE,
            keys: [2.1, 1.9, 2.4, 9.0].map(key).into(),
        };
        let w = warning(&level).expect("a warning");
        assert!(
            w.starts_with("calls ran ~2.1x slower than calibrated"),
            "{w}"
        );
        assert!(w.contains("on 3 of 3 keys"), "{w}");
        let level = Level {
            shifted: false,
            ..level
        };
        assert_eq!(warning(&level), None);
    }
}
