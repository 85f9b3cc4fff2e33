//! The profiler must not change what a program does: every example's stdout
//! and mpirun's exit status are the same with and without the preload.
//! (The crash and no-finalize examples are compared in `robustness`.)

use crate::harness::*;

fn same_with_and_without(test: &str, np: u32, example_name: &str, args: &[&str]) {
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
