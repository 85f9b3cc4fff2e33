//! Measuring one entry (job): warm-up, then batches of synchronized windows
//! until the stopping rule, the sample limits or a budget ends it.
//!
//! Window-based synchronization (Hunold & Carpen-Amarie 2015 §3.3, Alg. 8/10/14): rank 0 of the
//! job's communicator broadcasts a start time in the (global) future; window
//! i of the batch starts at `start + i * window`; every rank waits for that
//! moment on its own synchronized clock, calls, and measures its own local
//! duration. A window is invalid when a rank arrived after the start or (with
//! no more ranks than cores) left its wait more than 1 us after it (started
//! late) or the call ended after the window (overran); the flag vectors are
//! reduced with MAX over the ranks, so one rank's problem invalidates the
//! window for all, and every sample of an invalid window is dropped and
//! counted, under one reason (late, else overrun, else preempted). When more
//! than a quarter of a batch's windows are invalid in a way a longer window
//! fixes (a rank arrived after the start, or a call overran) the window
//! doubles (SKaMPI: `max(2 w, ...)`); a rank that lost its core while it
//! waited or called does not grow it (see below). If the first window of a
//! batch starts late the lead time of the start broadcast doubles.
//!
//! A window is also invalid when a rank was *preempted* during its call: the
//! thread's context switches (`getrusage(RUSAGE_THREAD)`, involuntary
//! `ru_nivcsw` and voluntary `ru_nvcsw`, for an MPI library that yields while
//! it polls) grew between just before and just after the call. A spinning
//! call on an idle core switches neither way. Such a sample holds the
//! scheduler's time slice, not the call, and on a host shared with other
//! work those samples are what the q_max quantile catches (tmax of an 8-byte
//! call in milliseconds, and every overhead of a later run under-reported by
//! that much). Growing the window does not help against them, so they do not
//! count toward growth. When more than half of a batch's windows had a
//! preempted rank, the host is oversubscribed or saturated and dropping would
//! leave nothing: that batch's preempted windows are kept and counted
//! (`preempted_kept`), and the profile entry says so. Not done when the ranks
//! yield while waiting (more ranks than cores on the host): there every
//! window is preempted by design.
//!
//! `--sync barrier`: an `MPI_Barrier` before every call instead; nothing is
//! flagged (the barrier's exit skew lands in the measurement, Hunold & Carpen-Amarie 2015 §4).
//!
//! Test-only: `MPIOVER_CALIBRATE_TEST_DELAY="rank:every:seconds[:jobs]"` makes
//! that world rank sleep before every `every`-th window, so that it starts
//! late. `seconds` = `late` makes it start just after the window opened,
//! whatever the window's length: those windows are never valid. `jobs` limits
//! the delay to the run's first `jobs` jobs (0 or absent: all), so that an
//! entry can lose its first measurement and not the second.
//! Diagnosis: `MPIOVER_CALIBRATE_TRACE=1` prints every batch's window and
//! flag counts (rank 0 of each job, stderr).

use std::time::Duration;

use mpiover_common::profile::StopReason;
use mpiover_common::settings::Var;

use crate::clock::Clock;
use crate::mpi::{self, Comm};
use crate::pattern::{self, Bufs, Kind};
use crate::stat::{self, StatOpts};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sync {
    Window,
    Barrier,
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub sync: Sync,
    pub warmup: u32,
    pub stats: StatOpts,
    pub entry_budget_s: f64,
    pub window_min_s: f64,
    pub window_max_s: f64,
    pub lead_s: f64,
    /// Yield instead of spinning while waiting (oversubscribed host).
    pub yield_wait: bool,
    /// Added to the first window of the job (rank 0 only, seconds): learned
    /// from the growth earlier jobs needed, so that a noisy machine does not
    /// make every job relearn its window by dropping samples. Additive: the
    /// noise that makes windows invalid (a preempted rank, a timer interrupt)
    /// is a time, not a fraction of the call.
    pub window_slack_s: f64,
    /// Test-only delay (module docs).
    pub delay: Option<TestDelay>,
    pub world_rank: i32,
    /// Ping-pongs per clock fit point.
    pub sync_exchanges: u32,
}

