//! The accuracy suite: `examples/accuracy.c` injects waits
//! of known size at known lines (a late sender, a late receiver of 1 MiB
//! messages, a late rank before `MPI_Allreduce` and before `MPI_Barrier`,
//! with four different delays) and has clean sites. It runs under
//! `mpiover record` with a profile of this machine from a quick calibration,
//! and `mpiover report --profile P --format json` must attribute each
//! injected wait to its line (overhead within 10 % of the delay the program
//! measured), name its wait state and its late rank, and flag no clean site.
//!
//! Also the helpers the calibrated checks (`calibrated.rs`) share:
//! the calibration (once per test binary) and the record-then-report runner.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mpiover_common::profile::Profile;
use serde_json::Value;

use crate::harness::*;

/// Ranks of the accuracy runs and of the calibration (no oversubscription
/// on this 2-core machine: the injected delays dominate, not the scheduler).
pub const NP: u32 = 2;

/// A profile of this machine: `mpirun -np 2 mpiover-calibrate --quick` for
/// the functions and sizes the examples use (8-byte and 0-byte messages, 1 MiB
/// rendezvous messages, `MPI_Allreduce` of 8 bytes, `MPI_Barrier`,
/// `MPI_Alltoallw` of 8-byte blocks). About a second; made once per test
/// binary and shared.
///
/// A calibration measured while other processes compete for the two cores
/// is not a profile of this machine in the method's sense (ideal
/// conditions): its q_max quantile catches scheduler preemptions, so tmax of
/// an 8-byte call comes out in milliseconds instead of microseconds, and
/// every call of a run is then credited that much less overhead (10-30 % of
/// the injected delays here). Such a profile is measured again, up to three
/// times; the test fails, saying so, if none is usable.
pub fn calibrated_profile() -> &'static Path {
    static PROFILE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    shared(&PROFILE, || {
        let dir = scratch("calibration");
        let mut problems = Vec::new();
        for attempt in 1..=3 {
            let prof = dir.join(format!("profile-{attempt}.json"));
            let out = Job::program(
                NP,
                calibrate_bin(),
                &[
                    "--quick",
                    "--quiet",
                    "--functions",
                    "MPI_Send,MPI_Recv,MPI_Allreduce,MPI_Barrier,MPI_Alltoallw",
                    "--sizes",
                    "1,8,1Mi",
                    "-o",
                    prof.to_str().expect("utf-8 path"),
                ],
                &dir,
            )
            .run();
            out.assert_success();
            let p = Profile::load(&prof).unwrap_or_else(|e| panic!("{e}\n{}", out.dump()));
            match disturbed_calibration(&p) {
                None => {
                    eprintln!(
                        "e2e: calibration attempt {attempt} usable: {}",
                        prof.display()
                    );
                    return prof;
                }
                Some(why) => {
                    eprintln!("e2e: calibration attempt {attempt} disturbed: {why}");
                    problems.push(format!("attempt {attempt}: {why}"));
                    std::thread::sleep(Duration::from_secs(2));
                }
            }
        }
        panic!(
            "no usable calibration in 3 attempts: the machine is too busy (other processes \
             compete for the cores), tmax of small messages is preemption-sized:\n{}",
            problems.join("\n")
        )
    })
    .as_path()
}

/// Small-message (<= 8 bytes) tmax above 100 us: on this machine they are
/// 0.2-7 us when it is idle, and 1-7 ms when a preemption (a 4 ms tick) got
/// into the q_max quantile.
fn disturbed_calibration(p: &Profile) -> Option<String> {
    let bad: Vec<String> = p
        .entries
        .iter()
        .filter(|e| e.bytes <= 8 && e.tmax_s > 100e-6)
        .map(|e| {
            format!(
                "{} {} B: tmax {:.3} ms, median {:.3} us",
                e.function,
                e.bytes,
                e.tmax_s * 1e3,
                e.median_s * 1e6
            )
        })
        .collect();
    (!bad.is_empty()).then(|| bad.join("; "))
}

/// A run under `mpiover record` and its report.
pub struct Recorded {
    /// `mpiover record`'s outcome: the job's stdout, the job's stderr and
    /// the summary, record's exit code.
    pub out: Outcome,
    pub dir: PathBuf,
    /// `mpiover report DIR --profile P --format json`.
    pub report: Value,
}

