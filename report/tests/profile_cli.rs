//! `mpiover profile show | lookup | merge` on profiles written here.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use mpiover_common::profile::{CalibrationRun, Environment, Method, Profile, ProfileEntry};

fn mpiover(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mpiover"))
        .args(args)
        .output()
        .expect("mpiover runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("mpiover-profile-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Built from JSON so that fields added to the profile format later (with a
/// serde default) need no change here.
fn entry(function: &str, p: u32, bytes: u64, role: Option<&str>, tmax: f64) -> ProfileEntry {
    serde_json::from_value(serde_json::json!({
        "function": function,
        "p": p,
        "bytes": bytes,
        "role": role,
        "same_host": (function == "MPI_Send").then_some(true),
        "hosts": 1,
        "n": 200,
        "n_invalid": 5,
        "n_preempted": 0,
        "min_s": tmax / 2.0,
        "median_s": tmax * 0.6,
        "median_ci_s": [tmax * 0.55, tmax * 0.65],
        "max_s": tmax * 3.0,
        "q90_s": tmax * 0.9,
        "q99_s": tmax * 1.2,
        "tmax_s": tmax,
        "model": "exponential",
        "lambda": 1e6,
        "chi2": 4.0,
        "df": 5,
        "critical": 11.07,
        "accepted": true,
        "fallback": false,
        "bin_width_s": 1e-8,
        "window_s": 2e-5,
        "stop": "stable",
        "sum_s": tmax * 100.0,
        "elapsed_s": 0.01,
        "note": null,
        "runs": []
    }))
    .expect("profile entry")
}

fn write_profile(path: &Path, run: &str, scale: f64) {
    let env = Environment {
        hosts: vec!["node1".into()],
        ranks: 4,
        ranks_per_host: vec![4],
        mpi_library: "Open MPI v4.1.4".into(),
        cpu_model: "AMD EPYC".into(),
        ..Default::default()
    };
    let mut p = Profile::new(
        env,
        Method {
            sync: mpiover_common::profile::SyncMethod::Window,
            q_max: 0.99,
            alpha: 0.05,
            ..Default::default()
        },
    );
    p.runs.push(CalibrationRun {
        id: run.into(),
        ranks: 4,
        complete: true,
        ..Default::default()
    });
    for pp in [2u32, 4] {
        for (i, b) in [1u64, 100, 10_000].into_iter().enumerate() {
            let t = scale * 1e-6 * pp as f64 * (1.0 + i as f64);
            let mut e = entry("MPI_Allreduce", pp, b, None, t);
            e.runs = vec![e.as_run(run)];
            p.push_entry(e);
            for role in ["root", "nonroot"] {
                let mut e = entry("MPI_Bcast", pp, b, Some(role), t);
                e.runs = vec![e.as_run(run)];
                p.push_entry(e);
            }
        }
    }
    let mut e = entry("MPI_Send", 2, 100, None, 2e-6);
    e.runs = vec![e.as_run(run)];
    p.push_entry(e);
    p.save_atomic(path).unwrap();
}

#[test]
fn show_prints_a_table() {
    let d = tmpdir("show");
    let f = d.join("p.json");
    write_profile(&f, "run-a", 1.0);
    let o = mpiover(&["profile", "show", f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("Open MPI v4.1.4") && s.contains("AMD EPYC") && s.contains("q_max 0.99"),
        "{s}"
    );
    assert!(
        s.contains("MPI_Allreduce") && s.contains("nonroot") && s.contains("exponential"),
        "{s}"
    );
    assert!(s.contains("19 entries"), "{s}");
    let o = mpiover(&[
        "profile",
        "show",
        f.to_str().unwrap(),
        "--function",
        "bcast",
    ]);
    assert!(o.status.success());
    assert!(!stdout(&o).contains("MPI_Allreduce  "), "{}", stdout(&o));
    assert!(stdout(&o).contains("12 entries"));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn lookup_exact_interpolated_out_of_range() {
    let d = tmpdir("lookup");
    let f = d.join("p.json");
    write_profile(&f, "run-a", 1.0);
    let fs = f.to_str().unwrap();
    let o = mpiover(&["profile", "lookup", fs, "MPI_Allreduce", "4", "100"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.contains("tmax = 8e-6 s") && s.contains("exact"), "{s}");
    let o = mpiover(&["profile", "lookup", fs, "allreduce", "3", "1000"]);
    let s = stdout(&o);
    assert!(s.contains("interpolated between p=2 and p=4"), "{s}");
    let o = mpiover(&[
        "profile",
        "lookup",
        fs,
        "MPI_Allreduce",
        "64",
        "100",
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
    assert_eq!(v["kind"], "out of range");
    assert_eq!(v["out_of_range"], true);
    assert_eq!(v["tmax_s"].as_f64().unwrap(), 4.0 * 2e-6);
    let o = mpiover(&[
        "profile",
        "lookup",
        fs,
        "MPI_Bcast",
        "2",
        "1",
        "--role",
        "root",
    ]);
    assert!(stdout(&o).contains("tmax = 2e-6 s"), "{}", stdout(&o));
    // Errors: no role for a rooted function, unknown function, missing file.
    let o = mpiover(&["profile", "lookup", fs, "MPI_Bcast", "2", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--role"), "{}", stderr(&o));
    let o = mpiover(&["profile", "lookup", fs, "MPI_Alltoall", "2", "1"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no entry for MPI_Alltoall"),
        "{}",
        stderr(&o)
    );
    let o = mpiover(&[
        "profile",
        "lookup",
        d.join("none.json").to_str().unwrap(),
        "MPI_Send",
        "2",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("none.json") && stderr(&o).contains("cannot read"),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn merge_keeps_both_runs_summaries() {
    let d = tmpdir("merge");
    let (a, b, c) = (d.join("a.json"), d.join("b.json"), d.join("c.json"));
    write_profile(&a, "run-a", 1.0);
    write_profile(&b, "run-b", 1.2);
    let o = mpiover(&[
        "profile",
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        c.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("19 entries (19 measured in more than one run), 2 runs"),
        "{}",
        stdout(&o)
    );
    let m = Profile::load(&c).unwrap();
    assert_eq!(m.runs.len(), 2);
    let e = m
        .entries
        .iter()
        .find(|e| e.function == "MPI_Allreduce" && e.p == 4 && e.bytes == 100)
        .unwrap();
    assert_eq!(e.runs.len(), 2);
    assert_eq!(e.runs[0].run, "run-a");
    assert_eq!(e.runs[1].run, "run-b");
    assert!(
        (e.runs[0].tmax_s - 8e-6).abs() < 1e-15 && (e.runs[1].tmax_s - 1.2 * 8e-6).abs() < 1e-15
    );
    assert!(
        (e.tmax_s - 1.2 * 8e-6).abs() < 1e-15,
        "merged tmax is the larger"
    );
    assert_eq!(e.n, 400);
    // The merged profile is shown with its runs and looked up as usual.
    let o = mpiover(&["profile", "show", c.to_str().unwrap()]);
    assert!(stdout(&o).contains("run-a") && stdout(&o).contains("run-b"));
    // Merging a profile with itself is refused.
    let o = mpiover(&[
        "profile",
        "merge",
        a.to_str().unwrap(),
        a.to_str().unwrap(),
        "-o",
        c.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("both profiles"), "{}", stderr(&o));
    let _ = std::fs::remove_dir_all(&d);
}

/// `profile show` flags a calibration measured beside other work, and says
/// an idle one was idle.
#[test]
fn show_flags_a_busy_host() {
    use mpiover_common::profile::HostLoad;
    let d = tmpdir("busy");
    let f = d.join("p.json");
    write_profile(&f, "run-a", 1.0);
    let mut p = Profile::load(&f).unwrap();
    p.runs[0].load = Some(HostLoad {
        wall_s: 60.0,
        others_cpus: 1.4,
        steal_share: 0.01,
        loadavg_start: 3.2,
        loadavg_end: 3.4,
        busy: true,
        ..Default::default()
    });
    p.save_atomic(&f).unwrap();
    let out = stdout(&mpiover(&["profile", "show", f.to_str().unwrap()]));
    assert!(
        out.contains("BUSY HOST: other processes used 1.40 CPUs on average over 60.0 s"),
        "{out}"
    );
    p.runs[0].load = Some(HostLoad {
        others_cpus: 0.02,
        busy: false,
        ..p.runs[0].load.clone().unwrap()
    });
    p.save_atomic(&f).unwrap();
    let out = stdout(&mpiover(&["profile", "show", f.to_str().unwrap()]));
    assert!(
        out.contains("load:     idle host") && !out.contains("BUSY"),
        "{out}"
    );
    // Medians that moved while the entries were measured, on an idle host:
    // unsteady, and the line says by how much.
    let idle = p.runs[0].load.clone().unwrap();
    p.runs[0].load = Some(idle.with_drift(vec![1.2; 30]));
    p.save_atomic(&f).unwrap();
    let out = stdout(&mpiover(&["profile", "show", f.to_str().unwrap()]));
    assert!(
        out.contains("UNSTEADY: idle host")
            && !out.contains("BUSY")
            && out.contains("moved x1.20")
            && out.contains("of 30 entries"),
        "{out}"
    );
}

/// A profile that cannot be read is named once, with the system's reason
/// once (the I/O error was printed twice, as the message and as its cause).
#[test]
fn missing_profile_error_says_the_reason_once() {
    let out = mpiover(&["profile", "show", "/nonexistent/p.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    assert!(err.contains("/nonexistent/p.json"), "{err}");
}

/// A profile whose entries keep samples drawn from a known distribution: its
/// 19 entries of 10 us plus exponential errors of mean 1 us on a 1 ns timer
/// (deterministic xorshift), 800 samples each.
fn write_sampled_profile(path: &Path) {
    write_sampled_profile_with(path, 0x9e37_79b9_7f4a_7c15, 1.0);
}

/// The same with another seed, every time multiplied by `scale`.
fn write_sampled_profile_with(path: &Path, seed: u64, scale: f64) {
    use mpiover_common::profile::Samples;
    write_profile(path, "run-a", 1.0);
    let mut p = Profile::load(path).unwrap();
    p.environment.timer.resolution_s = 1e-9;
    let mut x: u64 = seed;
    let mut uniform = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    };
    for e in &mut p.entries {
        let times: Vec<f64> = (0..800)
            .map(|_| scale * (10e-6 + (-(1.0 - uniform()).ln() * 1e-6 * 1e9).round() * 1e-9))
            .collect();
        e.median_s *= scale;
        e.samples = Samples::encode(&times, 1e-9);
        e.n = 800;
    }
    p.invalidate_index();
    p.save_atomic(path).unwrap();
}

/// `profile check` on samples of a known exponential: the models are
/// accepted on most entries, and held-out calls exceed the fitted tmax about
/// as often as 1 - q_max says. `refit` writes the models into the profile.
#[test]
fn check_and_refit_judge_the_kept_samples() {
    let d = tmpdir("check");
    let f = d.join("p.json");
    write_sampled_profile(&f);
    let out = mpiover(&["profile", "check", f.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let n = v["entries"].as_u64().unwrap();
    assert!(n >= 15, "{n} entries");
    let empirical = v["empirical"].as_u64().unwrap();
    assert!(
        empirical * 5 <= n,
        "{empirical} of {n} entries empirical: {}",
        v["models"]
    );
    // 400 held-out calls per entry: the median share over the entries is
    // within a factor of about 2 of 1 %.
    let m = v["exceed"][0].as_f64().unwrap();
    assert!((0.004..=0.02).contains(&m), "median exceedance {m}");
    let text = stdout(&mpiover(&["profile", "check", f.to_str().unwrap()]));
    assert!(
        text.contains("modelled") && text.contains("out of sample"),
        "{text}"
    );
    // refit: every entry refitted, the models written.
    let g = d.join("refit.json");
    let out = mpiover(&[
        "profile",
        "refit",
        f.to_str().unwrap(),
        "-o",
        g.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&format!("{n} entries refitted")),
        "{}",
        stdout(&out)
    );
    let p = Profile::load(&g).unwrap();
    let modelled = p
        .entries
        .iter()
        .filter(|e| !e.fallback && e.model.is_some())
        .count();
    assert_eq!(modelled as u64, n - empirical);
    assert!(p.entries.iter().all(|e| e.samples.is_some()));
}

/// `profile check --against`: beside tmax, the other estimators of the q_max
/// quantile are compared between the two profiles. Two samples of the same
/// exponential give ratios near 1 and held-out shares near 1 %; the same
/// samples at twice the time give ratios of 2 for every estimator.
#[test]
fn check_against_compares_every_estimator() {
    let d = tmpdir("estimators");
    let (a, b, c) = (d.join("a.json"), d.join("b.json"), d.join("c.json"));
    write_sampled_profile(&a);
    write_sampled_profile_with(&b, 0x2545_f491_4f6c_dd1d, 1.0);
    write_sampled_profile_with(&c, 0x9e37_79b9_7f4a_7c15, 2.0);
    let check = |other: &Path| -> serde_json::Value {
        let out = mpiover(&[
            "profile",
            "check",
            a.to_str().unwrap(),
            "--against",
            other.to_str().unwrap(),
            "--json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let same = check(&b);
    let est = same["against"]["estimators"].as_array().unwrap();
    let names: Vec<&str> = est
        .iter()
        .map(|e| e["estimator"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "empirical",
            "Harrell-Davis",
            "GPD above 85 %",
            "GPD above 90 %"
        ]
    );
    let common = same["against"]["common"].as_u64().unwrap();
    for e in est {
        assert_eq!(e["entries"].as_u64(), Some(common), "{e}");
        let r = e["ratio"][0].as_f64().unwrap();
        assert!((1.0..1.3).contains(&r), "{e}");
        let x = e["exceed"][0].as_f64().unwrap();
        assert!((0.002..=0.02).contains(&x), "{e}");
    }
    let doubled = check(&c);
    // Every time doubled: tmax and the medians moved alike, tmax / median not at all.
    let r = |k: &str| doubled["against"][k][0].as_f64().unwrap();
    assert!(
        (r("tmax_ratio") - 2.0).abs() < 1e-6,
        "{}",
        doubled["against"]
    );
    assert!(
        (r("median_ratio") - 2.0).abs() < 1e-6,
        "{}",
        doubled["against"]
    );
    assert!(
        (r("tmax_over_median_ratio") - 1.0).abs() < 0.01,
        "{}",
        doubled["against"]
    );
    for e in doubled["against"]["estimators"].as_array().unwrap() {
        let r = e["ratio"][0].as_f64().unwrap();
        assert!((r - 2.0).abs() < 1e-6, "{e}");
    }
    let text = stdout(&mpiover(&[
        "profile",
        "check",
        a.to_str().unwrap(),
        "--against",
        b.to_str().unwrap(),
    ]));
    assert!(
        text.contains("other estimators") && text.contains("Harrell-Davis"),
        "{text}"
    );
}

/// A profile without samples, or with corrupt ones: one error naming the
/// file (and the entry), exit 2.
#[test]
fn check_and_refit_refuse_profiles_without_good_samples() {
    let d = tmpdir("nosamples");
    let f = d.join("old.json");
    write_profile(&f, "run-a", 1.0);
    for cmd in [
        vec!["profile", "check", f.to_str().unwrap()],
        vec!["profile", "refit", f.to_str().unwrap(), "-o", "/tmp/x.json"],
    ] {
        let out = mpiover(&cmd);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        let err = stderr(&out);
        assert!(
            err.contains("old.json") && err.contains("keeps its samples"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let g = d.join("corrupt.json");
    write_sampled_profile(&g);
    let mut p = Profile::load(&g).unwrap();
    p.entries[3].samples.as_mut().unwrap().ticks.insert(0, '#');
    p.entries[3].samples.as_mut().unwrap().ticks.pop();
    let key = p.entries[3].key().to_string();
    p.save_atomic(&g).unwrap();
    let out = mpiover(&["profile", "check", g.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("corrupt.json") && err.contains(&key) && err.contains("not base64"),
        "{err}"
    );
}

/// How `mpiover ARGS` ended when its reader closed the pipe: after one line
/// (`| head -1`), and before the first write (the read end closed at start,
/// so the first write meets the closed pipe however fast the command is).
fn into_closed_pipe(args: &[&str]) -> Vec<(std::process::ExitStatus, String)> {
    use std::io::{BufRead, BufReader, Read};
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::process::Stdio;
    let cmd = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_mpiover"));
        c.args(args).stderr(Stdio::piped());
        c
    };
    let finish = |mut child: std::process::Child| {
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (child.wait().unwrap(), err)
    };
    let mut child = cmd().stdout(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty(), "no first line from {args:?}");
    let after_a_line = finish(child);
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: pipe2 succeeded, so both are open descriptors owned by nobody else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read);
    let child = cmd().stdout(Stdio::from(write)).spawn().unwrap();
    vec![after_a_line, finish(child)]
}

/// `mpiover profile show P | head` aborted with "failed printing to stdout:
/// Broken pipe" (exit 134): every command that prints must end quietly.
#[test]
fn profile_show_into_head_does_not_abort_on_broken_pipe() {
    use std::os::unix::process::ExitStatusExt;
    let d = tmpdir("pipe");
    let f = d.join("p.json");
    write_profile(&f, "run-a", 1.0);
    let g = d.join("q.json");
    write_profile(&g, "run-b", 1.2);
    let fs = f.to_str().unwrap();
    let samples = d.join("times.txt");
    std::fs::write(&samples, "1e-6\n2e-6\n3e-6\n".repeat(100)).unwrap();
    let merged = d.join("m.json");
    let commands: [&[&str]; 6] = [
        &["profile", "show", fs],
        &["profile", "lookup", fs, "MPI_Allreduce", "2", "1"],
        &["profile", "lookup", fs, "MPI_Allreduce", "2", "1", "--json"],
        &[
            "profile",
            "merge",
            fs,
            g.to_str().unwrap(),
            "-o",
            merged.to_str().unwrap(),
        ],
        &[
            "report",
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/run-online"),
        ],
        &["fit", samples.to_str().unwrap()],
    ];
    for args in commands {
        for (status, err) in into_closed_pipe(args) {
            assert_eq!(status.signal(), None, "{args:?}: {status:?}\n{err}");
            assert_eq!(status.code(), Some(0), "{args:?}\n{err}");
            assert!(
                !err.contains("Broken pipe") && !err.contains("panicked"),
                "{args:?}: {err}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&d);
}
