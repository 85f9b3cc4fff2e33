//! Building the examples, finding `libmpiover.so` and `mpiover`, running
//! `mpirun` with a timeout, and reading the run records.
//!
//! Every MPI job of the suite runs under one global lock: the machine has two
//! cores and the attribution tests compare times against injected delays, so
//! jobs must not compete with each other.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use mpiover_common::record::{Entry, Record, Site, RECORD_SCHEMA};

/// Longest any single `mpirun` may take before the harness kills it.
pub const JOB_TIMEOUT: Duration = Duration::from_secs(60);

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ has a parent")
        .to_path_buf()
}

pub fn examples_src() -> PathBuf {
    workspace_root().join("examples")
}

/// Directory for this test's files, emptied first and kept afterwards so that
/// a failure can be inspected (`target/.../tmp/e2e/<test>`).
pub fn scratch(test: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("e2e")
        .join(test);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// Candidate build directories, most specific first: `$CARGO_TARGET_DIR`
/// (if the tests run with one), then the workspace's `target/`.
fn target_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        let t = PathBuf::from(t);
        dirs.push(if t.is_absolute() {
            t
        } else {
            workspace_root().join(t)
        });
    }
    dirs.push(workspace_root().join("target"));
    dirs
}

/// A built artifact: `$<env_var>` if set, else `<target>/release/<name>`, else
/// `<target>/debug/<name>`. Panics (never skips) when there is none.
fn locate_artifact(env_var: &str, name: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        let p = PathBuf::from(p);
        assert!(
            p.is_file(),
            "{env_var}={} does not name a file",
            p.display()
        );
        return p;
    }
    let mut tried = Vec::new();
    for dir in target_dirs() {
        for profile in ["release", "debug"] {
            let p = dir.join(profile).join(name);
            if p.is_file() {
                return p;
            }
            tried.push(p.display().to_string());
        }
    }
    panic!(
        "{name} not found (tried {}).\nBuild it first: `cargo build --release --workspace` \
         (or set {env_var} to its path).",
        tried.join(", ")
    );
}

/// The MPI library the suite runs under: `openmpi` (the default) or `mpich`
/// (`MPIOVER_E2E_MPI=mpich`: `mpiexec.mpich`, `mpicc.mpich`, `mpifort.mpich`;
/// point `MPIOVER_LIB` or `CARGO_TARGET_DIR` at a build made with
/// `MPICC=mpicc.mpich`). Only the tests that do not depend on Open MPI's
/// behaviour are meant to run under MPICH (see `.ci`).
pub fn mpi_flavor() -> &'static str {
    static F: OnceLock<String> = OnceLock::new();
    F.get_or_init(|| match std::env::var("MPIOVER_E2E_MPI").as_deref() {
        Ok("mpich") => "mpich".to_string(),
        Ok("openmpi") | Ok("") | Err(_) => "openmpi".to_string(),
        Ok(other) => panic!("MPIOVER_E2E_MPI={other:?}: expected openmpi or mpich"),
    })
}

/// `make` variables selecting the compilers of [`mpi_flavor`].
fn make_vars() -> Vec<String> {
    if mpi_flavor() == "mpich" {
        vec![
            "MPICC=mpicc.mpich".into(),
            "MPIFC=mpifort.mpich".into(),
            "MPICXX=mpicxx.mpich".into(),
        ]
    } else {
        Vec::new()
    }
}

/// Where the examples of [`mpi_flavor`] are built.
fn examples_out() -> PathBuf {
    let name = if mpi_flavor() == "mpich" {
        "examples-mpich"
    } else {
        "examples"
    };
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// The interposer under test.
pub fn lib() -> &'static Path {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let p = locate_artifact("MPIOVER_LIB", "libmpiover.so");
        eprintln!("e2e: using {}", p.display());
        p
    })
}

/// The report command under test.
pub fn mpiover_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let p = locate_artifact("MPIOVER_BIN", "mpiover");
        eprintln!("e2e: using {}", p.display());
        p
    })
}