/// `mpiover record --lib <lib> --profile P --out <scratch>/run -- mpirun -np
/// N <example> args`, then the JSON report re-analysed against `P`. Holds the
/// suite's MPI lock; kills everything it started after `JOB_TIMEOUT`.
pub fn record(test: &str, np: u32, example_name: &str, args: &[&str], profile: &Path) -> Recorded {
    record_program(test, np, &example(example_name), args, profile)
}

/// [`record`] for any program (by path).
pub fn record_program(
    test: &str,
    np: u32,
    program: &Path,
    args: &[&str],
    profile: &Path,
) -> Recorded {
    let mut attempt = 1;
    loop {
        let r = record_once(test, np, program, args, profile);
        match stalled(&r.report) {
            None => return r,
            Some(why) if attempt < 3 => {
                eprintln!("e2e: {test}: run {attempt} stalled by another process, again: {why}");
                std::thread::sleep(Duration::from_secs(2));
                attempt += 1;
            }
            Some(why) => {
                eprintln!("e2e: {test}: run {attempt} stalled too, checking it anyway: {why}");
                return r;
            }
        }
    }
}

/// Why a run was disturbed from outside, if it was: a call of a clean site
/// (one with at least 1000 calls: the ping-pongs and the clean Allreduce)
/// took over 2 ms. These calls take microseconds; a rank stalled that long
/// was preempted by a foreign process, which is real overhead that the
/// report rightly shows (and which the assertions would then blame on the
/// profiler). Such a run is repeated (at most three runs in all).
pub fn stalled(report: &Value) -> Option<String> {
    let bad: Vec<String> = sites(report)
        .iter()
        .filter(|s| s["calls"].as_u64().unwrap_or(0) >= 1000)
        .filter(|s| s["max_call_s"].as_f64().unwrap_or(0.0) > 2e-3)
        .map(|s| {
            format!(
                "{} {} took up to {:.1} ms",
                s["location"].as_str().unwrap_or("?"),
                s["mpi_function"].as_str().unwrap_or("?"),
                s["max_call_s"].as_f64().unwrap_or(0.0) * 1e3
            )
        })
        .collect();
    (!bad.is_empty()).then(|| bad.join("; "))
}

fn record_once(test: &str, np: u32, program: &Path, args: &[&str], profile: &Path) -> Recorded {
    let example_name = program.file_name().and_then(|n| n.to_str()).unwrap_or("?");
    let dir = scratch(test);
    let run = dir.join("run");
    let mut c = Command::new(mpiover_bin());
    c.arg("record")
        .arg("--lib")
        .arg(lib())
        .arg("--profile")
        .arg(profile)
        .arg("--out")
        .arg(&run)
        .arg("--")
        .arg("mpirun")
        .arg("-np")
        .arg(np.to_string())
        .arg(program)
        .args(args)
        .current_dir(&dir);
    let job = format!(
        "mpiover record --profile {} --out {} -- mpirun -np {np} {example_name} {}",
        profile.display(),
        run.display(),
        args.join(" ")
    );
    let out = run_locked(c, job, &dir);
    assert_eq!(
        out.code(),
        Some(0),
        "mpiover record should exit with the job's code 0\n{}",
        out.dump()
    );
    assert!(
        out.stderr.contains("mpiover: the job exited with 0"),
        "no summary from mpiover record\n{}",
        out.dump()
    );
    let report = report_json(&run, profile, &out);
    Recorded {
        out,
        dir: run,
        report,
    }
}

/// Runs a command that starts MPI jobs (under the lock, with the suite's
/// environment and timeout), stdout and stderr to files in `dir`.
fn run_locked(mut c: Command, job: String, dir: &Path) -> Outcome {
    c.env_remove("LD_PRELOAD");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MPIOVER_") {
            c.env_remove(&k);
        }
    }
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    let (so, se) = (dir.join("record.stdout"), dir.join("record.stderr"));
    let _guard = mpi_lock();
    let start = Instant::now();
    let mut child = c
        .stdin(Stdio::null())
        .stdout(fs::File::create(&so).expect("stdout file"))
        .stderr(fs::File::create(&se).expect("stderr file"))
        .spawn()
        .unwrap_or_else(|e| panic!("starting {job}: {e}"));
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().expect("waiting for mpiover record") {
            break st;
        }
        if start.elapsed() > JOB_TIMEOUT {
            timed_out = true;
            kill_tree(child.id());
            break child.wait().expect("waiting for killed mpiover record");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = Outcome {
        job,
        status,
        stdout: fs::read_to_string(&so).unwrap_or_default(),
        stderr: fs::read_to_string(&se).unwrap_or_default(),
        elapsed: start.elapsed(),
        timed_out,
    };
    assert!(
        !timed_out,
        "job hung and was killed after {JOB_TIMEOUT:?}:\n{}",
        out.dump()
    );
    out
}

