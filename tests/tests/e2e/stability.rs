//! Verdicts that do not hang on one calibration (`examples/near_tmax.c`, 2
//! ranks): one recorded run re-analysed (`report --profile`) against three
//! quick calibrations made one after the other.
//!
//! - A wait thousands of times tmax (rank 1 spins 20 ms before each of 10
//!   sends) is significant against each, with the same overhead within 2 %:
//!   tmax moves between calibrations by a factor, a 20 ms wait by a few
//!   microseconds of it.
//! - A site whose waits end a little above tmax (rank 1 spins before every
//!   tenth barrier, so that rank 0's calls there end at about 1.15 times the
//!   lowest of the three tmax) is where that stops holding: significant
//!   against a tmax below its waits, cleared by one above. The report calls
//!   it `marginal` (or `within level shift`) against at least one of them.
//! - Every other site: the same significant ones against every calibration.
//!
//! And the machine's level: against a profile whose times put the run's fast
//! calls at three times its medians (a calibration made at a faster latency
//! level), the report warns once that the calls ran slower than calibrated,
//! by a factor, and a real 5 ms wait is still significant.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::harness::*;

const NP: u32 = 2;
const FUNCTIONS: &str = "MPI_Send,MPI_Recv,MPI_Barrier";
const SIZES: &str = "8";
const FILE: &str = "near_tmax.c";

/// Three quick calibrations one after the other (shared by the tests of a
/// test process). One whose small-message tmax is preemption-sized (a host
/// busy with other work) is measured again, as the accuracy suite does: a
/// tmax forty times another makes every verdict hang on it, which is the
/// host's doing, not the spread between calibrations this test is about.
fn calibrations() -> &'static Vec<PathBuf> {
    static CELL: OnceLock<Result<Vec<PathBuf>, String>> = OnceLock::new();
    shared(&CELL, || {
        (1..=3)
            .map(|i| {
                let mut problems = Vec::new();
                for attempt in 1..=3 {
                    let test = format!("stability_calibration_{i}");
                    let p = quick_profile(&test, NP, FUNCTIONS, SIZES);
                    let prof = mpiover_common::profile::Profile::load(&p)
                        .unwrap_or_else(|e| panic!("{e}"));
                    match disturbed_calibration(&prof) {
                        None => return p,
                        Some(why) => problems.push(format!("attempt {attempt}: {why}")),
                    }
                }
                panic!(
                    "no usable calibration in 3 attempts: the machine is too busy, tmax of \
                     small messages is preemption-sized:\n{}",
                    problems.join("\n")
                )
            })
            .collect()
    })
}

/// (median, tmax) of the 2-rank barrier in a profile.
fn barrier(profile: &Path) -> (f64, f64) {
    let v: Value = serde_json::from_str(&read_all(profile)).expect("profile JSON");
    let e = v["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .find(|e| e["function"] == "MPI_Barrier" && e["p"] == NP)
        .unwrap_or_else(|| panic!("no 2-rank MPI_Barrier entry in {}", profile.display()));
    let f = |k: &str| e[k].as_f64().unwrap_or_else(|| panic!("{k} of {e}"));
    (f("median_s"), f("tmax_s"))
}

fn site<'a>(report: &'a Value, tag: &str, mpi: &str) -> Option<&'a Value> {
    site_at(report, FILE, marker(FILE, tag), mpi)
}

/// A site's identity across reports.
fn id(s: &Value) -> String {
    format!("{} {}", s["location"], s["mpi_function"])
}

/// The significant sites of a report, but for those in `unjudged`.
fn significant(report: &Value, unjudged: &[String]) -> Vec<String> {
    let mut v: Vec<String> = sites(report)
        .iter()
        .filter(|s| s["significant"] == true)
        .map(id)
        .filter(|i| !unjudged.contains(i))
        .collect();
    v.sort();
    v
}

