//! The timer of the interposer's hot path: `rdtsc` where the TSC is constant
//! and non-stop (checked in `/proc/cpuinfo`), else
//! `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds. Both give raw `u64` units;
//! `unit_s` converts them. `mpiover-calibrate` times its samples with the same
//! reads, so that a profile's tmax and a wrapped call's duration are measured
//! alike (the overhead paper: what is calibrated must be what the profiler sees).
//!
//! The TSC rate is estimated twice: quickly at `MPI_Init` (a ~2 ms busy wait
//! against `CLOCK_MONOTONIC`, used for the online tmax comparison) and again
//! over the whole run when the record is written (the ratio of the TSC and
//! monotonic clock differences between init and write).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

static USE_TSC: AtomicBool = AtomicBool::new(false);
/// f64 bits of the quick estimate of seconds per unit.
static UNIT_BITS: AtomicU64 = AtomicU64::new(0);
static INIT_TICKS: AtomicU64 = AtomicU64::new(0);
static INIT_MONO_NS: AtomicU64 = AtomicU64::new(0);

/// Raw timer read (the hot path).
#[inline(always)]
pub fn now() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        if USE_TSC.load(Relaxed) {
            // SAFETY: rdtsc has no preconditions on x86_64.
            return unsafe { core::arch::x86_64::_rdtsc() };
        }
    }
    mono_ns()
}

pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a live local the call fills; CLOCK_MONOTONIC exists on
    // every Linux, so the call cannot fail and leave it unset.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

pub fn name() -> &'static str {
    if USE_TSC.load(Relaxed) {
        "rdtsc"
    } else {
        "clock_gettime(CLOCK_MONOTONIC)"
    }
}

fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64") {
        return false;
    }
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    let flags = info.lines().find(|l| l.starts_with("flags")).unwrap_or("");
    let has = |f: &str| flags.split_whitespace().any(|w| w == f);
    has("constant_tsc") && has("nonstop_tsc")
}

/// Chooses the timer and makes the quick rate estimate. `choice` is the
/// `MPIOVER_TIMER` option (`crate::settings::TimerSetting::use_tsc`; `None` =
/// automatic).
pub fn init(choice: Option<bool>) {
    let tsc = choice.unwrap_or_else(tsc_usable) && cfg!(target_arch = "x86_64");
    USE_TSC.store(tsc, Relaxed);
    let unit = if tsc {
        let (m0, t0) = (mono_ns(), now());
        let mut m1 = m0;
        while m1.wrapping_sub(m0) < 2_000_000 {
            m1 = mono_ns();
        }
        let t1 = now();
        let dt = t1.wrapping_sub(t0).max(1);
        m1.wrapping_sub(m0) as f64 * 1e-9 / dt as f64
    } else {
        1e-9
    };
    UNIT_BITS.store(unit.to_bits(), Relaxed);
    INIT_TICKS.store(now(), Relaxed);
    INIT_MONO_NS.store(mono_ns(), Relaxed);
}

/// Quick estimate (valid from `init` on).
pub fn unit_quick() -> f64 {
    f64::from_bits(UNIT_BITS.load(Relaxed))
}

/// Nanoseconds (of `CLOCK_MONOTONIC`) as raw units (quick rate estimate).
pub fn ticks_from_ns(ns: u64) -> u64 {
    if !USE_TSC.load(Relaxed) {
        return ns;
    }
    let u = unit_quick();
    if u > 0.0 {
        (ns as f64 * 1e-9 / u) as u64
    } else {
        ns
    }
}

/// Best estimate of seconds per unit: the ratio over the whole run when it is
/// long enough (> 50 ms), else the quick one.
pub fn unit_s() -> f64 {
    if !USE_TSC.load(Relaxed) {
        return 1e-9;
    }
    let (t, m) = (now(), mono_ns());
    let dt = t.wrapping_sub(INIT_TICKS.load(Relaxed));
    let dm = m.wrapping_sub(INIT_MONO_NS.load(Relaxed));
    if dm > 50_000_000 && dt > 0 {
        dm as f64 * 1e-9 / dt as f64
    } else {
        unit_quick()
    }
}

/// (resolution, cost of one read) in seconds.
pub fn characterize(unit: f64) -> (f64, f64) {
    let mut min_diff = u64::MAX;
    let mut last = now();
    for _ in 0..2000 {
        let t = now();
        let d = t.wrapping_sub(last);
        if d > 0 && d < min_diff {
            min_diff = d;
        }
        last = t;
    }
    const N: u64 = 10_000;
    let mut best = f64::MAX;
    for _ in 0..5 {
        let m0 = mono_ns();
        let mut acc = 0u64;
        for _ in 0..N {
            acc = acc.wrapping_add(std::hint::black_box(now()));
        }
        std::hint::black_box(acc);
        let per = mono_ns().wrapping_sub(m0) as f64 * 1e-9 / N as f64;
        best = best.min(per);
    }
    let res = if min_diff == u64::MAX {
        unit
    } else {
        min_diff as f64 * unit
    };
    (res, best)
}
