//! Root causes over the whole stretch since the ranks last met, checked on
//! the per-rank records and on the merged job log of one run alike:
//!
//! - a halo exchange whose late rank works before posting its receives
//!   (`examples/nonblocking/halo3d.c`): the late rank's code from the `MPI_Waitall` to the
//!   `MPI_Irecv` is named, with the excess it slept;
//! - four phases one after another, each with its own late rank
//!   (`examples/accuracy.c`): every cause lies in its own phase, and no site's
//!   causes claim more than its overhead;
//! - a wildcard receive: the late sender its status named;
//! - a barrier, a late sender after it and a collective after that
//!   (`root_cause phases`): each wait has its own cause, and no chain
//!   crosses the barrier or the point-to-point phase;
//! - a few late sends after a loop of many through the same helper
//!   (`root_cause tail`): the code before the late sends, not the loop's.

use serde_json::Value;

use crate::harness::*;

fn causes(site: &Value) -> &[Value] {
    site["root_causes"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// One end of a cause's region: (line, MPI function).
fn end(c: &Value, which: &str) -> (u64, String) {
    let e = &c["region"][which];
    (
        e["line"].as_u64().unwrap_or(0),
        e["mpi_function"].as_str().unwrap_or("?").to_string(),
    )
}

/// A run recorded in both formats, reported from each against the profile
/// it was recorded with: (outcome, [per-rank records' report, job log's],
/// the per-rank records' directory).
fn record_both(
    test: &str,
    np: u32,
    program: &std::path::Path,
    args: &[&str],
    prof: &std::path::Path,
) -> (Outcome, [Value; 2], std::path::PathBuf) {
    let (out, log_only, files_only) = record_both_formats(test, np, program, args, prof);
    let reports = [
        report_json(&files_only, prof, &out),
        report_json(&log_only, prof, &out),
    ];
    (out, reports, files_only)
}

const FORMATS: [&str; 2] = ["per-rank records", "job log"];

/// Every site's causes claim at most its overhead, together.
fn assert_shares_add_up(report: &Value, what: &str) {
    for s in sites(report) {
        let sum: f64 = causes(s).iter().filter_map(|c| c["share"].as_f64()).sum();
        assert!(
            sum <= 1.0 + 1e-9,
            "{what}: causes claim {:.0} % of {} {}\n{s:#}",
            sum * 1e3 / 10.0,
            s["location"],
            s["mpi_function"]
        );
        if let Some(x) = s["root_causes_share"].as_f64() {
            // The listed causes' shares, and those beyond the five listed.
            assert!(x <= 1.0 + 1e-9 && x + 1e-6 >= sum.min(1.0), "{what}: {s:#}");
            if causes(s).len() < 5 {
                assert!((x - sum).abs() < 1e-6, "{what}: {s:#}");
            }
        }
    }
}

/// The site tagged `tag` in `examples/<path>`.
fn site_of<'a>(report: &'a Value, path: &str, tag: &str, mpi: &str, what: &str) -> &'a Value {
    let file = path.rsplit('/').next().unwrap_or(path);
    site_at(report, file, marker(path, tag), mpi).unwrap_or_else(|| {
        panic!(
            "{what}: no {mpi} site at {file}:{tag}\n{}",
            describe_sites(report)
        )
    })
}

