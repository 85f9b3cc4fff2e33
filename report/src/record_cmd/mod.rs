//! `mpiover record [--profile P] [--out DIR] [--depth N] [--lib PATH] -- LAUNCHER ARGS...`
//!
//! Runs an MPI job with `libmpiover.so` preloaded, then prints the report's
//! summary and exits with the job's exit code (128 + signal when the launcher
//! died of a signal; 1 when the job succeeded but nothing was recorded).
//!
//! - The library: `--lib`, else `$MPIOVER_LIB`, else `libmpiover.so` next to
//!   this executable (a cargo target directory), else `../lib/libmpiover.so`
//!   relative to it (an installed `bin/` + `lib/` layout).
//! - The environment of the launcher: `LD_PRELOAD` (the library appended to an
//!   existing preload), `MPIOVER_OUT` (always: the record command must know
//!   where the records go), `MPIOVER_PROFILE` and `MPIOVER_DEPTH` when asked.
//! - Open MPI (`mpirun`, `mpiexec`, `orterun` whose `--version` says
//!   "Open MPI", or a `*.openmpi` name) does not pass the environment to remote
//!   nodes: `-x LD_PRELOAD -x MPIOVER_OUT ...` (and every other `MPIOVER_*`
//!   variable that is set) go right after the launcher's name. MPICH's hydra
//!   and Slurm's `srun` forward the whole environment by default.
//! - The run directory: `--out`, else `$MPIOVER_OUT`, else
//!   `./mpiover-<program>-<YYYYmmdd-HHMMSS>` (local time; `-2`, `-3`... when
//!   taken), where the program is the first argument after the launcher's
//!   options that names an executable. Records of an earlier run in the
//!   directory are removed first (the interposer does the same), so that the
//!   summary never shows a stale run.
//! - Signals: while the job runs, SIGINT, SIGTERM and SIGHUP sent to this
//!   process alone (`kill`) are forwarded to the launcher; a Ctrl-C on the
//!   terminal already reaches the launcher (same process group) and is not
//!   sent twice. Either way the summary of what the ranks wrote is printed.
//!
//! The summary goes to stderr, so the job's stdout stays the program's own.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context};
use mpiover_common::settings::{RecordFormat, Var, DEPTH};

mod launcher;
mod out;
mod preload;
mod signals;
mod summary;

use launcher::*;
use out::*;
use preload::*;
use signals::*;
use summary::*;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Examples:
  mpiover record -- mpirun -np 4 ./app input.dat
  mpiover record --profile profile.json --out run1 -- mpirun -np 16 ./app
  mpiover record ./app                  (a singleton run, no launcher)

The summary is printed on stderr when the job ends; `mpiover report DIR` gives
the full report (-f html -o report.html for charts).")]
pub struct RecordArgs {
    /// Calibrated profile (mpiover-calibrate): every call's overhead is
    /// computed online (sets MPIOVER_PROFILE).
    #[arg(long, value_name = "PROFILE")]
    pub profile: Option<PathBuf>,
    /// Run directory for the records (sets MPIOVER_OUT; default
    /// ./mpiover-<program>-<YYYYmmdd-HHMMSS>).
    #[arg(long, short = 'o', value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Which caller is the call site (sets MPIOVER_DEPTH): 1 is the line that
    /// called MPI, 2 its caller (for programs that wrap MPI in helpers).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(DEPTH.min as i64..=DEPTH.max as i64))]
    pub depth: Option<u32>,
    /// What the records are written as (sets MPIOVER_FORMAT): per-rank (a
    /// rank-NNNNNN.json per rank), log (one job.mpiover-log merged over MPI
    /// at MPI_Finalize, for large jobs) or both.
    #[arg(long, value_name = "FORMAT", value_enum)]
    pub format: Option<RecordFormat>,
    /// The libmpiover.so to preload (default: $MPIOVER_LIB, then next to the
    /// mpiover executable, then ../lib/ relative to it).
    #[arg(long, value_name = "PATH")]
    pub lib: Option<PathBuf>,
    /// Print no summary at the end.
    #[arg(long)]
    pub no_summary: bool,
    /// The launcher and its arguments (`mpirun -np 4 ./app args`), or the
    /// program itself.
    #[arg(required = true, trailing_var_arg = true, value_name = "LAUNCHER ARGS")]
    pub command: Vec<OsString>,
}

