//! The `MPIOVER_*` environment variables: their names ([`Var`]) and their
//! typed values, parsed here once for the interposer, `mpiover record` and
//! `mpiover-calibrate`. What each variable does is documented in one table,
//! the "Environment variables" section of the top-level `README.md` (a test
//! below checks it lists every [`Var`]).
//!
//! The parsers take the raw value (`None`: unset) and return the typed one,
//! or a [`BadValue`] that says which values are accepted and what is used
//! instead. What to do with it is the caller's: the interposer warns once and
//! carries on with the default, the calibrator stops.

use std::ffi::OsStr;

/// Every `MPIOVER_*` variable mpiover reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Var {
    /// The run directory.
    Out,
    /// Which caller is the call site.
    Depth,
    /// Distinct keys per thread before folding into `other`.
    MaxKeys,
    /// The duration timer ([`TimerSetting`]).
    Timer,
    /// The calibrated profile: online overhead.
    Profile,
    /// Set: no warnings on stderr.
    Quiet,
    /// What the records are written as ([`RecordFormat`]).
    Format,
    /// Ranks above which `auto` writes the job log ([`LOG_ABOVE`]).
    LogAbove,
    /// Rows the job log keeps whole per site and region ([`LOG_ROWS`]).
    LogRows,
    /// Python call sites ([`parse_on_off`]).
    PySites,
    /// Diagnostics ([`Debug`]).
    Debug,
    /// The library `mpiover record` preloads.
    Lib,
    /// Test only: a skew of one rank's clock in the calibrator.
    CalibrateTestClockSkew,
    /// Test only: a delay injected into the calibrator's windows.
    CalibrateTestDelay,
    /// The calibrator's per-batch trace on stderr.
    CalibrateTrace,
}

impl Var {
    pub const ALL: [Var; 15] = [
        Var::Out,
        Var::Depth,
        Var::MaxKeys,
        Var::Timer,
        Var::Profile,
        Var::Quiet,
        Var::Format,
        Var::LogAbove,
        Var::LogRows,
        Var::PySites,
        Var::Debug,
        Var::Lib,
        Var::CalibrateTestClockSkew,
        Var::CalibrateTestDelay,
        Var::CalibrateTrace,
    ];

    /// The variable's name in the environment.
    pub const fn name(self) -> &'static str {
        match self {
            Var::Out => "MPIOVER_OUT",
            Var::Depth => "MPIOVER_DEPTH",
            Var::MaxKeys => "MPIOVER_MAX_KEYS",
            Var::Timer => "MPIOVER_TIMER",
            Var::Profile => "MPIOVER_PROFILE",
            Var::Quiet => "MPIOVER_QUIET",
            Var::Format => "MPIOVER_FORMAT",
            Var::LogAbove => "MPIOVER_LOG_ABOVE",
            Var::LogRows => "MPIOVER_LOG_ROWS",
            Var::PySites => "MPIOVER_PY_SITES",
            Var::Debug => "MPIOVER_DEBUG",
            Var::Lib => "MPIOVER_LIB",
            Var::CalibrateTestClockSkew => "MPIOVER_CALIBRATE_TEST_CLOCK_SKEW",
            Var::CalibrateTestDelay => "MPIOVER_CALIBRATE_TEST_DELAY",
            Var::CalibrateTrace => "MPIOVER_CALIBRATE_TRACE",
        }
    }

    /// Its value in the process environment, `None` when unset.
    pub fn get(self) -> Option<std::ffi::OsString> {
        std::env::var_os(self.name())
    }

    /// Its value when set to something other than blanks (the test settings
    /// of the calibrator are off when empty).
    pub fn get_nonblank(self) -> Option<String> {
        std::env::var(self.name())
            .ok()
            .filter(|v| !v.trim().is_empty())
    }
}

/// A variable set to a value it does not accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadValue {
    #[error("{}={value:?} is not {expected}; using {fallback}", var.name())]
    Invalid {
        var: Var,
        /// The value as given (`(not UTF-8)` when it is not).
        value: String,
        /// The accepted values, in words.
        expected: String,
        /// What is used instead, in words.
        fallback: String,
    },
    /// A number that is not text at all.
    #[error("{} is not valid UTF-8; using {fallback}", var.name())]
    NotUtf8 { var: Var, fallback: String },
}

impl BadValue {
    /// The message without what is used instead (for a caller that stops).
    pub fn without_fallback(&self) -> String {
        match self {
            BadValue::Invalid {
                var,
                value,
                expected,
                ..
            } => format!("{}={value:?} is not {expected}", var.name()),
            BadValue::NotUtf8 { var, .. } => format!("{} is not valid UTF-8", var.name()),
        }
    }
}

fn bad(var: Var, v: &OsStr, expected: &str, fallback: &str) -> BadValue {
    BadValue::Invalid {
        var,
        value: v.to_str().unwrap_or("(not UTF-8)").to_string(),
        expected: expected.to_string(),
        fallback: fallback.to_string(),
    }
}