#[test]
fn root_cause_of_a_halo_whose_late_rank_computes_before_posting_its_receives() {
    const FILE: &str = "nonblocking/halo3d.c";
    let (out, reports, _) = record_both(
        "root_cause_of_a_halo_whose_late_rank_computes_before_posting_its_receives",
        2,
        &example_in("nonblocking", "halo3d"),
        &["20", "20", "1"],
        // What the exchange calls, the completion's k-neighbour exchange
        // included.
        &quick_profile(
            "root_cause_halo_calibration",
            2,
            "MPI_Wait,MPI_Waitall,MPI_Isend,MPI_Irecv,MPI_Barrier,MPI_Reduce",
            "8,64,512",
        ),
    );
    let injected = injected_s(&out, "halo3d", 1);
    for (report, what) in reports.iter().zip(FORMATS) {
        let s = site_of(report, FILE, "halo-waitall", "MPI_Waitall", what);
        assert_eq!(s["wait_state"], "Late Sender", "{what}: {s:#}");
        let c = causes(s)
            .first()
            .unwrap_or_else(|| panic!("{what}: no root cause\n{s:#}\n{}", out.dump()));
        assert_eq!(c["rank"], 1, "{what}: {c:#}");
        assert_eq!(
            end(c, "from"),
            (
                u64::from(marker(FILE, "halo-waitall")),
                "MPI_Waitall".into()
            ),
            "{what}: {c:#}"
        );
        assert_eq!(
            end(c, "to"),
            (u64::from(marker(FILE, "halo-irecv")), "MPI_Irecv".into()),
            "{what}: {c:#}"
        );
        let excess = c["excess_s"].as_f64().expect("excess_s");
        assert!(
            (excess - injected).abs() <= 0.15 * injected,
            "{what}: excess {:.1} ms, rank 1 slept {:.1} ms\n{c:#}",
            excess * 1e3,
            injected * 1e3
        );
        assert!(
            c["share"].as_f64().is_some_and(|x| x > 0.5),
            "{what}: {c:#}"
        );
        assert_shares_add_up(report, what);
    }
}

#[test]
fn root_causes_of_phases_one_after_another_stay_in_their_phase() {
    const FILE: &str = "accuracy.c";
    let (out, reports, _) = record_both(
        "root_causes_of_phases_one_after_another_stay_in_their_phase",
        2,
        &example("accuracy"),
        &["5", "200"],
        calibrated_profile(),
    );
    let l = |tag: &str| u64::from(marker(FILE, tag));
    // (wait site, its call, late rank, the late rank's matching line, the
    // lines its region may begin at: its calls of the same phase and its
    // last call of the phase before).
    let phases = [
        (
            "accuracy-late-sender-recv",
            "MPI_Recv",
            1,
            l("accuracy-late-sender-send"),
            vec![l("accuracy-late-sender-send")],
        ),
        (
            "accuracy-late-receiver-send",
            "MPI_Send",
            0,
            l("accuracy-late-receiver-recv"),
            vec![
                l("accuracy-late-sender-recv"),
                l("accuracy-late-receiver-recv"),
            ],
        ),
        (
            "accuracy-late-allreduce",
            "MPI_Allreduce",
            1,
            l("accuracy-late-allreduce"),
            vec![
                l("accuracy-late-receiver-send"),
                l("accuracy-late-allreduce"),
            ],
        ),
        (
            "accuracy-late-barrier",
            "MPI_Barrier",
            0,
            l("accuracy-late-barrier"),
            vec![l("accuracy-late-allreduce"), l("accuracy-late-barrier")],
        ),
    ];
    let marked: Vec<u64> = phases.iter().flat_map(|p| p.4.clone()).collect();
    for (report, what) in reports.iter().zip(FORMATS) {
        for (tag, mpi, late, to, from) in &phases {
            let s = site_of(report, FILE, tag, mpi, what);
            let cs = causes(s);
            assert!(
                !cs.is_empty(),
                "{what}: no cause at {tag}\n{s:#}\n{}",
                out.dump()
            );
            for c in cs {
                assert_eq!(
                    c["rank"], *late,
                    "{what}: a cause of {tag} on another rank\n{s:#}"
                );
                assert_eq!(
                    end(c, "to").0,
                    *to,
                    "{what}: {tag}: a cause of another phase\n{s:#}"
                );
                let f = end(c, "from").0;
                // A first pass may begin at a call before the phases (MPI_Init).
                assert!(
                    from.contains(&f) || !marked.contains(&f),
                    "{what}: {tag}: a region from another phase\n{s:#}"
                );
                assert!(
                    c["via"].as_array().is_none_or(Vec::is_empty),
                    "{what}: {c:#}"
                );
            }
        }
        // The clean exchanges after the phases: none of their short waits
        // is charged to a phase's late code.
        let waits: Vec<u64> = phases.iter().map(|p| l(p.0)).collect();
        for s in sites(report) {
            if s["line"].as_u64().is_some_and(|x| waits.contains(&x)) {
                continue;
            }
            // (A region may begin at the last phase's last call: the
            // clean exchanges' own code starts there.)
            for c in causes(s) {
                assert!(
                    !marked.contains(&end(c, "to").0),
                    "{what}: a phase's code named at a site of the clean exchanges\n{s:#}"
                );
            }
        }
        assert_shares_add_up(report, what);
    }
}

