//! Runs that do not end well, and environments that do not cooperate: the
//! application must behave exactly as without the profiler, and the records
//! must still be there when it is at all possible.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use mpiover_common::record::Record;

use crate::harness::*;

/// Records that exist must be readable (never half-written), whatever
/// happened to the rank; returns them.
fn readable_records(dir: &Path, out: &Outcome) -> Vec<Record> {
    read_records(dir).unwrap_or_else(|e| panic!("{e}\n{}", out.dump()))
}

fn record_of(recs: &[Record], rank: u32, dir: &Path, out: &Outcome) -> Record {
    recs.iter()
        .find(|r| r.rank == rank)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "no record of rank {rank} in {} (have ranks {:?})\n{}",
                dir.display(),
                recs.iter().map(|r| r.rank).collect::<Vec<_>>(),
                out.dump()
            )
        })
}

/// Runs `job` without, then with the preload; asserts the same exit status and
/// stdout; returns the profiled outcome.
fn same_as_unprofiled(plain: Job, profiled: Job) -> Outcome {
    let a = plain.run();
    let b = profiled.run();
    assert_eq!(
        b.code(),
        a.code(),
        "mpirun's exit status differs with the preload\n=== without\n{}\n=== with\n{}",
        a.dump(),
        b.dump()
    );
    assert_eq!(
        b.stdout,
        a.stdout,
        "stdout differs with the preload\n{}",
        b.dump()
    );
    b
}

/// The dying rank's record: written on the signal, holding the calls made
/// before it (3 rounds of MPI_Send to rank 0 at crash-send).
fn assert_crash_record(r: &Record, np: u32, signal: &str) {
    check_record_basics(r, np, "crash");
    assert_eq!(
        r.finished,
        format!("signal:{signal}"),
        "rank {}: finished",
        r.rank
    );
    let line = marker("crash.c", "crash-send");
    let n: u64 = entries_at(r, "MPI_Send", "crash.c", line)
        .iter()
        .map(|e| e.count)
        .sum();
    assert_eq!(
        n,
        3,
        "rank {}: MPI_Send calls at crash.c:{line} before dying\n{}",
        r.rank,
        dump_sites(r)
    );
}

#[test]
fn abort_leaves_readable_record_and_same_exit_status() {
    let dir = scratch("abort_leaves_readable_record_and_same_exit_status");
    let run = dir.join("run");
    let np = 2;
    let out = same_as_unprofiled(
        Job::new(np, "crash", &["abort"], &dir),
        Job::new(np, "crash", &["abort"], &dir).profiled(&run),
    );
    assert_ne!(
        out.code(),
        Some(0),
        "an aborting job must fail\n{}",
        out.dump()
    );
    let recs = readable_records(&run, &out);
    assert_crash_record(&record_of(&recs, np - 1, &run, &out), np, "SIGABRT");
}

/// Regression: a rank that overflowed its stack died of SIGSEGV with no stack
/// left to run the tool's handler on, and left no record. The thread that
/// initializes MPI now gets an alternate signal stack.
#[test]
fn stack_overflow_leaves_readable_record_and_same_exit_status() {
    let dir = scratch("stack_overflow_leaves_readable_record_and_same_exit_status");
    let run = dir.join("run");
    let np = 2;
    let out = same_as_unprofiled(
        Job::new(np, "crash", &["overflow"], &dir),
        Job::new(np, "crash", &["overflow"], &dir).profiled(&run),
    );
    assert_ne!(out.code(), Some(0), "{}", out.dump());
    let recs = readable_records(&run, &out);
    assert_crash_record(&record_of(&recs, np - 1, &run, &out), np, "SIGSEGV");
}

#[test]
fn sigterm_raised_by_rank_leaves_record_and_same_exit_status() {
    let dir = scratch("sigterm_raised_by_rank_leaves_record_and_same_exit_status");
    let run = dir.join("run");
    let np = 3;
    let out = same_as_unprofiled(
        Job::new(np, "crash", &["sigterm"], &dir),
        Job::new(np, "crash", &["sigterm"], &dir).profiled(&run),
    );
    assert_ne!(out.code(), Some(0), "{}", out.dump());
    let recs = readable_records(&run, &out);
    assert_crash_record(&record_of(&recs, np - 1, &run, &out), np, "SIGTERM");
}

/// SIGINT (a user's Ctrl-C reaching one rank) and SIGBUS (a bad mapped-file
/// access) are in the list of signals the record survives; each is raised by
/// the last rank itself so that the test does not depend on mpirun's own
/// signal forwarding.
#[test]
fn sigint_raised_by_rank_leaves_record_and_same_exit_status() {
    raised_signal_leaves_record("sigint", "SIGINT");
}

