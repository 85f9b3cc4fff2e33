//! `report --profile`: the profile's environment, q_max, and where its
//! tmax values stop being trusted.

use std::path::Path;

use mpiover_common::record::rank_file_name;
use mpiover_report::synth;

use super::{assert_error, fixture_run_in, json_of, mpiover, tmp, write_fixture};

/// The fixture's machine as a calibrated profile: for every key the fixture's
/// calls look up, an exponential error model fitted at q_max 0.9 (the
/// fixture's noise, `synth::fixture_run`), measured with `mpi_library`.
fn write_fixture_profile(path: &Path, mpi_library: &str) {
    write_fixture_profile_per_host(path, mpi_library, 2);
}

/// As [`write_fixture_profile`], calibrated with `per_host` ranks on a host.
fn write_fixture_profile_per_host(path: &Path, mpi_library: &str, per_host: u32) {
    use mpiover_common::functions::profile_key;
    use mpiover_common::profile::{Environment, Method, Profile, ProfileEntry};
    // (function, completed request) -> (floor, mean error) of synth::fixture_run.
    let times = |function: &str, completes: Option<&str>| -> (f64, f64) {
        match (function, completes) {
            ("MPI_Recv", _) => (5e-6, 1e-6),
            ("MPI_Isend", _) => (1e-6, 0.2e-6),
            ("MPI_Wait", Some("MPI_Isend")) => (250e-6, 20e-6),
            ("MPI_Allreduce", _) => (10e-6, 2e-6),
            ("MPI_Bcast", _) => (20e-6, 4e-6),
            ("MPI_Send", _) => (3e-6, 0.5e-6),
            other => panic!("the fixture has a new key {other:?}: add it here"),
        }
    };
    let records = synth::fixture_run(false);
    let mut p = Profile::new(
        Environment {
            hosts: {
                let mut h: Vec<String> = records.iter().map(|r| r.host.clone()).collect();
                h.dedup();
                h
            },
            ranks: 4,
            ranks_per_host: vec![per_host],
            mpi_library: mpi_library.into(),
            ..Default::default()
        },
        Method {
            sync: mpiover_common::profile::SyncMethod::Window,
            q_max: 0.9,
            alpha: 0.05,
            ..Default::default()
        },
    );
    p.environment.timer.resolution_s = 1e-9;
    let mut seen = std::collections::BTreeSet::new();
    for rec in &records {
        for e in rec.entries.iter().filter(|e| e.function != "other") {
            let (f, role, b) = profile_key(
                &e.function,
                e.role.as_deref(),
                e.completes.as_deref(),
                e.p,
                e.bytes,
            );
            if !seen.insert((f.to_string(), role.map(str::to_string), b)) {
                continue;
            }
            let (base, noise) = times(&e.function, e.completes.as_deref());
            let tmax = base + noise * 10f64.ln();
            let entry: ProfileEntry = serde_json::from_value(serde_json::json!({
                "function": f, "p": e.p, "bytes": b, "role": role,
                "n": 1000, "n_invalid": 0, "min_s": base,
                "median_s": base + noise * 2f64.ln(), "q90_s": tmax,
                "q99_s": base + noise * 100f64.ln(), "max_s": base + 10.0 * noise,
                "tmax_s": tmax, "model": "exponential", "lambda": 1.0 / noise,
                "bin_width_s": noise / 50.0, "accepted": true, "fallback": false
            }))
            .expect("profile entry");
            p.push_entry(entry);
        }
    }
    assert!(seen.len() >= 6, "{seen:?}");
    p.save_atomic(path).expect("writes the profile");
}

