//! Step 5: every rank's clock model, the jobs the budget left out, the
//! profile's last save and the closing messages.

use mpiover_common::profile::{HostLoad, Profile, RankClock, Skipped};

use super::{Driver, Fail};
use crate::clock;
use crate::mpi;

/// Fields of one rank's clock model in the gather.
const CLOCK_FIELDS: usize = 10;

impl Driver<'_> {
    pub(super) fn finish(mut self) -> Result<(), Fail> {
        let clocks = self.gather_clocks();
        let load = self.host_load();
        let t_start = self.t_start;
        let prev_wall = self.prev_wall;
        let mut seen = std::collections::HashSet::new();
        let unmeasured: Vec<Skipped> = self.queue[self.qpos.min(self.queue.len())..]
            .iter()
            // A job queued again for a second try is already listed as
            // skipped, with its first try's reason; a job's later rounds
            // are one job.
            .filter(|&id| !self.retried.contains(id) && seen.insert(*id))
            .flat_map(|&id| self.keys(&self.jobs[id]))
            .map(|k| Skipped {
                function: k.function,
                p: k.p,
                bytes: k.bytes,
                reason: "time budget".into(),
            })
            .collect();
        let Some(prof) = self.profile.as_mut() else {
            return Ok(());
        };
        if let Some((pr, _)) = self.progress.as_mut() {
            pr.finish();
        }
        if let Some(c) = prof.method.clock_sync.as_mut() {
            c.ranks = clocks;
        }
        prof.skipped.extend(unmeasured);
        let complete = prof.skipped.is_empty();
        if let Some(r) = prof.runs.last_mut() {
            r.wall_s = prev_wall + (clock::raw_now() - t_start);
            r.complete = complete;
            // A resumed run keeps the latest segment's reading.
            r.load = load.or(r.load.take());
        }
        let a = self.a;
        prof.save_atomic(&a.output)
            .map_err(|e| Fail(e.to_string()))?;
        // Said even with --quiet: lookups at holes interpolate over them or
        // are out of range, and weak entries get no clean verdict.
        let host_cpus = self.topo.layout.host_cpus;
        for w in crate::advice::warnings(prof, &a.output.display().to_string(), host_cpus) {
            eprintln!("mpiover-calibrate: warning: {w}");
        }
        if !a.quiet {
            summarize(prof, clock::raw_now() - t_start, &a.output);
        }
        Ok(())
    }

    /// How busy rank 0's host was over the run, on rank 0: every rank's CPU
    /// time since the start is gathered, and those on rank 0's host are the
    /// calibration's own share of the host's busy time.
    fn host_load(&self) -> Option<HostLoad> {
        let mine = [crate::load::own_cpu_s() - self.cpu_start_s];
        let n = if self.me == 0 {
            self.world_size as usize
        } else {
            1
        };
        let mut all = vec![0.0f64; n];
        mpi::gather_f64s(&mine, &mut all, 0, self.world);
        if self.me != 0 {
            return None;
        }
        let host_of = &self.topo.layout.host_of;
        let ours: f64 = all
            .iter()
            .zip(host_of)
            .filter(|(_, &h)| h == host_of[0])
            .map(|(c, _)| c.max(0.0))
            .sum();
        let load = crate::load::judge(&self.load_start, &crate::load::read(), ours)?;
        // Load that came and went between the readings shows in the samples
        // themselves: an entry's typical call moved while it was measured.
        let ratios = self.profile.as_ref().map_or_else(Vec::new, |p| {
            p.entries
                .iter()
                .filter_map(|e| e.samples.as_ref()?.half_drift(HostLoad::DRIFT_MIN_SAMPLES))
                .collect()
        });
        Some(load.with_drift(ratios))
    }

    /// Every rank's clock model, on rank 0 (empty elsewhere).
    fn gather_clocks(&self) -> Vec<RankClock> {
        let cs = self.clock.summary(self.me as u32);
        let mine = [
            cs.offset_s,
            cs.ref_local_s,
            cs.drift,
            cs.fitpoints as f64,
            cs.span_s,
            cs.rtt_min_s,
            cs.residual_s,
            cs.model_failures as f64,
            cs.prediction_error_s,
            f64::from(u8::from(cs.shared)),
        ];
        let n = if self.me == 0 {
            CLOCK_FIELDS * self.world_size as usize
        } else {
            1
        };
        let mut all = vec![0.0f64; n];
        mpi::gather_f64s(&mine, &mut all, 0, self.world);
        if self.me != 0 {
            return Vec::new();
        }
        let host = |r: usize| -> String {
            let h = self.topo.layout.host_of.get(r).copied().unwrap_or(u32::MAX);
            self.profile
                .as_ref()
                .and_then(|p| p.environment.hosts.get(h as usize).cloned())
                .unwrap_or_default()
        };
        all.chunks(CLOCK_FIELDS)
            .enumerate()
            .map(|(r, v)| RankClock {
                rank: r as u32,
                host: host(r),
                offset_s: v[0],
                ref_local_s: v[1],
                drift: v[2],
                fitpoints: v[3] as u32,
                span_s: v[4],
                rtt_min_s: v[5],
                residual_s: v[6],
                model_failures: v[7] as u32,
                prediction_error_s: v[8],
                shared: v[9] != 0.0,
            })
            .collect()
    }
}

/// What the run measured, in two lines.
fn summarize(prof: &Profile, wall_s: f64, output: &std::path::Path) {
    let n: u64 = prof.entries.iter().map(|e| e.n).sum();
    let inv: u64 = prof.entries.iter().map(|e| e.n_invalid).sum();
    let pre: u64 = prof.entries.iter().map(|e| e.n_preempted).sum();
    // An empty f64 sum is -0.0, printed "-0.000000": adding 0.0 makes it +0.
    let kept: f64 = prof.entries.iter().filter_map(|e| e.sum_s).sum::<f64>() + 0.0;
    eprintln!(
        "mpiover-calibrate: {} entries ({} samples kept, {} dropped, {} of them preempted), \
         {} skipped, {:.1} s -> {}",
        prof.entries.len(),
        n,
        inv,
        pre,
        prof.skipped.len(),
        wall_s,
        output.display()
    );
    let (windows, per_window) = prof
        .runs
        .last()
        .map_or((0, 0.0), |r| (r.kept_windows, r.kept_window_s));
    eprintln!(
        "mpiover-calibrate: kept call time {kept:.6} s (sum of the kept samples), \
         {per_window:.6} s in {windows} kept windows (longest rank per window)"
    );
}