/// `MPIOVER_FORMAT`: what the interposer writes the records as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum RecordFormat {
    /// Per-rank records up to MPIOVER_LOG_ABOVE ranks (1024 unless set),
    /// the job log above.
    #[default]
    Auto,
    /// A rank-NNNNNN.json per rank.
    PerRank,
    /// One job.mpiover-log merged over MPI at MPI_Finalize, for large jobs
    /// (ranks that do not reach it write their own record as with per-rank).
    Log,
    /// Both, from the same record (tests compare the two paths).
    Both,
}

impl RecordFormat {
    /// The value as the variable spells it.
    pub const fn as_str(self) -> &'static str {
        match self {
            RecordFormat::Auto => "auto",
            RecordFormat::PerRank => "per-rank",
            RecordFormat::Log => "log",
            RecordFormat::Both => "both",
        }
    }

    /// Unset or empty: the default.
    pub fn parse(v: Option<&OsStr>) -> Result<RecordFormat, BadValue> {
        let Some(v) = v else {
            return Ok(RecordFormat::default());
        };
        match v.to_str() {
            Some("") => Ok(RecordFormat::default()),
            Some(s) => [
                RecordFormat::Auto,
                RecordFormat::PerRank,
                RecordFormat::Log,
                RecordFormat::Both,
            ]
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| bad(Var::Format, v, FORMATS, "auto")),
            None => Err(bad(Var::Format, v, FORMATS, "auto")),
        }
    }

    /// What a job of `ranks` writes: `auto` is per-rank up to `log_above`
    /// ranks and the job log above; the others are what they say.
    pub fn resolve(self, ranks: u64, log_above: u64) -> RecordFormat {
        match self {
            RecordFormat::Auto if ranks > log_above => RecordFormat::Log,
            RecordFormat::Auto => RecordFormat::PerRank,
            f => f,
        }
    }
}

const FORMATS: &str = "auto, per-rank, log or both";

/// `MPIOVER_LOG_ABOVE`: with `MPIOVER_FORMAT=auto` (the default), jobs of
/// more ranks than this write one merged job log instead of a record per
/// rank. Up to 1,024 ranks the per-rank records keep every histogram for
/// re-analysis and cost the report under a second (about 0.9 ms per record
/// of 200 sites); above, the files and the report's time grow with the
/// ranks (4,096: 1.4 GB, 3-4 s) while the log's report stays near 0.2 s
/// (`docs/log-format.md` has the figures).
pub const LOG_ABOVE: Bounded = Bounded {
    var: Var::LogAbove,
    min: 0,
    max: u32::MAX as u64,
    default: 1024,
};

/// `MPIOVER_LOG_ROWS`: rows of a site or region that the job log keeps
/// whole; above, it keeps the rows that rank first by each criterion and a
/// sample, a sixteenth and an eighth of this (`docs/log-format.md`,
/// "Bounded per-rank detail"). Lowered, a job of a few dozen ranks is
/// bounded as one of thousands is: for checking the estimates.
pub const LOG_ROWS: Bounded = Bounded {
    var: Var::LogRows,
    min: 1,
    max: u32::MAX as u64,
    default: 512,
};

