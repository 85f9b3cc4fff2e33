//! `mpiover record [--profile P] [--out DIR] [--depth N] [--lib PATH] -- LAUNCHER ARGS...`
//!
//! Runs an MPI job with `libmpiover.so` preloaded, then prints the report's
//! summary and exits with the job's exit code (128 + signal when the launcher
//! died of a signal).
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

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use mpiover_report::analysis::{analyze_dir, Options};
use mpiover_report::model::Report;
use mpiover_report::units::{pct, secs};

/// Arguments of `mpiover record`.
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
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub depth: Option<u32>,
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

const LIB_NAME: &str = "libmpiover.so";

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
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let out = match a.out.clone().or_else(|| {
        std::env::var_os("MPIOVER_OUT")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    }) {
        Some(o) => prepare_out(&cwd.join(o))?,
        None => {
            let prog = program_name(&a.command, kind != Kind::Program);
            make_default_out(&cwd, &prog)?
        }
    };

    // The child's environment and, for Open MPI, the -x options.
    let preload = join_preload(std::env::var_os("LD_PRELOAD").as_deref(), &lib);
    let mut cmd = Command::new(launcher);
    let mut set: Vec<(&str, OsString)> = vec![
        ("LD_PRELOAD", preload),
        ("MPIOVER_OUT", out.clone().into_os_string()),
    ];
    if let Some(p) = &profile {
        set.push(("MPIOVER_PROFILE", p.clone().into_os_string()));
    }
    if let Some(d) = a.depth {
        set.push(("MPIOVER_DEPTH", d.to_string().into()));
    }
    if kind == Kind::OpenMpi {
        let mut names: Vec<String> = set.iter().map(|(k, _)| k.to_string()).collect();
        let mut others: Vec<String> = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .filter(|k| k.starts_with("MPIOVER_") && k != "MPIOVER_LIB" && !names.contains(k))
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
    Ok(code)
}

// ---------------------------------------------------------------------------
// Finding things
// ---------------------------------------------------------------------------

/// The library to preload, as an absolute path.
fn find_lib(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = given {
        if !p.is_file() {
            bail!("--lib {}: no such file", p.display());
        }
        return absolute(p);
    }
    if let Some(p) = std::env::var_os("MPIOVER_LIB").filter(|v| !v.is_empty()) {
        let p = PathBuf::from(p);
        if !p.is_file() {
            bail!("MPIOVER_LIB={}: no such file", p.display());
        }
        return absolute(&p);
    }
    let exe = std::env::current_exe().context("cannot find the mpiover executable")?;
    let candidates = lib_candidates(&exe);
    for c in &candidates {
        if c.is_file() {
            return absolute(c);
        }
    }
    let tried: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    bail!(
        "cannot find {LIB_NAME} (tried {}): build it with `cargo build --release --workspace`, \
         or give its path with --lib or MPIOVER_LIB",
        tried.join(", ")
    )
}

/// Where the library is looked for relative to the `mpiover` executable.
pub fn lib_candidates(exe: &Path) -> Vec<PathBuf> {
    let dir = exe.parent().unwrap_or(Path::new("."));
    vec![
        dir.join(LIB_NAME),
        dir.join("..").join("lib").join(LIB_NAME),
    ]
}

fn absolute(p: &Path) -> anyhow::Result<PathBuf> {
    p.canonicalize()
        .with_context(|| format!("cannot resolve {}", p.display()))
}

/// The profile, checked readable before the job starts (a bad profile would
/// otherwise cost one warning per rank and a run without overhead).
fn check_profile(p: &Path) -> anyhow::Result<PathBuf> {
    if !p.is_file() {
        bail!("profile {}: no such file", p.display());
    }
    mpiover_common::profile::Profile::load(p)
        .with_context(|| format!("cannot use profile {}", p.display()))?;
    absolute(p)
}

