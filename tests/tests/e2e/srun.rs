//! Slurm's `srun` as the launcher of `mpiover record`, per-rank and as a job
//! log: srun's default `--export=ALL` carries `LD_PRELOAD` and the
//! `MPIOVER_*` settings to the ranks, and Open MPI's ranks, started by srun
//! through PMIx, wrap and merge as under `mpirun`.
//!
//! Runs where a Slurm cluster answers `srun` (`scripts/slurm-local` starts a
//! one-node one; CI does). Elsewhere it says so and passes, unless
//! `MPIOVER_E2E_SRUN=1` demands it. Open MPI only: the Debian MPICH is
//! launched by its own Hydra here.
//!
//! Across nodes: `srun -N 2 -n 4` on the fake cluster's own Slurm
//! (`scripts/fake-cluster slurm`: a slurmd per emulated host, each in the
//! host's namespaces), 2 ranks a node, each rank reporting its node's name.
//! Runs where that Slurm is up (`scripts/fake-cluster env` names its
//! `SLURM_CONF`), demanded by `MPIOVER_E2E_FAKE_SLURM=1` (CI).

use std::process::Command;

use crate::harness::*;

/// Whether `srun` starts a task within 20 s (a cluster is up and has room).
fn srun_works() -> bool {
    Command::new("timeout")
        .args(["20", "srun", "-n", "1", "-O", "true"])
        .env_remove("LD_PRELOAD")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn record(test: &str, format: &str) -> (std::path::PathBuf, Outcome) {
    let dir = scratch(test);
    let run = dir.join("run");
    let program = example("late_sender");
    let mut c = Command::new(mpiover_bin());
    c.args(["record", "--format", format, "--lib"])
        .arg(lib())
        .arg("--out")
        .arg(&run)
        .args(["--", "srun", "-n", "4", "-O", "--mpi=pmix"])
        .arg(&program)
        .args(["3", "20"])
        .current_dir(&dir);
    let job =
        format!("mpiover record --format {format} -- srun -n 4 -O --mpi=pmix late_sender 3 20");
    let out = run_locked(c, job, &dir);
    assert_eq!(out.code(), Some(0), "{}", out.dump());
    (run, out)
}

#[test]
fn srun_records_per_rank_and_as_a_job_log() {
    if mpi_flavor() == "mpich" {
        return;
    }
    if !srun_works() {
        assert!(
            std::env::var("MPIOVER_E2E_SRUN").as_deref() != Ok("1"),
            "MPIOVER_E2E_SRUN=1 but `srun -n 1 true` fails: is a Slurm cluster up (scripts/slurm-local)?"
        );
        eprintln!("e2e: srun: no Slurm cluster answers `srun` here; not tested (scripts/slurm-local starts one)");
        return;
    }
    let recv = marker("late_sender.c", "late-sender-recv");
    for (format, files) in [("per-rank", 4), ("log", 1)] {
        let (run, out) = record(&format!("srun_{format}"), format);
        let listed: Vec<String> = std::fs::read_dir(&run)
            .expect("run directory")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(listed.len(), files, "{format}: {listed:?}\n{}", out.dump());
        if format == "log" {
            assert_eq!(listed, ["job.mpiover-log"], "{}", out.dump());
        }
        let rep = report_json_of(&run, None, &out);
        assert_eq!(rep["run"]["ranks_present"], 4, "{format}\n{}", out.dump());
        // Ranks 0 and 2 wait 3 x 20 ms each for their late senders.
        let at = format!("late_sender.c:{recv}");
        let time: f64 = rep["sites"]
            .as_array()
            .expect("sites")
            .iter()
            .filter(|s| {
                s["mpi_function"] == "MPI_Recv"
                    && s["location"].as_str().is_some_and(|l| l.ends_with(&at))
            })
            .map(|s| s["time_s"].as_f64().unwrap_or(0.0))
            .sum();
        assert!(
            time > 0.8 * 2.0 * 3.0 * 0.020,
            "{format}: the late receive at {at} took {time} s\n{}",
            out.dump()
        );
    }
}

#[test]
fn srun_across_two_nodes_reports_each_ranks_node() {
    if mpi_flavor() == "mpich" {
        return;
    }
    let demanded = std::env::var("MPIOVER_E2E_FAKE_SLURM").as_deref() == Ok("1");
    let conf = crate::fake_cluster::cluster_env()
        .ok()
        .and_then(|vars| vars.into_iter().find(|(k, _)| k == "SLURM_CONF"));
    let Some((_, conf)) = conf else {
        assert!(
            !demanded,
            "MPIOVER_E2E_FAKE_SLURM=1 but `scripts/fake-cluster env` names no SLURM_CONF: \
             is its Slurm up (scripts/fake-cluster slurm)?"
        );
        eprintln!("e2e: srun -N 2: the fake cluster's Slurm is not up; not tested (scripts/fake-cluster slurm)");
        return;
    };
    for (format, files) in [("per-rank", 4), ("log", 1)] {
        let dir = scratch(&format!("srun_nodes_{format}"));
        let run = dir.join("run");
        let mut c = Command::new(mpiover_bin());
        c.args(["record", "--format", format, "--lib"])
            .arg(lib())
            .arg("--out")
            .arg(&run)
            .args(["--", "srun", "-N", "2", "-n", "4", "-O", "--mpi=pmix"])
            .arg(example("imbalanced_allreduce"))
            .args(["10", "20"])
            .env("SLURM_CONF", &conf)
            .current_dir(&dir);
        let job = format!(
            "SLURM_CONF={conf} mpiover record --format {format} -- srun -N 2 -n 4 -O --mpi=pmix \
             imbalanced_allreduce 10 20"
        );
        let out = run_locked(c, job, &dir);
        assert_eq!(out.code(), Some(0), "{}", out.dump());
        crate::fake_cluster::assert_two_hosts_of_two_ranks(&run, format, files, &out);
    }
}
