//! A 3-D halo exchange as stencil codes write it (`examples/nonblocking/halo3d.c`):
//! 8 ranks on a 2 x 2 x 2 grid, `MPI_Irecv` and `MPI_Isend` to up to 26
//! neighbours into a request array whose unused slots stay
//! `MPI_REQUEST_NULL`, then one `MPI_Waitall`, with a profile calibrated on
//! this machine at the same 8 ranks (it measures the k-neighbour exchange).
//!
//! - One late rank: each of its neighbours waits about what it slept, as
//!   overhead at the `MPI_Waitall` line, Late Sender, charged to the late
//!   rank (late ranks, wait matrix) and to the `MPI_Irecv` line that posted
//!   its messages.
//! - The clean exchange: no significant site worth 1 % of the MPI time.
//! - Both: every completion call has a tmax, and no completion is unmatched.
//!
//! Under MPICH the exchange runs on 2 ranks (one neighbour, 25 null slots):
//! MPICH's ranks poll without yielding, and 8 of them on this project's 2
//! cores make the calibrated 6- and 26-neighbour exchanges take 20-27 ms at
//! the 99th percentile (time slices, measured 2026-11-24), longer than the
//! injected 20 ms: the wait is then rightly within tmax. Open MPI yields
//! when oversubscribed and is tested at 8.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use mpiover_common::completion::is_completion;
use serde_json::Value;

use crate::harness::*;

/// Ranks of the exchange (see the module docs).
fn np() -> u32 {
    if mpi_flavor() == "mpich" {
        2
    } else {
        8
    }
}

/// The late rank.
fn late() -> u32 {
    np().min(4) - 1
}
const FILE: &str = "halo3d.c";

fn line(tag: &str) -> u32 {
    marker(&format!("nonblocking/{FILE}"), tag)
}

/// Ranks of the clean exchange: two (both MPIs), where the machine's two
/// cores run every rank at once (see `halo_clean_...`).
const CLEAN_NP: u32 = 2;

/// A quick calibration, at `np` ranks, of what the exchange calls.
fn halo_profile(np: u32) -> &'static Path {
    static LATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static CLEAN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let cell = if np == CLEAN_NP { &CLEAN } else { &LATE };
    shared(cell, || {
        calibrate_halo(&format!("halo_calibration_{np}"), np)
    })
    .as_path()
}

const HALO_FUNCTIONS: &str = "MPI_Wait,MPI_Waitall,MPI_Isend,MPI_Irecv,MPI_Barrier,MPI_Reduce";
const HALO_SIZES: &str = "8,64,512";

/// `mpiover-calibrate --quick` at `np` ranks of what the exchange calls.
fn calibrate_halo(test: &str, np: u32) -> PathBuf {
    quick_profile(test, np, HALO_FUNCTIONS, HALO_SIZES)
}

/// The same in six rounds over 30 s, as the calibrator advises on a machine
/// whose latency moves (it reads this VM as unsteady): a sub-microsecond
/// Waitall measured in one burst takes its tmax from whichever latency level
/// the burst caught, and a run a few seconds later can sit on a slower one.
fn calibrate_halo_in_rounds(test: &str, np: u32) -> PathBuf {
    quick_profile_with(
        test,
        np,
        HALO_FUNCTIONS,
        HALO_SIZES,
        &["--rounds", "6", "--spread", "30"],
    )
}

struct Run {
    out: Outcome,
    records: Vec<mpiover_common::record::Record>,
    report: Value,
    dir: PathBuf,
}

fn run(test: &str, np: u32, args: &[&str]) -> Run {
    run_with(test, np, args, halo_profile(np))
}

fn run_with(test: &str, np: u32, args: &[&str], prof: &Path) -> Run {
    let p = profile_program(
        test,
        np,
        &example_in("nonblocking", "halo3d"),
        args,
        &[("MPIOVER_PROFILE", prof.to_str().expect("utf-8 path"))],
    );
    let report = report_json(&p.dir, prof, &p.out);
    Run {
        out: p.out,
        records: p.records,
        report,
        dir: p.dir,
    }
}