/// A profile measured with another MPI library still gives a report (exit 0),
/// with a warning naming the mismatch: in the text, and on stderr beside JSON.
/// The same profile with the run's own library gives no such warning.
#[test]
fn a_profile_for_another_mpi_is_a_warning() {
    let d = tmp("other-mpi");
    let (run, own_lib) = fixture_run_in(&d);
    let rs = run.to_str().unwrap();
    let own = d.join("own.json");
    write_fixture_profile(&own, &own_lib);
    let other = d.join("mpich.json");
    write_fixture_profile(&other, "MPICH Version: 4.0.2");

    // Control: the matching profile warns about nothing.
    let out = mpiover(&["report", rs, "--profile", own.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("another environment"), "{text}");
    assert!(text.contains("environment matches the run"), "{text}");
    // METHODS says where the profile's tmax values come from.
    let p = mpiover_common::profile::Profile::load(&own).unwrap();
    let n = p.entries.len();
    assert!(
        text.contains(&format!(
            "tmax from an error model on {n} of {n} entries (exponential {n}), the empirical 0.9 quantile on 0"
        )),
        "{text}"
    );
    let v = json_of(&mpiover(&[
        "report",
        rs,
        "--profile",
        own.to_str().unwrap(),
        "-f",
        "json",
    ]));
    assert_eq!(
        v["methods"]["lookups"]["out_of_range_calls"], 0,
        "{}",
        v["methods"]
    );
    assert_eq!(
        v["methods"]["lookups"]["missing_calls"], 0,
        "{}",
        v["methods"]
    );
    assert_eq!(v["summary"]["ranked_by"], "overhead");
    assert_eq!(v["methods"]["profile"]["tmax_from"]["empirical"], 0);
    assert_eq!(
        v["methods"]["profile"]["tmax_from"]["models"]["exponential"],
        n
    );

    let out = mpiover(&["report", rs, "--profile", other.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let warnings = text
        .split("WARNINGS")
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        warnings.contains("mpich.json")
            && warnings.contains("another environment")
            && warnings.contains("MPICH Version: 4.0.2"),
        "{warnings}"
    );
    assert!(
        text.contains("environment does NOT match the run"),
        "{text}"
    );
    // The overhead is still computed.
    assert!(text.contains("ranked by overhead"), "{text}");

    let out = mpiover(&[
        "report",
        rs,
        "--profile",
        other.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = json_of(&out);
    assert!(
        err.lines().any(|l| l.starts_with("mpiover: warning: ")
            && l.contains("another environment")
            && l.contains("MPICH Version: 4.0.2")),
        "{err}"
    );
    assert_eq!(v["methods"]["profile"]["matched"], false);
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("another environment")),
        "{}",
        v["warnings"]
    );
}

/// A JSON file that is not a profile, given as --profile: one error naming it.
#[test]
fn a_json_file_that_is_not_a_profile() {
    let d = tmp("not-a-profile");
    write_fixture(&d, false);
    let ds = d.to_str().unwrap();
    // A run record is JSON with a schema, but not a profile's.
    let rec = d.join(rank_file_name(0));
    assert_error(
        &mpiover(&["report", ds, "--profile", rec.to_str().unwrap()]),
        &["rank-000000.json", "profile"],
    );
    let plain = d.join("settings.json");
    std::fs::write(&plain, r#"{"ranks": 4, "q_max": 0.9}"#).unwrap();
    assert_error(
        &mpiover(&["report", ds, "--profile", plain.to_str().unwrap()]),
        &["settings.json", "not an mpiover profile"],
    );
    let list = d.join("list.json");
    std::fs::write(&list, "[1, 2, 3]").unwrap();
    assert_error(
        &mpiover(&["report", ds, "--profile", list.to_str().unwrap()]),
        &["list.json"],
    );
}

/// `--q` re-computes tmax from the profile's models: a lower q_max gives a
/// lower tmax and at least as much overhead at every site.
#[test]
fn q_changes_tmax_and_overhead() {
    let d = tmp("q");
    let (run, lib) = fixture_run_in(&d);
    let rs = run.to_str().unwrap();
    let prof = d.join("profile.json");
    write_fixture_profile(&prof, &lib);
    let ps = prof.to_str().unwrap();
    let at = |q: &str| {
        json_of(&mpiover(&[
            "report",
            rs,
            "--profile",
            ps,
            "--q",
            q,
            "-f",
            "json",
        ]))
    };
    let lo = at("0.8");
    let hi = at("0.99");
    assert_eq!(lo["methods"]["q_max"], 0.8);
    assert_eq!(hi["methods"]["q_max"], 0.99);
    let key = |s: &serde_json::Value| format!("{} {}", s["location"], s["mpi_function"]);
    let mut compared = 0;
    for s in lo["sites"].as_array().unwrap() {
        let t = hi["sites"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| key(t) == key(s))
            .unwrap_or_else(|| panic!("{} missing at q 0.99", key(s)));
        let (Some(tl), Some(th)) = (s["tmax_s"].as_f64(), t["tmax_s"].as_f64()) else {
            assert!(s["tmax_s"].is_null() && t["tmax_s"].is_null(), "{}", key(s));
            continue;
        };
        assert!(tl < th, "{}: tmax {tl} at 0.8, {th} at 0.99", key(s));
        let (ol, oh) = (
            s["overhead_s"].as_f64().unwrap(),
            t["overhead_s"].as_f64().unwrap(),
        );
        assert!(ol >= oh, "{}: overhead {ol} at 0.8, {oh} at 0.99", key(s));
        compared += 1;
    }
    assert!(compared >= 6, "{compared} sites with a tmax");
    let (ol, oh) = (
        lo["summary"]["overhead_s"].as_f64().unwrap(),
        hi["summary"]["overhead_s"].as_f64().unwrap(),
    );
    assert!(ol > oh, "summary overhead {ol} at 0.8, {oh} at 0.99");
    // The text names the q_max it used.
    let out = mpiover(&["report", rs, "--profile", ps, "--q", "0.8"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("q_max 0.8,"), "{text}");
    assert!(text.contains("re-computed at q_max = 0.8"), "{text}");

    for bad in ["1.0", "0.5", "0", "-0.9", "1.5", "NaN", "inf"] {
        assert_error(
            &mpiover(&["report", rs, "--profile", ps, &format!("--q={bad}")]),
            &["--q", "0.8", bad.trim_end_matches(".0")],
        );
    }
    // Not a number: clap's usage error, also exit 2.
    let out = mpiover(&["report", rs, "--profile", ps, "--q", "x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
}

/// `report --profile` compares the run's ranks per host with the profile's,
/// as recording does: a profile calibrated with one rank per host said
/// "environment matches the run" for the fixture's two ranks per host.
#[test]
fn report_profile_checks_ranks_per_host() {
    let d = tmp("per-host");
    let (run, own_lib) = fixture_run_in(&d);
    let one = d.join("one-per-host.json");
    write_fixture_profile_per_host(&one, &own_lib, 1);
    let out = mpiover(&[
        "report",
        run.to_str().unwrap(),
        "--profile",
        one.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("environment does NOT match the run"),
        "{text}"
    );
    assert!(
        text.contains("2 ranks on a host, the profile was measured with at most 1 per host"),
        "{text}"
    );
}

/// A site whose calls lie outside the profile's measured range is marked in
/// the SITES table and the HTML, not only counted in the JSON: NPB LU's
/// 620 B messages looked up a weak 1000 B edge and nothing said so.
#[test]
fn out_of_range_sites_are_marked_in_text_and_html() {
    use mpiover_common::profile::Profile;
    let d = tmp("oor");
    let (run, own_lib) = fixture_run_in(&d);
    let full = d.join("full.json");
    write_fixture_profile(&full, &own_lib);
    // The same profile measured only up to half of every size.
    let mut p = Profile::load(&full).unwrap();
    for e in &mut p.entries {
        e.bytes /= 2;
    }
    p.invalidate_index();
    let half = d.join("half.json");
    p.save_atomic(&half).unwrap();
    let (rs, hs) = (run.to_str().unwrap(), half.to_str().unwrap());
    let v = json_of(&mpiover(&[
        "report",
        rs,
        "--profile",
        hs,
        "-f",
        "json",
        "--top",
        "50",
    ]));
    let marked: Vec<u64> = v["sites"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["out_of_range_calls"].as_u64().unwrap_or(0) > 0)
        .map(|s| s["rank"].as_u64().unwrap())
        .collect();
    assert!(!marked.is_empty(), "{}", v["sites"]);
    let out = mpiover(&["report", rs, "--profile", hs, "--top", "50"]);
    let text = String::from_utf8_lossy(&out.stdout);
    for r in &marked {
        assert!(
            text.contains(&format!("  * #{r}: "))
                && text.contains("outside the profile's measured range"),
            "site {r}: {text}"
        );
    }
    let html = d.join("r.html");
    let out = mpiover(&["report", rs, "--profile", hs, "-o", html.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(">out of range</span>"),
        "no marker in the HTML"
    );
    // With the full profile nothing is marked.
    let out = mpiover(&[
        "report",
        rs,
        "--profile",
        full.to_str().unwrap(),
        "--top",
        "50",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("outside the profile's measured range"),
        "{text}"
    );
}