#[test]
fn root_cause_of_a_wildcard_receive_is_the_sender_its_status_named() {
    const FILE: &str = "root_cause.c";
    let (out, reports, _) = record_both(
        "root_cause_of_a_wildcard_receive_is_the_sender_its_status_named",
        3,
        &example("root_cause"),
        &["wildcard", "10", "30"],
        calibrated_profile(),
    );
    let injected = injected_s(&out, "root_cause", 2);
    for (report, what) in reports.iter().zip(FORMATS) {
        let s = site_of(report, FILE, "rc-any-recv", "MPI_Recv", what);
        assert_eq!(s["wait_state"], "Late Sender", "{what}: {s:#}");
        let c = causes(s)
            .first()
            .unwrap_or_else(|| panic!("{what}: no root cause\n{s:#}\n{}", out.dump()));
        assert_eq!(c["rank"], 2, "{what}: {c:#}");
        assert_eq!(
            end(c, "from").0,
            u64::from(marker(FILE, "rc-any-barrier")),
            "{what}: {c:#}"
        );
        assert_eq!(
            end(c, "to").0,
            u64::from(marker(FILE, "rc-any-send")),
            "{what}: {c:#}"
        );
        let excess = c["excess_s"].as_f64().expect("excess_s");
        assert!(
            (excess - injected).abs() <= 0.15 * injected,
            "{what}: excess {:.1} ms, rank 2 slept {:.1} ms\n{c:#}",
            excess * 1e3,
            injected * 1e3
        );
        assert_shares_add_up(report, what);
    }
}

#[test]
fn root_causes_of_a_collective_after_point_to_point_phases_do_not_cross_them() {
    const FILE: &str = "root_cause.c";
    let (out, reports, _) = record_both(
        "root_causes_of_a_collective_after_point_to_point_phases_do_not_cross_them",
        3,
        &example("root_cause"),
        &["phases", "10", "20"],
        calibrated_profile(),
    );
    let l = |tag: &str| u64::from(marker(FILE, tag));
    let slept: Vec<f64> = (0..3).map(|r| injected_s(&out, "root_cause", r)).collect();
    for (report, what) in reports.iter().zip(FORMATS) {
        // The late sender after the barrier: rank 1's code after it, and
        // nothing of rank 0's, which was late to the barrier itself.
        let s = site_of(report, FILE, "rc-ph-recv", "MPI_Recv", what);
        let cs = causes(s);
        assert!(
            !cs.is_empty(),
            "{what}: no cause at the receive\n{s:#}\n{}",
            out.dump()
        );
        for c in cs {
            assert_eq!(c["rank"], 1, "{what}: a chain crossed the barrier\n{s:#}");
            assert_eq!(end(c, "from").0, l("rc-ph-barrier"), "{what}: {s:#}");
            assert_eq!(end(c, "to").0, l("rc-ph-send"), "{what}: {s:#}");
        }
        // The collective: the last rank's code since the barrier, with
        // what it slept beyond the others' time to get there.
        let s = site_of(report, FILE, "rc-ph-allreduce", "MPI_Allreduce", what);
        let cs = causes(s);
        let c = cs
            .first()
            .unwrap_or_else(|| panic!("{what}: no cause at the Allreduce\n{s:#}\n{}", out.dump()));
        for c in cs {
            assert_eq!(c["rank"], 2, "{what}: {s:#}");
            assert_eq!(end(c, "from").0, l("rc-ph-barrier"), "{what}: {s:#}");
            assert_eq!(end(c, "to").0, l("rc-ph-allreduce"), "{what}: {s:#}");
        }
        let expected = slept[2] - slept[1];
        let excess = c["excess_s"].as_f64().expect("excess_s");
        assert!(
            (excess - expected).abs() <= 0.15 * expected,
            "{what}: excess {:.1} ms, rank 2 slept {:.1} ms more than rank 1\n{c:#}",
            excess * 1e3,
            expected * 1e3
        );
        // The barrier: rank 0's own code before it.
        let s = site_of(report, FILE, "rc-ph-barrier", "MPI_Barrier", what);
        for c in causes(s) {
            assert_eq!(c["rank"], 0, "{what}: {s:#}");
            assert_eq!(end(c, "to").0, l("rc-ph-barrier"), "{what}: {s:#}");
        }
        assert_shares_add_up(report, what);
    }
}