fn context(r: &Run) -> String {
    let s: Vec<String> = sites(&r.report)
        .iter()
        .map(|s| {
            format!(
                "  {} {} calls {} overhead {:?} signif {} state {:?} late {:?} waited_for {} composed {} missing {}",
                s["location"], s["mpi_function"], s["calls"], s["overhead_s"], s["significance"],
                s["wait_state"], s["late_ranks"], s["waited_for"], s["tmax_composed"], s["tmax_missing"]
            )
        })
        .collect();
    format!(
        "sites:\n{}\nwait matrix: {}\nrun directory: {}\n{}",
        s.join("\n"),
        r.report["wait_matrix"]["cells"],
        r.dir.display(),
        r.out.dump()
    )
}

/// Every completion call had a tmax, and no rank saw a completion of a
/// request it did not know.
fn check_completions(r: &Run, ctx: &str) {
    for s in sites(&r.report) {
        let f = s["mpi_function"].as_str().unwrap_or("");
        if is_completion(f) {
            assert_eq!(
                s["calls_with_tmax"], s["calls"],
                "completion {} {f} has calls without tmax\n{ctx}",
                s["location"]
            );
        }
    }
    for rec in &r.records {
        assert!(
            !rec.warnings.iter().any(|w| w.contains("unmatched")),
            "rank {}: {:?}\n{ctx}\nrank {} warned of unmatched completions",
            rec.rank,
            rec.warnings,
            rec.rank
        );
        for e in &rec.entries {
            if e.function == "MPI_Waitall" {
                let q = e.requests.expect("a Waitall entry says what it completed");
                assert_eq!(q.recv, q.send, "rank {}: {q:?}\n{ctx}", rec.rank);
                assert!(
                    e.tmax_s.is_some(),
                    "rank {r}: no online tmax\n{ctx}\nrank {r}: no online tmax",
                    r = rec.rank
                );
            }
        }
    }
}

#[test]
fn halo_late_neighbour_is_overhead_at_the_waitall_charged_to_it_and_its_irecv_line() {
    let (np, late) = (np(), late());
    let r = run("halo_late", np, &["20", "20", &late.to_string()]);
    let ctx = context(&r);
    let injected = injected_s(&r.out, "halo3d", late);
    check_completions(&r, &ctx);
    let s = site_at(&r.report, FILE, line("halo-waitall"), "MPI_Waitall")
        .unwrap_or_else(|| panic!("no MPI_Waitall site at the halo-waitall line\n{ctx}"));
    assert_eq!(s["wait_state"], "Late Sender", "{ctx}");
    assert_eq!(s["significant"], true, "{ctx}");
    assert_eq!(s["late_ranks"][0], late, "{ctx}");
    // Every other rank neighbours the late one on a 2 x 2 x 2 grid (and on
    // 2 ranks) and waits about what it slept, once per iteration.
    let overhead = s["overhead_s"].as_f64().unwrap_or(0.0);
    let want = f64::from(np - 1) * injected;
    assert_close("overhead at the Waitall line", overhead, want, 0.15, &ctx);
    // Whom it waited for: the late rank, through the Irecv line.
    let w = &s["waited_for"][0];
    assert_eq!(w["peer"], late, "{ctx}");
    let irecv = format!("{FILE}:{}", line("halo-irecv"));
    assert!(
        w["posted_at"].as_str().is_some_and(|p| p.ends_with(&irecv)),
        "waited_for names {p} instead of {irecv}\n{ctx}\nwaited_for names {p} instead of {irecv}",
        p = w["posted_at"]
    );
    assert!(
        s["posted_at"].as_array().is_some_and(|a| a
            .iter()
            .any(|p| p.as_str().is_some_and(|p| p.ends_with(&irecv)))),
        "{ctx}\nthe Waitall's posted_at lacks {irecv}"
    );
    // The wait matrix: each waiting rank's cell on the late rank holds what
    // it waited, within 15 % of the injected delay.
    let cells = r.report["wait_matrix"]["cells"].as_array().expect("cells");
    for waiter in (0..np).filter(|&w| w != late) {
        let v: f64 = cells
            .iter()
            .filter(|c| c["waiter"] == waiter && c["peer"] == late)
            .filter_map(|c| c["value_s"].as_f64())
            .sum();
        assert_close(
            &format!("rank {waiter}'s wait on rank {late}"),
            v,
            injected,
            0.15,
            &ctx,
        );
    }
    // The posting line knows where its requests were completed.
    let post = site_at(&r.report, FILE, line("halo-irecv"), "MPI_Irecv").expect("Irecv site");
    let waitall = format!("{FILE}:{}", line("halo-waitall"));
    assert!(
        post["completed_at"].as_array().is_some_and(|a| a
            .iter()
            .any(|p| p.as_str().is_some_and(|p| p.ends_with(&waitall)))),
        "{ctx}\nthe Irecv's completed_at lacks {waitall}"
    );
}

