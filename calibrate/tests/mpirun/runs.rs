//! Runs over several invocations: resume, budgets, merge; bad options.

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mpiover_common::profile::{Profile, ProfileKey};

use crate::harness::{command, descendants, entries_in, keys, mpiover_cli, ok, run, tmpdir, LOCK};

#[test]
pub(crate) fn resume_completes_a_killed_run_with_the_same_entries() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("resume");
    let f = d.join("p.json");
    let fs = f.to_str().unwrap();
    // Barrier-synchronized with a 1.5 ms delay in every window: each entry
    // takes about half a second, so the run can be killed midway.
    let env = [("MPIOVER_CALIBRATE_TEST_DELAY", "1:1:0.0015")];
    let args = [
        "--sync",
        "barrier",
        "--functions",
        "MPI_Allreduce,MPI_Bcast",
        "--procs",
        "2",
        "--sizes",
        "1,10,100,1000",
        "--seed",
        "42",
        "-o",
        fs,
    ];
    let Some(mut cmd) = command(2, &env, &args) else {
        return;
    };
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while entries_in(&f) < 3 && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = Profile::load(&f).expect("the run wrote a profile before it was killed");
    assert!(
        before.entries.len() >= 3 && before.entries.len() < 12,
        "{} entries",
        before.entries.len()
    );
    // kill -9 mpirun and the ranks it started.
    let kids = descendants(child.id());
    let _ = child.kill();
    for k in kids {
        // SAFETY: kill(2) reads and writes no memory of this process; `k`
        // is a descendant of the mpirun this test started.
        unsafe { libc::kill(k as i32, libc::SIGKILL) };
    }
    let _ = child.wait();
    std::thread::sleep(Duration::from_millis(200));
    let killed = Profile::load(&f).expect("the profile survives the kill");
    assert!(!killed.runs[0].complete);

    let mut rargs = args.to_vec();
    rargs.push("--resume");
    let Some(out) = run(2, &env, &rargs) else {
        return;
    };
    ok(&out);
    let after = Profile::load(&f).unwrap();
    // Allreduce x 4 sizes + Bcast root/nonroot x 4 sizes.
    assert_eq!(after.entries.len(), 12);
    let want: BTreeSet<ProfileKey> = ["MPI_Allreduce", "MPI_Bcast"]
        .iter()
        .flat_map(|&f| {
            [1u64, 10, 100, 1000].into_iter().flat_map(move |b| {
                let roles: Vec<Option<String>> = if f == "MPI_Bcast" {
                    vec![Some("root".into()), Some("nonroot".into())]
                } else {
                    vec![None]
                };
                roles.into_iter().map(move |role| ProfileKey {
                    function: f.into(),
                    p: 2,
                    bytes: b,
                    role,
                    same_host: None,
                })
            })
        })
        .collect();
    assert_eq!(keys(&after), want);
    // The entries measured before the kill were kept, not measured again.
    for e in &killed.entries {
        assert_eq!(after.entry(&e.key()), Some(e), "{} changed", e.key());
    }
    assert_eq!(after.runs.len(), 1);
    assert_eq!(after.runs[0].resumed, 1);
    assert!(after.runs[0].complete && after.skipped.is_empty());
    assert_eq!(after.method.seed, 42);

    // Resuming with other options is refused, naming the difference.
    let mut bad = args.to_vec();
    bad[7] = "1,10";
    bad.push("--resume");
    let Some(out) = run(2, &env, &bad) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot resume") && err.contains("--sizes"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
pub(crate) fn bad_options_are_refused_clearly() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("bad");
    let f = d.join("p.json");
    let Some(out) = run(
        2,
        &[],
        &["--functions", "MPI_Foo", "-o", f.to_str().unwrap()],
    ) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown function \"MPI_Foo\"") && err.contains("MPI_Allreduce"),
        "{err}"
    );
    // Said once, by rank 0.
    assert_eq!(err.matches("unknown function").count(), 1, "{err}");
    let Some(out) = run(2, &[], &["--procs", "3", "-o", f.to_str().unwrap()]) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--procs 3"));
    let _ = std::fs::remove_dir_all(&d);
}

