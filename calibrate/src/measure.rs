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
use crate::mpi::Comm;
use crate::pattern::Pattern;
use crate::stat::StatOpts;

mod measurement;
use measurement::Measurement;

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
    /// A paced entry's way past its share (`--pace`), when it has too few
    /// samples to model.
    pub extension: Option<Extension>,
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

/// How far a paced entry may run past its share of the paced time: while
/// its least measured entry has fewer than `min_samples` kept samples, up to
/// `budget_s` (the unpaced entry budget). Pacing divides the run's time
/// evenly, and on an oversubscribed host (more spinning ranks than cores)
/// an even share leaves slow entries a few dozen samples: too few for 20
/// errors above a tail threshold, so they would stay empirical. The run is
/// then longer than its pace rather than its entries unmodelled.
#[derive(Debug, Clone, Copy)]
pub struct Extension {
    pub budget_s: f64,
    pub min_samples: u64,
}

/// What rank 0 of the job learned.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Kept samples per entry of the pattern (index of `Pattern::entries`).
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
            // SAFETY: sched_yield takes nothing and only gives up the CPU.
            unsafe { libc::sched_yield() };
        } else {
            std::hint::spin_loop();
        }
    }
}

/// Samples per window of each entry (averaged over the two directions).
fn per_window(kind: Pattern, p: i32) -> Vec<f64> {
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
    kind: Pattern,
    k: u32,
    bytes: u64,
    comm: Comm,
    clock: &mut Clock,
    s: &Settings,
    selected: &[bool],
    deadline: f64,
    prior: Option<Outcome>,
) -> Option<Outcome> {
    let mut m = Measurement::new(kind, k, bytes, comm, clock, s, selected);
    let est = m.warm_up();
    let mut out = m.start_outcome(prior);
    let elapsed_before = out.elapsed_s;
    let mut ctl = m.control(&mut out, est);
    while let Some(mut batch) = m.next_batch(&ctl) {
        m.run_batch(&mut batch);
        let (fl, all) = m.collect(&batch, &mut ctl);
        if m.me != 0 {
            continue;
        }
        // Rank 0: sort the samples, adapt the window, decide.
        let t = m.sort(&mut out, &batch, &fl, &all);
        if trace() {
            eprintln!(
                "trace: {} p={} {bytes}B batch {} window {:.1} us: arrived late {} \
                 started late {} overrun {} preempted {}{} -> {} count toward growth",
                kind.name(),
                m.p,
                batch.nr,
                ctl.window * 1e6,
                t.n_arrived,
                t.n_started,
                t.n_over,
                t.n_preempted,
                if t.drop_preempted { "" } else { " (kept)" },
                t.bad
            );
        }
        m.adapt(&mut ctl, &mut out, &fl, &t, batch.nr);
        m.decide(&mut ctl, &out, &t, batch.nr, deadline);
    }
    if m.me != 0 {
        return None;
    }
    // Entries with several samples per window can pass max_samples in the
    // last batch; keep the first max_samples.
    for v in &mut out.samples {
        v.truncate(s.stats.max_samples as usize);
    }
    out.window_s = ctl.window;
    out.stop = ctl.stop;
    out.elapsed_s = elapsed_before + (m.clock.now() - m.t0);
    Some(out)
}
