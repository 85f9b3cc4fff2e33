//! The timer and the global clock.
//!
//! Durations of the measured calls are read with the interposer's own timer
//! (`mpiover_common::timer`: `rdtsc` where the TSC is constant and non-stop,
//! else `clock_gettime`, or as `MPIOVER_TIMER` says), so that tmax and a
//! wrapped call's duration carry the same timer cost and resolution. Window
//! times are `clock_gettime(CLOCK_MONOTONIC)` seconds (the clock the model
//! below relates across ranks). For window-based synchronization every rank keeps a
//! linear model of its clock against rank 0's (the reference, "global" time):
//!
//! ```text
//! local - global = slope * local + intercept        (Hunold & Carpen-Amarie 2015, Alg. 15/16)
//! ```
//!
//! learned by ping-pong regression in the manner of Jones and Koenig: each fit
//! point is the offset measured by a few ping-pongs with rank 0, of which the
//! one with the smallest round trip is kept (Cristian: the offset estimate of
//! the fastest exchange has the smallest error bound, rtt/2); the model is the
//! Theil-Sen line through the fit points (median of pairwise slopes, robust to
//! a fit point spoiled by a preempted rank, where least squares is not). Fit
//! points are taken spread over the initial synchronization, at the start of
//! every entry (for the entry's ranks) and at every periodic
//! re-synchronization, so the offset is always fresh and the time span the
//! slope is learned from grows with the run. A slope that is not significant
//! (less than three standard errors from zero) is set to zero: extrapolating a
//! noisy slope would add error, not remove it.
//!
//! **A model gone wrong.** Before a fit point joins the model, the offset it
//! measured is compared with the model's prediction at its time. The
//! measurement is within half its round trip of the truth (Cristian), so a
//! prediction further off than that by more than
//! [`max(MODEL_FLOOR_S, 5 x the fit's robust residual)`](MODEL_FLOOR_S) means
//! (plus what the slope's standard error allows at that distance, once the
//! fit spans [`MODEL_MIN_SPAN_S`]) means the model no longer describes the
//! clock: the drift changed since the slope was learned (a clock being
//! slewed, a migrated virtual machine), and windows scheduled in between
//! started the ranks that far apart. So does a fit whose points no longer
//! lie on a line: their robust residual beyond 5 times half their median
//! round trip (offsets that wander inflate the residual, and with it the
//! first bound, which then goes blind). The
//! rank says so on stderr (once), counts it in the profile (`clock_sync.ranks[]
//! .model_failures` and the worst error, `prediction_error_s`), and starts
//! its model afresh from that point; without skew the check stays silent,
//! the one clock of a host predicting itself to within microseconds.
//!
//! **One kernel, one clock.** Processes under one kernel read one
//! CLOCK_MONOTONIC unless they sit in different time namespaces, so a rank
//! whose boot id and time namespace are rank 0's has nothing to learn: its
//! offset is zero, exactly. Such a rank keeps the zero model ("shares rank
//! 0's clock", `clock_sync.ranks[].shared` in the profile) and still takes
//! part in the ping-pongs, whose round trips the profile reports. Learning a
//! model anyway would not be harmless: where ranks outnumber the CPUs, the
//! fastest of a few exchanges can still hold a time slice, the fit points
//! scatter by hundreds of microseconds, and windows scheduled from that
//! model start the ranks that far apart (seen with four MPICH ranks on two
//! CPUs: a residual of 0.4-0.5 ms).
//!
//! **Test only:** `MPIOVER_CALIBRATE_TEST_CLOCK_SKEW` skews the clock this
//! module reads, for tests of the synchronization; it is not a setting for
//! measurements. It is a comma-separated list of entries, `rank:offset_s:drift`
//! for one world rank or `host=NAME:offset_s:drift` for every rank on host
//! `NAME` (its processor name; a rank's own entry wins over its host's). A
//! skewed clock reads `t + offset + drift * t` (t = the real monotonic time,
//! so all ranks of a host read one clock); an entry with a fourth field,
//! `...:drift:flip_s`, makes the drift change sign every `flip_s` seconds of
//! t (the clock reads `t + offset + drift * w(t)`, `w` a triangle wave of
//! slope +-1 between 0 and `flip_s`): a clock no linear model follows for
//! long, to check that a model gone wrong is said.

use std::ffi::OsStr;

use mpiover_common::profile::RankClock;
use mpiover_common::settings::{TimerSetting as Timer, Var};