/// The sites of a report that are significant with at least 1 % of the MPI time.
fn flagged(report: &Value) -> Vec<String> {
    sites(report)
        .iter()
        // The exchange's own sites: the start-up barrier and the closing
        // MPI_Reduce (one call per rank) wait for real, for the ranks' start
        // and end skew (0.2-0.6 ms on this VM, a few percent of a 13 ms MPI
        // time), which is the program's, not a profiler's false alarm.
        .filter(|s| s["calls"].as_u64().unwrap_or(0) >= 100)
        .filter(|s| s["significant"] == true)
        .filter(|s| s["share_of_mpi_time"].as_f64().unwrap_or(0.0) >= 0.01)
        .map(|s| {
            format!(
                "{} {} is significant with {:.1} % of the MPI time",
                s["location"],
                s["mpi_function"],
                100.0 * s["share_of_mpi_time"].as_f64().unwrap_or(0.0)
            )
        })
        .collect()
}

/// The clean exchange runs on 2 ranks. On 8 ranks and this project's 2
/// cores the report finds about 11 % of the MPI time as Late Sender overhead
/// at the Waitall, spread over every rank (11 % of the calls above the
/// calibrated tmax; 2026-11-24, Open MPI): partners that the scheduler took
/// off a core, real waits but not the program's, which the calibration's
/// windows drop as preempted. With 3000 exchanges the start-up skew that the
/// first collective absorbs is well under 1 % of the MPI time.
///
/// The calibration is made in rounds. Against a one-burst `--quick`
/// calibration the clean Waitall was flagged in two of three first tries on
/// this VM and in three of three on a CI machine (7-13 % of the MPI time,
/// 2026-11-26): its tmax came from the latency level the burst caught, and
/// the same run re-analysed against two such calibrations made a minute apart
/// had 51 % and under 1 % of its Waitalls above tmax. In rounds, 10 of 10
/// processes were clean under Open MPI (`bench/README.md`). A run that a
/// foreign process disturbed is repeated (at most three in all, each against a
/// calibration measured anew), as the accuracy suite does; a clean exchange
/// that the tool flags fails all three.
#[test]
fn halo_clean_exchange_has_no_significant_site_worth_one_percent() {
    let mut attempt = 1;
    loop {
        // A shared calibration that caught the machine in a quieter moment
        // fails every repetition alike: repetitions calibrate anew.
        let prof = calibrate_halo_in_rounds(&format!("halo_calibration_clean_{attempt}"), CLEAN_NP);
        let r = run_with("halo_clean", CLEAN_NP, &["3000", "0", "1"], &prof);
        let ctx = context(&r);
        check_completions(&r, &ctx);
        let bad = flagged(&r.report);
        if bad.is_empty() {
            return;
        }
        assert!(attempt < 3, "{}\n{ctx}", bad.join("\n"));
        eprintln!(
            "e2e: halo_clean: run {attempt} disturbed, again: {}",
            bad.join("; ")
        );
        attempt += 1;
    }
}