/// Two real calibrations merged with `mpiover profile merge`: every count and
/// sum of the merged entry is over both runs, tmax is the larger; a profile
/// measured with another synchronization method is refused (exit 2).
#[test]
pub(crate) fn merge_of_two_real_runs_and_of_other_sync_methods() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let Some(cli) = mpiover_cli() else {
        return;
    };
    let d = tmpdir("merge");
    let base = [
        "--functions",
        "MPI_Allreduce,MPI_Bcast",
        "--procs",
        "2",
        "--sizes",
        "1,1000",
        "--max-samples",
        "250",
    ];
    let mut files = Vec::new();
    for (name, extra) in [
        ("a", &[][..]),
        ("b", &[][..]),
        ("c", &["--sync", "barrier"][..]),
    ] {
        let f = d.join(format!("{name}.json"));
        let mut args: Vec<&str> = base.to_vec();
        args.extend_from_slice(extra);
        let fs = f.to_str().unwrap().to_string();
        args.extend(["-o", &fs]);
        let Some(out) = run(2, &[], &args) else {
            return;
        };
        ok(&out);
        files.push(f);
    }
    let m = d.join("m.json");
    let out = Command::new(&cli)
        .args(["profile", "merge"])
        .args([&files[0], &files[1]])
        .arg("-o")
        .arg(&m)
        .output()
        .unwrap();
    ok(&out);
    let (a, b, m) = (
        Profile::load(&files[0]).unwrap(),
        Profile::load(&files[1]).unwrap(),
        Profile::load(&m).unwrap(),
    );
    assert_eq!(m.runs.len(), 2);
    assert_eq!(keys(&m), keys(&a));
    assert_eq!(m.entries.len(), 6);
    for e in &m.entries {
        let (ea, eb) = (a.entry(&e.key()).unwrap(), b.entry(&e.key()).unwrap());
        let k = e.key();
        assert_eq!(e.runs.len(), 2, "{k}");
        assert_eq!(e.n, ea.n + eb.n, "{k}");
        assert_eq!(e.n_invalid, ea.n_invalid + eb.n_invalid, "{k}");
        assert_eq!(e.n_late, ea.n_late + eb.n_late, "{k}");
        assert_eq!(e.n_overrun, ea.n_overrun + eb.n_overrun, "{k}");
        assert_eq!(e.n_preempted, ea.n_preempted + eb.n_preempted, "{k}");
        let close = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() <= 1e-12 * y.max(1e-30);
        assert!(close(e.sum_s, ea.sum_s.unwrap() + eb.sum_s.unwrap()), "{k}");
        assert!(
            close(e.elapsed_s, ea.elapsed_s.unwrap() + eb.elapsed_s.unwrap()),
            "{k}"
        );
        assert_eq!(e.tmax_s, ea.tmax_s.max(eb.tmax_s), "{k}");
        assert_eq!(e.min_s, ea.min_s.min(eb.min_s), "{k}");
        assert_eq!(
            e.q99_s,
            Some(ea.q99_s.unwrap().max(eb.q99_s.unwrap())),
            "{k}"
        );
        // Each run's own summary is kept as it was.
        assert_eq!(e.runs[0].n, ea.n);
        assert_eq!(e.runs[1].sum_s, eb.sum_s);
    }
    let out = Command::new(&cli)
        .args(["profile", "merge"])
        .args([&files[0], &files[2]])
        .arg("-o")
        .arg(d.join("bad.json"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("method.sync") && err.contains("barrier"),
        "{err}"
    );
    assert!(!d.join("bad.json").exists());
    let _ = std::fs::remove_dir_all(&d);
}

