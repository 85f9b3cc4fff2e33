//! Mutants that broke a reader, kept as files
//! (`report/tests/fixtures/fuzz-regressions/`), each a test named after
//! what it broke: they must give what they give now.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::{guarded_run, Outcome, FORMATS};

fn mutant(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fuzz-regressions")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Runs a kept mutant as mutant `index` of `format`; its outcome and time.
fn run(format: &str, name: &str, index: u64) -> (Outcome, Duration) {
    let f = FORMATS.iter().position(|n| *n == format).unwrap();
    let env = super::env_for(format);
    super::quiet_panics();
    super::limits::start_watchdog();
    let start = Instant::now();
    let o = guarded_run(&env, f, index, &mutant(name));
    let t = start.elapsed();
    let _ = std::fs::remove_dir_all(env.dir.parent().unwrap());
    (o, t)
}

fn error_of(o: Outcome) -> String {
    match o {
        Outcome::CleanError(msg) => msg,
        other => panic!("expected one clear error, got {other:?}"),
    }
}

/// A merged log whose site held a per-rank row of rank 236 in a world of 2
/// made the HTML heat map index past its columns (a panic).
#[test]
fn a_merged_row_of_a_rank_the_log_does_not_hold_is_a_corrupt_log() {
    let msg = error_of(run("log", "log-row-of-a-rank-not-held", 2100).0);
    assert!(
        msg.contains("corrupt job log at byte")
            && msg.contains("per-rank row of rank 236, which the log does not hold"),
        "{msg}"
    );
}

/// A merged log's header claiming 2^31 ranks made the run check list
/// every missing rank: 8 GiB and 35 s, now a warning of two ranges.
#[test]
fn a_log_claiming_billions_of_ranks_is_read_in_bounded_memory() {
    let (o, t) = run("log", "log-claims-2-billion-ranks", 1211);
    assert_eq!(o, Outcome::Ok);
    assert!(t < Duration::from_secs(5), "{t:?}");
}

/// A sample file holding a run-time of 1e308 s put the Poisson model's
/// mean at 6e13 classes, where its tail took 4 s to evaluate.
#[test]
fn a_run_time_of_1e308_s_is_fitted_in_well_under_a_second() {
    let (o, t) = run("fit", "fit-a-run-time-of-1e308-s", 34);
    assert_eq!(o, Outcome::Ok);
    assert!(t < Duration::from_secs(2), "{t:?}");
}

/// A profile whose enum field held the MPI library's multi-line build
/// string: serde repeats the unknown value back, and the error spanned
/// lines.
#[test]
fn an_unknown_value_with_line_breaks_is_quoted_on_one_line() {
    let msg = error_of(run("profile", "profile-unknown-value-with-line-breaks", 209127).0);
    assert!(msg.contains("not valid JSON: unknown variant"), "{msg}");
}

/// A profile's schema of another version holding a line break was quoted
/// as it is.
#[test]
fn a_schema_with_a_line_break_is_quoted_escaped() {
    let msg = error_of(run("profile", "profile-schema-with-a-line-break", 333357).0);
    assert!(msg.contains("schema \"mpiover-profile/1022\\n"), "{msg}");
}

/// A merged log whose index lost its rows (its count set to 0) was
/// reported as a run directory holding no records: the error named the
/// directory, not the log that is wrong.
#[test]
fn a_job_log_with_an_empty_index_is_an_error_naming_the_log() {
    let msg = error_of(run("log", "log-with-an-empty-index", 4542).0);
    assert!(
        msg.contains("job.mpiover-log") && msg.contains("holds no rank (its index is empty)"),
        "{msg}"
    );
}

/// A merged log's payload holding a string with a line break where the
/// decoder expected a name: it repeats the unknown value back, and the
/// error spanned lines.
#[test]
fn a_payload_value_with_line_breaks_is_quoted_on_one_line() {
    let msg = error_of(run("log", "log-unknown-value-with-line-breaks", 630514).0);
    assert!(
        msg.contains("corrupt job log at byte") && msg.contains("unknown variant"),
        "{msg}"
    );
}