/// `existing` (colon- or space-separated) without any other libmpiover.so,
/// then `lib`.
pub fn join_preload(existing: Option<&OsStr>, lib: &Path) -> OsString {
    let mut parts: Vec<String> = existing
        .map(|e| e.to_string_lossy().into_owned())
        .unwrap_or_default()
        .split([':', ' '])
        .filter(|s| !s.is_empty())
        .filter(|s| Path::new(s).file_name() != Some(OsStr::new(LIB_NAME)))
        .map(str::to_string)
        .collect();
    parts.push(lib.to_string_lossy().into_owned());
    parts.join(":").into()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Open MPI's launcher: needs `-x NAME` to pass the environment.
    OpenMpi,
    /// Another launcher (MPICH hydra, srun...): forwards the environment.
    Launcher,
    /// Not a launcher: the program itself (a singleton run).
    Program,
}

fn base_name(p: &OsStr) -> String {
    Path::new(p)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What kind of launcher the command starts with.
pub fn launcher_kind(launcher: &OsStr) -> Kind {
    let name = base_name(launcher);
    let mpi = ["mpirun", "mpiexec", "orterun"]
        .iter()
        .any(|n| name.starts_with(n));
    if mpi {
        if name.ends_with(".openmpi") {
            return Kind::OpenMpi;
        }
        if name.contains(".mpich") || name.contains("hydra") {
            return Kind::Launcher;
        }
        return if says_open_mpi(launcher) {
            Kind::OpenMpi
        } else {
            Kind::Launcher
        };
    }
    const OTHERS: [&str; 7] = [
        "srun", "aprun", "jsrun", "prun", "ibrun", "flux", "charmrun",
    ];
    if OTHERS.contains(&name.as_str()) {
        Kind::Launcher
    } else {
        Kind::Program
    }
}

/// Whether `<launcher> --version` mentions Open MPI (or its runtime, OpenRTE).
fn says_open_mpi(launcher: &OsStr) -> bool {
    let child = Command::new(launcher)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_remove("LD_PRELOAD")
        .spawn();
    let Ok(mut child) = child else {
        return false;
    };
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
    match child.wait_with_output() {
        Ok(o) => {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            text.contains("Open MPI") || text.contains("OpenRTE")
        }
        Err(_) => false,
    }
}

/// Whether `arg` names an executable file: a path (with a `/`) or a name found
/// on `PATH`.
fn is_executable(arg: &OsStr) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let exec = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let s = arg.to_string_lossy();
    if s.is_empty() {
        return false;
    }
    if s.contains('/') {
        return exec(Path::new(arg));
    }
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| exec(&d.join(arg))))
}

/// The program's name for the default run directory (the interposer's rule:
/// letters, digits and `._-`, anything else `_`). Behind a launcher it is the
/// first non-option argument that names an executable.
pub fn program_name(command: &[OsString], behind_launcher: bool) -> String {
    let prog = if behind_launcher {
        command
            .iter()
            .skip(1)
            .find(|a| !a.to_string_lossy().starts_with('-') && is_executable(a))
    } else {
        command.first()
    };
    let base = prog.map(|p| base_name(p)).unwrap_or_default();
    mpiover_common::rundir::program_component(&base)
}

/// Creates `./mpiover-<program>-<timestamp>` (or `-2`, `-3`...).
fn make_default_out(cwd: &Path, prog: &str) -> anyhow::Result<PathBuf> {
    let base = format!(
        "mpiover-{prog}-{}",
        mpiover_common::rundir::local_timestamp()
    );
    for i in 1..1000 {
        let name = if i == 1 {
            base.clone()
        } else {
            format!("{base}-{i}")
        };
        let p = cwd.join(name);
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e)
                    .with_context(|| format!("cannot create run directory {}", p.display()))
            }
        }
    }
    bail!(
        "cannot create a run directory {base}-N in {}",
        cwd.display()
    )
}