/// --time-budget stops a window-synchronized run (the rest listed as skipped
/// for the time budget); the budget counts over --resume segments (resuming
/// with the same budget measures nothing more); resuming with a larger one
/// completes the grid, keeping what was measured.
#[test]
pub(crate) fn time_budget_is_total_and_resume_completes_a_window_sync_run() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("budget");
    let f = d.join("p.json");
    let fs = f.to_str().unwrap();
    let grid = [
        "--functions",
        "MPI_Allreduce,MPI_Bcast,MPI_Send",
        "--procs",
        "2",
        "--max-bytes",
        "10k",
        "--seed",
        "7",
        "-o",
        fs,
    ];
    // Sizes 1, 10, ..., 90, 100, ..., 900, 1000, ..., 10000 (29) x (Allreduce
    // + Bcast root and nonroot + Send; the Recv of the ping-pong is not asked
    // for): 87 jobs, about 1.5 s on an idle machine, minutes on a busy one.
    // The budget counts from the start, and --sync-span 1 makes the initial
    // clock synchronization sleep 0.94 s between its fit points: a 1.25 s
    // budget leaves about 0.3 s for jobs in a segment, whatever the load.
    let all = 29 * 4;
    let env = [];
    let budget = ["--sync-span", "1", "--time-budget", "1.25"];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = grid.to_vec();
        v.extend_from_slice(extra);
        v
    };
    let Some(out) = run(2, &env, &with(&budget)) else {
        return;
    };
    ok(&out);
    let first = Profile::load(&f).unwrap();
    assert_eq!(first.method.sizes.len(), 29);
    assert_eq!(first.method.sizes.last(), Some(&10_000));
    assert_eq!(first.method.time_budget_s, Some(1.25));
    assert!(!first.runs[0].complete);
    assert!(
        !first.skipped.is_empty() && first.skipped.iter().all(|s| s.reason == "time budget"),
        "{:?}",
        first.skipped
    );
    assert!(first.entries.len() < all, "{} entries", first.entries.len());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not measured") && err.contains("time budget"),
        "{err}"
    );
    for e in &first.entries {
        assert!(
            ["stable", "max_samples", "time_budget"].contains(&e.stop.unwrap().as_str()),
            "{:?}",
            e.stop
        );
    }

    // The same budget again: already spent by the first segment (with a
    // budget per segment, this one would measure for about 0.3 s).
    let Some(out) = run(2, &env, &with(&[&budget[..], &["--resume"]].concat())) else {
        return;
    };
    ok(&out);
    let again = Profile::load(&f).unwrap();
    assert_eq!(again.entries, first.entries);
    assert_eq!(again.runs[0].resumed, 1);
    assert!(!again.runs[0].complete);
    assert!(again.runs[0].wall_s > first.runs[0].wall_s);

    // A larger budget completes it, with the default window sync.
    let Some(out) = run(2, &env, &with(&["--time-budget", "600", "--resume"])) else {
        return;
    };
    ok(&out);
    let done = Profile::load(&f).unwrap();
    assert_eq!(done.method.sync.as_str(), "window");
    assert_eq!(done.method.time_budget_s, Some(600.0));
    assert_eq!(done.entries.len(), all);
    assert!(done.runs[0].complete && done.skipped.is_empty());
    assert_eq!(done.runs[0].resumed, 2);
    for e in &first.entries {
        assert_eq!(done.entry(&e.key()), Some(e), "{} changed", e.key());
    }
    // Options that shape the samples must match.
    let Some(out) = run(2, &env, &with(&["--warmup", "9", "--resume"])) else {
        return;
    };
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot resume") && err.contains("--warmup"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
pub(crate) fn max_bytes_and_budget_options_are_checked() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("maxbytes");
    let f = d.join("p.json");
    let fs = f.to_str().unwrap();
    // --max-bytes cuts the given sizes too.
    let Some(out) = run(
        2,
        &[],
        &[
            "--functions",
            "MPI_Allreduce",
            "--procs",
            "2",
            "--sizes",
            "1,64,1Ki,4Ki",
            "--max-bytes",
            "1Ki",
            "--max-samples",
            "200",
            "-o",
            fs,
        ],
    ) else {
        return;
    };
    ok(&out);
    let p = Profile::load(&f).unwrap();
    assert_eq!(p.method.sizes, vec![1, 64, 1024]);
    let bytes: BTreeSet<u64> = p.entries.iter().map(|e| e.bytes).collect();
    assert_eq!(bytes, [1, 64, 1024].into_iter().collect());
    for (args, what) in [
        (&["--max-bytes", "lots"][..], "not a size"),
        (
            &["--sizes", "4Ki", "--max-bytes", "1Ki"][..],
            "no message sizes",
        ),
        (&["--time-budget", "0"][..], "--time-budget"),
        (&["--entry-budget=-1"][..], "--entry-budget"),
        (&["--pace", "nan"][..], "--pace"),
    ] {
        let mut v = vec!["--functions", "MPI_Allreduce", "-o", fs];
        v.extend_from_slice(args);
        let Some(out) = run(2, &[], &v) else {
            return;
        };
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
        // Said once (by rank 0), whatever mpirun adds about the exit code.
        assert_eq!(err.matches("error:").count(), 1, "{args:?}: {err}");
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// A calibration beside other work says so: in one warning with what to do,
/// in the run's `load`, and in `profile show`. (Only the busy case is
/// asserted: whether a test machine is idle is not the test's to know.)
#[test]
pub(crate) fn a_busy_host_is_detected_and_said() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("busy");
    let f = d.join("p.json");
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    // One spinning shell per CPU, for the length of the run.
    let mut burners: Vec<std::process::Child> = (0..cpus)
        .filter_map(|_| {
            Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .ok()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let args = [
        "--quick",
        "--functions",
        "MPI_Allreduce",
        "--sizes",
        "1,1000",
        "-o",
        f.to_str().unwrap(),
    ];
    let out = run(2, &[], &args);
    for b in &mut burners {
        let _ = b.kill();
        let _ = b.wait();
    }
    let Some(out) = out else {
        return;
    };
    ok(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines().any(
            |l| l.starts_with("mpiover-calibrate: warning: the host was busy")
                && l.contains("calibrate again with the host idle")
        ),
        "{err}"
    );
    let p = Profile::load(&f).unwrap();
    let load = p.runs[0].load.as_ref().expect("the run's load is recorded");
    assert!(load.busy && load.others_cpus > 0.5, "{load:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// `--rounds 3 --spread 1.5`: every entry is measured in three passes over
/// the grid whose samples are pooled, the rounds at least 0.5 s apart, so the
/// run lasts at least a second and every entry keeps samples from each
/// round (a third of --max-samples per round before the last). The profile
/// says how it was measured, and resuming with other rounds is refused.
#[test]
pub(crate) fn rounds_pool_an_entry_over_the_run() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("rounds");
    let f = d.join("p.json");
    let fs = f.to_str().unwrap();
    let args = [
        "--functions",
        "MPI_Allreduce,MPI_Bcast",
        "--procs",
        "2",
        "--sizes",
        "8",
        "--max-samples",
        "300",
        "--min-samples",
        "100",
        "--rounds",
        "3",
        "--spread",
        "1.5",
        "-o",
        fs,
    ];
    let Some(out) = run(2, &[], &args) else {
        return;
    };
    ok(&out);
    let p = Profile::load(&f).unwrap();
    assert_eq!((p.method.rounds, p.method.spread_s), (3, 1.5));
    assert!(p.runs[0].wall_s >= 1.0, "wall {} s", p.runs[0].wall_s);
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    assert!(p.entries.len() >= 2);
    for e in &p.entries {
        // Two rounds of 100 and a last one that adds at least one batch.
        assert!(e.n > 200 && e.n <= 300, "{}: n = {}", e.function, e.n);
        let s = e.samples.as_ref().expect("samples are kept");
        assert_eq!(s.count, e.n);
    }
    if let Some(cli) = mpiover_cli() {
        let show = Command::new(cli)
            .args(["profile", "show", fs])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&show.stdout);
        assert!(text.contains("in 3 rounds over >= 1.5 s"), "{text}");
    }

    let mut again = args.to_vec();
    again[11] = "2";
    again.push("--resume");
    let Some(out) = run(2, &[], &again) else {
        return;
    };
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--rounds (2 now, 3 in the profile)"), "{err}");
    let _ = std::fs::remove_dir_all(&d);
}