/// `mpiover report DIR --profile P --format json`, parsed.
pub fn report_json(run: &Path, profile: &Path, context: &Outcome) -> Value {
    let o = Command::new(mpiover_bin())
        .arg("report")
        .arg(run)
        .arg("--profile")
        .arg(profile)
        .args(["--format", "json"])
        .env_remove("LD_PRELOAD")
        .output()
        .expect("running mpiover report");
    assert!(
        o.status.success(),
        "mpiover report --profile failed ({}):\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr),
        context.dump()
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "report --format json is not JSON: {e}\n{}",
            String::from_utf8_lossy(&o.stdout)
        )
    })
}

/// The report's sites.
pub fn sites(report: &Value) -> &Vec<Value> {
    report["sites"]
        .as_array()
        .expect("report.sites is an array")
}

/// The site of `mpi_function` at `file:line`.
pub fn site_at<'a>(
    report: &'a Value,
    file: &str,
    line: u32,
    mpi_function: &str,
) -> Option<&'a Value> {
    sites(report).iter().find(|s| {
        s["mpi_function"] == mpi_function
            && s["line"].as_u64() == Some(u64::from(line))
            && s["file"].as_str().is_some_and(|f| file_is(f, file))
    })
}

/// The ranking, one line per site, for failure messages.
pub fn describe_sites(report: &Value) -> String {
    let mut s = String::from("report sites (rank, location, call, calls, time, overhead, wait state, late ranks, significance):\n");
    for x in sites(report).iter().take(16) {
        s += &format!(
            "  {:>2} {:<18} {:<14} {:>6} {:>10.3} ms {:>10.3} ms  {:<16} {:<8} {}\n",
            x["rank"],
            x["location"]
                .as_str()
                .unwrap_or("?")
                .rsplit('/')
                .next()
                .unwrap_or("?"),
            x["mpi_function"].as_str().unwrap_or("?"),
            x["calls"],
            x["time_s"].as_f64().unwrap_or(f64::NAN) * 1e3,
            x["overhead_s"].as_f64().unwrap_or(f64::NAN) * 1e3,
            x["wait_state"].as_str().unwrap_or("-"),
            x["late_ranks"].to_string(),
            x["significance"].as_str().unwrap_or("?"),
        );
    }
    s
}

/// Everything a failure message needs: the ranking, the run directory (kept
/// for inspection), the job's output and the summary.
pub fn context(r: &Recorded) -> String {
    format!(
        "{}run directory: {}\n{}",
        describe_sites(&r.report),
        r.dir.display(),
        r.out.dump()
    )
}

/// What `accuracy` reports on stderr for one site: the delay its late rank
/// actually slept there (seconds) and that rank.
fn injected_at(out: &Outcome, tag: &str) -> (f64, u32) {
    let prefix = format!("accuracy: site {tag} rank ");
    out.stderr
        .lines()
        .find_map(|l| {
            let rest = l.strip_prefix(&prefix)?;
            let (rank, rest) = rest.split_once(" injected ")?;
            let ms: f64 = rest.strip_suffix(" ms")?.parse().ok()?;
            Some((ms / 1e3, rank.parse().ok()?))
        })
        .unwrap_or_else(|| {
            panic!(
                "no `{prefix}R injected X ms` line on stderr\n{}",
                out.dump()
            )
        })
}

/// The accuracy run, shared by the tests below (read-only).
fn accuracy_run() -> &'static Recorded {
    static RUN: OnceLock<Result<Recorded, String>> = OnceLock::new();
    shared(&RUN, || {
        record("accuracy", NP, "accuracy", &[], calibrated_profile())
    })
}

/// One injected site: marker, MPI call, wait state, ranks that wait there.
struct Injected {
    tag: &'static str,
    mpi: &'static str,
    state: &'static str,
    waiting_ranks: u32,
}

