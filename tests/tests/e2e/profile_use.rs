//! Online overhead: with `MPIOVER_PROFILE` the interposer
//! looks up tmax once per key and sums max(0, t - tmax) per call; the wait of
//! a late sender is then overhead, the machine's own message time is not. A
//! profile that cannot be used costs one warning, never the run.

use std::path::{Path, PathBuf};

use mpiover_common::profile::{Environment, Measured, Method, Profile, ProfileEntry};
use mpiover_common::record::Record;

use crate::harness::*;

const ITERS: u32 = 10;
const DELAY_MS: u32 = 20;

/// A base point of a hand-made profile.
pub(crate) fn point(function: &str, bytes: u64, role: Option<&str>, tmax_s: f64) -> ProfileEntry {
    ProfileEntry {
        function: function.to_string(),
        p: 2,
        bytes,
        role: role.map(str::to_string),
        same_host: None,
        measured: Measured {
            hosts: 1,
            n: 200,
            n_invalid: 0,
            n_preempted: 0,
            n_late: 0,
            n_overrun: 0,
            min_s: tmax_s * 0.5,
            median_s: tmax_s * 0.6,
            median_ci_s: None,
            max_s: None,
            q90_s: None,
            q99_s: None,
            tmax_s,
            model: Some(mpiover_common::profile::FitModel::Exponential),
            lambda: None,
            params: None,
            chi2: None,
            df: None,
            critical: None,
            accepted: true,
            fallback: false,
            tail_test: None,
            bin_width_s: None,
            window_s: None,
            stop: None,
            sum_s: None,
            elapsed_s: None,
            note: None,
        },
        runs: Vec::new(),
        samples: None,
    }
}

