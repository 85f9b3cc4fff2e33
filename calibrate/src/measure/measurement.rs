//! The steps of measuring one job of the grid ([`super::run_job`]):
//! warm-up, then batches of windows, each run on every rank, gathered,
//! sorted and judged on rank 0.

use std::time::Duration;

use mpiover_common::profile::StopReason;

use super::{
    context_switches, per_window, wait_until, Outcome, Settings, Sync, TestDelay, ARRIVED_LATE,
    FLAGS, OVERRUN, PREEMPTED, STARTED_LATE, START_TOLERANCE_S,
};
use crate::clock::Clock;
use crate::mpi::{self, Comm};
use crate::pattern::{self, Bufs, Pattern};
use crate::stat;

/// One job of the grid being measured: what stays fixed over it, and its
/// buffers. (The job itself, what to measure, is `crate::grid::Job`.)
pub(super) struct Measurement<'a> {
    pub kind: Pattern,
    comm: Comm,
    pub clock: &'a Clock,
    pub s: &'a Settings,
    selected: &'a [bool],
    /// Rank in `comm`, and `comm`'s size.
    pub me: i32,
    pub p: i32,
    slots: usize,
    n_entries: usize,
    /// Samples per window of each entry.
    spw: Vec<f64>,
    watch_preemption: bool,
    /// Made by `Bufs::new` for `kind` and `p`, which `run_window` relies on.
    bufs: Bufs,
    /// Local clock time at the job's start.
    pub t0: f64,
}

/// What rank 0 adapts from batch to batch (the other ranks only count
/// windows).
pub(super) struct Control {
    pub window: f64,
    lead: f64,
    nrep: u64,
    bad_at_max: u32,
    pub stop: Option<StopReason>,
    /// Windows run so far (numbers the next batch's first window).
    w_count: u64,
    /// The entry's budget now: its paced share, or the extension's while
    /// an entry is short of the extension's samples.
    budget_s: f64,
}

/// One batch as every rank runs it: what rank 0 broadcast, then the local
/// durations (window * slots + slot) and flags (flag * windows + window).
pub(super) struct Batch {
    start: f64,
    win: f64,
    pub nr: usize,
    /// Number of the batch's first window within the job.
    first: u64,
    dur: Vec<f64>,
    flags: Vec<u8>,
}

/// Why a window's samples were dropped: the first that applies.
enum Dropped {
    Late,
    Overrun,
    Preempted,
}

/// Rank 0's count of a batch's flagged windows.
pub(super) struct Tally {
    pub n_arrived: usize,
    pub n_started: usize,
    pub n_over: usize,
    pub n_preempted: usize,
    /// Preempted windows are dropped (false: most of the batch was, kept).
    pub drop_preempted: bool,
    /// Windows that a longer window would have made valid.
    pub bad: u64,
}

