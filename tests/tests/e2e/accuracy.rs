//! The accuracy suite: `examples/accuracy.c` injects waits
//! of known size at known lines (a late sender, a late receiver of 1 MiB
//! messages, a late rank before `MPI_Allreduce` and before `MPI_Barrier`,
//! with four different delays) and has clean sites. It runs under
//! `mpiover record` with a profile of this machine from a quick calibration,
//! and `mpiover report --profile P --format json` must attribute each
//! injected wait to its line (overhead within 10 % of the delay the program
//! measured), name its wait state and its late rank, and flag no clean site.

use std::sync::OnceLock;

use serde_json::Value;

use crate::harness::*;

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

/// How long the late receiver's own receives took, summed (seconds), as it
/// measured them; zero for the other sites. Its sender waits for the sleep and
/// then for the transfer, which right after a sleep runs several times slower
/// than in the calibration's back-to-back calls (see `examples/accuracy.c`):
/// that part of the wait is the receiver's too, and the report rightly counts
/// it as the send's overhead.
fn received_at(out: &Outcome, tag: &str) -> f64 {
    let prefix = format!("accuracy: site {tag} rank ");
    out.stderr
        .lines()
        .find_map(|l| {
            let (_, rest) = l.strip_prefix(&prefix)?.split_once(" received ")?;
            rest.strip_suffix(" ms")?.parse::<f64>().ok()
        })
        .map_or(0.0, |ms| ms / 1e3)
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
        let waited = injected + received_at(&r.out, i.tag);
        let overhead = s["overhead_s"]
            .as_f64()
            .unwrap_or_else(|| panic!("{}: no overhead_s\n{s:#}\n{context}", i.tag));
        assert_close(
            &format!("{} overhead at accuracy.c:{line}", i.tag),
            overhead,
            waited * f64::from(i.waiting_ranks),
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
    // A run whose clean sites came out shifted against a calibration from a
    // quieter moment is repeated against a calibration measured anew (at
    // most three runs in all), as the clean ping-pong and halo checks are: a
    // profiler that flags clean sites fails all three.
    let mut attempt = 1;
    loop {
        let (fresh, run);
        let r = if attempt == 1 {
            accuracy_run()
        } else {
            fresh = fresh_calibrated_profile(&format!("accuracy_calibration_{attempt}"));
            run = record("accuracy_clean_again", NP, "accuracy", &[], &fresh);
            &run
        };
        let problems = clean_site_problems(r);
        if problems.is_empty() {
            return;
        }
        assert!(attempt < 3, "{}", problems.join("\n"));
        eprintln!(
            "e2e: accuracy_clean: run {attempt} flagged, again: {}",
            problems
                .first()
                .map_or("", |p| p.lines().next().unwrap_or(""))
        );
        attempt += 1;
    }
}

/// What a user would object to at the clean sites of an accuracy run.
fn clean_site_problems(r: &Recorded) -> Vec<String> {
    let context = context(r);
    let mut problems = Vec::new();
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
        // Structural: the profiler's whatever the machine did.
        assert!(
            s["calls"].as_u64().is_some_and(|c| c >= 1000),
            "{tag}: a clean site needs many calls for the test to mean something\n{s:#}"
        );
        assert!(
            s["overhead_s"].is_number(),
            "{tag}: no overhead_s (no tmax?)\n{s:#}\n{context}"
        );
        if s["significant"] != false {
            problems.push(format!("{tag}: a clean site flagged\n{s:#}\n{context}"));
        }
        // A clean site may be `marginal` or `within level shift`: significant
        // against this calibration's tmax, cleared by a wider one.
        let cleared = [
            "not significant",
            "negligible",
            "marginal",
            "within level shift",
        ];
        if !cleared.iter().any(|v| s["significance"] == *v) {
            problems.push(format!("{tag}: {}\n{s:#}\n{context}", s["significance"]));
        }
        let share = s["overhead_s"].as_f64().unwrap_or(0.0)
            / r.report["summary"]["mpi_time_s"]
                .as_f64()
                .unwrap_or(f64::INFINITY);
        if share >= 0.001 {
            problems.push(format!(
                "{tag}: a clean site holds {:.3} % of the MPI time as overhead\n{s:#}\n{context}",
                share * 100.0
            ));
        }
    }
    problems
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
