//! A job that ends while the job log is being merged at `MPI_Finalize`
//! (`MPIOVER_FORMAT=log`), on a busy machine: two threads of this test spin
//! on the machine's cores while the job runs, as other jobs would.
//!
//! - The last rank of 4 kills itself with SIGKILL once the others are inside
//!   `MPI_Finalize` (`crash killfinal`): the launcher ends the job (Open
//!   MPI: SIGTERM, then SIGKILL as soon as the first rank has gone; MPICH's
//!   Hydra: SIGKILL at once). Every survivor's record is in the run
//!   directory all the same (written before the merge), whole up to
//!   `MPI_Finalize`, its sites resolved by the report from the executable,
//!   and the report names the rank that left none.
//! - The last rank returns from `main` without `MPI_Finalize` while the
//!   others merge (`crash exitfinal`): its own record is written at exit and
//!   every other rank's before the merge.
//!
//! Both end within the harness's timeout: no rank waits for ever for a
//! peer that is gone.
//!
//! And a run directory on a full file system (a 64 KiB tmpfs filled before
//! the job, in a mount namespace of the launcher's own): with the job log
//! and with per-rank records, the program's output and exit status are
//! those of the run without the profiler, and the whole job prints one
//! `mpiover: warning` line, which names the directory.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use crate::harness::*;

const NP: u32 = 4;

/// Threads that spin on every core until dropped.
struct Busy {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Busy {
    fn start() -> Busy {
        let stop = Arc::new(AtomicBool::new(false));
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (0..cores)
            .map(|_| {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut x = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                    }
                })
            })
            .collect();
        Busy { stop, threads }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// `crash MODE` on 4 ranks with the job log, the machine kept busy; the
/// report of its run directory (JSON, no profile) and the job's outcome.
fn ended_during_merge(test: &str, mode: &str) -> (Value, Outcome, std::path::PathBuf) {
    let dir = scratch(test);
    let run = dir.join("run");
    let out = {
        let _busy = Busy::start();
        Job::new(NP, "crash", &[mode], &dir)
            .profiled(&run)
            .env("MPIOVER_FORMAT", "log")
            .run()
    };
    // The exit status is the launcher's: Hydra sometimes ends a job whose
    // rank returned without MPI_Finalize with 0, sometimes with 9.
    assert!(!out.timed_out, "the job hung\n{}", out.dump());
    let rep = report_json_of(&run, None, &out);
    (rep, out, run)
}

/// What every test checks: `want` ranks present, the survivors' records
/// finished at the merge with all their calls (the crash-send line resolved
/// by the report: 3 sends per rank but rank 0), no site left unresolved.
fn check_survivors(rep: &Value, run: &Path, out: &Outcome, want: &[u32]) {
    let ctx = format!("{rep:#}\n{}", out.dump());
    let present: Vec<u64> = rep["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .filter_map(|r| r["rank"].as_u64())
        .collect();
    for r in want {
        assert!(
            present.contains(&u64::from(*r)),
            "rank {r}'s record is lost: files {:?}\n{ctx}",
            std::fs::read_dir(run).map(|d| d.count()).ok()
        );
    }
    assert_eq!(rep["run"]["ranks_present"], want.len(), "{ctx}");
    for r in rep["ranks"].as_array().expect("ranks") {
        if r["rank"] != NP - 1 {
            assert_eq!(r["finished"], "merge", "{ctx}");
        }
    }
    let send = marker("crash.c", "crash-send");
    let s = site_at(rep, "crash.c", send, "MPI_Send")
        .unwrap_or_else(|| panic!("no MPI_Send site at crash.c:{send}\n{ctx}"));
    let senders = want.iter().filter(|&&r| r != 0).count() as u64;
    assert_eq!(s["calls"].as_u64(), Some(3 * senders), "{ctx}");
    for s in sites(rep) {
        let loc = s["location"].as_str().unwrap_or("");
        assert!(
            loc.contains("crash.c:"),
            "site {loc} is not resolved to a line\n{ctx}"
        );
    }
    assert!(
        !run.join("job.mpiover-log").exists(),
        "a job log was written for a job that ended during the merge\n{ctx}"
    );
}

fn warnings(rep: &Value) -> Vec<String> {
    rep["warnings"]
        .as_array()
        .map(|w| {
            w.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn joblog_of_a_job_whose_rank_is_killed_during_the_merge_keeps_every_survivor() {
    let (rep, out, run) = ended_during_merge("merge_killed", "killfinal");
    assert_ne!(out.code(), Some(0), "{}", out.dump());
    check_survivors(&rep, &run, &out, &[0, 1, 2]);
    let w = warnings(&rep).join("\n");
    assert!(
        w.contains("1 of 4 ranks have no record (rank 3)") && w.contains("SIGKILL"),
        "{w}"
    );
    assert!(
        w.contains("during the job log merge") && w.contains("ranks 0-2"),
        "{w}"
    );
}

#[test]
fn joblog_of_a_job_whose_rank_exits_without_finalize_during_the_merge_keeps_every_rank() {
    let (rep, out, run) = ended_during_merge("merge_exit", "exitfinal");
    check_survivors(&rep, &run, &out, &[0, 1, 2, 3]);
    let last = rep["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .find(|r| r["rank"] == NP - 1)
        .cloned()
        .unwrap_or_default();
    assert_eq!(last["finished"], "exit", "{last:#}");
}

#[test]
fn joblog_of_a_job_on_a_full_disk_is_one_warning_and_the_programs_own_exit() {
    let dir = scratch("merge_full_disk");
    let np = 3;
    let plain = Job::new(np, "pingpong", &["100"], &dir).run();
    plain.assert_success();
    let mnt = dir.join("full");
    std::fs::create_dir_all(&mnt).expect("mkdir");
    let mount = mnt.display().to_string();
    // The file system is filled before the job: making the run directory
    // and empty files still works, every write fails with ENOSPC.
    let fill = "mount -t tmpfs -o size=64k tmpfs \"$0\" || exit 97; \
                head -c 1048576 /dev/zero > \"$0/filler\" 2>/dev/null; exec \"$@\"";
    for format in ["log", "per-rank"] {
        let run = mnt.join(format!("run-{format}"));
        let out = Job::new(np, "pingpong", &["100"], &dir)
            .profiled(&run)
            .env("MPIOVER_FORMAT", format)
            .wrapped(&[
                "unshare",
                "--mount",
                "--propagation",
                "private",
                "sh",
                "-c",
                fill,
                &mount,
            ])
            .run();
        assert_ne!(
            out.code(),
            Some(97),
            "cannot mount a tmpfs here\n{}",
            out.dump()
        );
        assert_eq!(out.code(), Some(0), "{format}: exit status\n{}", out.dump());
        assert_eq!(out.stdout, plain.stdout, "{format}: stdout\n{}", out.dump());
        let warnings: Vec<&str> = out
            .stderr
            .lines()
            .filter(|l| l.contains("mpiover: warning"))
            .collect();
        assert_eq!(warnings.len(), 1, "{format}: {warnings:#?}\n{}", out.dump());
        assert!(
            warnings[0].contains(&run.display().to_string())
                && warnings[0].contains("No space left on device"),
            "{format}: {}",
            warnings[0]
        );
    }
}