/// The calibration program under test (`mpiover-calibrate`, or
/// `$MPIOVER_CALIBRATE`).
pub fn calibrate_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let p = locate_artifact("MPIOVER_CALIBRATE", "mpiover-calibrate");
        eprintln!("e2e: using {}", p.display());
        p
    })
}

/// Path of a built example, building all of them (once per test process) with
/// `make -C examples OUT=<tmp>/examples`.
pub fn example(name: &str) -> PathBuf {
    static OUT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let out = OUT.get_or_init(|| {
        let out = examples_out();
        let res = Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(examples_src())
            .arg(format!("OUT={}", out.display()))
            .args(make_vars())
            .output()
            .map_err(|e| format!("running make: {e}"))?;
        if !res.status.success() {
            return Err(format!(
                "make -C examples failed ({}):\n{}{}",
                res.status,
                String::from_utf8_lossy(&res.stdout),
                String::from_utf8_lossy(&res.stderr)
            ));
        }
        Ok(out)
    });
    match out {
        Ok(dir) => {
            let p = dir.join(name);
            assert!(
                p.is_file(),
                "example {name} was not built into {}",
                dir.display()
            );
            p
        }
        Err(e) => panic!("{e}"),
    }
}

/// Path of a program built by `make -C examples/<dir> OUT=<tmp>/<dir>` (once
/// per directory and test process): the Fortran examples (`fortran`), the
/// thread, non-blocking and `MPI_Pcontrol` examples.
pub fn example_in(dir: &str, name: &str) -> PathBuf {
    static BUILT: Mutex<BTreeMap<String, Result<PathBuf, String>>> = Mutex::new(BTreeMap::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let res = built.entry(dir.to_string()).or_insert_with(|| {
        let out = examples_out().join(dir);
        let res = Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(examples_src().join(dir))
            .arg(format!("OUT={}", out.display()))
            .args(make_vars())
            .output()
            .map_err(|e| format!("running make: {e}"))?;
        if !res.status.success() {
            return Err(format!(
                "make -C examples/{dir} failed ({}):\n{}{}",
                res.status,
                String::from_utf8_lossy(&res.stdout),
                String::from_utf8_lossy(&res.stderr)
            ));
        }
        Ok(out)
    });
    match res {
        Ok(out) => {
            let p = out.join(name);
            assert!(p.is_file(), "{name} was not built into {}", out.display());
            p
        }
        Err(e) => panic!("{e}"),
    }
}

/// Line of the unique marker `MPIOVER-EXPECT: <tag>` in `examples/<file>`,
/// in any comment syntax (`/* ... */` in C, `! ...` at the end of a
/// Fortran line, `# ...` in Python).
pub fn marker_any(file: &str, tag: &str) -> u32 {
    let path = examples_src().join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let needle = format!("MPIOVER-EXPECT: {tag}");
    let lines: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            l.match_indices(&needle).any(|(i, _)| {
                let rest = &l[i + needle.len()..];
                rest.is_empty() || rest.starts_with(' ') || rest.starts_with('*')
            })
        })
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "marker {tag:?} in {file}: found on lines {lines:?}"
    );
    lines[0]
}

/// Line of the unique `/* MPIOVER-EXPECT: <tag> */` marker in `examples/<file>`.
pub fn marker(file: &str, tag: &str) -> u32 {
    let path = examples_src().join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let needle = format!("MPIOVER-EXPECT: {tag} */");
    let lines: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.contains(&needle))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    assert_eq!(
        lines.len(),
        1,
        "marker {tag:?} in {file}: found on lines {lines:?}"
    );
    lines[0]
}

/// The suite's one MPI lock: hold it around anything that starts MPI jobs
/// (`Job::run` does).
pub fn mpi_lock() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// One `mpirun` invocation.
#[derive(Debug, Clone)]
pub struct Job {
    pub np: u32,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Preload libmpiover.so into the ranks.
    pub preload: bool,
    /// Extra environment for the ranks (passed with `-x`).
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    pub timeout: Duration,
}

