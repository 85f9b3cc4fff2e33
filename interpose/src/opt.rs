//! Every `MPIOVER_*` variable the interposer reads, parsed once at the first
//! `MPI_Init*` into one typed [`Opts`] (as bytehound's `opt.rs`); the rest of
//! the library reads the struct, never the environment. An invalid value is
//! reported once (a warning in the record, and on rank 0's stderr unless
//! quiet) and the default is used: a bad setting never costs the run.
//!
//! The names and values are `mpiover_common::settings`'s; what each variable
//! does is the table "Environment variables" of the top-level `README.md`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

pub use mpiover_common::settings::RecordFormat as Format;
use mpiover_common::settings::{self, BadValue, Debug, TimerSetting as Timer, Var};

/// The options of this process.
#[derive(Debug, Clone)]
pub struct Opts {
    pub out: Option<String>,
    pub depth: u32,
    pub max_keys: u32,
    pub timer: Timer,
    pub profile: Option<PathBuf>,
    pub quiet: bool,
    pub debug: bool,
    pub slow_write: bool,
    /// `MPIOVER_DEBUG=py-unsupported`: the interpreter is taken for an
    /// unsupported one (tests of the fallback).
    pub py_unsupported: bool,
    /// As set; [`Opts::format_for`] resolves `auto` for a job's size.
    pub format: Format,
    /// `MPIOVER_LOG_ABOVE`: ranks above which `auto` writes the job log.
    pub log_above: u64,
    /// `MPIOVER_LOG_ROWS`: rows per site and region the job log keeps whole.
    pub log_rows: u64,
    /// Python sites (`MPIOVER_PY_SITES`, on unless `off`).
    pub py_sites: bool,
    /// What was wrong with the variables, in words (reported by the caller).
    pub problems: Vec<String>,
}

/// The settings' defaults: the only place they are written here. `parse`
/// falls back to them, and `rt` starts from them (`rt::DEPTH`, `MAX_KEYS`);
/// the integer ones are `mpiover_common::settings`'s own.
impl Default for Opts {
    fn default() -> Self {
        Opts {
            out: None,
            depth: DEFAULT_DEPTH,
            max_keys: DEFAULT_MAX_KEYS,
            timer: Timer::default(),
            profile: None,
            quiet: false,
            debug: false,
            slow_write: false,
            py_unsupported: false,
            format: Format::default(),
            log_above: settings::LOG_ABOVE.default,
            log_rows: settings::LOG_ROWS.default,
            py_sites: true,
            problems: Vec::new(),
        }
    }
}

/// `MPIOVER_DEPTH` and `MPIOVER_MAX_KEYS` unset (as `u32`: the bounds keep
/// both within it).
pub const DEFAULT_DEPTH: u32 = settings::DEPTH.default as u32;
pub const DEFAULT_MAX_KEYS: u32 = settings::MAX_KEYS.default as u32;

/// The value, or the default with the problem noted.
fn or_default<T>(problems: &mut Vec<String>, r: Result<T, BadValue>, default: T) -> T {
    r.unwrap_or_else(|e| {
        problems.push(e.to_string());
        default
    })
}

impl Opts {
    /// What a job of `ranks` writes (`auto` resolved).
    pub fn format_for(&self, ranks: u32) -> Format {
        self.format.resolve(u64::from(ranks), self.log_above)
    }
}

static OPTS: OnceLock<Opts> = OnceLock::new();

/// The options, parsed from the environment the first time.
pub fn get() -> &'static Opts {
    OPTS.get_or_init(|| Opts::parse(|name| std::env::var_os(name)))
}

impl Opts {
    /// The options of an environment given as a lookup (testable without
    /// touching the process environment).
    pub fn parse(var: impl Fn(&str) -> Option<OsString>) -> Opts {
        // A bad value falls back to the default's field.
        let d = Opts::default();
        let mut o = Opts::default();
        let get = |v: Var| var(v.name());
        let p = &mut o.problems;
        // The bounds keep both within u32.
        let depth = settings::DEPTH.parse(get(Var::Depth).as_deref());
        o.depth = or_default(p, depth.map(|v| v as u32), d.depth);
        let keys = settings::MAX_KEYS.parse(get(Var::MaxKeys).as_deref());
        o.max_keys = or_default(p, keys.map(|v| v as u32), d.max_keys);
        o.timer = or_default(p, Timer::parse(get(Var::Timer).as_deref()), d.timer);
        o.format = or_default(p, Format::parse(get(Var::Format).as_deref()), d.format);
        let above = settings::LOG_ABOVE.parse(get(Var::LogAbove).as_deref());
        o.log_above = or_default(p, above, d.log_above);
        let rows = settings::LOG_ROWS.parse(get(Var::LogRows).as_deref());
        o.log_rows = or_default(p, rows, d.log_rows);
        let py_sites = settings::parse_on_off(Var::PySites, get(Var::PySites).as_deref());
        o.py_sites = or_default(p, py_sites, d.py_sites);
        o.out = get(Var::Out)
            .filter(|v| !v.is_empty())
            .map(|v| v.to_string_lossy().into_owned());
        o.profile = get(Var::Profile)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        o.quiet = get(Var::Quiet).is_some();
        let debug = Debug::parse(get(Var::Debug).as_deref());
        o.debug = debug.on;
        o.slow_write = debug.slow_write;
        o.py_unsupported = debug.py_unsupported;
        o
    }
}

#[cfg(test)]
mod tests {
    use super::{Opts, Timer};
    use std::ffi::OsString;

    fn parse(vars: &[(&str, &str)]) -> Opts {
        Opts::parse(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn defaults_without_variables() {
        let o = parse(&[]);
        assert_eq!((o.depth, o.max_keys, o.timer), (1, 4096, Timer::Auto));
        assert!(o.out.is_none() && o.profile.is_none() && !o.quiet && !o.debug);
        assert!(o.problems.is_empty());
    }

    #[test]
    fn values_are_typed_and_bad_ones_fall_back_with_a_word() {
        let o = parse(&[
            ("MPIOVER_DEPTH", "2"),
            ("MPIOVER_MAX_KEYS", "0"),
            ("MPIOVER_TIMER", "sundial"),
            ("MPIOVER_OUT", "run1"),
            ("MPIOVER_PROFILE", ""),
            ("MPIOVER_DEBUG", "slow-write"),
        ]);
        assert_eq!(o.depth, 2);
        assert_eq!(o.max_keys, 4096);
        assert_eq!(o.timer, Timer::Auto);
        assert_eq!(o.out.as_deref(), Some("run1"));
        assert!(o.profile.is_none());
        assert!(o.debug && o.slow_write);
        assert_eq!(o.problems.len(), 2, "{:?}", o.problems);
        assert!(o.problems[0].contains("MPIOVER_MAX_KEYS"));
        assert!(o.problems[1].contains("MPIOVER_TIMER"));
        assert_eq!(parse(&[("MPIOVER_TIMER", "clock")]).timer, Timer::Clock);
        assert!(parse(&[]).py_sites);
        assert!(!parse(&[("MPIOVER_PY_SITES", "off")]).py_sites);
        let bad = parse(&[("MPIOVER_PY_SITES", "maybe")]);
        assert!(bad.py_sites && bad.problems[0].contains("MPIOVER_PY_SITES"));
    }
}
