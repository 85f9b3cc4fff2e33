//! Steps 2-4: the eager limits, the job queue, and the job loop.

use std::collections::{HashMap, HashSet};

use mpiover_common::profile::{ClockSync, MpiTValue, ProfileKey, Protocol, Skipped};

use super::command::Command;
use super::{Driver, Fail};
use crate::args::SyncArg;
use crate::clock;
use crate::grid::{self, Job, Pair};
use crate::measure::{self, Extension, Settings, Sync};
use crate::mpi;
use crate::output::make_entry;
use crate::pattern::Pattern;
use crate::plan::{keys_of, same_host_of, PACED_MIN_SAMPLES, PACE_FLOOR_S};
use crate::progress::Progress;
use crate::protocol;

impl Driver<'_> {
    /// The profile keys of `job` this run measures.
    pub(super) fn keys(&self, job: &Job) -> Vec<ProfileKey> {
        let kind = self.plan.kinds.iter().position(|&x| x == job.kind);
        let sel = kind.map_or(&[][..], |k| &self.plan.selected[k][..]);
        keys_of(job, sel, same_host_of(job, self.topo.hosts_in(job.ranks)))
    }

    /// The entries of `job`'s pattern this run measures.
    fn selected(&self, job: &Job) -> Vec<bool> {
        self.plan
            .kinds
            .iter()
            .position(|&x| x == job.kind)
            .map_or_else(Vec::new, |k| self.plan.selected[k].clone())
    }

    /// The eager limit of each pair kind, when blocking sends are measured
    /// (their wait state depends on it).
    pub(super) fn measure_protocol(&mut self) {
        if !self.plan.kinds.contains(&Pattern::Send) {
            return;
        }
        let mut p = Protocol {
            searched_up_to: self.plan.max_bytes.clamp(1, i32::MAX as u64),
            method: format!(
                "blocking MPI_Send to a receiver {:.0} ms late, {} probes per size, sizes doubled \
                 from 1 byte then bisected: the largest size whose send returned within half the \
                 delay",
                protocol::DELAY_S * 1e3,
                protocol::REPS
            ),
            ..Default::default()
        };
        for (pair, comm) in &self.topo.pair_comms {
            if let Some(comm) = comm {
                let (limit, _) = protocol::eager_limit(*comm, self.plan.max_bytes);
                match pair {
                    Pair::SameHost => p.eager_limit_same_host = Some(limit),
                    Pair::CrossHost => p.eager_limit_cross_host = Some(limit),
                }
            }
        }
        let value = |(cvar, bytes): (&str, u64)| MpiTValue {
            cvar: cvar.to_string(),
            bytes,
        };
        p.mpi_t = mpiover_mpisys::mpit::eager_limit().map(value);
        if p.eager_limit_cross_host.is_some() {
            p.mpi_t_cross_host = mpiover_mpisys::mpit::cross_host_eager_limit().map(value);
        }
        self.protocol = Some(p);
    }

    /// Rank 0: the jobs still to measure (a resumed run's first missing job
    /// last: it may be the one that killed the run), the progress bar, and
    /// the profile as it starts.
    pub(super) fn prepare_queue(&mut self) -> Result<(), Fail> {
        let Some(mut prof) = self.profile.take() else {
            return Ok(());
        };
        if self.protocol.is_some() {
            prof.protocol = self.protocol.take();
        }
        let done: HashSet<ProfileKey> = prof.entries.iter().map(|e| e.key()).collect();
        let all = grid::order(&self.jobs, self.seed);
        let total = all.len();
        let mut queue: Vec<usize> = all
            .into_iter()
            .filter(|&id| !self.keys(&self.jobs[id]).iter().all(|k| done.contains(k)))
            .collect();
        if self.a.resume && !prof.entries.is_empty() && !queue.is_empty() {
            let first = queue.remove(0);
            queue.push(first);
        }
        // --rounds: the round's order rotated by a fraction each round, so a
        // job does not always sit at the same point of a round.
        let one = queue.clone();
        let rounds = self.a.rounds.max(1) as usize;
        for k in 1..rounds {
            let mut q = one.clone();
            q.rotate_left(k * one.len() / rounds);
            queue.extend(q);
        }
        self.round_len = one.len();
        prof.skipped.clear();
        self.run_id = prof.runs.last().map(|r| r.id.clone()).unwrap_or_default();
        self.prev_wall = prof.runs.last().map_or(0.0, |r| r.wall_s);
        let mut pr = Progress::new(total, self.a.quiet);
        pr.update(total - one.len(), "starting");
        self.progress = Some((pr, total - one.len()));
        let a = self.a;
        prof.method.clock_sync = (a.sync == SyncArg::Window).then(|| ClockSync {
            method: "Jones-Koenig style: ping-pong offsets against rank 0 (the fastest of each fit \
                     point's exchanges), Theil-Sen line through the fit points, slope kept when \
                     significant (> 3 standard errors); fit points at the start, before every entry \
                     and every resync_interval_s"
                .into(),
            fitpoints: a.sync_fitpoints,
            exchanges: a.sync_exchanges,
            resync_interval_s: a.resync_interval,
            ranks: Vec::new(),
        });
        self.queue = queue;
        let saved = prof.save_atomic(&a.output);
        self.profile = Some(prof);
        saved.map_err(|e| Fail(e.to_string()))
    }

    /// Rank 0's next command.
    fn next_command(&mut self, last_sync: f64, deadline: f64) -> Command {
        self.wait_for_round(deadline);
        let now = clock::raw_now();
        let more = self.qpos < self.queue.len();
        if self.a.sync == SyncArg::Window && now - last_sync > self.a.resync_interval && more {
            Command::Resync
        } else if more && now < deadline {
            self.qpos += 1;
            Command::Job(self.queue[self.qpos - 1])
        } else {
            Command::Done
        }
    }

    /// Rank 0, `--spread`: before the first job of round k, sleep until k * S / R
    /// seconds after the first round started (not past the run's deadline).
    /// The other ranks wait in the sleepy broadcast of the next command.
    fn wait_for_round(&mut self, deadline: f64) {
        let t0 = *self.rounds_t0.get_or_insert_with(clock::raw_now);
        let rounds = self.a.rounds.max(1) as usize;
        if self.round_len == 0 || !self.qpos.is_multiple_of(self.round_len) || self.a.spread <= 0.0
        {
            return;
        }
        let k = self.qpos / self.round_len;
        if k == 0 || k >= rounds {
            return;
        }
        let until = (t0 + k as f64 * self.a.spread / rounds as f64).min(deadline);
        let wait = until - clock::raw_now();
        if wait > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(wait));
        }
    }

    /// The job loop: rank 0 commands, every rank follows.
    pub(super) fn run_jobs(&mut self) -> Result<(), Fail> {
        // The budget is the whole run's, over all its --resume segments: what
        // earlier segments spent (their recorded wall time) is already gone.
        let deadline = self
            .plan
            .time_budget
            .map_or(f64::INFINITY, |b| self.t_start + b - self.prev_wall);
        let mut last_sync = clock::raw_now();
        // Learned window slack per communicator size: the noise a window must
        // absorb depends on how many ranks share the cores (a 4-rank job on 2
        // cores needs milliseconds, a pair microseconds), so one size's growth
        // must not lengthen every other size's windows.
        let mut window_slack: HashMap<u32, f64> = HashMap::new();
        loop {
            let mut cmd = [0u8; 9];
            if self.me == 0 {
                cmd = self.next_command(last_sync, deadline).to_bytes();
            }
            mpi::bcast_bytes_sleepy(&mut cmd, 0, self.world);
            let id = match Command::from_bytes(cmd) {
                Command::Resync => {
                    clock::sync_round(&mut self.clock, self.world, self.a.sync_exchanges);
                    last_sync = clock::raw_now();
                    continue;
                }
                Command::Done => break,
                Command::Job(id) => id,
            };
            self.jobs_started += 1;
            let Some(job) = self.jobs.get(id).cloned() else {
                continue;
            };
            let Some(comm) = self.topo.comm_for(&job) else {
                continue;
            };
            if let Some((pr, done)) = self.progress.as_mut() {
                pr.update(*done, &job.label());
            }
            let mut settings = self.job_settings(&job, &window_slack);
            // --rounds: a round before the job's last (a job measured again
            // for want of valid samples is in its last) takes its share of
            // the samples; the stopping rule judges the pooled sample in the
            // last round only.
            let rounds = u64::from(self.a.rounds.max(1));
            let had = u64::from(self.rounds_done.get(&id).copied().unwrap_or(0));
            let before_last = had + 1 < rounds && !self.retried.contains(&id);
            if rounds > 1 {
                if before_last {
                    let quota = self.stats.max_samples.div_ceil(rounds) * (had + 1);
                    settings.stats.min_samples = quota;
                    settings.stats.max_samples = quota;
                    if let Some(x) = settings.extension.as_mut() {
                        x.min_samples = x.min_samples.min(quota);
                    }
                }
                if self.plan.pace.is_none() {
                    settings.entry_budget_s /= rounds as f64;
                }
            }
            let sel = self.selected(&job);
            let outcome = measure::run_job(
                job.kind,
                job.p,
                job.bytes,
                comm,
                &mut self.clock,
                &settings,
                &sel,
                deadline,
                self.partial.remove(&id),
            );
            *self.rounds_done.entry(id).or_insert(0) += 1;
            if let Some(out) = &outcome {
                // Learn how much longer than the warm-up estimate windows have
                // to be on this machine now: follow the growth jobs needed,
                // and decay when a job needed none.
                let slack = window_slack.entry(job.ranks).or_insert(0.0);
                if out.growths > 0 {
                    let needed = (out.window_s - out.window_base_s).max(0.0);
                    *slack = (0.5 * *slack + 0.5 * needed).min(0.1);
                } else if out.windows_invalid * 20 < out.windows {
                    *slack *= 0.8;
                }
            }
            match outcome {
                Some(out) if before_last => {
                    self.partial.insert(id, out);
                }
                Some(out) => self.record(id, &job, &sel, &out)?,
                None => {}
            }
        }
        Ok(())
    }

    /// The settings of one job: its share of the paced time, whether its
    /// ranks spin or yield while they wait for a window.
    fn job_settings(&self, job: &Job, window_slack: &HashMap<u32, f64>) -> Settings {
        // Pacing (rank 0 alone decides when an entry ends): this job's share
        // of the time left, over the jobs left including this one.
        let top = self.plan.entry_budget.max(PACE_FLOOR_S);
        let (entry_budget_s, extension) = match self.plan.pace {
            Some(pace) if self.me == 0 => {
                let spent = self.prev_wall + (clock::raw_now() - self.t_start);
                let left = (self.queue.len() - self.qpos + 1) as f64;
                let share = ((pace - spent) / left).clamp(PACE_FLOOR_S, top);
                let extension = Extension {
                    budget_s: top,
                    min_samples: PACED_MIN_SAMPLES.min(self.settings.stats.max_samples),
                };
                (share, Some(extension))
            }
            _ => (self.plan.entry_budget, None),
        };
        // Spin while waiting for a window start unless the job's ranks on
        // this host outnumber its CPUs (then yield; ranks outside the job
        // sleep).
        let cpus = self.topo.layout.host_cpus;
        Settings {
            entry_budget_s,
            extension,
            yield_wait: cpus > 0 && self.topo.local_members(job, self.me) > cpus,
            window_slack_s: window_slack.get(&job.ranks).copied().unwrap_or(0.0),
            delay: self
                .settings
                .delay
                .filter(|d| d.jobs == 0 || self.jobs_started <= d.jobs),
            ..self.settings.clone()
        }
    }

    /// Rank 0: the entries of a measured job into the profile, saved.
    ///
    /// An entry with no valid sample (every window late, overrun or
    /// preempted: a burst of load) is not given up at once: its job goes
    /// to the end of the queue once more, where the windows have learned
    /// the machine's slack, and the skip stands only if that fails too.
    /// On the second pass the entries measured the first time are kept.
    fn record(
        &mut self,
        id: usize,
        job: &Job,
        sel: &[bool],
        out: &measure::Outcome,
    ) -> Result<(), Fail> {
        let second = self.retried.contains(&id);
        let mut retry = false;
        let hosts = self.topo.hosts_of(job);
        let same_host = same_host_of(job, hosts);
        let windowed = self.settings.sync == Sync::Window;
        let wall = self.prev_wall + (clock::raw_now() - self.t_start);
        let Some(prof) = self.profile.as_mut() else {
            return Ok(());
        };
        for (e, def) in job.kind.entries().iter().enumerate() {
            if !sel.get(e).copied().unwrap_or(false) {
                continue;
            }
            let key = ProfileKey {
                function: def.function.into(),
                p: job.p,
                bytes: job.bytes,
                role: def.role.map(String::from),
                same_host,
            };
            if second && prof.entry(&key).is_some() {
                continue;
            }
            let was_skipped = |s: &Skipped| {
                (s.function.as_str(), s.p, s.bytes) == (key.function.as_str(), key.p, key.bytes)
            };
            match make_entry(&key, out, e, hosts, &self.stats, &self.run_id, windowed) {
                Some(entry) => {
                    prof.skipped.retain(|s| !was_skipped(s));
                    prof.push_entry(entry);
                }
                None => {
                    retry |= !second;
                    prof.skipped.retain(|s| !was_skipped(s));
                    prof.skipped.push(Skipped {
                        function: key.function.clone(),
                        p: key.p,
                        bytes: key.bytes,
                        reason: format!(
                            "no valid sample ({}; {} dropped){}",
                            out.stop.map_or("no stop", |s| s.as_str()),
                            out.invalid[e],
                            if second {
                                ", also when measured again at the end"
                            } else {
                                ""
                            }
                        ),
                    });
                }
            }
        }
        if retry {
            self.retried.insert(id);
            self.queue.push(id);
        }
        if let Some(r) = prof.runs.last_mut() {
            r.wall_s = wall;
            r.kept_windows += out.kept_windows;
            r.kept_window_s += out.kept_window_s;
        }
        prof.save_atomic(&self.a.output)
            .map_err(|e| Fail(e.to_string()))?;
        if let Some((_, done)) = self.progress.as_mut() {
            *done += usize::from(!second);
        }
        Ok(())
    }
}