use crate::mpi::{self, Comm};
use crate::skew::{parse_skew, skew_for, Skew};

/// Read the raw monotonic clock, seconds.
#[inline(always)]
pub fn raw_now() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live local the call fills; CLOCK_MONOTONIC always
    // exists on Linux, so the call cannot fail and leave it unset.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Chooses the duration timer (every rank, before any measurement): the
/// interposer's, chosen the same way (`MPIOVER_TIMER`, else automatic).
pub fn init_duration_timer() -> Result<(), String> {
    // A value that is not UTF-8 counts as unset here, as it always has.
    let v = std::env::var(Var::Timer.name()).ok();
    let timer = Timer::parse(v.as_deref().map(OsStr::new)).map_err(|e| e.without_fallback())?;
    mpiover_common::timer::init(timer.use_tsc());
    Ok(())
}

/// Name, resolution and mean cost of one read of the duration timer.
pub fn timer_properties() -> (&'static str, f64, f64) {
    let (res, cost) = mpiover_common::timer::characterize(mpiover_common::timer::unit_quick());
    (mpiover_common::timer::name(), res, cost)
}

/// Linear clock model of one rank.
#[derive(Debug, Clone, Copy, Default)]
pub struct Model {
    pub slope: f64,
    pub intercept: f64,
}

/// One fit point: local time (middle of the exchange) and `local - global`.
#[derive(Debug, Clone, Copy)]
pub struct FitPoint {
    pub x_local: f64,
    pub diff: f64,
    pub rtt: f64,
}

#[derive(Debug)]
pub struct Clock {
    skew: Option<Skew>,
    pub model: Model,
    points: Vec<FitPoint>,
    pub residual: f64,
    pub slope_se: f64,
    /// Robust scale of the fit's residuals (1.4826 MAD), seconds.
    scale: f64,
    /// Median round trip of the points the line goes through, seconds.
    rtt_median: f64,
    /// Fit points the model mispredicted (see the module docs), and the
    /// worst such error beyond the point's own uncertainty, seconds.
    pub failures: u32,
    pub worst_error: f64,
    /// This rank's world rank and host, for the warning.
    who: String,
    /// This rank reads rank 0's clock (see the module docs): the model stays zero.
    pub shared: bool,
}

/// A model's prediction may be off by this much (seconds) beyond a fit
/// point's own uncertainty (half its round trip) before it is said to have
/// gone wrong, unless the fit's residuals are larger: a tenth of a
/// millisecond, less than the windows of any collective on a loaded host
/// absorb, and far above what the clock of one host mispredicts itself by.
pub const MODEL_FLOOR_S: f64 = 100e-6;

/// A model is judged only once its fit points span this much time
/// (seconds): a slope learned over the initial synchronization's fraction
/// of a second is too uncertain to call wrong.
pub const MODEL_MIN_SPAN_S: f64 = 1.0;

/// Keep this many fit points (the most recent; every job adds one): linear
/// drift is a good model over minutes, not necessarily over hours.
const MAX_POINTS: usize = 96;

impl Clock {
    /// The clock of this rank (on `host`), with the test-only skew if it
    /// names this rank or its host.
    pub fn new(world_rank: i32, host: &str) -> Result<Clock, String> {
        let skew = match Var::CalibrateTestClockSkew.get_nonblank() {
            Some(v) => skew_for(&parse_skew(&v)?, world_rank, host),
            None => None,
        };
        let mut c = Clock::unskewed();
        c.skew = skew;
        c.who = format!("rank {world_rank} ({host})");
        Ok(c)
    }

    fn unskewed() -> Clock {
        Clock {
            skew: None,
            model: Model::default(),
            points: Vec::new(),
            residual: 0.0,
            slope_se: 0.0,
            scale: 0.0,
            rtt_median: 0.0,
            failures: 0,
            worst_error: 0.0,
            who: String::new(),
            shared: false,
        }
    }

    /// Local time of this rank, seconds.
    #[inline(always)]
    pub fn now(&self) -> f64 {
        let t = raw_now();
        match &self.skew {
            None => t,
            Some(s) => s.read(t),
        }
    }

    pub fn to_global(&self, local: f64) -> f64 {
        local - (self.model.slope * local + self.model.intercept)
    }

    pub fn to_local(&self, global: f64) -> f64 {
        (global + self.model.intercept) / (1.0 - self.model.slope)
    }

    pub fn global_now(&self) -> f64 {
        self.to_global(self.now())
    }

