//! Merging calibration runs into one profile.

use std::collections::BTreeMap;

use crate::profile::error::ProfileError;
use crate::profile::samples::{median_of, Samples};
use crate::profile::schema::{EntryRun, Profile, ProfileEntry, ProfileKey, Protocol};

/// Combine per-run summaries into an entry's top-level fields (module docs,
/// "Merging runs"): counts and sums are summed, order statistics take the
/// envelope, and the fit fields come from the run with the largest tmax.
/// With one run the entry's own fields come back unchanged.
pub fn combine_runs(base: &ProfileEntry, runs: Vec<EntryRun>) -> ProfileEntry {
    let mut e = base.clone();
    let top = runs
        .iter()
        .max_by(|a, b| a.tmax_s.total_cmp(&b.tmax_s))
        .expect("at least one run")
        .clone();
    // Some(f(values)) only when every run has the value: a sum or bound over
    // part of the runs would not describe the `n` samples it sits beside.
    pub(crate) fn all<T: Copy>(
        runs: &[EntryRun],
        get: impl Fn(&EntryRun) -> Option<T>,
    ) -> Option<Vec<T>> {
        runs.iter().map(get).collect()
    }
    e.n = runs.iter().map(|r| r.n).sum();
    e.n_invalid = runs.iter().map(|r| r.n_invalid).sum();
    e.n_late = runs.iter().map(|r| r.n_late).sum();
    e.n_overrun = runs.iter().map(|r| r.n_overrun).sum();
    e.n_preempted = runs.iter().map(|r| r.n_preempted).sum();
    e.min_s = runs.iter().map(|r| r.min_s).fold(f64::INFINITY, f64::min);
    e.max_s = all(&runs, |r| r.max_s).map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max));
    e.median_s = median_of(runs.iter().map(|r| r.median_s).collect());
    e.median_ci_s = runs
        .iter()
        .filter_map(|r| r.median_ci_s)
        .reduce(|a, b| [a[0].min(b[0]), a[1].max(b[1])]);
    // The pooled sample's q-quantile lies between the runs' smallest and
    // largest q-quantiles; the largest is kept (an upper bound, the safe side
    // like tmax).
    e.q90_s = all(&runs, |r| r.q90_s).map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max));
    e.q99_s = all(&runs, |r| r.q99_s).map(|v| v.into_iter().fold(f64::NEG_INFINITY, f64::max));
    e.sum_s = all(&runs, |r| r.sum_s).map(|v| v.into_iter().sum());
    e.elapsed_s = all(&runs, |r| r.elapsed_s).map(|v| v.into_iter().sum());
    e.window_s = runs.iter().filter_map(|r| r.window_s).reduce(f64::max);
    e.hosts = runs.iter().map(|r| r.hosts).max().unwrap_or(base.hosts);
    e.stop = top.stop;
    e.tmax_s = top.tmax_s;
    e.model = top.model;
    e.lambda = top.lambda;
    e.params = top.params.clone();
    e.chi2 = top.chi2;
    e.df = top.df;
    e.critical = top.critical;
    e.tail_test = top.tail_test;
    e.bin_width_s = top.bin_width_s;
    e.accepted = runs.iter().all(|r| r.accepted);
    e.fallback = runs.iter().any(|r| r.fallback);
    e.note = if runs.len() == 1 {
        top.note.clone()
    } else {
        let notes: Vec<String> = runs
            .iter()
            .filter_map(|r| r.note.as_ref().map(|n| format!("run {}: {n}", r.run)))
            .collect();
        (!notes.is_empty()).then(|| notes.join("; "))
    };
    e.runs = runs;
    e
}

impl Profile {
    /// The run id used for entries that carry no per-run summaries.
    pub fn default_run_id(&self) -> String {
        self.runs
            .first()
            .map(|r| r.id.clone())
            .unwrap_or_else(|| "unknown".into())
    }

    pub(crate) fn entry_runs(&self, e: &ProfileEntry) -> Vec<EntryRun> {
        match e.runs.as_slice() {
            [] => vec![e.as_run(&self.default_run_id())],
            // One run: the entry's own fields are that run's, and they may hold
            // what an older writer did not copy into `runs` (sum_s, q99_s, ...).
            [r] => vec![e.as_run(&r.run)],
            _ => e.runs.clone(),
        }
    }