/// Largest delay first: the order the report must rank them in.
const INJECTED: [Injected; 4] = [
    Injected {
        tag: "accuracy-late-allreduce",
        mpi: "MPI_Allreduce",
        state: "Wait at NxN",
        waiting_ranks: NP - 1,
    },
    Injected {
        tag: "accuracy-late-sender-recv",
        mpi: "MPI_Recv",
        state: "Late Sender",
        waiting_ranks: 1,
    },
    Injected {
        tag: "accuracy-late-receiver-send",
        mpi: "MPI_Send",
        state: "Late Receiver",
        waiting_ranks: 1,
    },
    Injected {
        tag: "accuracy-late-barrier",
        mpi: "MPI_Barrier",
        state: "Wait at Barrier",
        waiting_ranks: NP - 1,
    },
];

#[test]
fn accuracy_each_injected_wait_is_overhead_at_its_line_within_10_percent() {
    let r = accuracy_run();
    let context = context(r);
    for i in &INJECTED {
        let line = marker("accuracy.c", i.tag);
        let s = site_at(&r.report, "accuracy.c", line, i.mpi).unwrap_or_else(|| {
            panic!(
                "no {} site at accuracy.c:{line} ({})\n{context}",
                i.mpi, i.tag
            )
        });
        let (injected, _) = injected_at(&r.out, i.tag);
        let overhead = s["overhead_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("{}: no overhead_s\n{s:#}\n{context}", i.tag));
        assert_close(
            &format!("{} overhead at accuracy.c:{line}", i.tag),
            overhead,
            injected * f64::from(i.waiting_ranks),
            0.10,
            &context,
        );
    }
}

#[test]
fn accuracy_injected_sites_rank_first_in_the_order_of_their_delays() {
    let r = accuracy_run();
    let context = context(r);
    assert_eq!(r.report["summary"]["ranked_by"], "overhead", "{context}");
    let top: Vec<(u64, String)> = sites(&r.report)
        .iter()
        .take(INJECTED.len())
        .map(|s| {
            (
                s["line"].as_u64().unwrap_or(0),
                s["mpi_function"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    let want: Vec<(u64, String)> = INJECTED
        .iter()
        .map(|i| (u64::from(marker("accuracy.c", i.tag)), i.mpi.to_string()))
        .collect();
    assert_eq!(
        top, want,
        "the top sites should be the injected ones, largest delay first\n{context}"
    );
}

#[test]
fn accuracy_wait_states_and_late_ranks_are_named() {
    let r = accuracy_run();
    let context = context(r);
    for i in &INJECTED {
        let line = marker("accuracy.c", i.tag);
        let s = site_at(&r.report, "accuracy.c", line, i.mpi)
            .unwrap_or_else(|| panic!("no {} site at accuracy.c:{line}\n{context}", i.mpi));
        let (_, late) = injected_at(&r.out, i.tag);
        assert_eq!(
            s["wait_state"], i.state,
            "{}: wait state\n{s:#}\n{context}",
            i.tag
        );
        assert_eq!(
            s["significant"], true,
            "{}: significant\n{s:#}\n{context}",
            i.tag
        );
        assert_eq!(
            s["late_ranks"].get(0).and_then(Value::as_u64),
            Some(u64::from(late)),
            "{}: late_ranks should name rank {late} first\n{s:#}\n{context}",
            i.tag
        );
    }
}

#[test]
fn accuracy_clean_sites_are_not_significant() {
    let r = accuracy_run();
    let context = context(r);
    // The ping-pong's sends and receives and the Allreduce (60 ns to 0.6 us
    // a call). Two CI runs shaped what "clean" is checked against:
    // - a receive with 1.6 % of its calls over tmax was flagged against an
    //   exact 1 %: the null now allows for tmax's own spread (beta-binomial,
    //   `signif::Null`);
    // - a receive with 8.5 % over tmax (a shift of some 50 ns a call between
    //   the calibration and this run, 0.1 ms in all, 0.01 % of the MPI time)
    //   was significant by the test and meaningless to a user: a site is now
    //   flagged only with at least 0.1 % of the MPI time as overhead, else it
    //   is "negligible". The eager sends (in about one run in six 15-20 % of
    //   them exceed a 130-300 ns tmax) are checked again for the same reason.
    for (tag, mpi) in [
        ("accuracy-clean-send", "MPI_Send"),
        ("accuracy-clean-recv", "MPI_Recv"),
        ("accuracy-clean-allreduce", "MPI_Allreduce"),
    ] {
        let line = marker("accuracy.c", tag);
        let s = site_at(&r.report, "accuracy.c", line, mpi)
            .unwrap_or_else(|| panic!("no {mpi} site at accuracy.c:{line}\n{context}"));
        assert!(
            s["calls"].as_u64().is_some_and(|c| c >= 1000),
            "{tag}: a clean site needs many calls for the test to mean something\n{s:#}"
        );
        assert!(
            s["overhead_s"].is_number(),
            "{tag}: no overhead_s (no tmax?)\n{s:#}\n{context}"
        );
        assert_eq!(
            s["significant"], false,
            "{tag}: a clean site flagged\n{s:#}\n{context}"
        );
        assert!(
            s["significance"] == "not significant" || s["significance"] == "negligible",
            "{tag}\n{s:#}\n{context}"
        );
        let share = s["overhead_s"].as_f64().unwrap_or(0.0)
            / r.report["summary"]["mpi_time_s"]
                .as_f64()
                .unwrap_or(f64::INFINITY);
        assert!(
            share < 0.001,
            "{tag}: a clean site holds {:.3} % of the MPI time as overhead\n{s:#}\n{context}",
            share * 100.0
        );
    }
}

/// On two ranks the only possible late rank is "the other one", so the checks
/// above cannot catch a late rank named wrongly. On four ranks (two late
/// sender pairs, and one rank late to an Allreduce) they can: each waiting
/// rank must name its own partner, never the other pair's, and the Allreduce
/// must name the last rank, the one that slept. Four ranks oversubscribe the
/// two cores, but the injected 20-30 ms sleeps dwarf the scheduling noise.
#[test]
fn late_ranks_among_four_ranks_name_the_rank_that_slept() {
    let prof = calibrated_profile();
    let np = 4;
    let ls = record(
        "late_ranks_four_late_sender",
        np,
        "late_sender",
        &["5", "20"],
        prof,
    );
    let ctx = format!("{}\n{}", describe_sites(&ls.report), ls.out.dump());
    let line = marker("late_sender.c", "late-sender-recv");
    let s = site_at(&ls.report, "late_sender.c", line, "MPI_Recv")
        .unwrap_or_else(|| panic!("no MPI_Recv site at late_sender.c:{line}\n{ctx}"));
    assert_eq!(s["wait_state"], "Late Sender", "{s:#}\n{ctx}");
    let mut late: Vec<u64> = s["late_ranks"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    late.sort_unstable();
    assert_eq!(
        late,
        vec![1, 3],
        "the two late senders, and only them\n{s:#}\n{ctx}"
    );
    // Who waited on whom: rank 0 on 1 and rank 2 on 3, nothing across pairs.
    let cells = ls.report["wait_matrix"]["cells"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let waited = |w: u64, p: u64| {
        cells
            .iter()
            .filter(|c| c["waiter"].as_u64() == Some(w) && c["peer"].as_u64() == Some(p))
            .map(|c| c["value_s"].as_f64().unwrap_or(0.0))
            .sum::<f64>()
    };
    for (w, p) in [(0, 1), (2, 3)] {
        let injected = injected_s(&ls.out, "late_sender", p as u32);
        assert_close(
            &format!("wait matrix: rank {w} waiting on rank {p}"),
            waited(w, p),
            injected,
            0.10,
            &ctx,
        );
    }
    for (w, p) in [(0, 3), (2, 1)] {
        assert!(
            waited(w, p) < 1e-3,
            "rank {w} never receives from rank {p}, yet waited {} s on it\n{ctx}",
            waited(w, p)
        );
    }

    let ar = record(
        "late_ranks_four_allreduce",
        np,
        "imbalanced_allreduce",
        &["5", "30", "2"],
        prof,
    );
    let ctx = format!("{}\n{}", describe_sites(&ar.report), ar.out.dump());
    let line = marker("imbalanced_allreduce.c", "imbalanced-allreduce");
    let s = site_at(&ar.report, "imbalanced_allreduce.c", line, "MPI_Allreduce")
        .unwrap_or_else(|| panic!("no MPI_Allreduce site at imbalanced_allreduce.c:{line}\n{ctx}"));
    assert_eq!(s["wait_state"], "Wait at NxN", "{s:#}\n{ctx}");
    assert_eq!(
        s["late_ranks"].get(0).and_then(Value::as_u64),
        Some(u64::from(np - 1)),
        "the last rank slept 30 ms more before every Allreduce\n{s:#}\n{ctx}"
    );
}
