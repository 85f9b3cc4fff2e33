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
//! A test-only setting, `MPIOVER_CALIBRATE_TEST_CLOCK_SKEW="rank:offset_s:drift"`,
//! makes that rank's clock read `t + offset + drift * t` (t = the real
//! monotonic time), so a test can check that the synchronization recovers the
//! offset and the drift.

use std::ffi::OsStr;

use mpiover_common::profile::RankClock;
use mpiover_common::settings::{Timer, Var};

use crate::mpi::{self, Comm};

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
    skew: Option<(f64, f64)>,
    pub model: Model,
    points: Vec<FitPoint>,
    pub residual: f64,
    pub slope_se: f64,
}

/// Keep this many fit points (the most recent; every job adds one): linear
/// drift is a good model over minutes, not necessarily over hours.
const MAX_POINTS: usize = 96;

impl Clock {
    /// The clock of this rank, with the test-only skew if it names this rank.
    pub fn new(world_rank: i32) -> Result<Clock, String> {
        let skew = match Var::CalibrateTestClockSkew.get_nonblank() {
            Some(v) => parse_skew(&v)?.and_then(|(r, o, d)| (r == world_rank).then_some((o, d))),
            None => None,
        };
        Ok(Clock {
            skew,
            model: Model::default(),
            points: Vec::new(),
            residual: 0.0,
            slope_se: 0.0,
        })
    }

    /// Local time of this rank, seconds.
    #[inline(always)]
    pub fn now(&self) -> f64 {
        let t = raw_now();
        match self.skew {
            None => t,
            Some((o, d)) => t + o + d * t,
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

    fn add_point(&mut self, p: FitPoint) {
        self.points.push(p);
        if self.points.len() > MAX_POINTS {
            self.points.remove(0);
        }
        self.refit();
    }

    /// Robust line through the fit points; the slope is kept only when
    /// significant, else the model is the mean offset.
    fn refit(&mut self) {
        let n = self.points.len();
        if n == 0 {
            return;
        }
        fn median(mut v: Vec<f64>) -> f64 {
            v.sort_by(|a, b| a.total_cmp(b));
            let m = v.len() / 2;
            if v.len() % 2 == 1 {
                v[m]
            } else {
                0.5 * (v[m - 1] + v[m])
            }
        }
        // Theil-Sen: the median of the pairwise slopes, robust to the odd fit
        // point that a preempted rank spoiled (a loaded machine has them).
        let mut slope = 0.0;
        let mut se = f64::INFINITY;
        if n >= 3 {
            let mut slopes = Vec::with_capacity(n * (n - 1) / 2);
            for i in 0..n {
                for j in i + 1..n {
                    let (a, b) = (self.points[i], self.points[j]);
                    let dx = b.x_local - a.x_local;
                    if dx.abs() > 1e-6 {
                        slopes.push((b.diff - a.diff) / dx);
                    }
                }
            }
            if !slopes.is_empty() {
                let b = median(slopes);
                let c = median(self.points.iter().map(|p| p.diff - b * p.x_local).collect());
                // Standard error of the slope from a robust residual scale
                // (1.4826 MAD), as for least squares.
                let mad = median(
                    self.points
                        .iter()
                        .map(|p| (p.diff - b * p.x_local - c).abs())
                        .collect(),
                );
                let mx = self.points.iter().map(|p| p.x_local).sum::<f64>() / n as f64;
                let sxx: f64 = self.points.iter().map(|p| (p.x_local - mx).powi(2)).sum();
                if sxx > 0.0 {
                    se = 1.4826 * mad / sxx.sqrt();
                    if b.abs() > 3.0 * se {
                        slope = b;
                    }
                }
            }
        }
        let intercept = median(
            self.points
                .iter()
                .map(|p| p.diff - slope * p.x_local)
                .collect(),
        );
        self.model = Model { slope, intercept };
        self.slope_se = se;
        self.residual = (self
            .points
            .iter()
            .map(|p| (p.diff - slope * p.x_local - intercept).powi(2))
            .sum::<f64>()
            / n as f64)
            .sqrt();
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
        }
    }
}

/// Parse `rank:offset_s:drift`.
pub fn parse_skew(v: &str) -> Result<Option<(i32, f64, f64)>, String> {
    let parts: Vec<&str> = v.split(':').map(str::trim).collect();
    let err = || {
        format!(
            "{}=\"{v}\": expected rank:offset_s:drift, e.g. 1:0.25:1e-4",
            Var::CalibrateTestClockSkew.name()
        )
    };
    if parts.len() != 3 {
        return Err(err());
    }
    let r = parts[0].parse::<i32>().map_err(|_| err())?;
    let o = parts[1].parse::<f64>().map_err(|_| err())?;
    let d = parts[2].parse::<f64>().map_err(|_| err())?;
    if !o.is_finite() || !d.is_finite() || d <= -0.5 {
        return Err(err());
    }
    Ok(Some((r, o, d)))
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
    fn skew_parsing() {
        assert_eq!(parse_skew("1:0.25:1e-4").unwrap(), Some((1, 0.25, 1e-4)));
        assert!(parse_skew("1:0.25").is_err());
        assert!(parse_skew("x:0:0").is_err());
    }

    #[test]
    fn model_recovers_line_and_drops_noise_slope() {
        let mut c = Clock {
            skew: None,
            model: Model::default(),
            points: vec![],
            residual: 0.0,
            slope_se: 0.0,
        };
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
        let mut c2 = Clock {
            skew: None,
            model: Model::default(),
            points: vec![],
            residual: 0.0,
            slope_se: 0.0,
        };
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