#[test]
fn root_cause_of_a_site_of_few_calls_after_a_loop_of_many() {
    const FILE: &str = "root_cause.c";
    let (out, reports, _) = record_both(
        "root_cause_of_a_site_of_few_calls_after_a_loop_of_many",
        2,
        &example("root_cause"),
        &["tail", "3", "30", "1"],
        calibrated_profile(),
    );
    let late = injected_s(&out, "root_cause-late", 1);
    for (report, what) in reports.iter().zip(FORMATS) {
        let s = site_of(report, FILE, "rc-tail-recv", "MPI_Recv", what);
        assert_eq!(s["wait_state"], "Late Sender", "{what}: {s:#}");
        let cs = causes(s);
        let c = cs
            .first()
            .unwrap_or_else(|| panic!("{what}: no root cause\n{s:#}\n{}", out.dump()));
        for c in cs {
            assert_eq!(c["rank"], 1, "{what}: {s:#}");
            assert_eq!(
                end(c, "from").0,
                u64::from(marker(FILE, "rc-tail-barrier")),
                "{what}: the loop's code is not why the sends after it were late\n{s:#}"
            );
            assert_eq!(
                end(c, "to").0,
                u64::from(marker(FILE, "rc-tail-send")),
                "{what}: {s:#}"
            );
        }
        let excess = c["excess_s"].as_f64().expect("excess_s");
        assert!(
            (excess - late).abs() <= 0.15 * late,
            "{what}: excess {:.1} ms, rank 1 slept {:.1} ms before its late sends\n{c:#}",
            excess * 1e3,
            late * 1e3
        );
        assert_shares_add_up(report, what);
    }
}

/// A wavefront (`wavefront.c`, 2 x 1 ranks, four sweep directions): every
/// rank does the same work per block, and the waiting is the pipeline's fill
/// and drain. No late rank's extra work explains most of it, and the text
/// report says how much it leaves unexplained.
#[test]
fn root_causes_of_a_pipeline_leave_its_fill_and_drain_unexplained() {
    let test = "root_causes_of_a_pipeline_leave_its_fill_and_drain_unexplained";
    let prof = calibrated_profile();
    let (out, reports, files_only) =
        record_both(test, 2, &example("wavefront"), &["6", "10"], prof);
    for (report, what) in reports.iter().zip(FORMATS) {
        let s = site_of(
            report,
            "wavefront.c",
            "wavefront-recv-helper",
            "MPI_Recv",
            what,
        );
        assert_eq!(
            s["wait_state"],
            "Late Sender",
            "{what}: {s:#}\n{}",
            out.dump()
        );
        assert_eq!(s["significant"], true, "{what}: {s:#}");
        let share = s["root_causes_share"]
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: no root_causes_share\n{s:#}"));
        assert!(
            share <= 0.5,
            "{what}: every rank works alike, yet causes explain {:.0} % of the pipeline's waits\n{s:#}",
            share * 100.0
        );
        assert_shares_add_up(report, what);
    }
    let text = std::process::Command::new(mpiover_bin())
        .arg("report")
        .arg(&files_only)
        .arg("--profile")
        .arg(prof)
        .env_remove("LD_PRELOAD")
        .output()
        .expect("mpiover report");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines().any(|l| l.contains(" of the overhead (")
            && l.contains("is not explained by extra work of a late rank")),
        "the text report does not say what is left unexplained:\n{text}"
    );
}

/// A balanced program: no cause at any site, in the job log as in the
/// per-rank records.
#[test]
fn root_cause_of_a_balanced_program_is_none_in_either_format() {
    let (out, reports, _) = record_both(
        "root_cause_of_a_balanced_program_is_none_in_either_format",
        2,
        &example("root_cause"),
        &["balanced", "20", "0", "10"],
        calibrated_profile(),
    );
    for (report, what) in reports.iter().zip(FORMATS) {
        assert!(
            report["regions"].as_array().is_some_and(|v| !v.is_empty()),
            "{what}: no regions\n{}",
            out.dump()
        );
        for s in sites(report) {
            assert!(
                causes(s).is_empty(),
                "{what}: a root cause in a balanced program:\n{s:#}"
            );
        }
    }
}
