//! Every `MPIOVER_*` variable the interposer reads, parsed once at the first
//! `MPI_Init*` into one typed [`Opts`] (as bytehound's `opt.rs`); the rest of
//! the library reads the struct, never the environment. An invalid value is
//! reported once (a warning in the record, and on rank 0's stderr unless
//! quiet) and the default is used: a bad setting never costs the run.
//!
//! | variable | field | default |
//! |---|---|---|
//! | `MPIOVER_OUT` | run directory | `./mpiover-<program>-<date>` |
//! | `MPIOVER_DEPTH` | which caller is the site (1: the line that called MPI) | 1 |
//! | `MPIOVER_MAX_KEYS` | distinct keys per thread before folding into `other` | 4096 |
//! | `MPIOVER_TIMER` | `tsc` or `clock` | automatic |
//! | `MPIOVER_PROFILE` | calibrated profile: online overhead | none |
//! | `MPIOVER_QUIET` | set: no warnings on stderr | unset |
//! | `MPIOVER_FORMAT` | `per-rank` (a JSON record per rank), `log` (one job log merged at `MPI_Finalize`), `both` | `per-rank` |
//! | `MPIOVER_PY_SITES` | `off`: MPI calls made from Python through mpi4py stay at the nearest native frame | `on` |
//! | `MPIOVER_DEBUG` | set: record-write timings on stderr; `slow-write`: a test pause between the quick and the resolved write; `py-unsupported`: the CPython is taken for one without Python sites (a test of the fallback) | unset |

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;

/// What the records are written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `rank-NNNNNN.json` per rank.
    PerRank,
    /// One job log, merged over MPI at `MPI_Finalize` (ranks that do not
    /// reach it write their own record as with `PerRank`).
    Log,
    /// Both, from the same record (tests compare the two paths).
    Both,
}

/// The options of this process.
#[derive(Debug, Clone)]
pub struct Opts {
    pub out: Option<String>,
    pub depth: u32,
    pub max_keys: u32,
    /// `Some(true)`: the TSC; `Some(false)`: `clock_gettime`; `None`: automatic.
    pub timer: Option<bool>,
    pub profile: Option<PathBuf>,
    pub quiet: bool,
    pub debug: bool,
    pub slow_write: bool,
    /// `MPIOVER_DEBUG=py-unsupported`: the interpreter is taken for an
    /// unsupported one (tests of the fallback).
    pub py_unsupported: bool,
    pub format: Format,
    /// Python sites (`MPIOVER_PY_SITES`, on unless `off`).
    pub py_sites: bool,
    /// What was wrong with the variables, in words (reported by the caller).
    pub problems: Vec<String>,
}

impl Default for Opts {
    fn default() -> Self {
        Opts {
            out: None,
            depth: 1,
            max_keys: 4096,
            timer: None,
            profile: None,
            quiet: false,
            debug: false,
            slow_write: false,
            py_unsupported: false,
            format: Format::PerRank,
            py_sites: true,
            problems: Vec::new(),
        }
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
        let mut o = Opts::default();
        let mut num = |name: &str, lo: u64, hi: u64, default: u64| -> u64 {
            let Some(v) = var(name) else {
                return default;
            };
            match v.to_str().map(|s| s.trim().parse::<u64>()) {
                Some(Ok(n)) if (lo..=hi).contains(&n) => n,
                Some(_) => {
                    o.problems.push(format!(
                        "{name}={v:?} is not an integer in {lo}..={hi}; using {default}"
                    ));
                    default
                }
                None => {
                    o.problems
                        .push(format!("{name} is not valid UTF-8; using {default}"));
                    default
                }
            }
        };
        let depth = num("MPIOVER_DEPTH", 1, 64, 1) as u32;
        let max_keys = num("MPIOVER_MAX_KEYS", 1, 1 << 20, 4096) as u32;
        o.depth = depth;
        o.max_keys = max_keys;
        match var("MPIOVER_TIMER").as_deref().map(|v| v.to_str()) {
            None | Some(Some("" | "auto")) => {}
            Some(Some("tsc" | "rdtsc")) => o.timer = Some(true),
            Some(Some("clock" | "clock_gettime")) => o.timer = Some(false),
            Some(v) => o.problems.push(format!(
                "MPIOVER_TIMER={:?} is not tsc, clock or auto; using auto",
                v.unwrap_or("(not UTF-8)")
            )),
        }
        o.out = var("MPIOVER_OUT")
            .filter(|v| !v.is_empty())
            .map(|v| v.to_string_lossy().into_owned());
        o.profile = var("MPIOVER_PROFILE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        o.quiet = var("MPIOVER_QUIET").is_some();
        match var("MPIOVER_FORMAT").as_deref().map(|v| v.to_str()) {
            None | Some(Some("" | "per-rank")) => {}
            Some(Some("log")) => o.format = Format::Log,
            Some(Some("both")) => o.format = Format::Both,
            Some(v) => o.problems.push(format!(
                "MPIOVER_FORMAT={:?} is not per-rank, log or both; using per-rank",
                v.unwrap_or("(not UTF-8)")
            )),
        }
        match var("MPIOVER_PY_SITES").as_deref().map(|v| v.to_str()) {
            None | Some(Some("" | "on" | "1")) => {}
            Some(Some("off" | "0")) => o.py_sites = false,
            Some(v) => o.problems.push(format!(
                "MPIOVER_PY_SITES={:?} is not on or off; using on",
                v.unwrap_or("(not UTF-8)")
            )),
        }
        if let Some(d) = var("MPIOVER_DEBUG") {
            o.debug = true;
            o.slow_write = d.to_string_lossy().contains("slow-write");
            o.py_unsupported = d.to_string_lossy().contains("py-unsupported");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::Opts;
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
        assert_eq!((o.depth, o.max_keys, o.timer), (1, 4096, None));
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
        assert_eq!(o.timer, None);
        assert_eq!(o.out.as_deref(), Some("run1"));
        assert!(o.profile.is_none());
        assert!(o.debug && o.slow_write);
        assert_eq!(o.problems.len(), 2, "{:?}", o.problems);
        assert!(o.problems[0].contains("MPIOVER_MAX_KEYS"));
        assert!(o.problems[1].contains("MPIOVER_TIMER"));
        assert_eq!(parse(&[("MPIOVER_TIMER", "clock")]).timer, Some(false));
        assert!(parse(&[]).py_sites);
        assert!(!parse(&[("MPIOVER_PY_SITES", "off")]).py_sites);
        let bad = parse(&[("MPIOVER_PY_SITES", "maybe")]);
        assert!(bad.py_sites && bad.problems[0].contains("MPIOVER_PY_SITES"));
    }
}