/// Creates the run directory and removes the records of an earlier run in it.
fn prepare_out(p: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(p)
        .with_context(|| format!("cannot create run directory {}", p.display()))?;
    let p = absolute(p)?;
    let rd = std::fs::read_dir(&p)
        .with_context(|| format!("cannot read run directory {}", p.display()))?;
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with("rank-") && n.ends_with(".json") {
            std::fs::remove_file(e.path()).with_context(|| {
                format!("cannot remove the earlier record {}", e.path().display())
            })?;
        }
    }
    Ok(p)
}

// ---------------------------------------------------------------------------
// Running the job
// ---------------------------------------------------------------------------

/// The exit code of `mpiover record` for the launcher's status.
pub fn exit_code(st: &ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (st.code(), st.signal()) {
        (Some(c), _) => c,
        (None, Some(s)) => 128 + s,
        (None, None) => 1,
    }
}

mod sig {
    //! Signals to forward while the job runs.
    use std::sync::atomic::{AtomicI32, Ordering::SeqCst};

    pub const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    /// si_code of a signal the kernel sent for the terminal (Ctrl-C).
    const SI_KERNEL: libc::c_int = 0x80;

    static PENDING: [AtomicI32; 3] = [AtomicI32::new(0), AtomicI32::new(0), AtomicI32::new(0)];

    extern "C" fn on_signal(sig: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // A terminal's signal went to the whole foreground process group,
        // the launcher included: do not send it twice (a second Ctrl-C makes
        // Open MPI's mpirun abort hard).
        // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
        let from_tty = !info.is_null() && unsafe { (*info).si_code } == SI_KERNEL;
        if from_tty {
            return;
        }
        if let Some(i) = SIGNALS.iter().position(|&s| s == sig) {
            PENDING[i].fetch_add(1, SeqCst);
        }
    }

    /// Installs the handlers; returns the previous actions.
    pub fn install() -> Vec<libc::sigaction> {
        let mut old = Vec::new();
        for &s in &SIGNALS {
            // SAFETY: sigaction(2) with valid pointers; the handler only
            // touches atomics (async-signal-safe).
            unsafe {
                let mut act: libc::sigaction = std::mem::zeroed();
                act.sa_sigaction = on_signal as *const () as usize;
                act.sa_flags = libc::SA_SIGINFO | libc::SA_RESTART;
                libc::sigemptyset(&mut act.sa_mask);
                let mut prev: libc::sigaction = std::mem::zeroed();
                libc::sigaction(s, &act, &mut prev);
                old.push(prev);
            }
        }
        old
    }

    pub fn restore(old: &[libc::sigaction]) {
        for (&s, o) in SIGNALS.iter().zip(old) {
            // SAFETY: restores an action returned by sigaction(2).
            unsafe {
                libc::sigaction(s, o, std::ptr::null_mut());
            }
        }
    }

    /// Signals received since the last call, to forward.
    pub fn take() -> Vec<libc::c_int> {
        let mut v = Vec::new();
        for (i, &s) in SIGNALS.iter().enumerate() {
            let n = PENDING[i].swap(0, SeqCst);
            if n > 0 {
                v.push(s);
            }
        }
        v
    }
}

fn run_forwarding_signals(mut cmd: Command, launcher: &OsStr) -> anyhow::Result<ExitStatus> {
    let old = sig::install();
    let child = cmd.spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            sig::restore(&old);
            return Err(e).with_context(|| format!("cannot start {}", launcher.to_string_lossy()));
        }
    };
    let pid = child.id() as libc::pid_t;
    let status = loop {
        for s in sig::take() {
            // SAFETY: kill(2) of the child we started (not yet reaped).
            unsafe {
                libc::kill(pid, s);
            }
        }
        match child.try_wait() {
            Ok(Some(st)) => break Ok(st),
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => break Err(e),
        }
    };
    sig::restore(&old);
    status.with_context(|| format!("waiting for {}", launcher.to_string_lossy()))
}

// ---------------------------------------------------------------------------
// The summary
// ---------------------------------------------------------------------------