impl Job {
    pub fn new(np: u32, example_name: &str, args: &[&str], cwd: &Path) -> Job {
        Job {
            np,
            program: example(example_name),
            args: args.iter().map(|s| s.to_string()).collect(),
            preload: false,
            env: Vec::new(),
            cwd: cwd.to_path_buf(),
            timeout: JOB_TIMEOUT,
        }
    }

    /// A job of any program (not an example).
    pub fn program(np: u32, program: &Path, args: &[&str], cwd: &Path) -> Job {
        Job {
            np,
            program: program.to_path_buf(),
            args: args.iter().map(|s| s.to_string()).collect(),
            preload: false,
            env: Vec::new(),
            cwd: cwd.to_path_buf(),
            timeout: JOB_TIMEOUT,
        }
    }

    pub fn preload(mut self) -> Job {
        self.preload = true;
        self
    }

    pub fn env(mut self, k: &str, v: impl AsRef<str>) -> Job {
        self.env.push((k.to_string(), v.as_ref().to_string()));
        self
    }

    /// Preload with `MPIOVER_OUT=<dir>`.
    pub fn profiled(self, out: &Path) -> Job {
        self.preload().env("MPIOVER_OUT", out.display().to_string())
    }

    pub fn command(&self) -> Command {
        if mpi_flavor() == "mpich" {
            return self.command_mpich();
        }
        let mut c = Command::new("mpirun");
        c.arg("-np").arg(self.np.to_string());
        if self.preload {
            c.arg("-x").arg(format!("LD_PRELOAD={}", lib().display()));
        }
        for (k, v) in &self.env {
            c.arg("-x").arg(format!("{k}={v}"));
        }
        c.arg(&self.program).args(&self.args);
        c.current_dir(&self.cwd);
        // The run must not inherit the developer's profiler settings.
        c.env_remove("LD_PRELOAD");
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("MPIOVER_") {
                c.env_remove(&k);
            }
        }
        c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
        c
    }

    /// The job under MPICH's Hydra launcher.
    fn command_mpich(&self) -> Command {
        let mut c = Command::new("mpiexec.mpich");
        c.arg("-n").arg(self.np.to_string());
        if self.preload {
            c.arg("-genv")
                .arg("LD_PRELOAD")
                .arg(lib().display().to_string());
        }
        for (k, v) in &self.env {
            c.arg("-genv").arg(k).arg(v);
        }
        c.arg(&self.program).args(&self.args);
        c.current_dir(&self.cwd);
        c.env_remove("LD_PRELOAD");
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("MPIOVER_") {
                c.env_remove(&k);
            }
        }
        c
    }

    pub fn describe(&self) -> String {
        let mut s = format!("mpirun -np {}", self.np);
        if self.preload {
            s += " -x LD_PRELOAD=libmpiover.so";
        }
        for (k, v) in &self.env {
            s += &format!(" -x {k}={v}");
        }
        s += &format!(" {}", self.program.display());
        for a in &self.args {
            s += &format!(" {a}");
        }
        s
    }

    /// Runs the job to its end (or kills it at the timeout).
    pub fn run(&self) -> Outcome {
        self.run_with(|_| {})
    }

    /// Runs the job; `during` is called once with mpirun's pid right after the
    /// start (to deliver signals), while the harness keeps the timeout.
    pub fn run_with(&self, during: impl FnOnce(u32)) -> Outcome {
        let _guard = mpi_lock();
        let io = scratch_io();
        let stdout = tempfile_in(&io, "stdout");
        let stderr = tempfile_in(&io, "stderr");
        let start = Instant::now();
        let mut child = self
            .command()
            .stdin(Stdio::null())
            .stdout(stdout.0)
            .stderr(stderr.0)
            .spawn()
            .unwrap_or_else(|e| panic!("starting mpirun: {e}"));
        let pid = child.id();
        during(pid);
        let mut timed_out = false;
        let status = loop {
            if let Some(st) = child.try_wait().expect("waiting for mpirun") {
                break st;
            }
            if start.elapsed() > self.timeout {
                timed_out = true;
                kill_tree(pid);
                break child.wait().expect("waiting for killed mpirun");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let out = Outcome {
            job: self.describe(),
            status,
            stdout: read_all(&stdout.1),
            stderr: read_all(&stderr.1),
            elapsed: start.elapsed(),
            timed_out,
        };
        let _ = fs::remove_file(&stdout.1);
        let _ = fs::remove_file(&stderr.1);
        assert!(
            !out.timed_out,
            "job hung and was killed after {:?}:\n{}",
            self.timeout,
            out.dump()
        );
        out
    }
}

fn scratch_io() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-io");
    fs::create_dir_all(&d).expect("creating e2e-io");
    d
}

