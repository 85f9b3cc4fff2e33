//! `mpiover record` against fake launchers (shell scripts): what the launcher
//! is given (arguments, `-x` for Open MPI, environment), where the records go,
//! the exit code, signals, the summary. No MPI needed; the real thing runs in
//! the e2e suite (`tests/tests/e2e/accuracy.rs`).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use mpiover_common::profile::{Environment, Method, Profile};
use mpiover_common::record::rank_file_name;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mpiover-record-cli-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d.canonicalize().unwrap()
}

/// A fake launcher: logs its arguments (one per line) to `$FAKE_LOG.args`
/// and the variables the record command sets to `$FAKE_LOG.env`, copies
/// `$FAKE_RECORDS/*` into `$MPIOVER_OUT`, prints a line on stdout, and exits
/// with `$FAKE_EXIT` (or dies of `$FAKE_SIGNAL`). `--version` prints
/// `$FAKE_VERSION`.
const FAKE: &str = r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "$FAKE_VERSION"; exit 0; fi
: > "$FAKE_LOG.args"
for a in "$@"; do printf '%s\n' "$a" >> "$FAKE_LOG.args"; done
{
  echo "LD_PRELOAD=$LD_PRELOAD"
  echo "MPIOVER_OUT=$MPIOVER_OUT"
  echo "MPIOVER_PROFILE=$MPIOVER_PROFILE"
  echo "MPIOVER_DEPTH=$MPIOVER_DEPTH"
} > "$FAKE_LOG.env"
if [ -n "$FAKE_RECORDS" ]; then cp "$FAKE_RECORDS"/* "$MPIOVER_OUT"/; fi
echo "the job's own output"
if [ -n "$FAKE_SIGNAL" ]; then kill -"$FAKE_SIGNAL" $$; sleep 5; fi
exit "${FAKE_EXIT:-0}"
"#;

/// What `mpiover record` exits with when the job succeeded but wrote no
/// record (the fake launchers here write none unless given FAKE_RECORDS).
const NOTHING_RECORDED: i32 = 1;

fn script(path: &Path, text: &str) -> PathBuf {
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
    path.to_path_buf()
}

/// An "installed" copy of the library: any file will do, the fake launchers
/// never load it (ld.so's complaints about it on stderr are harmless).
fn fake_lib(dir: &Path) -> PathBuf {
    let p = dir.join("libmpiover.so");
    fs::write(&p, b"not really a library").unwrap();
    p
}

fn mpiover() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_mpiover"));
    c.env_remove("LD_PRELOAD")
        .env_remove("MPIOVER_LIB")
        .env_remove("MPIOVER_OUT");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MPIOVER_") {
            c.env_remove(&k);
        }
    }
    c.stdin(Stdio::null());
    c
}

fn run(c: &mut Command) -> Output {
    c.output().expect("mpiover runs")
}

fn dump(o: &Output) -> String {
    format!(
        "status: {}\n--- stdout\n{}--- stderr\n{}---",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn lines(p: &Path) -> Vec<String> {
    fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

fn env_of(log: &Path) -> std::collections::BTreeMap<String, String> {
    lines(&log.with_extension("env"))
        .into_iter()
        .filter_map(|l| {
            l.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect()
}

fn write_profile(path: &Path) {
    let p = Profile::new(
        Environment {
            hosts: vec!["node1".into()],
            ranks: 2,
            ranks_per_host: vec![2],
            mpi_library: "Open MPI v4.1.4".into(),
            ..Default::default()
        },
        Method {
            sync: mpiover_common::profile::SyncMethod::Window,
            q_max: 0.99,
            alpha: 0.05,
            ..Default::default()
        },
    );
    p.save_atomic(path).unwrap();
}

#[test]
fn open_mpi_gets_x_options_right_after_the_launcher_and_the_environment() {
    let d = tmpdir("openmpi");
    let launcher = script(&d.join("mpirun"), FAKE);
    let lib = fake_lib(&d);
    let profile = d.join("profile.json");
    write_profile(&profile);
    let log = d.join("log");
    let out = d.join("run");
    let o = run(mpiover()
        .args(["record", "--profile"])
        .arg(&profile)
        .arg("--out")
        .arg(&out)
        .args(["--depth", "2", "--lib"])
        .arg(&lib)
        .arg("--")
        .arg(&launcher)
        .args(["-np", "2", "./app", "--flag", "x y"])
        .current_dir(&d)
        .env("FAKE_LOG", &log)
        .env("FAKE_VERSION", "mpirun (Open MPI) 4.1.4")
        .env("LD_PRELOAD", "/opt/other/libfoo.so")
        .env("MPIOVER_MAX_KEYS", "77")
        .env("MPIOVER_LIB", "/nonexistent/ignored-because-of---lib.so"));
    assert_eq!(o.status.code(), Some(NOTHING_RECORDED), "{}", dump(&o));
    assert_eq!(
        lines(&log.with_extension("args")),
        [
            "-x",
            "LD_PRELOAD",
            "-x",
            "MPIOVER_OUT",
            "-x",
            "MPIOVER_PROFILE",
            "-x",
            "MPIOVER_DEPTH",
            "-x",
            "MPIOVER_MAX_KEYS",
            "-np",
            "2",
            "./app",
            "--flag",
            "x y"
        ],
        "{}",
        dump(&o)
    );
    let env = env_of(&log);
    assert_eq!(
        env["LD_PRELOAD"],
        format!("/opt/other/libfoo.so:{}", lib.display())
    );
    assert_eq!(env["MPIOVER_OUT"], out.display().to_string());
    assert_eq!(env["MPIOVER_PROFILE"], profile.display().to_string());
    assert_eq!(env["MPIOVER_DEPTH"], "2");
    assert!(out.is_dir());
    // The job's stdout is the job's alone; mpiover speaks on stderr.
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "the job's own output\n",
        "{}",
        dump(&o)
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("mpiover: recording into"), "{}", dump(&o));
}

#[test]
fn other_launchers_and_programs_get_the_environment_only() {
    let d = tmpdir("hydra");
    let lib = fake_lib(&d);
    // A launcher whose --version does not say Open MPI (MPICH's hydra).
    let hydra = script(&d.join("mpiexec"), FAKE);
    // A program run directly (a singleton).
    let prog = script(&d.join("app"), FAKE);
    for (exe, args) in [
        (&hydra, &["-n", "2", "./app"][..]),
        (&prog, &["input.dat"][..]),
    ] {
        let log = d.join("log");
        let o = run(mpiover()
            .args(["record", "--out", "run", "--lib"])
            .arg(&lib)
            .arg("--")
            .arg(exe)
            .args(args)
            .current_dir(&d)
            .env("FAKE_LOG", &log)
            .env("FAKE_VERSION", "HYDRA build details:\n    Version: 4.0.2"));
        assert_eq!(o.status.code(), Some(NOTHING_RECORDED), "{}", dump(&o));
        assert_eq!(lines(&log.with_extension("args")), args, "{}", dump(&o));
        let env = env_of(&log);
        assert_eq!(env["LD_PRELOAD"], lib.display().to_string());
        assert_eq!(env["MPIOVER_OUT"], d.join("run").display().to_string());
        assert_eq!(env["MPIOVER_PROFILE"], "");
    }
}

#[test]
fn the_default_run_dir_is_named_after_the_program() {
    let d = tmpdir("default-dir");
    let launcher = script(&d.join("mpirun"), FAKE);
    let lib = fake_lib(&d);
    script(&d.join("my_solver"), "#!/bin/sh\n");
    let log = d.join("log");
    let o = run(mpiover()
        .args(["record", "--lib"])
        .arg(&lib)
        .arg("--")
        .arg(&launcher)
        .args(["-np", "4", "--map-by", "core", "./my_solver", "in.dat"])
        .current_dir(&d)
        .env("FAKE_LOG", &log)
        .env("FAKE_VERSION", "mpirun (Open MPI) 4.1.4"));
    assert_eq!(o.status.code(), Some(NOTHING_RECORDED), "{}", dump(&o));
    let out = PathBuf::from(&env_of(&log)["MPIOVER_OUT"]);
    assert_eq!(out.parent(), Some(d.as_path()));
    let name = out.file_name().unwrap().to_string_lossy().into_owned();
    let stamp = name
        .strip_prefix("mpiover-my_solver-")
        .unwrap_or_else(|| panic!("run dir {name}"));
    assert!(
        stamp.len() == 15
            && stamp.as_bytes()[8] == b'-'
            && stamp.chars().filter(|c| c.is_ascii_digit()).count() == 14,
        "run dir {name}: not mpiover-my_solver-YYYYmmdd-HHMMSS"
    );
    assert!(out.is_dir());
}

#[test]
fn the_exit_code_is_the_jobs_and_a_signal_gives_128_plus_signo() {
    let d = tmpdir("exit");
    let lib = fake_lib(&d);
    let prog = script(&d.join("app"), FAKE);
    let log = d.join("log");
    // The job's status, and what mpiover exits with: the job's, or when the
    // job succeeded without a record, NOTHING_RECORDED.
    for (var, val, job, want) in [
        ("FAKE_EXIT", "3", 3, 3),
        ("FAKE_SIGNAL", "TERM", 143, 143),
        ("FAKE_SIGNAL", "KILL", 137, 137),
        ("FAKE_EXIT", "0", 0, NOTHING_RECORDED),
    ] {
        let o = run(mpiover()
            .args(["record", "--out", "run", "--lib"])
            .arg(&lib)
            .arg(&prog)
            .current_dir(&d)
            .env("FAKE_LOG", &log)
            .env(var, val));
        assert_eq!(o.status.code(), Some(want), "{var}={val}\n{}", dump(&o));
        // No records: the summary says so instead of failing.
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("exited with {job}")) && err.contains("no report"),
            "{}",
            dump(&o)
        );
        assert_eq!(
            err.contains("nothing was recorded"),
            job == 0,
            "{}",
            dump(&o)
        );
    }
}

#[test]
fn no_library_or_a_bad_profile_is_one_error_exit_2_before_the_job() {
    let d = tmpdir("nolib");
    // An installed layout without the library: <prefix>/bin/mpiover only.
    let bin = d.join("prefix/bin");
    fs::create_dir_all(&bin).unwrap();
    let exe = bin.join("mpiover");
    fs::copy(env!("CARGO_BIN_EXE_mpiover"), &exe).unwrap();
    let prog = script(&d.join("app"), "#!/bin/sh\necho ran > \"$0.ran\"\n");
    let cmd = |extra: &[&str]| {
        let mut c = Command::new(&exe);
        c.env_remove("MPIOVER_LIB")
            .env_remove("LD_PRELOAD")
            .args(["record", "--out", "run"])
            .args(extra)
            .arg(&prog)
            .current_dir(&d);
        c.output().unwrap()
    };
    let o = cmd(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", dump(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.starts_with("mpiover: error:")
            && err.contains("libmpiover.so")
            && err.contains("--lib"),
        "{}",
        dump(&o)
    );
    assert!(
        !d.join("app.ran").exists(),
        "the job must not run without the library"
    );

    // <prefix>/lib/libmpiover.so is found.
    fs::create_dir_all(d.join("prefix/lib")).unwrap();
    fake_lib(&d.join("prefix/lib"));
    let o = cmd(&[]);
    assert_eq!(o.status.code(), Some(NOTHING_RECORDED), "{}", dump(&o));
    assert!(d.join("app.ran").exists());

    // --lib naming nothing, a missing or unreadable profile: exit 2, job not run.
    fs::remove_file(d.join("app.ran")).unwrap();
    fs::write(d.join("bad.json"), "{ not a profile").unwrap();
    for extra in [
        &["--lib", "/nonexistent/libmpiover.so"][..],
        &["--profile", "missing.json"],
        &["--profile", "bad.json"],
    ] {
        let o = cmd(extra);
        assert_eq!(o.status.code(), Some(2), "{extra:?}\n{}", dump(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.starts_with("mpiover: error:") && err.contains(extra[1]),
            "{}",
            dump(&o)
        );
        assert!(
            !d.join("app.ran").exists(),
            "{extra:?}: the job must not run"
        );
    }
}

#[test]
fn the_summary_shows_the_worst_sites_and_stale_records_are_removed() {
    let d = tmpdir("summary");
    let lib = fake_lib(&d);
    let prog = script(&d.join("app"), FAKE);
    let records = d.join("fixture");
    fs::create_dir_all(&records).unwrap();
    for r in mpiover_report::synth::fixture_run(true) {
        fs::write(
            records.join(rank_file_name(r.rank)),
            serde_json::to_string(&r).unwrap(),
        )
        .unwrap();
    }
    let out = d.join("run");
    fs::create_dir_all(&out).unwrap();
    fs::write(out.join("rank-000009.json"), "stale").unwrap();
    let o = run(mpiover()
        .args(["record", "--out", "run", "--lib"])
        .arg(&lib)
        .arg(&prog)
        .current_dir(&d)
        .env("FAKE_LOG", d.join("log"))
        .env("FAKE_RECORDS", &records));
    assert!(o.status.success(), "{}", dump(&o));
    assert!(!out.join("rank-000009.json").exists(), "stale record kept");
    let err = String::from_utf8_lossy(&o.stderr);
    for want in [
        "ranks 4 of 4",
        "overhead",
        "halo.c:42",
        "Late Sender",
        "mpiover report",
    ] {
        assert!(err.contains(want), "summary lacks {want:?}\n{}", dump(&o));
    }
    let o = run(mpiover()
        .args(["record", "--no-summary", "--out", "run", "--lib"])
        .arg(&lib)
        .arg(&prog)
        .current_dir(&d)
        .env("FAKE_LOG", d.join("log"))
        .env("FAKE_RECORDS", &records));
    assert!(o.status.success(), "{}", dump(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("halo.c:42"),
        "{}",
        dump(&o)
    );
}

#[test]
fn a_signal_to_mpiover_is_forwarded_to_the_launcher() {
    let d = tmpdir("forward");
    let lib = fake_lib(&d);
    let pidfile = d.join("pid");
    let prog = script(
        &d.join("app"),
        &format!(
            "#!/bin/bash\nsleep 30 & S=$!\ntrap 'kill $S; echo TERM > {0}.got; exit 42' TERM\n\
             echo $$ > {0}.tmp && mv {0}.tmp {0}\nwait $S\n",
            pidfile.display()
        ),
    );
    let mut child = mpiover()
        .args(["record", "--out", "run", "--lib"])
        .arg(&lib)
        .arg(&prog)
        .current_dir(&d)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !pidfile.exists() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the job did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill(2) of the mpiover process this test started.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let o = loop {
        if child.try_wait().unwrap().is_some() {
            break child.wait_with_output().unwrap();
        }
        if start.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("mpiover did not end after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        d.join("pid.got").exists(),
        "the launcher did not get SIGTERM\n{}",
        dump(&o)
    );
    assert_eq!(o.status.code(), Some(42), "{}", dump(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("exited with 42"),
        "{}",
        dump(&o)
    );
}

#[test]
fn unknown_options_and_missing_programs_fail_before_anything_is_created() {
    let d = tmpdir("bad-args");
    let lib = fake_lib(&d);
    for args in [
        &["record", "--bogus", "./app"][..],
        &["record", "./no-such-program"],
        &[
            "record",
            "--",
            "no-such-launcher-anywhere",
            "-np",
            "2",
            "./app",
        ],
        &["record"],
    ] {
        let o = run(mpiover().args(args).arg("--lib").arg(&lib).current_dir(&d));
        assert_eq!(o.status.code(), Some(2), "{args:?}\n{}", dump(&o));
        let left: Vec<_> = fs::read_dir(&d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("mpiover-"))
            .collect();
        assert!(left.is_empty(), "{args:?} created {left:?}");
    }
}
