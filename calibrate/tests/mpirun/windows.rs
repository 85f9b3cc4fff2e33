//! Clock and window synchronization: injected clock skew, late ranks, a
//! busy host.

use std::process::{Command, Stdio};

use mpiover_common::profile::Profile;

use crate::harness::{allreduce_8b, command, ok, run, tmpdir, LOCK};

#[test]
pub(crate) fn clock_sync_recovers_injected_offset_and_drift() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("skew");
    let f = d.join("p.json");
    let (off, drift) = (0.25f64, 2e-4f64);
    let skew = format!("1:{off}:{drift}");
    let args = allreduce_8b(f.to_str().unwrap());
    let Some(out) = run(2, &[("MPIOVER_CALIBRATE_TEST_CLOCK_SKEW", &skew)], &args) else {
        return;
    };
    ok(&out);
    let p = Profile::load(&f).unwrap();
    assert!(p
        .method
        .notes
        .iter()
        .any(|n| n.contains("MPIOVER_CALIBRATE_TEST_CLOCK_SKEW")));
    let r1 = &p.method.clock_sync.as_ref().unwrap().ranks[1];
    // Rank 1 reads L = t + off + drift * t: at its reference time the true
    // time was t = (L - off) / (1 + drift), so local - global = L - t.
    let l = r1.ref_local_s;
    let expected = l - (l - off) / (1.0 + drift);
    assert!(
        (r1.offset_s - expected).abs() < 50e-6,
        "offset {} s, expected {} s (rank clock {:?})",
        r1.offset_s,
        expected,
        r1
    );
    assert!(
        (r1.drift - drift).abs() < 0.1 * drift,
        "drift {}, expected {drift} ({r1:?})",
        r1.drift
    );
    // And the synchronized windows work with the skewed clock: most are valid.
    let e = &p.entries[0];
    assert!(e.n >= 200, "{e:?}");
    assert!(
        e.n_invalid < e.n,
        "most windows invalid: {} of {}",
        e.n_invalid,
        e.n + e.n_invalid
    );
    // The rank without skew has no model to learn; the skewed one does not
    // share its clock.
    let r0 = &p.method.clock_sync.as_ref().unwrap().ranks[0];
    assert_eq!(r0.offset_s, 0.0);
    assert!(r0.shared && !r1.shared, "{r0:?} {r1:?}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
pub(crate) fn late_ranks_invalidate_windows_which_are_dropped_and_counted() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("delay");
    let f = d.join("p.json");
    let delay = 0.003;
    let args = allreduce_8b(f.to_str().unwrap());
    let env = [("MPIOVER_CALIBRATE_TEST_DELAY", "1:3:0.003")];
    let Some(out) = run(2, &env, &args) else {
        return;
    };
    ok(&out);
    let p = Profile::load(&f).unwrap();
    let e = &p.entries[0];
    // Every 3rd window rank 1 arrives 3 ms late; at first that window (and the
    // ones its lateness spills into) are invalid on both ranks (MAX over ranks),
    // and more than a quarter invalid grows the window.
    assert!(e.n_invalid >= 20, "only {} dropped", e.n_invalid);
    assert!(e.n >= 200);
    assert!(
        e.window_s.unwrap() > 1e-3,
        "window did not grow: {:?}",
        e.window_s
    );
    // The kept samples do not hold the injected delay: rank 0 waited 3 ms in
    // those Allreduces (a sixth of the pooled samples), and they were dropped.
    // (On a loaded machine a few kept calls can still be long, the scheduler
    // preempting a rank inside a call: the 90 % quantile is the robust check.)
    assert!(
        e.q90_s.unwrap() < 0.9 * delay,
        "delayed calls were kept: q90 {:?}",
        e.q90_s
    );
    assert!(e.median_s < 0.1 * delay, "median {}", e.median_s);

    // Without window sync (--sync barrier) nothing is flagged and the delay
    // lands in the sample: the reason for the windows.
    let fb = d.join("b.json");
    let mut args = vec!["--sync", "barrier"];
    args.extend(allreduce_8b(fb.to_str().unwrap()));
    let Some(out) = run(2, &env, &args) else {
        return;
    };
    ok(&out);
    let pb = Profile::load(&fb).unwrap();
    let eb = &pb.entries[0];
    assert_eq!(eb.n_invalid, 0);
    assert_eq!(pb.method.sync.as_str(), "barrier");
    assert!(eb.window_s.is_none());
    assert!(eb.q90_s.unwrap() >= 0.9 * delay, "q90 {:?}", eb.q90_s);
    let _ = std::fs::remove_dir_all(&d);
}

/// Busy loops competing for the cores; killed when dropped.
pub(crate) struct Competitors(Vec<std::process::Child>);