    /// How far the model's prediction at `p` is from what `p` measured,
    /// beyond `p`'s own uncertainty (half its round trip), seconds; 0 when
    /// within it or when there is no model yet.
    pub fn prediction_error(&self, p: &FitPoint) -> f64 {
        if self.points.len() < 3 || self.span() < MODEL_MIN_SPAN_S {
            return 0.0;
        }
        let predicted = self.model.slope * p.x_local + self.model.intercept;
        ((p.diff - predicted).abs() - 0.5 * p.rtt).max(0.0)
    }

    /// The error [`Clock::prediction_error`] may reach at local time `x`
    /// before the model is said to have gone wrong: the floor or 5 times the
    /// fit's robust residual, plus what the slope's own uncertainty (3
    /// standard errors) allows at that distance from the fit points.
    pub fn prediction_bound(&self, x: f64) -> f64 {
        let n = self.points.len().max(1) as f64;
        let center = self.points.iter().map(|p| p.x_local).sum::<f64>() / n;
        let slope = if self.slope_se.is_finite() {
            3.0 * self.slope_se * (x - center).abs()
        } else {
            0.0
        };
        MODEL_FLOOR_S.max(5.0 * self.scale) + slope
    }

    /// Whether the fit's points no longer lie on a line: their robust
    /// residual exceeds what their round trips allow (5 times half the
    /// median round trip, at least [`MODEL_FLOOR_S`]), over a span of
    /// [`MODEL_MIN_SPAN_S`] and 6 points at least. (Offsets that wander
    /// inflate the residual, and the residual the bound of
    /// [`Clock::prediction_bound`], so that bound alone goes blind.)
    fn off_the_line(&self) -> bool {
        self.points.len() >= 6
            && self.span() >= MODEL_MIN_SPAN_S
            && self.scale > MODEL_FLOOR_S.max(2.5 * self.rtt_median)
    }

    fn add_point(&mut self, p: FitPoint) {
        // A shared clock keeps its points only for the round trips the
        // profile reports: its model stays zero.
        if !self.shared {
            self.check_prediction(&p);
        }
        self.points.push(p);
        if self.points.len() > MAX_POINTS {
            self.points.remove(0);
        }
        if !self.shared {
            self.refit();
        }
    }

    /// Compares `p` with the model's prediction; a model gone wrong (see the
    /// module docs) is said once, counted, and starts afresh from `p`.
    fn check_prediction(&mut self, p: &FitPoint) {
        let mut err = self.prediction_error(p);
        let mut bound = self.prediction_bound(p.x_local);
        if err <= bound && self.off_the_line() {
            err = self.scale;
            bound = MODEL_FLOOR_S.max(2.5 * self.rtt_median);
        }
        if err > bound {
            if self.failures == 0 {
                eprintln!(
                    "mpiover-calibrate: warning: {}: the clock model went wrong: a fit point's \
                     offset was {:.1} us from the model's prediction beyond its own uncertainty \
                     (bound {:.1} us; drift {:.3e} learned over {:.1} s): the clock's drift \
                     changed since it was learned (or the slope was learned from spoiled fit \
                     points), and windows scheduled since the last fit point may have started the \
                     ranks that far apart; the model starts afresh from \
                     this point (counted in the profile's clock_sync.ranks[].model_failures)",
                    self.who,
                    err * 1e6,
                    bound * 1e6,
                    self.model.slope / (1.0 - self.model.slope),
                    self.span(),
                );
            }
            self.failures += 1;
            self.worst_error = self.worst_error.max(err);
            self.points.clear();
        }
    }