/// Run alone on an idle machine (`_clean_`, the last step of
/// `scripts/test`): the site near tmax is judged by how many of its
/// sub-microsecond calls end above 1.5 times tmax, and among the parallel
/// tests a run made while others build and measure can put its clean calls
/// there too. In one CI run of 2026-11-29 the three calibrations agreed
/// within 13 % (tmax 0.47-0.53 us) and the barrier stayed significant
/// against every one of them, scaled by 1.5, while alone it passed.
#[test]
fn verdicts_of_a_clean_run_hold_across_calibrations_and_a_site_near_tmax_is_marginal() {
    let profiles = calibrations();
    // The barrier's waits end at about 1.15 times the lowest tmax: above it,
    // below 1.5 times it, and below the others' tmax when those lie higher.
    let (median, tmax) = profiles
        .iter()
        .map(|p| barrier(p))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("three profiles");
    let near_ns = ((1.15 * tmax - median) * 1e9).max(100.0).round() as u64;
    let run = profile_program(
        "stability_run",
        NP,
        &example("near_tmax"),
        &["10", "20", &near_ns.to_string(), "4000", "10", "1000"],
        &[("MPIOVER_PROFILE", profiles[0].to_str().expect("utf-8"))],
    );
    let injected = injected_s(&run.out, "near_tmax", 1);
    let reports: Vec<Value> = profiles
        .iter()
        .map(|p| report_json(&run.dir, p, &run.out))
        .collect();
    let ctx = reports
        .iter()
        .zip(profiles)
        .map(|(r, p)| {
            format!(
                "against {} (barrier median {:.2} us, tmax {:.2} us):\n{}\nwarnings: {}",
                p.display(),
                barrier(p).0 * 1e6,
                barrier(p).1 * 1e6,
                describe_sites(r),
                r["warnings"]
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
        + &format!("\nspin {near_ns} ns; run directory {}", run.dir.display());

    // The real wait: significant against every calibration, the same
    // overhead within 2 %.
    let waits: Vec<f64> = reports
        .iter()
        .map(|r| {
            let s = site(r, "near-tmax-wait", "MPI_Recv")
                .unwrap_or_else(|| panic!("no MPI_Recv at the near-tmax-wait line\n{ctx}"));
            assert_eq!(s["significant"], true, "{ctx}");
            s["overhead_s"].as_f64().unwrap_or(0.0)
        })
        .collect();
    let (lo, hi) = waits
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), &w| (l.min(w), h.max(w)));
    assert!(
        hi <= 1.02 * lo,
        "the wait's overhead moved with the calibration: {waits:?}\n{ctx}"
    );
    // At least what rank 1 spun: a rank preempted between its spin and its
    // send makes the wait longer, never shorter.
    assert!(
        lo >= 0.85 * injected,
        "the wait's overhead {lo} s of {injected} s injected\n{ctx}"
    );

    // The site near tmax is where that stops holding: marginal against at
    // least one calibration (significant against its tmax, not against a
    // wider one), whatever the others say (on a loaded host its clean
    // barriers alone can exceed a low tmax by more than the spread).
    let near = site(&reports[0], "near-tmax-barrier", "MPI_Barrier")
        .map(id)
        .unwrap_or_else(|| panic!("no barrier site\n{ctx}"));
    let verdicts: Vec<String> = reports
        .iter()
        .map(|r| {
            let s = site(r, "near-tmax-barrier", "MPI_Barrier")
                .unwrap_or_else(|| panic!("no barrier site\n{ctx}"));
            s["significance"].as_str().unwrap_or("").to_string()
        })
        .collect();
    assert!(
        verdicts
            .iter()
            .any(|v| v == "marginal" || v == "within level shift"),
        "the barrier near tmax was not marginal against any calibration: {verdicts:?}\n{ctx}"
    );

    // Every other site: the same significant ones, whichever calibration. A
    // calibration whose entry a budget cut short gives its sites no verdict
    // (`weak tmax`): those are compared where every calibration judged them.
    let mut unjudged: Vec<String> = reports
        .iter()
        .flat_map(sites)
        .filter(|s| s["significance"] == "weak tmax")
        .map(id)
        .collect();
    unjudged.push(near);
    let first = significant(&reports[0], &unjudged);
    for r in &reports[1..] {
        assert_eq!(significant(r, &unjudged), first, "{ctx}");
    }
}

/// A copy of `profile` whose entries' times are scaled by `factor(function,
/// bytes)`, as if it had been measured at a faster latency level.
fn scaled_profile(profile: &Path, factor: impl Fn(&str, u64) -> f64, out: &Path) -> PathBuf {
    let mut v: Value = serde_json::from_str(&read_all(profile)).expect("profile JSON");
    for e in v["entries"].as_array_mut().expect("entries") {
        let f = factor(
            e["function"].as_str().unwrap_or(""),
            e["bytes"].as_u64().unwrap_or(0),
        );
        for k in ["min_s", "median_s", "q90_s", "q99_s", "max_s", "tmax_s"] {
            if let Some(x) = e[k].as_f64() {
                e[k] = Value::from(x * f);
            }
        }
        let e = e.as_object_mut().expect("entry object");
        e.remove("samples");
        e.remove("runs");
        e.remove("median_ci_s");
    }
    let path = out.join("faster.json");
    std::fs::write(&path, serde_json::to_string(&v).expect("JSON")).expect("writing profile");
    path
}

#[test]
fn a_real_wait_is_found_when_the_machine_ran_slower_than_calibrated() {
    let profile = &calibrations()[0];
    let run = profile_program(
        "stability_level_run",
        NP,
        &example("near_tmax"),
        &["10", "5", "0", "1000", "10", "2000"],
        &[("MPIOVER_PROFILE", profile.to_str().expect("utf-8"))],
    );
    let injected = injected_s(&run.out, "near_tmax", 1);
    // Where the run's fast calls lie against this calibration's medians, key
    // by key: a calibration's conditions (windows, a busy host) put them
    // anywhere from a third to twice its medians at the same level, so each
    // entry is scaled to put the run's fast calls at three times its median:
    // the run then looks three times slower than calibrated on every key.
    let r = report_json(&run.dir, profile, &run.out);
    let keys: Vec<(String, u64, f64)> = r["methods"]["stability"]["level"]["keys"]
        .as_array()
        .unwrap_or_else(|| panic!("no level keys: {:#}", r["methods"]))
        .iter()
        .map(|k| {
            let f = k["function"].as_str().unwrap_or("").to_string();
            (
                f,
                k["bytes"].as_u64().unwrap_or(0),
                k["ratio"].as_f64().unwrap_or(1.0),
            )
        })
        .collect();
    assert!(keys.len() >= 2, "{:#}", r["methods"]["stability"]);
    let faster = scaled_profile(
        profile,
        |function, bytes| {
            keys.iter()
                .find(|k| k.0 == function && k.1.max(1) == bytes.max(1))
                .map_or(1.0 / 3.0, |k| k.2 / 3.0)
        },
        &scratch("stability_level_profile"),
    );
    let r = report_json(&run.dir, &faster, &run.out);
    let ctx = format!(
        "{}\nwarnings: {:#}\nlevel: {:#}\nrun directory {}",
        describe_sites(&r),
        r["warnings"],
        r["methods"]["stability"]["level"],
        run.dir.display()
    );
    // Every call looks three times slower than that calibration: the
    // report says so once, with the factor.
    let level = &r["methods"]["stability"]["level"];
    assert_eq!(level["shifted"], true, "{ctx}");
    let factor = level["factor"].as_f64().unwrap_or(0.0);
    assert!(factor >= 1.5, "level factor {factor}\n{ctx}");
    let warned = r["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter(|w| {
            w.as_str()
                .is_some_and(|w| w.contains("slower than calibrated"))
        })
        .count();
    assert_eq!(warned, 1, "{ctx}");
    // The 5 ms waits are still found, with their overhead (at least what
    // rank 1 spun: preemption between its spin and its send adds to it).
    let s = site(&r, "near-tmax-wait", "MPI_Recv").unwrap_or_else(|| panic!("no wait site\n{ctx}"));
    assert_eq!(s["significant"], true, "{ctx}");
    let overhead = s["overhead_s"].as_f64().unwrap_or(0.0);
    assert!(
        overhead >= 0.85 * injected,
        "the 5 ms waits' overhead {overhead} s of {injected} s injected\n{ctx}"
    );
}