/// What rank 0 of the job learned.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Kept samples per entry of the pattern (index of `Kind::entries`).
    pub samples: Vec<Vec<f64>>,
    /// Dropped samples per entry.
    pub invalid: Vec<u64>,
    pub windows: u64,
    pub windows_invalid: u64,
    pub late: u64,
    pub overrun: u64,
    /// Windows dropped because a rank was preempted during its call.
    pub preempted: u64,
    /// Windows with a preempted rank that were kept (most of their batch was).
    pub preempted_kept: u64,
    /// Dropped samples per entry by reason (exclusive, they sum to
    /// `invalid`): a rank started late; else the call overran the window;
    /// else a rank was preempted during its call.
    pub invalid_late: Vec<u64>,
    pub invalid_overrun: Vec<u64>,
    pub invalid_preempted: Vec<u64>,
    pub window_s: f64,
    /// Valid windows, and the sum over them of the longest rank's call time
    /// in the window (its slots summed): the job's call time counted once
    /// per window, not once per rank (the efficiency's denominator).
    pub kept_windows: u64,
    pub kept_window_s: f64,
    /// First window of the job without the learned slack, seconds.
    pub window_base_s: f64,
    pub growths: u32,
    pub stop: Option<StopReason>,
    pub elapsed_s: f64,
}

/// The test-only delay of `MPIOVER_CALIBRATE_TEST_DELAY` (module docs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestDelay {
    /// The world rank that starts late.
    pub rank: i32,
    /// Every `every`-th window.
    pub every: u64,
    /// Seconds of sleep; None: just past the window's start.
    pub seconds: Option<f64>,
    /// Only in the run's first `jobs` jobs (0: every job).
    pub jobs: u64,
}

impl TestDelay {
    /// Whether rank `me` is late in window `w`.
    fn hits(&self, me: i32, w: u64) -> bool {
        self.rank == me && w % self.every == self.every - 1
    }
}

pub fn parse_delay(v: &str) -> Result<TestDelay, String> {
    let parts: Vec<&str> = v.split(':').map(str::trim).collect();
    let err = || {
        format!(
            "{}=\"{v}\": expected rank:every:seconds[:jobs], e.g. 1:5:0.002 or 1:1:late:1",
            Var::CalibrateTestDelay.name()
        )
    };
    if !(3..=4).contains(&parts.len()) {
        return Err(err());
    }
    let rank = parts[0].parse().map_err(|_| err())?;
    let every: u64 = parts[1].parse().map_err(|_| err())?;
    let seconds = match parts[2] {
        "late" => None,
        x => Some(x.parse::<f64>().map_err(|_| err())?),
    };
    let jobs = match parts.get(3) {
        Some(x) => x.parse().map_err(|_| err())?,
        None => 0,
    };
    if every == 0 || seconds.is_some_and(|s| !(0.0..10.0).contains(&s)) {
        return Err(err());
    }
    Ok(TestDelay {
        rank,
        every,
        seconds,
        jobs,
    })
}

/// `MPIOVER_CALIBRATE_TRACE=1`: rank 0 of each job prints every batch's
/// window and flag counts on stderr (diagnosing a machine whose windows grow).
fn trace() -> bool {
    static T: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *T.get_or_init(|| Var::CalibrateTrace.get().is_some_and(|v| v != "0"))
}

/// Flag vectors of a batch (index * windows + window).
const ARRIVED_LATE: usize = 0;
const STARTED_LATE: usize = 1;
const OVERRUN: usize = 2;
const PREEMPTED: usize = 3;
const FLAGS: usize = 4;

/// How far after its window's start a rank may begin its call and still
/// count as on time: the spin-wait exits within tens of nanoseconds; more
/// means the rank was descheduled or interrupted while it waited, and its
/// partner's receive would wait for it.
const START_TOLERANCE_S: f64 = 1e-6;

/// Context switches of the calling thread so far, voluntary and involuntary
/// (0 when the kernel does not say: then nothing is ever flagged).
fn context_switches() -> i64 {
    let mut ru = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes a rusage into the valid, zeroed buffer.
    if unsafe { libc::getrusage(libc::RUSAGE_THREAD, ru.as_mut_ptr()) } == 0 {
        // SAFETY: initialized by getrusage (and zeroed before).
        let ru = unsafe { ru.assume_init() };
        ru.ru_nivcsw.wrapping_add(ru.ru_nvcsw)
    } else {
        0
    }
}