    /// Robust line through the fit points; the slope is kept only when
    /// significant, else the model is the mean offset.
    fn refit(&mut self) {
        fn median(mut v: Vec<f64>) -> f64 {
            v.sort_by(|a, b| a.total_cmp(b));
            let m = v.len() / 2;
            if v.len() % 2 == 1 {
                v[m]
            } else {
                0.5 * (v[m - 1] + v[m])
            }
        }
        // A fit point's offset is within half its round trip of the truth:
        // points whose exchange was slowed (a rank preempted in it, on a
        // loaded host) say little, and a few of them at one end of the span
        // tilt the slope. The line goes through those with a round trip
        // within 4 times the median (all of them when that leaves fewer
        // than 3).
        if self.points.is_empty() {
            return;
        }
        let keep = |cut: f64| -> Vec<FitPoint> {
            self.points
                .iter()
                .copied()
                .filter(|p| p.rtt <= cut)
                .collect()
        };
        let rtt_min = self
            .points
            .iter()
            .map(|p| p.rtt)
            .fold(f64::INFINITY, f64::min);
        // The fastest exchanges first (within 3 times the fastest, or
        // 10 us): when at least 6 of them span half the time, the line
        // goes through them alone.
        let mut pts = keep((3.0 * rtt_min).max(10e-6));
        if pts.len() < 6 || span_of(&pts) < 0.5 * span_of(&self.points) {
            pts = keep(4.0 * median(self.points.iter().map(|p| p.rtt).collect()));
        }
        if pts.len() < 3 {
            pts = self.points.clone();
        }
        self.rtt_median = median(pts.iter().map(|p| p.rtt).collect());
        let n = pts.len();
        // Theil-Sen: the median of the pairwise slopes, robust to the odd fit
        // point that a preempted rank spoiled (a loaded machine has them).
        let mut slope = 0.0;
        let mut se = f64::INFINITY;
        if n >= 3 {
            let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
            for i in 0..n {
                for j in i + 1..n {
                    let (a, b) = (pts[i], pts[j]);
                    let dx = b.x_local - a.x_local;
                    if dx.abs() > 1e-6 {
                        slopes.push((b.diff - a.diff) / dx);
                    }
                }
            }
            if !slopes.is_empty() {
                let b = median(slopes);
                let c = median(pts.iter().map(|p| p.diff - b * p.x_local).collect());
                // Standard error of the slope from a robust residual scale
                // (1.4826 MAD), as for least squares.
                let mad = median(
                    pts.iter()
                        .map(|p| (p.diff - b * p.x_local - c).abs())
                        .collect(),
                );
                let mx = pts.iter().map(|p| p.x_local).sum::<f64>() / n as f64;
                let sxx: f64 = pts.iter().map(|p| (p.x_local - mx).powi(2)).sum();
                if sxx > 0.0 {
                    se = 1.4826 * mad / sxx.sqrt();
                    if b.abs() > 3.0 * se {
                        slope = b;
                    }
                }
            }
        }
        let intercept = median(pts.iter().map(|p| p.diff - slope * p.x_local).collect());
        self.model = Model { slope, intercept };
        self.slope_se = se;
        self.scale = 1.4826
            * median(
                pts.iter()
                    .map(|p| (p.diff - slope * p.x_local - intercept).abs())
                    .collect(),
            );
        self.residual = (self
            .points
            .iter()
            .map(|p| (p.diff - slope * p.x_local - intercept).powi(2))
            .sum::<f64>()
            / n as f64)
            .sqrt();
    }

    /// Local time the fit points span, seconds.
    fn span(&self) -> f64 {
        span_of(&self.points)
    }

    /// What the profile records about this rank's model.
    pub fn summary(&self, rank: u32) -> RankClock {
        let n = self.points.len();
        let (lo, hi) = self
            .points
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.x_local), b.max(p.x_local))
            });
        let ref_local = if n > 0 { 0.5 * (lo + hi) } else { 0.0 };
        let s = self.model.slope;
        RankClock {
            rank,
            // Filled in by rank 0, which knows every rank's host.
            host: String::new(),
            offset_s: s * ref_local + self.model.intercept,
            ref_local_s: ref_local,
            // local = (1 + drift) * global + const  <=>  slope = drift / (1 + drift)
            drift: s / (1.0 - s),
            fitpoints: n as u32,
            span_s: if n > 0 { hi - lo } else { 0.0 },
            rtt_min_s: if n > 0 {
                self.points
                    .iter()
                    .map(|p| p.rtt)
                    .fold(f64::INFINITY, f64::min)
            } else {
                0.0
            },
            residual_s: self.residual,
            model_failures: self.failures,
            prediction_error_s: self.worst_error,
            shared: self.shared,
        }
    }
}

/// Local time `points` span, seconds.
fn span_of(points: &[FitPoint]) -> f64 {
    let (lo, hi) = points
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
            (a.min(p.x_local), b.max(p.x_local))
        });
    if hi >= lo {
        hi - lo
    } else {
        0.0
    }
}

const TAG_GO: i32 = 9001;
const TAG_PING: i32 = 9002;
const TAG_PONG: i32 = 9003;