/// Runs the job; returns the exit code `mpiover` should exit with (the job's).
/// Errors are problems found before the job started (exit code 2).
pub fn run(a: &RecordArgs) -> anyhow::Result<i32> {
    let Some(launcher) = a.command.first() else {
        bail!("no command to run: `mpiover record -- mpirun -np N ./app ...`");
    };
    if !is_executable(launcher) {
        bail!(
            "cannot run {}: no such executable (in PATH, or as a path)",
            launcher.to_string_lossy()
        );
    }
    let lib = find_lib(a.lib.as_deref())?;
    let profile = match &a.profile {
        Some(p) => Some(check_profile(p)?),
        None => None,
    };
    let kind = launcher_kind(launcher);
    let explicit = a.lib.is_some() || Var::Lib.get().is_some_and(|v| !v.is_empty());
    let exe = std::env::current_exe().context("cannot find the mpiover executable")?;
    let lib = matching_lib(lib, launcher_family(launcher, kind), &exe, explicit);
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let out = match a
        .out
        .clone()
        .or_else(|| Var::Out.get().filter(|v| !v.is_empty()).map(PathBuf::from))
    {
        Some(o) => prepare_out(&cwd.join(o))?,
        None => {
            let prog = program_name(&a.command, kind != CommandKind::Program);
            make_default_out(&cwd, &prog)?
        }
    };

    // The child's environment and, for Open MPI, the -x options.
    let preload = join_preload(std::env::var_os("LD_PRELOAD").as_deref(), &lib);
    let mut cmd = Command::new(launcher);
    let mut set: Vec<(&str, OsString)> = vec![
        ("LD_PRELOAD", preload),
        (Var::Out.name(), out.clone().into_os_string()),
    ];
    if let Some(p) = &profile {
        set.push((Var::Profile.name(), p.clone().into_os_string()));
    }
    if let Some(d) = a.depth {
        set.push((Var::Depth.name(), d.to_string().into()));
    }
    if let Some(f) = a.format {
        set.push((Var::Format.name(), f.as_str().into()));
    }
    if kind == CommandKind::OpenMpi {
        let mut names: Vec<String> = set.iter().map(|(k, _)| k.to_string()).collect();
        let mut others: Vec<String> = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .filter(|k| k.starts_with("MPIOVER_") && k != Var::Lib.name() && !names.contains(k))
            .collect();
        others.sort();
        names.extend(others);
        for n in names {
            cmd.arg("-x").arg(n);
        }
    }
    cmd.args(&a.command[1..]);
    for (k, v) in &set {
        cmd.env(k, v);
    }

    eprintln!("mpiover: recording into {}", out.display());
    let started = Instant::now();
    let status = run_forwarding_signals(cmd, launcher)?;
    let elapsed = started.elapsed();
    let code = exit_code(&status);

    if !a.no_summary {
        let text = summary(&out, profile.as_deref(), code, elapsed);
        let mut err = std::io::stderr().lock();
        let _ = err.write_all(text.as_bytes());
        let _ = err.flush();
    }
    // A job that succeeded but left no record (a library built for the
    // other MPI stays off, a program that never called MPI_Init) is a
    // failed recording: a script must not take the empty run for a result.
    if code == 0 && !recorded(&out) {
        eprintln!(
            "mpiover: nothing was recorded into {}: exit status {NOTHING_RECORDED}",
            out.display()
        );
        return Ok(NOTHING_RECORDED);
    }
    Ok(code)
}

/// The exit status of a job that succeeded without writing a record.
pub const NOTHING_RECORDED: i32 = 1;

/// Whether the run directory holds a rank's record or a job log (one
/// that cannot be read counts: the summary has said what is wrong with it).
fn recorded(out: &std::path::Path) -> bool {
    use mpiover_common::run::{RunDir, RunError};
    !matches!(
        RunDir::open(out),
        Err(RunError::Empty { .. } | RunError::NotFound(_))
    )
}