/// Writes a profile of `entries` measured in `env` to `dir/name`.
pub(crate) fn hand_profile(
    dir: &Path,
    name: &str,
    env: Environment,
    entries: Vec<ProfileEntry>,
) -> PathBuf {
    let mut p = Profile::new(
        env,
        Method {
            q_max: 0.99,
            ..Default::default()
        },
    );
    for e in entries {
        p.push_entry(e);
    }
    let path = dir.join(name);
    p.save_atomic(&path)
        .unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

fn late_sender(test: &str, profile: &Path) -> Profiled {
    let it = ITERS.to_string();
    let d = DELAY_MS.to_string();
    profile_env(
        test,
        2,
        "late_sender",
        &[&it, &d],
        &[("MPIOVER_PROFILE", profile.to_str().unwrap())],
    )
}

fn recv_at_marker(r: &Record) -> Vec<&mpiover_common::record::Entry> {
    let line = marker("late_sender.c", "late-sender-recv");
    let es = entries_at(r, "MPI_Recv", "late_sender.c", line);
    assert!(
        !es.is_empty(),
        "rank {}: no MPI_Recv at late_sender.c:{line}\n{}",
        r.rank,
        dump_sites(r)
    );
    es
}

fn warning_lines(out: &Outcome) -> Vec<&str> {
    out.stderr
        .lines()
        .filter(|l| l.contains("mpiover: warning"))
        .collect()
}

/// The real thing: a quick calibration of this machine, then the late
/// sender under it. The receiver's wait is the injected delay, all of it
/// overhead (within 10 %); the sender's eager 8-byte sends have next to none.
#[test]
fn calibrated_profile_puts_the_late_senders_delay_into_recv_overhead() {
    let test = "calibrated_profile_puts_the_late_senders_delay_into_recv_overhead";
    let pdir = scratch(&format!("{test}-calibration"));
    let prof = pdir.join("profile.json");
    let cal = Job::program(
        2,
        calibrate_bin(),
        &[
            "--quick",
            "--quiet",
            "--functions",
            "MPI_Send,MPI_Recv",
            "--sizes",
            "8",
            "-o",
            prof.to_str().unwrap(),
        ],
        &pdir,
    )
    .run();
    cal.assert_success();
    let loaded = Profile::load(&prof).unwrap_or_else(|e| panic!("{e}\n{}", cal.dump()));
    assert!(
        loaded.tmax("MPI_Recv", 2, 8, None).is_some(),
        "the calibration has no MPI_Recv at 8 bytes"
    );

    let p = late_sender(test, &prof);
    assert!(
        warning_lines(&p.out).is_empty(),
        "a matching profile gives no warning\n{}",
        p.out.dump()
    );
    for r in &p.records {
        let u = r
            .profile
            .as_ref()
            .unwrap_or_else(|| panic!("rank {}: record.profile missing", r.rank));
        assert!(
            u.matched && u.note.is_none(),
            "rank {}: profile use {u:?}",
            r.rank
        );
        assert!(u.path.ends_with("profile.json"), "path {}", u.path);
        assert_eq!(u.q_max, Some(loaded.method.q_max));
    }
    let injected = injected_s(&p.out, "late_sender", 1);
    let r0 = &p.records[0];
    let context = format!("{}\n{}", dump_sites(r0), p.out.dump());
    let es = recv_at_marker(r0);
    for e in &es {
        let t = e.tmax_s.unwrap_or_else(|| panic!("no tmax_s on {e:?}"));
        assert!(
            t > 0.0 && t < 1e-3 && !e.tmax_out_of_range,
            "tmax {t} of an 8-byte MPI_Recv\n{context}"
        );
        assert_eq!(e.bytes, 8);
        // What the report's significance test needs to allow for tmax's spread.
        let basis = e
            .tmax_basis
            .unwrap_or_else(|| panic!("no tmax_basis on {e:?}"));
        let entry = loaded
            .entries
            .iter()
            .find(|x| x.function == "MPI_Recv" && x.bytes == 8)
            .expect("calibrated MPI_Recv of 8 bytes");
        assert_eq!(basis.n, entry.n, "{e:?}");
    }
    let over: f64 = es.iter().map(|e| e.overhead_s.unwrap_or(0.0)).sum();
    assert_close(
        "rank 0: overhead of MPI_Recv at the late-sender line",
        over,
        injected,
        0.10,
        &context,
    );
    // The sender does not wait: its eager sends are (almost) never late.
    let r1 = &p.records[1];
    let send_over: f64 = r1
        .entries
        .iter()
        .filter(|e| e.function == "MPI_Send")
        .map(|e| {
            assert!(e.tmax_s.is_some(), "MPI_Send without tmax: {e:?}");
            e.overhead_s.unwrap_or(0.0)
        })
        .sum();
    assert!(
        send_over < 0.05 * injected,
        "rank 1: MPI_Send overhead {send_over} s\n{}",
        dump_sites(r1)
    );
    // Functions the profile does not have get no tmax (not zero overhead).
    for r in &p.records {
        for e in r.entries.iter().filter(|e| e.function == "MPI_Barrier") {
            assert!(
                e.tmax_s.is_none() && e.overhead_s.is_none(),
                "rank {}: {e:?}",
                r.rank
            );
        }
    }
}

/// The arithmetic, with a profile whose tmax is known: every receive waits
/// longer than tmax, so the overhead is exactly sum - count * tmax; a lookup
/// below the measured sizes is flagged out of range.
#[test]
fn overhead_is_the_time_beyond_tmax_of_each_call() {
    let test = "overhead_is_the_time_beyond_tmax_of_each_call";
    let pdir = scratch(&format!("{test}-profile"));
    let tmax = 0.005;
    let prof = hand_profile(
        &pdir,
        "hand.json",
        Environment::default(),
        vec![
            point("MPI_Recv", 1, None, tmax),
            point("MPI_Recv", 100, None, tmax),
            // Sends measured only from 64 bytes on: 8 bytes is out of range.
            point("MPI_Send", 64, None, 2e-6),
            point("MPI_Send", 1000, None, 3e-6),
        ],
    );
    let p = late_sender(test, &prof);
    let r0 = &p.records[0];
    let es = recv_at_marker(r0);
    let (mut sum, mut count, mut over) = (0.0, 0, 0.0);
    for e in &es {
        assert_eq!(e.tmax_s, Some(tmax), "{e:?}");
        assert!(!e.tmax_out_of_range, "{e:?}");
        assert!(
            e.min_s > tmax,
            "every receive waits longer than tmax: {e:?}"
        );
        sum += e.sum_s;
        count += e.count;
        over += e.overhead_s.expect("overhead_s");
    }
    assert_eq!(count, ITERS as u64);
    let expected = sum - count as f64 * tmax;
    assert!(
        (over - expected).abs() <= 1e-3 * expected,
        "overhead {over} s, expected sum - count * tmax = {expected} s"
    );
    let r1 = &p.records[1];
    let sends: Vec<_> = r1
        .entries
        .iter()
        .filter(|e| e.function == "MPI_Send")
        .collect();
    assert!(!sends.is_empty(), "{}", dump_sites(r1));
    for e in sends {
        assert_eq!(e.tmax_s, Some(2e-6), "{e:?}");
        assert!(
            e.tmax_out_of_range,
            "8 bytes is below the profile's sizes: {e:?}"
        );
    }
}

/// A profile from elsewhere is used, flagged, and said once.
#[test]
fn profile_of_another_environment_is_flagged_with_one_warning() {
    let test = "profile_of_another_environment_is_flagged_with_one_warning";
    let pdir = scratch(&format!("{test}-profile"));
    let env = Environment {
        mpi_library: "MPICH Version: 9.9.9".into(),
        ..Default::default()
    };
    let prof = hand_profile(
        &pdir,
        "elsewhere.json",
        env,
        vec![point("MPI_Recv", 8, None, 1e-5)],
    );
    let p = late_sender(test, &prof);
    let w = warning_lines(&p.out);
    assert_eq!(w.len(), 1, "one warning for the job\n{}", p.out.dump());
    assert!(
        w[0].contains("elsewhere.json") && w[0].contains("MPICH Version: 9.9.9"),
        "the warning names the profile and the difference: {}",
        w[0]
    );
    for r in &p.records {
        let u = r.profile.as_ref().expect("record.profile");
        assert!(!u.matched, "rank {}: {u:?}", r.rank);
        assert!(
            u.note.as_deref().is_some_and(|n| n.contains("MPI library")),
            "{u:?}"
        );
    }
    let over: f64 = recv_at_marker(&p.records[0])
        .iter()
        .map(|e| e.overhead_s.expect("overhead is still computed"))
        .sum();
    assert!(
        over > 0.5 * (ITERS * DELAY_MS) as f64 * 1e-3,
        "overhead {over}"
    );
}

/// Garbage or a missing file: one warning, the run completes (exit 0, same
/// output), records without overhead and without `profile`.
#[test]
fn unusable_profile_warns_once_and_records_without_overhead() {
    let test = "unusable_profile_warns_once_and_records_without_overhead";
    let pdir = scratch(&format!("{test}-profile"));
    let garbage = pdir.join("garbage.json");
    std::fs::write(
        &garbage,
        "{\"schema\": \"mpiover-profile/1\", \"entries\": [1, 2,",
    )
    .unwrap();
    let missing = pdir.join("no-such-profile.json");
    let plain = Job::new(2, "late_sender", &["2", "1"], &pdir).run();
    plain.assert_success();
    for (i, prof) in [garbage, missing].iter().enumerate() {
        let p = profile_env(
            &format!("{test}-{i}"),
            2,
            "late_sender",
            &["2", "1"],
            &[("MPIOVER_PROFILE", prof.to_str().unwrap())],
        );
        assert_eq!(p.out.code(), Some(0));
        assert_eq!(p.out.stdout, plain.stdout, "stdout changed");
        let w = warning_lines(&p.out);
        assert_eq!(w.len(), 1, "one warning for the job\n{}", p.out.dump());
        assert!(
            w[0].contains(prof.file_name().unwrap().to_str().unwrap()),
            "the warning names the file: {}",
            w[0]
        );
        for r in &p.records {
            assert!(r.profile.is_none(), "rank {}: {:?}", r.rank, r.profile);
            assert!(
                r.warnings.iter().any(|x| x.contains("profile")),
                "rank {}: the record keeps the warning: {:?}",
                r.rank,
                r.warnings
            );
            for e in &r.entries {
                assert!(e.tmax_s.is_none() && e.overhead_s.is_none(), "{e:?}");
            }
        }
    }
}