/// Analyses the run directory and renders a short summary. Never fails: a
/// problem with the records becomes a line of the summary.
fn summary(out: &Path, profile: Option<&Path>, code: i32, elapsed: Duration) -> String {
    let mut s = String::new();
    s += &format!(
        "\nmpiover: the job exited with {code} after {}; records in {}\n",
        secs(elapsed.as_secs_f64()),
        out.display()
    );
    let opts = Options {
        detail_sites: 0,
        ..Options::default()
    };
    let mut report = match analyze_dir(out, None, &opts) {
        Ok(r) => r,
        Err(e) => {
            s += &format!(
                "mpiover: no report: {e}\n  (no records: did the program call MPI_Init? \
                 Is {LIB_NAME} built for the MPI the program uses?)\n"
            );
            return s;
        }
    };
    let mut reanalysed = false;
    // Records made without online overhead (an interposer without profile
    // support, or a profile it rejected): re-analyse against the profile.
    if report.summary.overhead_s.is_none() {
        if let Some(p) = profile {
            match mpiover_report::tmax::open_profile(p, None)
                .and_then(|t| Ok(analyze_dir(out, Some(t.as_ref()), &opts)?))
            {
                Ok(r) => {
                    report = r;
                    reanalysed = true;
                }
                Err(e) => {
                    s += &format!(
                        "mpiover: the records hold no overhead and re-analysis failed: {e:#}\n"
                    )
                }
            }
        }
    }
    s += &render(&report);
    let mut again = format!("mpiover report {}", out.display());
    if reanalysed {
        if let Some(p) = profile {
            again += &format!(" --profile {}", p.display());
        }
    }
    s += &format!("Full report: {again}   (-f html -o report.html for charts)\n");
    s
}

/// The summary block of a report: totals, the worst sites in one sentence
/// each (the report's own summary), warnings.
pub fn render(r: &Report) -> String {
    let sm = &r.summary;
    let mut s = String::new();
    s += &format!(
        "  ranks {} of {}   application {} (longest rank {})   MPI {} ({} of application; \
         start-up and shut-down {} on top)\n",
        r.run.ranks_present,
        r.run.ranks,
        secs(sm.app_time_s),
        secs(sm.app_wall_s),
        secs(sm.mpi_time_s),
        pct(if sm.app_time_s > 0.0 {
            sm.mpi_time_s / sm.app_time_s
        } else {
            0.0
        }),
        secs(sm.startup_s + sm.shutdown_s),
    );
    match sm.overhead_s {
        Some(o) => {
            s += &format!(
                "  overhead {} ({} of MPI time, {} of application); {} of {} sites significant\n",
                secs(o),
                pct(sm.overhead_share_of_mpi.unwrap_or(0.0)),
                pct(sm.overhead_share_of_app.unwrap_or(0.0)),
                sm.significant_sites,
                sm.sites
            );
        }
        None => {
            s += "  overhead unknown without a profile (calibrate with mpiover-calibrate, record \
                  with --profile): sites ranked by time\n";
        }
    }
    for (i, w) in sm.worst.iter().enumerate() {
        s += &format!("  {}. {w}\n", i + 1);
    }
    for w in r.warnings.iter().take(5) {
        s += &format!("  warning: {w}\n");
    }
    if r.warnings.len() > 5 {
        s += &format!("  ... and {} more warnings\n", r.warnings.len() - 5);
    }
    s
}

#[cfg(test)]
mod tests {
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
            Kind::OpenMpi
        );
        assert_eq!(launcher_kind(OsStr::new("mpiexec.hydra")), Kind::Launcher);
        assert_eq!(launcher_kind(OsStr::new("mpirun.mpich")), Kind::Launcher);
        assert_eq!(launcher_kind(OsStr::new("srun")), Kind::Launcher);
        assert_eq!(launcher_kind(OsStr::new("./app")), Kind::Program);
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