    /// Merge two profiles (module docs). Refuses profiles of different
    /// environments (unless `force`), different q_max, or sharing a run.
    pub fn merge(a: &Profile, b: &Profile, force: bool) -> Result<Profile, ProfileError> {
        if !force {
            if let Err(m) = a.matches_for_merge(&b.environment) {
                return Err(ProfileError::Merge(format!(
                    "the environments differ: {m} (use --force to merge anyway)"
                )));
            }
        }
        // Not even with `force`: barrier-synchronized samples hold the
        // barrier's exit skew, window-synchronized ones do not, so pooling
        // them would describe neither method.
        if a.method.sync != b.method.sync {
            return Err(ProfileError::Merge(format!(
                "the synchronization methods differ (method.sync \"{}\" and \"{}\"): their samples \
                 are not comparable; calibrate both with the same --sync",
                a.method.sync, b.method.sync
            )));
        }
        if (a.method.q_max - b.method.q_max).abs() > 1e-12 {
            return Err(ProfileError::Merge(format!(
                "q_max differs ({} and {}): their tmax are not comparable",
                a.method.q_max, b.method.q_max
            )));
        }
        for r in &b.runs {
            if a.runs.iter().any(|x| x.id == r.id) {
                return Err(ProfileError::Merge(format!(
                    "run {} is in both profiles (merging a profile with itself?)",
                    r.id
                )));
            }
        }
        let mut out = Profile::new(a.environment.clone(), a.method.clone());
        for h in &b.environment.hosts {
            if !out.environment.hosts.contains(h) {
                out.environment.hosts.push(h.clone());
                let i = b.environment.hosts.iter().position(|x| x == h).unwrap_or(0);
                out.environment
                    .ranks_per_host
                    .push(b.environment.ranks_per_host.get(i).copied().unwrap_or(0));
            }
        }
        out.runs = a.runs.iter().chain(b.runs.iter()).cloned().collect();
        type Parts<'p> = (ProfileEntry, Vec<EntryRun>, Vec<Option<&'p Samples>>);
        let mut by_key: BTreeMap<ProfileKey, Parts> = BTreeMap::new();
        for (prof, e) in a
            .entries
            .iter()
            .map(|e| (a, e))
            .chain(b.entries.iter().map(|e| (b, e)))
        {
            let runs = prof.entry_runs(e);
            by_key
                .entry(e.key())
                .and_modify(|(_, rs, ss)| {
                    rs.extend(runs.clone());
                    ss.push(e.samples.as_ref());
                })
                .or_insert_with(|| (e.clone(), runs, vec![e.samples.as_ref()]));
        }
        let mut entries = Vec::with_capacity(by_key.len());
        for (e, runs, samples) in by_key.into_values() {
            let mut merged = combine_runs(&e, runs);
            // The runs' samples one after the other, in the order of `runs`;
            // none when a part has none (its run could not be told apart).
            merged.samples = match samples.into_iter().collect::<Option<Vec<_>>>() {
                Some(parts) => Samples::concat(&parts).map_err(|err| {
                    ProfileError::Merge(format!("entry {}: stored samples: {err}", e.key()))
                })?,
                None => None,
            };
            entries.push(merged);
        }
        out.entries = entries;
        let measured: std::collections::HashSet<(String, u32, u64)> = out
            .entries
            .iter()
            .map(|e| (e.function.clone(), e.p, e.bytes))
            .collect();
        for s in a.skipped.iter().chain(b.skipped.iter()) {
            if !measured.contains(&(s.function.clone(), s.p, s.bytes)) && !out.skipped.contains(s) {
                out.skipped.push(s.clone());
            }
        }
        out.protocol = merge_protocol(a.protocol.as_ref(), b.protocol.as_ref());
        Ok(out)
    }
}

/// Two measurements of the eager limit: the smaller of each kind (a size one
/// run saw wait for its receiver is not trusted to be eager), searched up to
/// the smaller bound.
pub(crate) fn merge_protocol(a: Option<&Protocol>, b: Option<&Protocol>) -> Option<Protocol> {
    let min = |x: Option<u64>, y: Option<u64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    match (a, b) {
        (Some(a), Some(b)) => Some(Protocol {
            eager_limit_same_host: min(a.eager_limit_same_host, b.eager_limit_same_host),
            eager_limit_cross_host: min(a.eager_limit_cross_host, b.eager_limit_cross_host),
            searched_up_to: a.searched_up_to.min(b.searched_up_to),
            method: a.method.clone(),
            mpi_t: a.mpi_t.clone().or_else(|| b.mpi_t.clone()),
            mpi_t_cross_host: a
                .mpi_t_cross_host
                .clone()
                .or_else(|| b.mpi_t_cross_host.clone()),
        }),
        (a, b) => a.or(b).cloned(),
    }
}
