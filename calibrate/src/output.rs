//! The profile the calibration writes: a new one or the one resumed, one
//! entry per measured key.

use mpiover_common::host::unix_now;
use mpiover_common::profile::{
    fitted, CalibrationRun, Measured, Method, Profile, ProfileEntry, ProfileKey, Samples,
};

use mpiover_common::settings::Var;

use crate::args::Args;
use crate::measure;
use crate::stat::{self, StatOpts};

pub(crate) fn test_notes() -> Vec<String> {
    let mut v = Vec::new();
    for var in [Var::CalibrateTestClockSkew, Var::CalibrateTestDelay] {
        if let Some(x) = var.get_nonblank() {
            v.push(format!("test setting in force: {}={x}", var.name()));
        }
    }
    v
}

/// A new profile, or the one being resumed (checked against the options).
pub(crate) fn start_profile(
    a: &Args,
    environment: mpiover_common::profile::Environment,
    mut method: Method,
    date: &str,
    command: &[String],
    ranks: u32,
) -> Result<Profile, String> {
    if a.resume && a.output.exists() {
        let mut prof = Profile::load(&a.output).map_err(|e| format!("cannot resume: {e}"))?;
        let old = &prof.method;
        if a.seed.is_some_and(|s| s != old.seed) {
            return Err(format!(
                "cannot resume: --seed {} differs from the run's seed {}",
                a.seed.unwrap(),
                old.seed
            ));
        }
        let mut diffs = Vec::new();
        macro_rules! same {
            ($f:ident, $name:expr) => {
                if old.$f != method.$f {
                    diffs.push(format!(
                        "{} ({:?} now, {:?} in the profile)",
                        $name, method.$f, old.$f
                    ));
                }
            };
        }
        same!(sync, "--sync");
        same!(functions, "--functions");
        same!(procs, "--procs");
        same!(sizes, "--sizes/--max-bytes");
        same!(q_max, "--q-max");
        same!(alpha, "--alpha");
        same!(min_samples, "--min-samples");
        same!(max_samples, "--max-samples");
        same!(quick, "--quick");
        same!(warmup, "--warmup");
        same!(rel_tol, "--rel-tol");
        same!(entry_budget_s, "--entry-budget");
        same!(pace_s, "--pace");
        // Absent (0) and 1 both mean one round.
        if old.rounds.max(1) != method.rounds.max(1) {
            diffs.push(format!(
                "--rounds ({} now, {} in the profile)",
                method.rounds.max(1),
                old.rounds.max(1)
            ));
        }
        same!(spread_s, "--spread");
        // --time-budget may change: it shapes no sample, only how many jobs
        // run, and resuming a run its budget stopped needs a larger one. It is
        // the total over all segments (the new value replaces the old).
        if !diffs.is_empty() {
            return Err(format!(
                "cannot resume {}: options differ: {}",
                a.output.display(),
                diffs.join(", ")
            ));
        }
        if let Err(m) = prof.matches(&environment) {
            return Err(format!("cannot resume {}: {m}", a.output.display()));
        }
        if environment.ranks != prof.environment.ranks {
            return Err(format!(
                "cannot resume {}: it was measured with {} ranks, this run has {}",
                a.output.display(),
                prof.environment.ranks,
                environment.ranks
            ));
        }
        if let Some(r) = prof.runs.last_mut() {
            r.resumed += 1;
        }
        prof.method.time_budget_s = method.time_budget_s;
        Ok(prof)
    } else {
        if a.resume {
            eprintln!(
                "mpiover-calibrate: {} does not exist yet: starting a new run",
                a.output.display()
            );
        }
        method.notes.dedup();
        let hosts = environment.hosts.clone();
        let mut prof = Profile::new(environment, method);
        let suffix = (unix_now() * 1e6) as u64 ^ ((std::process::id() as u64) << 20);
        prof.runs.push(CalibrationRun {
            id: format!(
                "{}-{:06x}",
                date.replace([':', '-'], ""),
                suffix & 0xff_ffff
            ),
            date: date.to_string(),
            command: command.to_vec(),
            hosts,
            ranks,
            seed: prof.method.seed,
            wall_s: 0.0,
            kept_windows: 0,
            kept_window_s: 0.0,
            resumed: 0,
            complete: false,
            load: None,
        });
        Ok(prof)
    }
}

/// Fit and summarize one entry's sample.
pub(crate) fn make_entry(
    key: &ProfileKey,
    out: &measure::Outcome,
    e: usize,
    hosts: u32,
    stats: &StatOpts,
    run: &str,
    windowed: bool,
) -> Option<ProfileEntry> {
    let sample = &out.samples[e];
    if sample.is_empty() {
        return None;
    }
    let s = stat::summarize_sample(sample);
    let fit = stat::fit_sample(sample, stats);
    let mut entry = ProfileEntry {
        function: key.function.clone(),
        p: key.p,
        bytes: key.bytes,
        role: key.role.clone(),
        same_host: key.same_host,
        measured: Measured {
            hosts,
            n: sample.len() as u64,
            n_invalid: out.invalid[e],
            n_late: out.invalid_late[e],
            n_overrun: out.invalid_overrun[e],
            n_preempted: out.invalid_preempted[e],
            min_s: s.min_s,
            median_s: s.median_s,
            median_ci_s: s.median_ci_s,
            max_s: Some(s.max_s),
            q90_s: s.q90_s,
            q99_s: s.q99_s,
            // The fit fields: set below from the fit.
            tmax_s: s.max_s,
            model: None,
            lambda: None,
            params: None,
            chi2: None,
            df: None,
            critical: None,
            accepted: false,
            fallback: true,
            tail_test: None,
            bin_width_s: None,
            window_s: windowed.then_some(out.window_s),
            stop: out.stop,
            sum_s: Some(sample.iter().sum()),
            elapsed_s: Some(out.elapsed_s),
            note: None,
        },
        runs: Vec::new(),
        // Kept for refitting and validating the models without measuring
        // again (`mpiover profile refit`), in ticks of the timer (one
        // tick: the stored times are exactly the measured ones).
        samples: Samples::encode(sample, mpiover_common::timer::unit_s()),
    };
    match &fit {
        Ok(r) => fitted::apply(r, &mut entry.measured),
        Err(msg) => {
            entry.note = Some(format!("fit failed ({msg}): tmax is the sample maximum"));
        }
    }
    if out.preempted_kept > 0 {
        let busy = format!(
            "{} of {} windows had a rank preempted during its call and were kept (more than half of \
             their batch: the host was busy or oversubscribed); tmax includes scheduler noise",
            out.preempted_kept, out.windows
        );
        entry.note = Some(match entry.note.take() {
            Some(n) => format!("{n}; {busy}"),
            None => busy,
        });
    }
    entry.runs = vec![entry.as_run(run)];
    Some(entry)
}