/// Wait until local time `t` without overshooting: sleep while far, then spin
/// (yielding the CPU between reads on an oversubscribed host).
#[inline]
fn wait_until(clock: &Clock, t: f64, yield_wait: bool) {
    loop {
        let now = clock.now();
        if now >= t {
            return;
        }
        let rem = t - now;
        if rem > 2e-3 {
            std::thread::sleep(Duration::from_secs_f64(rem - 1e-3));
        } else if yield_wait {
            unsafe { libc::sched_yield() };
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Samples per window of each entry (averaged over the two directions).
fn per_window(kind: Kind, p: i32) -> Vec<f64> {
    let mut c = vec![0.0; kind.entries().len()];
    for w in 0..2u64 {
        for r in 0..p {
            for s in 0..kind.slots() {
                if let Some(e) = kind.entry_of(r, s, w) {
                    c[e] += 0.5;
                }
            }
        }
    }
    c
}

/// Measure one job on `comm` (every rank of `comm` calls this); `k` is an
/// exchange's neighbour count. `selected`
/// says which of the pattern's entries are wanted; `deadline` is rank 0's raw
/// clock time when the whole run's budget ends. Returns the outcome on rank 0.
#[allow(clippy::too_many_arguments)]
pub fn run_job(
    kind: Kind,
    k: u32,
    bytes: u64,
    comm: Comm,
    clock: &mut Clock,
    s: &Settings,
    selected: &[bool],
    deadline: f64,
    prior: Option<Outcome>,
) -> Option<Outcome> {
    let me = mpi::rank(comm);
    let p = mpi::size(comm);
    let slots = kind.slots();
    let n_entries = kind.entries().len();
    let mut bufs = Bufs::new(kind, p as u32, k, bytes);
    // A fresh fit point with rank 0 for every rank of the job: the model's
    // offset is current whatever the error of its slope (SKaMPI and NBCBench
    // re-synchronize per measurement too); the points also lengthen the time
    // span the slope is learned from.
    if s.sync == Sync::Window {
        crate::clock::sync_round(clock, comm, s.sync_exchanges);
    }
    let clock: &Clock = clock;
    let t_job0 = clock.now();

    // Warm-up (barrier-synchronized, discarded): first contact, caches, and an
    // estimate of the call time for the first window.
    let mut d = vec![0.0; slots];
    let mut est = 0.0f64;
    let warm = s.warmup.max(1) as u64;
    for i in 0..warm {
        mpi::barrier(comm);
        pattern::run_window(kind, comm, me, i, &mut bufs, &mut d);
        if i > 0 || warm == 1 {
            est = est.max(d.iter().sum());
        }
    }
    let est = mpi::allreduce_max_f64(est, comm);

    let spw = per_window(kind, p);
    // Earlier rounds' outcome (rank 0): this round adds to its samples and
    // counts, and the stopping rule judges them all.
    let mut out = match prior {
        Some(o) if o.samples.len() == n_entries => o,
        _ => Outcome {
            samples: vec![Vec::new(); n_entries],
            invalid: vec![0; n_entries],
            invalid_late: vec![0; n_entries],
            invalid_overrun: vec![0; n_entries],
            invalid_preempted: vec![0; n_entries],
            ..Default::default()
        },
    };
    let elapsed_before = out.elapsed_s;
    // Growth is learned per round (the driver's window slack reads it).
    out.growths = 0;
    let watch_preemption = s.sync == Sync::Window && !s.yield_wait;
    out.window_base_s = (2.0 * est + 10e-6).clamp(s.window_min_s, s.window_max_s);
    let mut window = (out.window_base_s + s.window_slack_s).clamp(s.window_min_s, s.window_max_s);
    // A later round starts from the window the job's last round ended with:
    // relearning it by dropped windows would spend the round's share of the
    // budget (on an oversubscribed host all of it).
    if out.window_s > window {
        window = out.window_s.min(s.window_max_s);
    }
    let mut lead = s.lead_s;
    let mut w_count: u64 = 0;
    let mut stop: Option<StopReason> = None;
    let mut bad_at_max = 0u32;
    // Windows of the first batch: enough for min_samples of the slowest entry.
    let need_windows = |out: &Outcome, target: u64| -> u64 {
        (0..n_entries)
            .filter(|&e| selected[e] && spw[e] > 0.0)
            .map(|e| {
                let have = out.samples[e].len() as u64;
                ((target.saturating_sub(have)) as f64 / spw[e]).ceil() as u64
            })
            .max()
            .unwrap_or(0)
    };
    let mut nrep = ((need_windows(&out, s.stats.min_samples) as f64) * 1.1).ceil() as u64 + 2;

    loop {
        let mut hdr = [0.0f64; 4];
        if me == 0 {
            let budget_left = s.entry_budget_s - (clock.now() - t_job0);
            let fit = ((budget_left / window).floor() as u64).max(1);
            hdr = [
                if stop.is_some() { 1.0 } else { 0.0 },
                clock.global_now() + lead,
                window,
                nrep.clamp(4, 4000).min(fit) as f64,
            ];
        }
        mpi::bcast_f64s(&mut hdr, 0, comm);
        if hdr[0] != 0.0 {
            break;
        }
        let (start, win, nr) = (hdr[1], hdr[2], hdr[3] as usize);
        let mut dur = vec![0.0f64; nr * slots];
        // Arrived late | started late | overran | preempted, one vector each
        // (reduced with MAX, so a flag of any rank flags the window).
        let mut flags = vec![0u8; FLAGS * nr];
        for i in 0..nr {
            let w = w_count + i as u64;
            let delay = s.delay.filter(|d| d.hits(s.world_rank, w));
            match s.sync {
                Sync::Window => {
                    let t_start = clock.to_local(start + i as f64 * win);
                    match delay.map(|d| d.seconds) {
                        Some(Some(secs)) => std::thread::sleep(Duration::from_secs_f64(secs)),
                        Some(None) => wait_until(clock, t_start + 20e-6, s.yield_wait),
                        None => {}
                    }
                    if clock.now() > t_start {
                        flags[ARRIVED_LATE * nr + i] = 1;
                    } else {
                        wait_until(clock, t_start, s.yield_wait);
                        // The spin ends within a few clock reads of the start;
                        // a rank descheduled while it waited starts late too.
                        // (Not with more ranks than cores: there every yield
                        // gives the core away for a time slice.)
                        if watch_preemption && clock.now() - t_start > START_TOLERANCE_S {
                            flags[STARTED_LATE * nr + i] = 1;
                        }
                    }
                    // After the wait (which may sleep), before the call.
                    let switches = if watch_preemption {
                        context_switches()
                    } else {
                        0
                    };
                    pattern::run_window(
                        kind,
                        comm,
                        me,
                        w,
                        &mut bufs,
                        &mut dur[i * slots..(i + 1) * slots],
                    );
                    if clock.now() - t_start > win {
                        flags[OVERRUN * nr + i] = 1;
                    }
                    // After the overrun check: the system call is not the call's time.
                    if watch_preemption && context_switches() != switches {
                        flags[PREEMPTED * nr + i] = 1;
                    }
                }
                Sync::Barrier => {
                    mpi::barrier(comm);
                    if let Some(secs) = delay.and_then(|d| d.seconds) {
                        std::thread::sleep(Duration::from_secs_f64(secs));
                    }
                    pattern::run_window(
                        kind,
                        comm,
                        me,
                        w,
                        &mut bufs,
                        &mut dur[i * slots..(i + 1) * slots],
                    );
                }
            }
        }
        let mut fl = vec![0u8; FLAGS * nr];
        mpi::reduce_max_u8(&flags, &mut fl, 0, comm);
        let mut all = vec![0.0f64; if me == 0 { p as usize * nr * slots } else { 1 }];
        mpi::gather_f64s(&dur, &mut all, 0, comm);
        let first = w_count;
        w_count += nr as u64;
        if me != 0 {
            continue;
        }

        // Rank 0: sort the samples, adapt the window, decide.
        let flag = |f: usize, i: usize| fl[f * nr + i] != 0;
        let n_preempted = (0..nr).filter(|&i| flag(PREEMPTED, i)).count();
        let drop_preempted = n_preempted * 2 <= nr;
        // Windows that a longer window would have made valid.
        let mut bad = 0u64;
        let mut n_arrived = 0usize;
        let mut n_started = 0usize;
        let mut n_over = 0usize;
        for i in 0..nr {
            let arrived = flag(ARRIVED_LATE, i);
            let started = flag(STARTED_LATE, i);
            let over = flag(OVERRUN, i);
            let preempted = flag(PREEMPTED, i);
            n_arrived += arrived as usize;
            n_started += started as usize;
            n_over += over as usize;
            let late = arrived || started;
            let window_bad = late || over;
            let invalid = window_bad || (preempted && drop_preempted);
            // Growth fixes a window too short for the call and its
            // bookkeeping (the next rank arrives after the start, or the call
            // ends after the window), not a rank that lost its core: a spin
            // that ended late, or a call during which the thread was switched
            // out, says nothing about the window's length, and growing for it
            // made the windows of a shared 2-core machine run away to tens of
            // milliseconds (then a 1.5 s entry budget held 30 windows). When
            // most of the batch was preempted the switches belong to the call
            // (kept, see above) and an overrun is the window's fault again.
            if (arrived || over) && !(preempted && drop_preempted) {
                bad += 1;
            }
            if window_bad {
                out.late += late as u64;
                out.overrun += over as u64;
            }
            if preempted {
                if drop_preempted {
                    out.preempted += 1;
                } else {
                    out.preempted_kept += 1;
                }
            }
            for r in 0..p {
                for sl in 0..slots {
                    if let Some(e) = kind.entry_of(r, sl, first + i as u64) {
                        if !selected[e] {
                            continue;
                        }
                        if invalid {
                            // One reason per dropped sample, the first that
                            // applies: late, else overran, else preempted.
                            out.invalid[e] += 1;
                            if late {
                                out.invalid_late[e] += 1;
                            } else if over {
                                out.invalid_overrun[e] += 1;
                            } else {
                                out.invalid_preempted[e] += 1;
                            }
                        } else {
                            out.samples[e].push(all[(r as usize * nr + i) * slots + sl]);
                        }
                    }
                }
            }
            if !invalid {
                let longest = (0..p as usize)
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
        if trace() {
            eprintln!(
                "trace: {} p={p} {bytes}B batch {nr} window {:.1} us: arrived late {n_arrived} \
                 started late {n_started} overrun {n_over} preempted {n_preempted}{} -> {bad} \
                 count toward growth",
                kind.name(),
                window * 1e6,
                if drop_preempted { "" } else { " (kept)" }
            );
        }
        out.windows += nr as u64;
        out.windows_invalid += bad;
        if s.sync == Sync::Window {
            if flag(ARRIVED_LATE, 0) {
                lead = (lead * 2.0).min(0.05);
            }
            if bad * 4 > nr as u64 {
                if window >= s.window_max_s {
                    bad_at_max += 1;
                } else {
                    window = (window * 2.0).min(s.window_max_s);
                    out.growths += 1;
                }
            }
        }

        let elapsed = clock.now() - t_job0;
        let mut all_done = true;
        let mut hit_max = false;
        for e in (0..n_entries).filter(|&e| selected[e] && spw[e] > 0.0) {
            let n = out.samples[e].len() as u64;
            if n >= s.stats.max_samples {
                hit_max = true;
            } else if n < s.stats.min_samples || !stat::stable(&out.samples[e], &s.stats) {
                all_done = false;
            }
        }
        if all_done {
            stop = Some(if hit_max {
                StopReason::MaxSamples
            } else {
                StopReason::Stable
            });
        } else if crate::clock::raw_now() >= deadline {
            stop = Some(StopReason::TimeBudget);
        } else if elapsed + window * 8.0 >= s.entry_budget_s {
            stop = Some(StopReason::EntryBudget);
        } else if bad_at_max >= 3 {
            stop = Some(StopReason::WindowMax);
        } else {
            // Next batch: what the slowest entry still needs to reach the
            // minimum, else a quarter more for the stopping rule.
            let min_need = need_windows(&out, s.stats.min_samples);
            nrep = if min_need > 0 {
                min_need
            } else {
                let n_min = (0..n_entries)
                    .filter(|&e| selected[e] && spw[e] > 0.0)
                    .map(|e| out.samples[e].len() as u64)
                    .min()
                    .unwrap_or(0);
                need_windows(&out, (n_min + n_min / 4).min(s.stats.max_samples))
            };
            let valid_frac = 1.0 - bad as f64 / nr as f64;
            nrep = ((nrep as f64) / valid_frac.max(0.25) * 1.1).ceil() as u64 + 1;
        }
    }
    if me == 0 {
        // Entries with several samples per window can pass max_samples in the
        // last batch; keep the first max_samples.
        for v in &mut out.samples {
            v.truncate(s.stats.max_samples as usize);
        }
        out.window_s = window;
        out.stop = stop;
        out.elapsed_s = elapsed_before + (clock.now() - t_job0);
        Some(out)
    } else {
        None
    }
}