/// `MPIOVER_TIMER`: the duration timer of the interposer and the calibrator
/// (both read it alike, so that a profile is measured with the timer the
/// run uses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimerSetting {
    /// The TSC where it is constant and non-stop, else `clock_gettime`.
    #[default]
    Auto,
    /// `rdtsc`.
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC)`.
    Clock,
}

impl TimerSetting {
    /// Unset, empty or `auto`: automatic; `tsc`/`rdtsc`, `clock`/`clock_gettime`.
    pub fn parse(v: Option<&OsStr>) -> Result<TimerSetting, BadValue> {
        let Some(v) = v else {
            return Ok(TimerSetting::Auto);
        };
        match v.to_str() {
            Some("" | "auto") => Ok(TimerSetting::Auto),
            Some("tsc" | "rdtsc") => Ok(TimerSetting::Tsc),
            Some("clock" | "clock_gettime") => Ok(TimerSetting::Clock),
            _ => Err(bad(Var::Timer, v, "tsc, clock or auto", "auto")),
        }
    }

    /// `Some(true)`: the TSC; `Some(false)`: `clock_gettime`; `None`:
    /// automatic (what [`crate::timer::init`] takes).
    pub const fn use_tsc(self) -> Option<bool> {
        match self {
            TimerSetting::Auto => None,
            TimerSetting::Tsc => Some(true),
            TimerSetting::Clock => Some(false),
        }
    }
}

/// `MPIOVER_PY_SITES`-style switches: unset, empty, `on` or `1` on; `off`
/// or `0` off.
pub fn parse_on_off(var: Var, v: Option<&OsStr>) -> Result<bool, BadValue> {
    let Some(v) = v else {
        return Ok(true);
    };
    match v.to_str() {
        Some("" | "on" | "1") => Ok(true),
        Some("off" | "0") => Ok(false),
        _ => Err(bad(var, v, "on or off", "on")),
    }
}

/// An integer variable's accepted range and default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounded {
    pub var: Var,
    pub min: u64,
    pub max: u64,
    pub default: u64,
}

/// `MPIOVER_DEPTH`: 1 is the line that called MPI, 2 its caller, ...
pub const DEPTH: Bounded = Bounded {
    var: Var::Depth,
    min: 1,
    max: 64,
    default: 1,
};

/// `MPIOVER_MAX_KEYS`.
pub const MAX_KEYS: Bounded = Bounded {
    var: Var::MaxKeys,
    min: 1,
    max: 1 << 20,
    default: 4096,
};

impl Bounded {
    /// Unset: the default. Blanks around the number are allowed.
    pub fn parse(&self, v: Option<&OsStr>) -> Result<u64, BadValue> {
        let Some(v) = v else {
            return Ok(self.default);
        };
        let Some(s) = v.to_str() else {
            return Err(BadValue::NotUtf8 {
                var: self.var,
                fallback: self.default.to_string(),
            });
        };
        match s.trim().parse::<u64>() {
            Ok(n) if (self.min..=self.max).contains(&n) => Ok(n),
            _ => Err(bad(
                self.var,
                v,
                &format!("an integer in {}..={}", self.min, self.max),
                &self.default.to_string(),
            )),
        }
    }
}

/// `MPIOVER_DEBUG`: any value turns the diagnostics on; these words in it
/// turn on the test behaviours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Debug {
    /// Record-write timings on stderr.
    pub on: bool,
    /// `slow-write`: a pause between the quick and the resolved write.
    pub slow_write: bool,
    /// `py-unsupported`: the CPython is taken for one without Python sites.
    pub py_unsupported: bool,
}

impl Debug {
    pub fn parse(v: Option<&OsStr>) -> Debug {
        match v {
            None => Debug::default(),
            Some(v) => {
                let v = v.to_string_lossy();
                Debug {
                    on: true,
                    slow_write: v.contains("slow-write"),
                    py_unsupported: v.contains("py-unsupported"),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(s: &str) -> Option<&OsStr> {
        Some(OsStr::new(s))
    }

    #[test]
    fn auto_writes_the_job_log_above_the_threshold_only() {
        let above = LOG_ABOVE.default;
        assert_eq!(
            RecordFormat::Auto.resolve(above, above),
            RecordFormat::PerRank
        );
        assert_eq!(
            RecordFormat::Auto.resolve(above + 1, above),
            RecordFormat::Log
        );
        assert_eq!(RecordFormat::Auto.resolve(1, 0), RecordFormat::Log);
        // An explicit choice holds at any size.
        assert_eq!(
            RecordFormat::PerRank.resolve(1 << 20, above),
            RecordFormat::PerRank
        );
        assert_eq!(RecordFormat::Log.resolve(2, above), RecordFormat::Log);
        assert_eq!(RecordFormat::Both.resolve(2, above), RecordFormat::Both);
        assert_eq!(LOG_ABOVE.parse(Some(OsStr::new("16"))), Ok(16));
        assert!(LOG_ABOVE.parse(Some(OsStr::new("-1"))).is_err());
    }

    #[test]
    fn values_parse_as_documented() {
        assert_eq!(RecordFormat::parse(None), Ok(RecordFormat::Auto));
        assert_eq!(RecordFormat::parse(os("")), Ok(RecordFormat::Auto));
        assert_eq!(RecordFormat::parse(os("auto")), Ok(RecordFormat::Auto));
        assert_eq!(
            RecordFormat::parse(os("per-rank")),
            Ok(RecordFormat::PerRank)
        );
        assert_eq!(RecordFormat::parse(os("log")), Ok(RecordFormat::Log));
        let e = RecordFormat::parse(os("xml")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "MPIOVER_FORMAT=\"xml\" is not auto, per-rank, log or both; using auto"
        );
        assert_eq!(TimerSetting::parse(os("rdtsc")), Ok(TimerSetting::Tsc));
        assert_eq!(TimerSetting::parse(os("auto")), Ok(TimerSetting::Auto));
        let e = TimerSetting::parse(os("sundial")).unwrap_err();
        assert_eq!(
            e.without_fallback(),
            "MPIOVER_TIMER=\"sundial\" is not tsc, clock or auto"
        );
        assert_eq!(parse_on_off(Var::PySites, os("0")), Ok(false));
        assert!(parse_on_off(Var::PySites, os("maybe")).is_err());
        assert_eq!(DEPTH.parse(os(" 3 ")), Ok(3));
        let e = MAX_KEYS.parse(os("0")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "MPIOVER_MAX_KEYS=\"0\" is not an integer in 1..=1048576; using 4096"
        );
        let d = Debug::parse(os("slow-write"));
        assert!(d.on && d.slow_write && !d.py_unsupported);
    }

    /// The README's table of variables is the documentation of them all.
    #[test]
    fn the_readme_lists_every_variable() {
        let readme = include_str!("../../README.md");
        for v in Var::ALL {
            assert!(
                readme.contains(&format!("| `{}`", v.name())),
                "README.md's table of variables lacks {}",
                v.name()
            );
        }
    }
}
