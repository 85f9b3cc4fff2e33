//! The suite's MPI lock and one `mpirun` invocation under it, with a timeout
//! that kills the whole process tree, and its outcome.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::harness::examples::example;
use crate::harness::paths::{lib, mpi_flavor, JOB_TIMEOUT};

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
    /// A command the launcher runs under (its arguments follow), e.g. a
    /// mount namespace; empty for none.
    pub wrapper: Vec<String>,
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
            wrapper: Vec::new(),
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
            wrapper: Vec::new(),
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

    /// The launcher runs as the last arguments of `cmd`.
    pub fn wrapped(mut self, cmd: &[&str]) -> Job {
        self.wrapper = cmd.iter().map(|s| s.to_string()).collect();
        self
    }

    pub fn command(&self) -> Command {
        let c = self.launcher();
        let Some((first, rest)) = self.wrapper.split_first() else {
            return c;
        };
        let mut w = Command::new(first);
        w.args(rest).arg(c.get_program()).args(c.get_args());
        for (k, v) in c.get_envs() {
            match v {
                Some(v) => w.env(k, v),
                None => w.env_remove(k),
            };
        }
        if let Some(d) = c.get_current_dir() {
            w.current_dir(d);
        }
        w
    }

    fn launcher(&self) -> Command {
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
        suite_env(&mut c);
        c
    }

    /// The job under MPICH's Hydra launcher.
    fn command_mpich(&self) -> Command {
        let mut c = Command::new("mpiexec.mpich");
        c.arg("-n").arg(self.np.to_string());
        // One rank per core when they fit, as Open MPI's mpirun binds by
        // default: unbound, two spinning ranks sometimes share a core, and
        // an MPI_Isend then takes 130 ns in one run and 360 in the next.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if self.np as usize <= cores {
            c.args(["-bind-to", "core"]);
        }
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
        without_profiler_settings(&mut c);
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

pub fn scratch_io() -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("e2e-io");
    fs::create_dir_all(&d).expect("creating e2e-io");
    d
}

pub fn tempfile_in(dir: &Path, what: &str) -> (fs::File, PathBuf) {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = dir.join(format!("{}-{n}.{what}", std::process::id()));
    (fs::File::create(&p).expect("creating output file"), p)
}

pub fn read_all(p: &Path) -> String {
    let mut s = Vec::new();
    fs::File::open(p)
        .and_then(|mut f| f.read_to_end(&mut s))
        .expect("reading job output");
    String::from_utf8_lossy(&s).into_owned()
}

/// Every descendant of `pid` (the ranks run in their own process groups, so
/// killing mpirun's group is not enough).
pub fn descendants(pid: u32) -> Vec<u32> {
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

/// The run must not inherit the developer's profiler settings.
pub fn without_profiler_settings(c: &mut Command) {
    c.env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MPIOVER_") {
            c.env_remove(&k);
        }
    }
}

/// The suite's environment for Open MPI's launcher: no profiler settings of
/// the developer's, root allowed (CI), more ranks than cores.
pub fn suite_env(c: &mut Command) {
    without_profiler_settings(c);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
}
