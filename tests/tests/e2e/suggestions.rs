//! The commands the tools suggest, run as a user would paste them: the
//! record summary's full-report command, the report's note on calibrating
//! when no profile gave tmax (the calibration, then the report against it),
//! and the weak-calibration warning's re-measurement and merge. Each runs
//! through `sh -c` exactly as printed, in the directory the user was in.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::*;

/// The spans of `text` between backticks.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(String::from)
        .collect()
}

/// `sh -c CMD` in `dir` with the suite's environment; under the MPI lock
/// when it starts a job. Gives up (None) after `limit`, killing it.
fn sh(cmd: &str, dir: &Path, limit: Duration) -> Option<std::process::Output> {
    let mut c = Command::new("sh");
    c.arg("-c").arg(cmd).current_dir(dir);
    suite_env(&mut c);
    let _guard = mpi_lock();
    let mut child = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs");
    let start = Instant::now();
    while child.try_wait().expect("waits").is_none() {
        if start.elapsed() > limit {
            kill_tree(child.id());
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(child.wait_with_output().expect("output"))
}

fn ok(cmd: &str, o: &std::process::Output) -> String {
    let (so, se) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert!(
        o.status.success(),
        "`{cmd}` as printed failed ({}):\n--- stdout\n{so}--- stderr\n{se}",
        o.status
    );
    so.into_owned()
}

#[test]
fn suggested_commands_run_as_printed() {
    let dir = scratch("suggested_commands");
    let run = dir.join("run");
    let launcher = suite_launcher();
    let mut c = Command::new(mpiover_bin());
    c.args(["record", "--lib"])
        .arg(lib())
        .arg("--out")
        .arg(&run)
        .args(["--", launcher, "-np", "2"])
        .arg(example("pingpong"))
        .arg("200")
        .current_dir(&dir);
    let out = run_locked(
        c,
        format!("mpiover record -- {launcher} -np 2 pingpong 200"),
        &dir,
    );
    assert_eq!(out.code(), Some(0), "{}", out.dump());

    // The summary's full report.
    let full = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("Full report: "))
        .unwrap_or_else(|| panic!("no full-report command\n{}", out.dump()));
    let full = full.split("   (").next().unwrap().trim();
    let report = ok(full, &sh(full, &dir, JOB_TIMEOUT).expect("in time"));
    assert!(report.contains("METHODS"), "{report}");

    // No profile: calibrate, then report against the profile, as the note
    // says.
    let note = report
        .lines()
        .find(|l| l.contains("no profile gave tmax"))
        .unwrap_or_else(|| panic!("no note on calibrating:\n{report}"));
    let cmds = backticked(note);
    assert_eq!(cmds.len(), 2, "{note}");
    assert!(
        cmds[0].starts_with(&format!("{launcher} -n")),
        "{}",
        cmds[0]
    );
    // --quick stops at its own time budget (90 s).
    let calibration = sh(&cmds[0], &dir, Duration::from_secs(240)).expect("in time");
    ok(&cmds[0], &calibration);
    let against = ok(&cmds[1], &sh(&cmds[1], &dir, JOB_TIMEOUT).expect("in time"));
    assert!(!against.contains("no profile gave tmax"), "{against}");
    assert!(!against.contains("unknown: no profile"), "{against}");

    // Weak entries: the same profile with MPI_Send's and MPI_Recv's cut to
    // 16 samples; the warning's re-measurement (of the sizes the sites
    // send: seconds) and its merge, as printed.
    let mut p = mpiover_common::profile::Profile::load(dir.join("profile.json")).expect("profile");
    for e in p.entries.iter_mut() {
        if e.function == "MPI_Recv" || e.function == "MPI_Send" {
            e.n = 16;
        }
    }
    let weak = dir.join("weak.json");
    p.save_atomic(&weak).expect("writes the weak profile");
    let o = Command::new(mpiover_bin())
        .args(["report", "-f", "json", "--profile", "weak.json"])
        .arg(&run)
        .current_dir(&dir)
        .output()
        .expect("mpiover report");
    let rep: serde_json::Value = serde_json::from_str(&ok("mpiover report", &o)).expect("JSON");
    let warning = rep["warnings"]
        .as_array()
        .and_then(|w| {
            w.iter()
                .filter_map(|w| w.as_str())
                .find(|w| w.contains("weak calibration"))
        })
        .unwrap_or_else(|| panic!("no weak-calibration warning: {:#}", rep["warnings"]))
        .to_string();
    let cmds = backticked(&warning);
    assert_eq!(cmds.len(), 2, "{warning}");
    assert!(
        cmds[1].contains(" profile merge weak.json more.json"),
        "{warning}"
    );
    assert!(cmds[0].contains(" --sizes "), "{warning}");
    let remeasure = sh(&cmds[0], &dir, Duration::from_secs(240)).expect("in time");
    ok(&cmds[0], &remeasure);
    ok(&cmds[1], &sh(&cmds[1], &dir, JOB_TIMEOUT).expect("in time"));
    let merged = mpiover_common::profile::Profile::load(dir.join("merged.json")).expect("merged");
    assert!(merged.runs.len() >= 2, "the merge holds both runs");
}

/// The calibrator started without a launcher names the command that runs
/// it, its own options kept.
#[test]
fn calibrator_alone_suggests_its_launch_as_printed() {
    let dir = scratch("calibrator_alone");
    let mut c = Command::new(calibrate_bin());
    c.args([
        "--quick",
        "--quiet",
        "--functions",
        "MPI_Send",
        "--sizes",
        "1",
    ])
    .args(["-o", "alone.json"])
    .current_dir(&dir);
    suite_env(&mut c);
    let o = {
        let _guard = mpi_lock();
        c.output().expect("the calibrator runs")
    };
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    let cmds = backticked(&err);
    assert_eq!(cmds.len(), 1, "{err}");
    assert!(
        cmds[0].starts_with(&format!("{} -n", suite_launcher())),
        "{err}"
    );
    ok(&cmds[0], &sh(&cmds[0], &dir, JOB_TIMEOUT).expect("in time"));
    assert!(dir.join("alone.json").is_file(), "{}", cmds[0]);
}