impl<'a> Measurement<'a> {
    /// Allocates the job's buffers, then (window sync) takes a clock fit
    /// point; the job's time starts after both.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        kind: Pattern,
        k: u32,
        bytes: u64,
        comm: Comm,
        clock: &'a mut Clock,
        s: &'a Settings,
        selected: &'a [bool],
    ) -> Measurement<'a> {
        let me = mpi::rank(comm);
        let p = mpi::size(comm);
        let bufs = Bufs::new(kind, p as u32, k, bytes);
        // A fresh fit point with rank 0 for every rank of the job: the model's
        // offset is current whatever the error of its slope (SKaMPI and NBCBench
        // re-synchronize per measurement too); the points also lengthen the time
        // span the slope is learned from.
        if s.sync == Sync::Window {
            crate::clock::sync_round(clock, comm, s.sync_exchanges);
        }
        let clock: &'a Clock = clock;
        Measurement {
            kind,
            comm,
            clock,
            s,
            selected,
            me,
            p,
            slots: kind.slots(),
            n_entries: kind.entries().len(),
            spw: per_window(kind, p),
            watch_preemption: s.sync == Sync::Window && !s.yield_wait,
            bufs,
            t0: clock.now(),
        }
    }

    /// Runs window `w` of the pattern, writing each slot's duration to `out`.
    fn window(&mut self, w: u64, out: &mut [f64]) {
        // SAFETY: `self.bufs` was made by `Bufs::new` for `self.kind` and
        // `self.p`, the size of `self.comm` (`Measurement::new`).
        unsafe { pattern::run_window(self.kind, self.comm, self.me, w, &mut self.bufs, out) };
    }

    /// Warm-up (barrier-synchronized, discarded): first contact, caches, and
    /// an estimate of the call time for the first window (max over ranks).
    pub fn warm_up(&mut self) -> f64 {
        let mut d = vec![0.0; self.slots];
        let mut est = 0.0f64;
        let warm = self.s.warmup.max(1) as u64;
        for i in 0..warm {
            mpi::barrier(self.comm);
            self.window(i, &mut d);
            if i > 0 || warm == 1 {
                est = est.max(d.iter().sum());
            }
        }
        mpi::allreduce_max_f64(est, self.comm)
    }

    /// Earlier rounds' outcome (rank 0): this round adds to its samples and
    /// counts, and the stopping rule judges them all.
    pub fn start_outcome(&self, prior: Option<Outcome>) -> Outcome {
        let n = self.n_entries;
        match prior {
            Some(o) if o.samples.len() == n => o,
            _ => Outcome {
                samples: vec![Vec::new(); n],
                invalid: vec![0; n],
                invalid_late: vec![0; n],
                invalid_overrun: vec![0; n],
                invalid_preempted: vec![0; n],
                ..Default::default()
            },
        }
    }

    /// The first batch's window and size, from the warm-up's estimate `est`.
    pub fn control(&self, out: &mut Outcome, est: f64) -> Control {
        let s = self.s;
        // Growth is learned per round (the driver's window slack reads it).
        out.growths = 0;
        out.window_base_s = (2.0 * est + 10e-6).clamp(s.window_min_s, s.window_max_s);
        let mut window =
            (out.window_base_s + s.window_slack_s).clamp(s.window_min_s, s.window_max_s);
        // A later round starts from the window the job's last round ended with:
        // relearning it by dropped windows would spend the round's share of the
        // budget (on an oversubscribed host all of it).
        if out.window_s > window {
            window = out.window_s.min(s.window_max_s);
        }
        // Windows of the first batch: enough for min_samples of the slowest entry.
        let nrep = ((self.need_windows(out, s.stats.min_samples) as f64) * 1.1).ceil() as u64 + 2;
        Control {
            window,
            lead: s.lead_s,
            nrep,
            bad_at_max: 0,
            stop: None,
            w_count: 0,
            budget_s: s.entry_budget_s,
        }
    }

    /// The entries measured here: selected, with samples in some window.
    fn measured(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.n_entries).filter(|&e| self.selected[e] && self.spw[e] > 0.0)
    }

    /// Samples kept by the least measured entry.
    fn least_kept(&self, out: &Outcome) -> u64 {
        self.measured()
            .map(|e| out.samples[e].len() as u64)
            .min()
            .unwrap_or(0)
    }

    /// Windows the slowest measured entry needs to reach `target` samples.
    fn need_windows(&self, out: &Outcome, target: u64) -> u64 {
        self.measured()
            .map(|e| {
                let have = out.samples[e].len() as u64;
                ((target.saturating_sub(have)) as f64 / self.spw[e]).ceil() as u64
            })
            .max()
            .unwrap_or(0)
    }

    /// Rank 0's decision, broadcast: the next batch, or `None` once stopped.
    pub fn next_batch(&self, ctl: &Control) -> Option<Batch> {
        let mut hdr = [0.0f64; 4];
        if self.me == 0 {
            let budget_left = ctl.budget_s - (self.clock.now() - self.t0);
            let fit = ((budget_left / ctl.window).floor() as u64).max(1);
            hdr = [
                if ctl.stop.is_some() { 1.0 } else { 0.0 },
                self.clock.global_now() + ctl.lead,
                ctl.window,
                ctl.nrep.clamp(4, 4000).min(fit) as f64,
            ];
        }
        mpi::bcast_f64s(&mut hdr, 0, self.comm);
        if hdr[0] != 0.0 {
            return None;
        }
        let nr = hdr[3] as usize;
        Some(Batch {
            start: hdr[1],
            win: hdr[2],
            nr,
            first: ctl.w_count,
            dur: vec![0.0f64; nr * self.slots],
            // Arrived late | started late | overran | preempted, one vector each
            // (reduced with MAX, so a flag of any rank flags the window).
            flags: vec![0u8; FLAGS * nr],
        })
    }

    /// Runs the batch's windows on this rank.
    pub fn run_batch(&mut self, b: &mut Batch) {
        for i in 0..b.nr {
            let w = b.first + i as u64;
            let delay = self.s.delay.filter(|d| d.hits(self.s.world_rank, w));
            match self.s.sync {
                Sync::Window => self.run_synced(b, i, delay),
                Sync::Barrier => {
                    mpi::barrier(self.comm);
                    if let Some(secs) = delay.and_then(|d| d.seconds) {
                        std::thread::sleep(Duration::from_secs_f64(secs));
                    }
                    let slots = self.slots;
                    self.window(w, &mut b.dur[i * slots..(i + 1) * slots]);
                }
            }
        }
    }

    /// Window `i` of the batch at its start time, flagging it when this rank
    /// arrived or started late, overran, or was preempted.
    fn run_synced(&mut self, b: &mut Batch, i: usize, delay: Option<TestDelay>) {
        let (clock, yield_wait, nr) = (self.clock, self.s.yield_wait, b.nr);
        let t_start = clock.to_local(b.start + i as f64 * b.win);
        match delay.map(|d| d.seconds) {
            Some(Some(secs)) => std::thread::sleep(Duration::from_secs_f64(secs)),
            Some(None) => wait_until(clock, t_start + 20e-6, yield_wait),
            None => {}
        }
        if clock.now() > t_start {
            b.flags[ARRIVED_LATE * nr + i] = 1;
        } else {
            wait_until(clock, t_start, yield_wait);
            // The spin ends within a few clock reads of the start;
            // a rank descheduled while it waited starts late too.
            // (Not with more ranks than cores: there every yield
            // gives the core away for a time slice.)
            if self.watch_preemption && clock.now() - t_start > START_TOLERANCE_S {
                b.flags[STARTED_LATE * nr + i] = 1;
            }
        }
        // After the wait (which may sleep), before the call.
        let switches = if self.watch_preemption {
            context_switches()
        } else {
            0
        };
        let slots = self.slots;
        self.window(b.first + i as u64, &mut b.dur[i * slots..(i + 1) * slots]);
        if clock.now() - t_start > b.win {
            b.flags[OVERRUN * nr + i] = 1;
        }
        // After the overrun check: the system call is not the call's time.
        if self.watch_preemption && context_switches() != switches {
            b.flags[PREEMPTED * nr + i] = 1;
        }
    }

    /// The batch's flags (MAX over ranks) and every rank's durations (rank *
    /// windows * slots + window * slots + slot), on rank 0; counts the
    /// batch's windows on every rank.
    pub fn collect(&self, b: &Batch, ctl: &mut Control) -> (Vec<u8>, Vec<f64>) {
        let nr = b.nr;
        let mut fl = vec![0u8; FLAGS * nr];
        mpi::reduce_max_u8(&b.flags, &mut fl, 0, self.comm);
        let mut all = vec![
            0.0f64;
            if self.me == 0 {
                self.p as usize * nr * self.slots
            } else {
                1
            }
        ];
        mpi::gather_f64s(&b.dur, &mut all, 0, self.comm);
        ctl.w_count += nr as u64;
        (fl, all)
    }

    /// Rank 0: sorts the batch's samples into kept and dropped per entry,
    /// and counts its flagged windows.
    pub fn sort(&self, out: &mut Outcome, b: &Batch, fl: &[u8], all: &[f64]) -> Tally {
        let nr = b.nr;
        let flag = |f: usize, i: usize| fl[f * nr + i] != 0;
        let n_preempted = (0..nr).filter(|&i| flag(PREEMPTED, i)).count();
        let mut t = Tally {
            n_arrived: 0,
            n_started: 0,
            n_over: 0,
            n_preempted,
            drop_preempted: n_preempted * 2 <= nr,
            bad: 0,
        };
        for i in 0..nr {
            let arrived = flag(ARRIVED_LATE, i);
            let started = flag(STARTED_LATE, i);
            let over = flag(OVERRUN, i);
            let preempted = flag(PREEMPTED, i);
            t.n_arrived += arrived as usize;
            t.n_started += started as usize;
            t.n_over += over as usize;
            let late = arrived || started;
            let window_bad = late || over;
            let invalid = window_bad || (preempted && t.drop_preempted);
            // Growth fixes a window too short for the call and its
            // bookkeeping (the next rank arrives after the start, or the call
            // ends after the window), not a rank that lost its core: a spin
            // that ended late, or a call during which the thread was switched
            // out, says nothing about the window's length, and growing for it
            // made the windows of a shared 2-core machine run away to tens of
            // milliseconds (then a 1.5 s entry budget held 30 windows). When
            // most of the batch was preempted the switches belong to the call
            // (kept, see above) and an overrun is the window's fault again.
            if (arrived || over) && !(preempted && t.drop_preempted) {
                t.bad += 1;
            }
            if window_bad {
                out.late += late as u64;
                out.overrun += over as u64;
            }
            if preempted {
                if t.drop_preempted {
                    out.preempted += 1;
                } else {
                    out.preempted_kept += 1;
                }
            }
            let reason = if !invalid {
                None
            } else if late {
                Some(Dropped::Late)
            } else if over {
                Some(Dropped::Overrun)
            } else {
                Some(Dropped::Preempted)
            };
            self.sort_window(out, b, all, i, reason);
        }
        out.windows += nr as u64;
        out.windows_invalid += t.bad;
        t
    }

    /// Window `i`'s samples of every rank: kept, or dropped under `reason`
    /// (one per dropped sample, the first that applies: late, else overran,
    /// else preempted).
    fn sort_window(
        &self,
        out: &mut Outcome,
        b: &Batch,
        all: &[f64],
        i: usize,
        reason: Option<Dropped>,
    ) {
        let (nr, slots) = (b.nr, self.slots);
        for r in 0..self.p {
            for sl in 0..slots {
                if let Some(e) = self.kind.entry_of(r, sl, b.first + i as u64) {
                    if !self.selected[e] {
                        continue;
                    }
                    match reason {
                        None => out.samples[e].push(all[(r as usize * nr + i) * slots + sl]),
                        Some(ref why) => {
                            out.invalid[e] += 1;
                            match why {
                                Dropped::Late => out.invalid_late[e] += 1,
                                Dropped::Overrun => out.invalid_overrun[e] += 1,
                                Dropped::Preempted => out.invalid_preempted[e] += 1,
                            }
                        }
                    }
                }
            }
        }
        if reason.is_none() {
            let longest = (0..self.p as usize)
                .map(|r| {
                    all[(r * nr + i) * slots..(r * nr + i + 1) * slots]
                        .iter()
                        .sum()
                })
                .fold(0.0f64, f64::max);
            out.kept_windows += 1;
            out.kept_window_s += longest;
        }
    }

    /// Rank 0: a longer lead after a late first window, a longer window after
    /// a batch with too many windows it would have fixed.
    pub fn adapt(&self, ctl: &mut Control, out: &mut Outcome, fl: &[u8], t: &Tally, nr: usize) {
        let s = self.s;
        if s.sync != Sync::Window {
            return;
        }
        if fl[ARRIVED_LATE * nr] != 0 {
            ctl.lead = (ctl.lead * 2.0).min(0.05);
        }
        if t.bad * 4 > nr as u64 {
            if ctl.window >= s.window_max_s {
                ctl.bad_at_max += 1;
            } else {
                ctl.window = (ctl.window * 2.0).min(s.window_max_s);
                out.growths += 1;
            }
        }
    }

    /// Rank 0: the entry's budget now, kept in `ctl` for the next batch's
    /// size. A paced share is extended while the least measured entry has
    /// fewer samples than a tail model needs (`Extension`).
    fn budget_s(&self, out: &Outcome, ctl: &mut Control) -> f64 {
        ctl.budget_s = match self.s.extension {
            Some(x) if self.least_kept(out) < x.min_samples => {
                x.budget_s.max(self.s.entry_budget_s)
            }
            _ => self.s.entry_budget_s,
        };
        ctl.budget_s
    }

    /// Rank 0: stops (by the stopping rule, a sample limit or a budget), or
    /// sizes the next batch. `deadline` is the raw clock time when the run's
    /// budget ends.
    pub fn decide(&self, ctl: &mut Control, out: &Outcome, t: &Tally, nr: usize, deadline: f64) {
        let s = self.s;
        let elapsed = self.clock.now() - self.t0;
        let mut all_done = true;
        let mut hit_max = false;
        for e in self.measured() {
            let n = out.samples[e].len() as u64;
            if n >= s.stats.max_samples {
                hit_max = true;
            } else if n < s.stats.min_samples || !stat::stable(&out.samples[e], &s.stats) {
                all_done = false;
            }
        }
        if all_done {
            ctl.stop = Some(if hit_max {
                StopReason::MaxSamples
            } else {
                StopReason::Stable
            });
        } else if crate::clock::raw_now() >= deadline {
            ctl.stop = Some(StopReason::TimeBudget);
        } else if elapsed + ctl.window * 8.0 >= self.budget_s(out, ctl) {
            ctl.stop = Some(StopReason::EntryBudget);
        } else if ctl.bad_at_max >= 3 {
            ctl.stop = Some(StopReason::WindowMax);
        } else {
            // Next batch: what the slowest entry still needs to reach the
            // minimum, else a quarter more for the stopping rule.
            let min_need = self.need_windows(out, s.stats.min_samples);
            let nrep = if min_need > 0 {
                min_need
            } else {
                let n_min = self.least_kept(out);
                self.need_windows(out, (n_min + n_min / 4).min(s.stats.max_samples))
            };
            let valid_frac = 1.0 - t.bad as f64 / nr as f64;
            ctl.nrep = ((nrep as f64) / valid_frac.max(0.25) * 1.1).ceil() as u64 + 1;
        }
    }
}