fn tempfile_in(dir: &Path, what: &str) -> (fs::File, PathBuf) {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = dir.join(format!("{}-{n}.{what}", std::process::id()));
    (fs::File::create(&p).expect("creating output file"), p)
}

fn read_all(p: &Path) -> String {
    let mut s = Vec::new();
    fs::File::open(p)
        .and_then(|mut f| f.read_to_end(&mut s))
        .expect("reading job output");
    String::from_utf8_lossy(&s).into_owned()
}

/// Every descendant of `pid` (the ranks run in their own process groups, so
/// killing mpirun's group is not enough).
fn descendants(pid: u32) -> Vec<u32> {
    let mut parent_of = BTreeMap::new();
    if let Ok(rd) = fs::read_dir("/proc") {
        for e in rd.flatten() {
            let Ok(p) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if let Ok(stat) = fs::read_to_string(format!("/proc/{p}/stat")) {
                // pid (comm) state ppid ...: comm may hold spaces, cut at the last ')'.
                if let Some(rest) = stat.rsplit_once(')').map(|x| x.1) {
                    if let Some(ppid) = rest.split_whitespace().nth(1) {
                        if let Ok(ppid) = ppid.parse::<u32>() {
                            parent_of.insert(p, ppid);
                        }
                    }
                }
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let cur = out[i];
        out.extend(
            parent_of
                .iter()
                .filter(|(_, pp)| **pp == cur)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    out.remove(0);
    out
}

pub fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) with a pid we started (or one of its children).
    unsafe {
        libc::kill(pid as libc::pid_t, sig);
    }
}

/// Ask mpirun to stop, then kill it and every process below it.
pub fn kill_tree(pid: u32) {
    let below = descendants(pid);
    signal(pid, libc::SIGTERM);
    std::thread::sleep(Duration::from_secs(2));
    for p in below.into_iter().chain(std::iter::once(pid)) {
        signal(p, libc::SIGKILL);
    }
}

/// What a job did.
#[derive(Debug)]
pub struct Outcome {
    pub job: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    pub timed_out: bool,
}

impl Outcome {
    /// mpirun's exit code (mpirun itself is never killed by a signal here).
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    pub fn dump(&self) -> String {
        format!(
            "job: {}\nstatus: {} after {:.2?}\n--- stdout\n{}--- stderr\n{}---",
            self.job, self.status, self.elapsed, self.stdout, self.stderr
        )
    }

    pub fn assert_success(&self) -> &Outcome {
        assert!(self.status.success(), "job failed:\n{}", self.dump());
        self
    }
}

/// Reads every `rank-NNNNNN.json` of a run directory, sorted by rank, with
/// errors that name the file.
pub fn read_records(dir: &Path) -> Result<Vec<Record>, String> {
    let rd = fs::read_dir(dir).map_err(|e| format!("reading run dir {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rank-") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = fs::read_to_string(&f).map_err(|e| format!("{}: {e}", f.display()))?;
        let rec: Record = serde_json::from_str(&text).map_err(|e| {
            format!(
                "{}: not a readable record: {e} ({} bytes)",
                f.display(),
                text.len()
            )
        })?;
        out.push(rec);
    }
    out.sort_by_key(|r| r.rank);
    Ok(out)
}

/// The records of a run, checked for what every complete run must satisfy:
/// one record per rank, all of schema `mpiover-record/1`, one run id, the
/// world size, the program in the command line, and entries pointing at sites.
pub fn complete_records(dir: &Path, np: u32, program: &str, context: &Outcome) -> Vec<Record> {
    let recs = read_records(dir).unwrap_or_else(|e| panic!("{e}\n{}", context.dump()));
    let ranks: Vec<u32> = recs.iter().map(|r| r.rank).collect();
    assert_eq!(
        ranks,
        (0..np).collect::<Vec<_>>(),
        "expected one record per rank in {}\n{}",
        dir.display(),
        context.dump()
    );
    for r in &recs {
        check_record_basics(r, np, program);
    }
    let ids: Vec<&str> = recs.iter().map(|r| r.run_id.as_str()).collect();
    assert!(
        ids.windows(2).all(|w| w[0] == w[1]),
        "ranks disagree on the run id: {ids:?}"
    );
    recs
}

pub fn check_record_basics(r: &Record, np: u32, program: &str) {
    let who = format!("rank {}", r.rank);
    assert_eq!(r.schema, RECORD_SCHEMA, "{who}: schema");
    assert_eq!(r.ranks, np, "{who}: ranks");
    assert!(
        r.command.first().is_some_and(|c| c.ends_with(program)),
        "{who}: command {:?} does not start with the program {program}",
        r.command
    );
    let ids: Vec<u32> = r.sites.iter().map(|s| s.id).collect();
    for e in &r.entries {
        assert!(
            e.function == "other" || ids.contains(&e.site),
            "{who}: entry {} refers to unknown site {}",
            e.function,
            e.site
        );
    }
}

/// A profiled run: outcome, run directory and records.
pub struct Profiled {
    pub out: Outcome,
    pub dir: PathBuf,
    pub records: Vec<Record>,
}

/// Runs `example args` on `np` ranks with the preload and `MPIOVER_OUT`, expects
/// success and a complete set of records written at `MPI_Finalize`.
pub fn profile(test: &str, np: u32, example_name: &str, args: &[&str]) -> Profiled {
    profile_env(test, np, example_name, args, &[])
}

pub fn profile_env(
    test: &str,
    np: u32,
    example_name: &str,
    args: &[&str],
    env: &[(&str, &str)],
) -> Profiled {
    profile_program(test, np, &example(example_name), args, env)
}

/// `mpirun -np N mpiover-calibrate --quick --quiet --functions F --sizes S`
/// into `<scratch of test>/profile.json`; expects success.
pub fn quick_profile(test: &str, np: u32, functions: &str, sizes: &str) -> PathBuf {
    let dir = scratch(test);
    let prof = dir.join("profile.json");
    let out = Job::program(
        np,
        calibrate_bin(),
        &[
            "--quick",
            "--quiet",
            "--functions",
            functions,
            "--sizes",
            sizes,
            "-o",
            prof.to_str().expect("utf-8 path"),
        ],
        &dir,
    )
    .run();
    out.assert_success();
    prof
}

/// `profile_env` for any program (by path).
pub fn profile_program(
    test: &str,
    np: u32,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Profiled {
    let dir = scratch(test);
    let run = dir.join("run");
    let example_name = program
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string();
    let example_name = example_name.as_str();
    let mut job = Job::program(np, program, args, &dir).profiled(&run);
    for (k, v) in env {
        job = job.env(k, v);
    }
    let out = job.run();
    out.assert_success();
    let records = complete_records(&run, np, example_name, &out);
    for r in &records {
        assert_eq!(r.finished, "finalize", "rank {}: finished", r.rank);
    }
    Profiled {
        out,
        dir: run,
        records,
    }
}

// ---- looking things up in a record ----

pub fn site(r: &Record, id: u32) -> Option<&Site> {
    r.sites.iter().find(|s| s.id == id)
}

/// Whether a site is `file:line` (file compared by name: the debug info may
/// hold a relative or an absolute path).
pub fn site_is(s: &Site, file: &str, line: u32) -> bool {
    s.line == Some(line) && s.file.as_deref().is_some_and(|f| file_is(f, file))
}

pub fn file_is(path: &str, file: &str) -> bool {
    Path::new(path).file_name().and_then(|n| n.to_str()) == Some(file)
}

pub fn describe_site(r: &Record, id: u32) -> String {
    match site(r, id) {
        Some(s) => format!(
            "{}:{} in {} ({} {})",
            s.file.as_deref().unwrap_or("?"),
            s.line.map(|l| l.to_string()).unwrap_or_else(|| "?".into()),
            s.function.as_deref().unwrap_or("?"),
            s.module.as_deref().unwrap_or("?"),
            s.offset.as_deref().unwrap_or("?"),
        ),
        None => format!("<site {id}>"),
    }
}

/// Entries of `function` whose site is `file:line`.
pub fn entries_at<'a>(r: &'a Record, function: &str, file: &str, line: u32) -> Vec<&'a Entry> {
    r.entries
        .iter()
        .filter(|e| e.function == function)
        .filter(|e| site(r, e.site).is_some_and(|s| site_is(s, file, line)))
        .collect()
}

/// Sites by total time over all their entries, largest first: (site id, seconds).
pub fn sites_by_time(r: &Record) -> Vec<(u32, f64)> {
    let mut by: BTreeMap<u32, f64> = BTreeMap::new();
    for e in &r.entries {
        if e.function != "other" {
            *by.entry(e.site).or_default() += e.sum_s;
        }
    }
    let mut v: Vec<(u32, f64)> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

/// Human-readable summary of a record's sites, for failure messages.
pub fn dump_sites(r: &Record) -> String {
    let mut s = format!("rank {} sites by time:\n", r.rank);
    for (id, t) in sites_by_time(r).iter().take(12) {
        let fns: Vec<String> = r
            .entries
            .iter()
            .filter(|e| e.site == *id)
            .map(|e| format!("{} x{} {}B peer {:?}", e.function, e.count, e.bytes, e.peer))
            .collect();
        s += &format!(
            "  {:9.3} ms  {}  [{}]\n",
            t * 1e3,
            describe_site(r, *id),
            fns.join(", ")
        );
    }
    s
}

/// Asserts `actual` is within `rel` (relative) of `expected`.
pub fn assert_close(what: &str, actual: f64, expected: f64, rel: f64, context: &str) {
    assert!(
        (actual - expected).abs() <= rel * expected,
        "{what}: {:.3} ms, expected {:.3} ms +- {:.0} %\n{context}",
        actual * 1e3,
        expected * 1e3,
        rel * 100.0
    );
}

/// A value computed once and shared by several tests (a run they all look
/// at). If computing it panicked, every test using it fails with that message
/// instead of re-running the job.
pub fn shared<T>(cell: &'static OnceLock<Result<T, String>>, f: impl FnOnce() -> T) -> &'static T {
    let res = cell.get_or_init(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "panicked".to_string())
        })
    });
    match res {
        Ok(v) => v,
        Err(e) => panic!("shared fixture failed: {e}"),
    }
}

/// The delay (seconds) a rank of a delay-injecting example actually injected,
/// from its stderr line `<program>: rank <r> injected <ms> ms` (sleeps overrun
/// on a busy machine, so the nominal delay is only a lower bound).
pub fn injected_s(out: &Outcome, program: &str, rank: u32) -> f64 {
    let prefix = format!("{program}: rank {rank} injected ");
    out.stderr
        .lines()
        .find_map(|l| {
            l.strip_prefix(&prefix)?
                .strip_suffix(" ms")?
                .parse::<f64>()
                .ok()
        })
        .map(|ms| ms / 1e3)
        .unwrap_or_else(|| panic!("no `{prefix}... ms` line on stderr\n{}", out.dump()))
}