/// One synchronization round over `world` (or a job's communicator, whose
/// rank 0 is world rank 0): every rank != 0 in turn exchanges `exchanges`
/// ping-pongs with rank 0 and adds the fit point of its fastest exchange to
/// its model. Ranks wait for their turn without spinning.
pub fn sync_round(clock: &mut Clock, world: Comm, exchanges: u32) {
    let me = mpi::rank(world);
    let p = mpi::size(world);
    let mut t = [0.0f64; 1];
    if me == 0 {
        for r in 1..p {
            mpi::send_bytes(&[1u8], r, TAG_GO, world);
            for _ in 0..exchanges {
                mpi::recv_f64s(&mut t, r, TAG_PING, world);
                t[0] = clock.now();
                mpi::send_f64s(&t, r, TAG_PONG, world);
            }
        }
    } else {
        let mut go = [0u8; 1];
        mpi::recv_bytes_sleepy(&mut go, 0, TAG_GO, world);
        let mut best: Option<FitPoint> = None;
        for _ in 0..exchanges {
            let t0 = clock.now();
            mpi::send_f64s(&[t0], 0, TAG_PING, world);
            mpi::recv_f64s(&mut t, 0, TAG_PONG, world);
            let t1 = clock.now();
            let fp = FitPoint {
                x_local: 0.5 * (t0 + t1),
                diff: 0.5 * (t0 + t1) - t[0],
                rtt: t1 - t0,
            };
            if best.is_none_or(|b| fp.rtt < b.rtt) {
                best = Some(fp);
            }
        }
        if let Some(b) = best {
            clock.add_point(b);
        }
    }
}

/// Initial synchronization: `fitpoints` rounds spread over about `span_s`.
pub fn initial_sync(clock: &mut Clock, world: Comm, fitpoints: u32, exchanges: u32, span_s: f64) {
    clock.shared = crate::same_clock::shares_root_clock(clock.skew.is_none(), world);
    // Warm-up: first contact is slow.
    sync_round(clock, world, 4);
    clock.points.clear();
    let gap = span_s / fitpoints.max(2) as f64;
    for i in 0..fitpoints {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(gap));
        }
        sync_round(clock, world, exchanges);
    }
    mpi::barrier_sleepy(world);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_drift_is_detected_and_the_model_starts_afresh() {
        let mut c = Clock::unskewed();
        let add = |c: &mut Clock, x: f64, diff: f64| {
            c.add_point(FitPoint {
                x_local: x,
                diff,
                rtt: 20e-6,
            })
        };
        // 2 s at drift 1e-4, points every 50 ms with 2 us of noise: learned.
        for i in 0..40 {
            let x = 100.0 + i as f64 * 0.05;
            let noise = if i % 2 == 0 { 2e-6 } else { -2e-6 };
            add(&mut c, x, 1e-4 * x + noise);
        }
        assert_eq!(c.failures, 0);
        assert!((c.model.slope - 1e-4).abs() < 1e-6, "{:?}", c.model);
        // The drift turns to -1e-4 at x = 102: 0.5 s later the offset is
        // 100 us below the line.
        let x = 102.5;
        add(&mut c, x, 1e-4 * 102.0 - 1e-4 * 0.5);
        assert_eq!(
            c.failures, 0,
            "90 us beyond a 20 us round trip: within the bound"
        );
        let x = 103.0;
        add(&mut c, x, 1e-4 * 102.0 - 1e-4 * 1.0);
        assert_eq!(c.failures, 1);
        assert!(c.worst_error > 150e-6, "{}", c.worst_error);
        assert_eq!(c.points.len(), 1);
    }

    #[test]
    fn model_recovers_line_and_drops_noise_slope() {
        let mut c = Clock::unskewed();
        for i in 0..20 {
            let x = 100.0 + i as f64 * 0.01;
            c.add_point(FitPoint {
                x_local: x,
                diff: 0.25 + 2e-4 * x,
                rtt: 1e-6,
            });
        }
        assert!((c.model.slope - 2e-4).abs() < 1e-9);
        let g = c.to_global(100.05);
        assert!((c.to_local(g) - 100.05).abs() < 1e-9);
        // Pure noise around a constant offset: no slope.
        let mut c2 = Clock::unskewed();
        for i in 0..20 {
            let x = 100.0 + i as f64 * 0.01;
            let noise = if i % 2 == 0 { 1e-6 } else { -1e-6 };
            c2.add_point(FitPoint {
                x_local: x,
                diff: 0.5 + noise,
                rtt: 1e-6,
            });
        }
        assert_eq!(c2.model.slope, 0.0);
        assert!((c2.model.intercept - 0.5).abs() < 1e-6);
    }
}
