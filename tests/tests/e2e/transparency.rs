//! The profiler must not change what a program does: every example's stdout
//! and mpirun's exit status are the same with and without the preload.
//! (The crash and no-finalize examples are compared in `robustness`.)

use crate::harness::*;

fn same_with_and_without(
    test: &str,
    np: u32,
    example_name: &str,
    args: &[&str],
) -> (Outcome, Outcome) {
    let dir = scratch(test);
    let plain = Job::new(np, example_name, args, &dir).run();
    plain.assert_success();
    assert!(
        !plain.stdout.is_empty(),
        "{example_name} printed nothing\n{}",
        plain.dump()
    );
    let prof = Job::new(np, example_name, args, &dir)
        .profiled(&dir.join("run"))
        .run();
    assert_eq!(
        prof.code(),
        plain.code(),
        "exit status differs with the preload\n{}",
        prof.dump()
    );
    assert_eq!(
        prof.stdout,
        plain.stdout,
        "stdout differs with the preload\n=== without\n{}\n=== with\n{}",
        plain.dump(),
        prof.dump()
    );
    (plain, prof)
}

macro_rules! transparent {
    ($name:ident, $np:expr, $example:expr, [$($arg:expr),*]) => {
        #[test]
        fn $name() {
            same_with_and_without(stringify!($name), $np, $example, &[$($arg),*]);
        }
    };
}

transparent!(transparency_late_sender, 2, "late_sender", ["5", "5"]);
transparent!(
    transparency_late_sender_4_ranks,
    4,
    "late_sender",
    ["3", "5"]
);
transparent!(transparency_late_receiver, 2, "late_receiver", ["3", "5"]);
transparent!(
    transparency_imbalanced_allreduce,
    3,
    "imbalanced_allreduce",
    ["3", "5"]
);
transparent!(transparency_wavefront, 3, "wavefront", []);
transparent!(transparency_datatypes, 4, "datatypes", []);
transparent!(transparency_datatypes_2_ranks, 2, "datatypes", []);
transparent!(transparency_pingpong, 2, "pingpong", []);
transparent!(transparency_alltoallw, 3, "alltoallw", ["4", "5", "1"]);
// Regression: the tool's load-time check (is the program on the MPI this
// build was made for?) ran on the program's stack, where `main`'s frame is
// later: an uninitialized status in `main` then read differently, and
// MPICH's `pt2pt/rqstatus` failed under Open MPI with the tool.
transparent!(transparency_stack_residue, 2, "stack_residue", []);

/// What the program asks MPI about itself (thread level granted and queried,
/// `MPI_Is_thread_main` on the main and on another thread, `MPI_Initialized`
/// and `MPI_Finalized`, `MPI_COMM_WORLD`'s error handler and attributes,
/// `MPI_Pcontrol`'s return, its own attribute callbacks) is the same with
/// the preload, per-rank records and job log alike. Regression: the tool's
/// `MPI_T` query of the eager limit at `MPI_Init` used to make Open MPI's
/// `MPI_Query_thread` answer `MPI_THREAD_SINGLE` after
/// `MPI_Init_thread(MPI_THREAD_MULTIPLE)` had provided it; the job log's
/// merge used to duplicate `MPI_COMM_WORLD`, running the program's copy
/// callbacks.
fn thread_level_same_with_and_without(how: &str) {
    let test = format!("thread_level_{how}");
    let dir = scratch(&test);
    let prog = example_in("threads", "thread_level");
    // Each rank writes its facts into its own file: a launcher may cut the
    // lines of two ranks into each other on a shared stdout.
    let facts = |name: &str| -> (Job, std::path::PathBuf) {
        let out = dir.join(name);
        std::fs::create_dir_all(&out).expect("facts directory");
        let out_s = out.display().to_string();
        (Job::program(2, &prog, &[how, &out_s], &dir), out)
    };
    let read = |out: &std::path::Path| {
        (0..2)
            .map(|r| read_all(&out.join(format!("facts-{r}.txt"))))
            .collect::<Vec<_>>()
            .join("")
    };
    let (job, out) = facts("without");
    let plain = job.run();
    plain.assert_success();
    let expected = read(&out);
    // The program's own view, before comparing: MPI_Query_thread agrees
    // with what MPI_Init_thread provided, on every rank.
    if how != "init" {
        assert_eq!(
            expected.matches("query_thread equals provided 1").count(),
            2,
            "without the tool, the thread level queried differs from the one provided?\n{expected}"
        );
    }
    for format in ["per-rank", "log"] {
        let run = dir.join(format!("run-{format}"));
        let (job, out) = facts(&format!("with-{format}"));
        let prof = job.profiled(&run).env("MPIOVER_FORMAT", format).run();
        prof.assert_success();
        assert_eq!(
            read(&out),
            expected,
            "{how}, MPIOVER_FORMAT={format}: what the program sees differs with the preload\n{}",
            prof.dump()
        );
        let written = std::fs::read_dir(&run).map(|d| d.count()).unwrap_or(0);
        assert!(
            written > 0,
            "{format}: nothing written to {}",
            run.display()
        );
    }
}

#[test]
fn transparency_thread_level_after_init() {
    thread_level_same_with_and_without("init");
}

#[test]
fn transparency_thread_level_single() {
    thread_level_same_with_and_without("single");
}

#[test]
fn transparency_thread_level_funneled() {
    thread_level_same_with_and_without("funneled");
}

#[test]
fn transparency_thread_level_serialized() {
    thread_level_same_with_and_without("serialized");
}

#[test]
fn transparency_thread_level_multiple() {
    thread_level_same_with_and_without("multiple");
}

/// The pages each rank's blocks span, summed, from `dynamic_window`'s stderr.
fn pages_spanned(stderr: &str) -> u32 {
    stderr
        .lines()
        .filter(|l| l.starts_with("dynamic_window: rank "))
        .filter_map(|l| {
            l.split(" on ")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u32>()
                .ok()
        })
        .sum()
}

/// Regression: under the preload Open MPI refused `MPI_Win_attach` of small
/// `MPI_Alloc_mem` blocks (more than its 64 attached regions), because the
/// tool initialized `MPI_T` at `MPI_Init`: Open MPI then registers every
/// component's variables, and the holes those allocations left in the
/// program's heap scattered the blocks over half again to twice as many
/// pages (under MPICH too, which has no such limit). The program prints how
/// many of its 400 blocks each rank attached (the same line both ways), and
/// on stderr the pages they span, which must stay within a quarter of the
/// program's own (they vary by a page or two from run to run).
#[test]
fn transparency_dynamic_window_attach() {
    let (plain, prof) = same_with_and_without(
        "transparency_dynamic_window_attach",
        4,
        "dynamic_window",
        &[],
    );
    prof.assert_success();
    let (without, with) = (pages_spanned(&plain.stderr), pages_spanned(&prof.stderr));
    assert!(without > 0, "no page counts on stderr\n{}", plain.dump());
    assert!(
        with * 4 <= without * 5 + 16,
        "the blocks span {with} pages with the tool against {without} without\n{}",
        prof.dump()
    );
}