// ---------------------------------------------------------------------------
// Finding things
// ---------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use std::ffi::{OsStr, OsString};
    use std::path::Path;
    use std::process::ExitStatus;

    use super::*;

    #[test]
    fn preload_is_appended_without_duplicates() {
        let lib = Path::new("/opt/mpiover/lib/libmpiover.so");
        assert_eq!(
            join_preload(None, lib),
            OsString::from("/opt/mpiover/lib/libmpiover.so")
        );
        assert_eq!(
            join_preload(Some(OsStr::new("/a/x.so /b/y.so")), lib),
            OsString::from("/a/x.so:/b/y.so:/opt/mpiover/lib/libmpiover.so")
        );
        assert_eq!(
            join_preload(Some(OsStr::new("/old/libmpiover.so:/a/x.so")), lib),
            OsString::from("/a/x.so:/opt/mpiover/lib/libmpiover.so")
        );
    }

    #[test]
    fn lib_is_looked_for_next_to_the_exe_then_in_lib() {
        let c = lib_candidates(Path::new("/usr/local/bin/mpiover"));
        assert_eq!(c[0], Path::new("/usr/local/bin/libmpiover.so"));
        assert_eq!(c[1], Path::new("/usr/local/bin/../lib/libmpiover.so"));
    }

    #[test]
    fn program_name_skips_launcher_options() {
        let v = |s: &[&str]| s.iter().map(OsString::from).collect::<Vec<_>>();
        // /bin/sh exists and is executable; "4" and "FOO" are not files.
        assert_eq!(
            program_name(
                &v(&["mpirun", "-np", "4", "-x", "FOO", "/bin/sh", "a"]),
                true
            ),
            "sh"
        );
        assert_eq!(program_name(&v(&["./my app+"]), false), "my_app_");
        assert_eq!(program_name(&v(&["mpirun", "-np", "4"]), true), "program");
    }

    #[test]
    fn names_decide_the_launcher_kind_without_running_it() {
        assert_eq!(
            launcher_kind(OsStr::new("/usr/bin/mpirun.openmpi")),
            CommandKind::OpenMpi
        );
        assert_eq!(
            launcher_kind(OsStr::new("mpiexec.hydra")),
            CommandKind::Launcher
        );
        assert_eq!(
            launcher_kind(OsStr::new("mpirun.mpich")),
            CommandKind::Launcher
        );
        assert_eq!(launcher_kind(OsStr::new("srun")), CommandKind::Launcher);
        assert_eq!(launcher_kind(OsStr::new("./app")), CommandKind::Program);
    }

    #[test]
    fn the_launcher_names_its_mpi_family() {
        let f = |n: &str| launcher_family(OsStr::new(n), launcher_kind(OsStr::new(n)));
        assert_eq!(f("mpirun.openmpi"), Some("openmpi"));
        assert_eq!(f("mpiexec.mpich"), Some("mpich"));
        assert_eq!(f("mpiexec.hydra"), Some("mpich"));
        assert_eq!(f("srun"), None);
        assert_eq!(f("./app"), None);
    }

    #[test]
    fn a_build_for_the_other_mpi_is_swapped_for_the_matching_one() {
        let root = std::env::temp_dir().join(format!("mpiover-lib-pick-{}", std::process::id()));
        let (ompi, mpich) = (root.join("release"), root.join("mpich").join("release"));
        for (d, f) in [(&ompi, "openmpi"), (&mpich, "mpich")] {
            std::fs::create_dir_all(d).unwrap();
            let body = format!("\x7fELF...mpiover-built-for:{f};...");
            std::fs::write(d.join(LIB_NAME), body).unwrap();
        }
        let exe = ompi.join("mpiover");
        let found = ompi.join(LIB_NAME);
        assert_eq!(built_for(&found).as_deref(), Some("openmpi"));
        let picked = matching_lib(found.clone(), Some("mpich"), &exe, false);
        assert_eq!(built_for(&picked).as_deref(), Some("mpich"));
        // Asked for by name (--lib, MPIOVER_LIB): kept, with a warning.
        assert_eq!(
            matching_lib(found.clone(), Some("mpich"), &exe, true),
            found
        );
        assert_eq!(
            matching_lib(found.clone(), Some("openmpi"), &exe, false),
            found
        );
        assert_eq!(matching_lib(found.clone(), None, &exe, false), found);
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn signals_give_128_plus_signo() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(exit_code(&ExitStatus::from_raw(3 << 8)), 3);
        assert_eq!(
            exit_code(&ExitStatus::from_raw(libc::SIGTERM)),
            128 + libc::SIGTERM
        );
    }
}