#[test]
fn sigbus_raised_by_rank_leaves_record_and_same_exit_status() {
    raised_signal_leaves_record("sigbus", "SIGBUS");
}

fn raised_signal_leaves_record(mode: &str, signal: &str) {
    let dir = scratch(&format!("{mode}_raised_by_rank_leaves_record"));
    let run = dir.join("run");
    let np = 2;
    let out = same_as_unprofiled(
        Job::new(np, "crash", &[mode], &dir),
        Job::new(np, "crash", &[mode], &dir).profiled(&run),
    );
    assert_ne!(out.code(), Some(0), "{}", out.dump());
    let recs = readable_records(&run, &out);
    assert_crash_record(&record_of(&recs, np - 1, &run, &out), np, signal);
}

/// Runs `crash wait PIDFILE`; once the last rank has written its pid, sends
/// SIGTERM to that rank (`to_mpirun == false`) or to mpirun itself.
fn run_wait_and_term(job: Job, pidfile: &Path, to_mpirun: bool) -> (Outcome, Result<(), String>) {
    let _ = fs::remove_file(pidfile);
    let mut res = Ok(());
    let out = job.run_with(|mpirun| {
        let start = Instant::now();
        let pid = loop {
            if let Some(pid) = fs::read_to_string(pidfile)
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
            {
                break Some(pid);
            }
            if start.elapsed() > Duration::from_secs(30) {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        match pid {
            Some(pid) => {
                // Let the other ranks reach their blocking MPI_Recv: the job
                // is killed while it waits, as a batch system would.
                std::thread::sleep(Duration::from_millis(300));
                signal(if to_mpirun { mpirun } else { pid }, libc::SIGTERM)
            }
            None => {
                res = Err(format!("{} did not appear within 30 s", pidfile.display()));
                signal(mpirun, libc::SIGTERM);
            }
        }
    });
    (out, res)
}

#[test]
fn sigterm_from_outside_leaves_record_and_same_exit_status() {
    let dir = scratch("sigterm_from_outside_leaves_record_and_same_exit_status");
    let run = dir.join("run");
    let pidfile = dir.join("pid");
    let np = 2;
    let args = ["wait", pidfile.to_str().unwrap()];
    let (a, ra) = run_wait_and_term(Job::new(np, "crash", &args, &dir), &pidfile, false);
    ra.unwrap_or_else(|e| panic!("{e}\n{}", a.dump()));
    let (b, rb) = run_wait_and_term(
        Job::new(np, "crash", &args, &dir).profiled(&run),
        &pidfile,
        false,
    );
    rb.unwrap_or_else(|e| panic!("{e}\n{}", b.dump()));
    assert_eq!(
        b.code(),
        a.code(),
        "exit status differs with the preload\n{}\n{}",
        a.dump(),
        b.dump()
    );
    assert_eq!(b.stdout, a.stdout, "stdout differs with the preload");
    let recs = readable_records(&run, &b);
    assert_crash_record(&record_of(&recs, np - 1, &run, &b), np, "SIGTERM");
}

/// A batch system ending a job signals mpirun, which sends SIGTERM to the
/// ranks and, Open MPI 4.1 here, SIGKILL only milliseconds later: records are
/// best-effort. What must hold: the exit status is unchanged,
/// no record is half-written, and the rank that was idle (sleeping) when the
/// signal came, which has time to write, leaves its record.
#[test]
fn sigterm_to_mpirun_keeps_exit_status_and_leaves_readable_records() {
    let dir = scratch("sigterm_to_mpirun_keeps_exit_status_and_leaves_readable_records");
    let run = dir.join("run");
    let pidfile = dir.join("pid");
    let np = 2;
    let args = ["wait", pidfile.to_str().unwrap()];
    let (a, ra) = run_wait_and_term(Job::new(np, "crash", &args, &dir), &pidfile, true);
    ra.unwrap_or_else(|e| panic!("{e}\n{}", a.dump()));
    let (b, rb) = run_wait_and_term(
        Job::new(np, "crash", &args, &dir).profiled(&run),
        &pidfile,
        true,
    );
    rb.unwrap_or_else(|e| panic!("{e}\n{}", b.dump()));
    assert_eq!(
        b.code(),
        a.code(),
        "exit status differs with the preload\n{}\n{}",
        a.dump(),
        b.dump()
    );
    let recs = readable_records(&run, &b);
    for r in &recs {
        check_record_basics(r, np, "crash");
        assert_eq!(r.finished, "signal:SIGTERM", "rank {}: finished", r.rank);
    }
    let missing: Vec<u32> = (0..np)
        .filter(|k| !recs.iter().any(|r| r.rank == *k))
        .collect();
    if !missing.is_empty() {
        eprintln!("note: no record of ranks {missing:?} (killed by mpirun before writing)");
    }
    let r = record_of(&recs, np - 1, &run, &b);
    assert_crash_record(&r, np, "SIGTERM");
}

#[test]
fn no_finalize_leaves_records_of_all_ranks() {
    let dir = scratch("no_finalize_leaves_records_of_all_ranks");
    let run = dir.join("run");
    let np = 3;
    let out = same_as_unprofiled(
        Job::new(np, "no_finalize", &[], &dir),
        Job::new(np, "no_finalize", &[], &dir).profiled(&run),
    );
    let recs = complete_records(&run, np, "no_finalize", &out);
    let line = marker("no_finalize.c", "no-finalize-sendrecv");
    for r in &recs {
        assert!(
            r.finished == "exit" || r.finished.starts_with("signal:"),
            "rank {}: finished {:?}",
            r.rank,
            r.finished
        );
        let n: u64 = entries_at(r, "MPI_Sendrecv", "no_finalize.c", line)
            .iter()
            .map(|e| e.count)
            .sum();
        assert_eq!(
            n,
            5,
            "rank {}: MPI_Sendrecv calls at no_finalize.c:{line}\n{}",
            r.rank,
            dump_sites(r)
        );
    }
}

/// `MPIOVER_OUT` where no directory can be made: the program runs to its
/// normal end with its normal output, and the user is told once: exactly one
/// `mpiover: warning` line for the whole job (rank 0 makes the directory and
/// tells the others), not one per rank, which on 1000 ranks would bury the
/// program's own output.
#[test]
fn unwritable_out_dir_warns_once_and_runs_normally() {
    let dir = scratch("unwritable_out_dir_warns_once_and_runs_normally");
    let file = dir.join("a-regular-file");
    fs::write(&file, "not a directory\n").unwrap();
    let np = 3;
    let plain = Job::new(np, "pingpong", &["100"], &dir).run();
    plain.assert_success();
    for out_dir in [
        file.join("run"),
        Path::new("/proc/mpiover-e2e/run").to_path_buf(),
    ] {
        let out = Job::new(np, "pingpong", &["100"], &dir)
            .profiled(&out_dir)
            .run();
        assert_eq!(
            out.code(),
            Some(0),
            "exit status with MPIOVER_OUT={}\n{}",
            out_dir.display(),
            out.dump()
        );
        assert_eq!(
            out.stdout,
            plain.stdout,
            "stdout with MPIOVER_OUT={}",
            out_dir.display()
        );
        let warnings: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.contains("mpiover: warning"))
            .collect();
        assert!(
            warnings.len() == 1,
            "expected one `mpiover: warning` line with MPIOVER_OUT={}, got {}\n{}",
            out_dir.display(),
            warnings.len(),
            out.dump()
        );
        assert!(
            warnings
                .iter()
                .all(|w| w.contains(out_dir.to_str().unwrap())),
            "the warning should name the directory {}: {warnings:#?}",
            out_dir.display()
        );
    }
}

/// Without `MPIOVER_OUT`, all ranks write into one `./mpiover-<program>-<YYYYmmdd-HHMMSS>`.
#[test]
fn default_run_dir_is_named_after_program_and_time() {
    let dir = scratch("default_run_dir_is_named_after_program_and_time");
    let np = 2;
    let out = Job::new(np, "late_sender", &["2", "1"], &dir)
        .preload()
        .run();
    out.assert_success();
    let made: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        made.len(),
        1,
        "expected exactly one run directory in {}: {made:?}",
        dir.display()
    );
    let name = &made[0];
    let stamp = name
        .strip_prefix("mpiover-late_sender-")
        .unwrap_or_else(|| {
            panic!("run directory {name:?} is not mpiover-late_sender-<YYYYmmdd-HHMMSS>")
        });
    let ok = stamp.len() == 15
        && stamp
            .char_indices()
            .all(|(i, c)| if i == 8 { c == '-' } else { c.is_ascii_digit() });
    assert!(
        ok,
        "run directory {name:?} is not mpiover-late_sender-<YYYYmmdd-HHMMSS>"
    );
    complete_records(&dir.join(name), np, "late_sender", &out);
}