impl Competitors {
    pub(crate) fn start(n: usize) -> Competitors {
        Competitors(
            (0..n)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .stdin(Stdio::null())
                        .spawn()
                        .expect("sh runs")
                })
                .collect(),
        )
    }
}

impl Drop for Competitors {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Regression: on a host shared with other work, calls in which the
/// scheduler took a rank's core were kept, and tmax of an 8-byte call came
/// out in milliseconds (the q_max quantile catches the time slices: 1-13 ms
/// in a third of the quick calibrations run beside a parallel build). A rank
/// descheduled while it waited for its window now starts late, one
/// preempted during its call is seen by its context switches, and both
/// windows are dropped and counted.
#[test]
pub(crate) fn busy_host_windows_are_dropped_and_tmax_stays_in_microseconds() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("busy");
    let f = d.join("p.json");
    let args = [
        "--functions",
        "MPI_Allreduce,MPI_Send,MPI_Recv",
        "--procs",
        "2",
        "--sizes",
        "8",
        // 3000 windows of a few microseconds: a job spans many time slices
        // of the busy loops (400 fit inside one slice, and then nothing was
        // preempted to drop).
        "--min-samples",
        "3000",
        "--max-samples",
        "3000",
        "-o",
        f.to_str().unwrap(),
    ];
    let Some(mut cmd) = command(2, &[], &args) else {
        return;
    };
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let busy = Competitors::start(cores);
    let out = cmd.output().expect("mpirun runs");
    drop(busy);
    ok(&out);
    let p = Profile::load(&f).unwrap();
    let summary: Vec<String> = p
        .entries
        .iter()
        .map(|e| {
            format!(
                "{} n {} invalid {} preempted {} tmax {:.2} us note {:?}",
                e.function,
                e.n,
                e.n_invalid,
                e.n_preempted,
                e.tmax_s * 1e6,
                e.note
            )
        })
        .collect();
    let summary = summary.join("\n");
    eprintln!("{cores} busy loops on {cores} cores:\n{summary}");
    assert_eq!(p.entries.len(), 3, "{summary}");
    for e in &p.entries {
        assert!(
            e.n_invalid > 0,
            "nothing dropped beside busy loops\n{summary}"
        );
        assert!(e.n_preempted <= e.n_invalid, "{summary}");
        // These calls take about a microsecond, and a kept time slice costs at
        // least the scheduler's base slice (0.75 ms on EEVDF kernels, scaled
        // up with the core count), so the limit sits below that. It is not
        // lower: a wake-up on a loaded host reaches 0.2 ms without any
        // preemption (207 us seen on a CI machine), and that is not the fault.
        assert!(
            e.tmax_s < 500e-6,
            "{} tmax {} s: scheduler time slices kept\n{summary}",
            e.function,
            e.tmax_s
        );
    }
    let _ = std::fs::remove_dir_all(&d);
}

/// An entry whose every window was invalid (a burst of load) is measured once
/// more at the end of the run before it is given up: here rank 1 starts late
/// in every window of the first job only, and the entry comes out of its
/// second measurement, with nothing skipped. When it is late in every job,
/// the entry is skipped with the reason, and the closing warning names it.
#[test]
pub(crate) fn entry_without_a_valid_sample_is_measured_again_then_named() {
    let _g = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let d = tmpdir("retry");
    let f = d.join("p.json");
    let fs = f.to_str().unwrap();
    let mut args = allreduce_8b(fs).to_vec();
    args.extend(["--entry-budget", "0.3"]);
    let Some(out) = run(2, &[("MPIOVER_CALIBRATE_TEST_DELAY", "1:1:late:1")], &args) else {
        return;
    };
    ok(&out);
    let p = Profile::load(&f).unwrap();
    assert!(p.skipped.is_empty(), "{:?}", p.skipped);
    assert_eq!(p.entries.len(), 1);
    assert!(p.entries[0].n >= 20, "{:?}", p.entries[0]);

    let _ = std::fs::remove_file(&f);
    let Some(out) = run(2, &[("MPIOVER_CALIBRATE_TEST_DELAY", "1:1:late")], &args) else {
        return;
    };
    ok(&out);
    let p = Profile::load(&f).unwrap();
    assert!(p.entries.is_empty(), "{:?}", p.entries);
    assert_eq!(p.skipped.len(), 1, "{:?}", p.skipped);
    let s = &p.skipped[0];
    assert!(
        s.function == "MPI_Allreduce"
            && s.reason.contains("no valid sample")
            && s.reason.contains("also when measured again at the end"),
        "{s:?}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("mpiover-calibrate: warning:")
                && l.contains("MPI_Allreduce p=2 8 B")
                && l.contains("also when measured again at the end")),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
