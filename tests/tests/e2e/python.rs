//! Python: an mpi4py program runs unchanged under the profiler, and its MPI
//! calls are attributed to the Python lines that made them (`MPIOVER_DEPTH`
//! picks the frame as for native code), threads included; with Python
//! sites off they are at the nearest native frame (mpi4py's extension
//! module), with a note saying so. Needs mpi4py built against the MPI under
//! test (`pip install --no-binary=mpi4py mpi4py`).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::*;

fn python() -> String {
    std::env::var("MPIOVER_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The interpreter, checked to import an mpi4py built against the MPI under
/// test (fails, never skips, when it cannot: the suite must not pass without
/// having run this). Under MPICH, `scripts/setup --tests` builds a second mpi4py into
/// `target/mpi4py-mpich` and scripts/test puts it on `PYTHONPATH`.
fn python_with_mpi4py() -> PathBuf {
    let py = python();
    let out = Command::new(&py)
        .args([
            "-c",
            "import mpi4py, sys, os, glob; print(sys.executable); \
             print(glob.glob(os.path.join(os.path.dirname(mpi4py.__file__), 'MPI*.so'))[0])",
        ])
        .output()
        .unwrap_or_else(|e| panic!("running {py}: {e}"));
    assert!(
        out.status.success(),
        "{py} cannot import mpi4py ({}); install it against the system MPI: \
         `MPICC=mpicc pip install --no-binary=mpi4py mpi4py` (or set MPIOVER_PYTHON; \
         for MPICH `scripts/setup --tests` builds one into target/mpi4py-mpich)",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut lines = text.lines();
    let exe = PathBuf::from(lines.next().unwrap_or("").trim());
    let ext = lines.next().unwrap_or("").trim().to_string();
    // An mpi4py linked to the other MPI would start, then fail in ways that
    // say nothing about the profiler: check which libmpi it links.
    let ldd = Command::new("ldd")
        .arg(&ext)
        .output()
        .unwrap_or_else(|e| panic!("running ldd {ext}: {e}"));
    let libs = String::from_utf8_lossy(&ldd.stdout);
    let want = if mpi_flavor() == "mpich" {
        "libmpich"
    } else {
        "libmpi.so"
    };
    assert!(
        libs.contains(want),
        "mpi4py ({ext}) is not linked against {want} for {}:\n{libs}",
        mpi_flavor()
    );
    exe
}

#[test]
fn mpi4py_program_runs_unchanged_and_its_calls_are_seen() {
    let py = python_with_mpi4py();
    let script = examples_src().join("python").join("late_sender.py");
    let script = script.to_str().unwrap();
    let dir = scratch("mpi4py_plain");
    let plain = Job::program(2, &py, &[script, "10", "20"], &dir).run();
    plain.assert_success();

    let dir = scratch("mpi4py");
    let run = dir.join("run");
    let out = Job::program(2, &py, &[script, "10", "20"], &dir)
        .profiled(&run)
        .run();
    out.assert_success();
    assert_eq!(out.stdout, plain.stdout, "stdout changed with the tool");
    let recs = read_records(&run).unwrap_or_else(|e| panic!("{e}\n{}", out.dump()));
    assert_eq!(recs.len(), 2, "{}", out.dump());
    for r in &recs {
        assert_eq!(r.finished, "finalize");
        assert_eq!(
            r.thread_level, "multiple",
            "mpi4py asks for MPI_THREAD_MULTIPLE"
        );
        let init = r.functions.iter().find(|f| f.function == "MPI_Init_thread");
        assert_eq!(init.map(|f| f.calls), Some(1));
    }
    let r0 = &recs[0];
    let ctx = format!("{}\n{}", dump_sites(r0), out.dump());
    // The receives of the late sender are the top site: the injected delay,
    // at the Python line of the receive.
    let (top, _) = sites_by_time(r0)[0];
    let recv: Vec<_> = r0
        .entries
        .iter()
        .filter(|e| e.site == top && e.function == "MPI_Recv" && e.bytes == 8)
        .collect();
    let n: u64 = recv.iter().map(|e| e.count).sum();
    assert_eq!(n, 10, "{ctx}");
    let t: f64 = recv.iter().map(|e| e.sum_s).sum();
    let injected = injected_s(&out, "late_sender.py", 1);
    assert_close("rank 0: time in MPI_Recv", t, injected, 0.10, &ctx);
    let line = marker_any("python/late_sender.py", "py-recv");
    for e in &recv {
        let s = site(r0, e.site).expect("site");
        assert!(site_is(s, "late_sender.py", line), "{s:?}\n{ctx}");
        assert_eq!(s.function.as_deref(), Some("main"), "{s:?}");
        assert!(
            s.module
                .as_deref()
                .is_some_and(|m| m.contains("mpi4py") || m.contains(".cpython-")),
            "the native frame is mpi4py's: {s:?}"
        );
    }
    // The report names the line.
    let text = report_text(&run);
    assert!(
        text.contains(&format!("late_sender.py:{line}")),
        "the report names the Python line:\n{text}"
    );
}

/// `mpiover report RUN --format json` (no profile: sites ranked by time).
fn report_of(run: &Path, context: &Outcome) -> serde_json::Value {
    report_json_of(run, None, context)
}

/// `mpiover report RUN` as text.
fn report_text(run: &Path) -> String {
    let rep = Command::new(mpiover_bin())
        .arg("report")
        .arg(run)
        .output()
        .expect("running mpiover report");
    let text = String::from_utf8_lossy(&rep.stdout).into_owned();
    assert!(rep.status.success(), "{text}");
    text
}

/// The lines of `examples/python/sites.py` at depth 1: the receives (the
/// late one first), the sends.
const RECV_LINES: [&str; 3] = ["py-recv-late", "py-recv-a", "py-recv-b"];
const SEND_LINES: [&str; 3] = ["py-send-late", "py-send-a", "py-send-b"];

/// `examples/python/sites.py` on two ranks with the preload; `extra` goes
/// to the program, `env` to the ranks.
fn sites_run(test: &str, extra: &[&str], env: &[(&str, &str)]) -> (Outcome, PathBuf) {
    let py = python_with_mpi4py();
    let script = examples_src().join("python").join("sites.py");
    let dir = scratch(test);
    let run = dir.join("run");
    let mut args = vec![script.to_str().unwrap(), "10", "20"];
    args.extend_from_slice(extra);
    let mut job = Job::program(2, &py, &args, &dir).profiled(&run);
    for (k, v) in env {
        job = job.env(k, v);
    }
    let out = job.run();
    out.assert_success();
    (out, run)
}

/// The report's time at `sites.py:<line of tag>` for `mpi`, if that site exists.
fn time_at(report: &serde_json::Value, tag: &str, mpi: &str) -> Option<f64> {
    let line = marker_any("python/sites.py", tag);
    site_at(report, "sites.py", line, mpi).and_then(|s| s["time_s"].as_f64())
}

/// The late receive line holds the injected wait (within 15 %), the two
/// clean receive lines and the three send lines are sites of their own;
/// `tags` name the lines (helpers at depth 1, their callers at depth 2).
fn check_sites(
    report: &serde_json::Value,
    out: &Outcome,
    recv: [&str; 3],
    send: [&str; 3],
    threads: u32,
) {
    let ctx = format!("{}\n{}", describe_sites(report), out.dump());
    let injected = injected_s(out, "sites.py", 1);
    let late = time_at(report, recv[0], "MPI_Recv")
        .unwrap_or_else(|| panic!("no site at the late line ({})\n{ctx}", recv[0]));
    assert_close("the late receive line", late, injected, 0.15, &ctx);
    for tag in &recv[1..] {
        let t = time_at(report, tag, "MPI_Recv")
            .unwrap_or_else(|| panic!("no site of its own for the clean line {tag}\n{ctx}"));
        assert!(
            t < 0.15 * late,
            "the clean line {tag} took {:.3} ms, the late one {:.3} ms\n{ctx}",
            t * 1e3,
            late * 1e3
        );
    }
    for tag in send {
        assert!(
            time_at(report, tag, "MPI_Send").is_some(),
            "no site of its own for the send line {tag}\n{ctx}"
        );
    }
    // Each line's calls: 10 iterations per thread, on one rank.
    let line = marker_any("python/sites.py", recv[0]);
    let s = site_at(report, "sites.py", line, "MPI_Recv").expect("checked above");
    assert_eq!(s["calls"].as_u64(), Some(10 * u64::from(threads)), "{ctx}");
    // The Python function, not mpi4py's.
    assert!(
        sites(report)
            .iter()
            .all(|s| s["file"].as_str().is_some_and(|f| file_is(f, "sites.py"))),
        "every site is a line of sites.py\n{ctx}"
    );
}

#[test]
fn python_sites_name_the_late_line_and_each_quick_line() {
    let (out, run) = sites_run("py_sites", &[], &[]);
    let recs = read_records(&run).unwrap_or_else(|e| panic!("{e}\n{}", out.dump()));
    assert_eq!(recs.len(), 2, "{}", out.dump());
    for r in &recs {
        let py = r.tool.python.as_ref().unwrap_or_else(|| {
            panic!(
                "rank {}: no Python sites in the record\n{}",
                r.rank,
                out.dump()
            )
        });
        assert!(py.interpreter.starts_with("CPython 3.11"), "{py:?}");
        assert!(py.calls >= 30, "rank {}: {py:?}", r.rank);
        assert_eq!(py.fallbacks, 0, "rank {}: {py:?}", r.rank);
        assert!(
            py.cost_per_call_s > 0.0 && py.cost_per_call_s < 150e-9,
            "rank {}: Python site cost {py:?}",
            r.rank
        );
        // Sites name the Python line and keep the native frame.
        for s in &r.sites {
            assert_eq!(s.language.as_deref(), Some("python"), "{s:?}");
            assert!(
                s.module.as_deref().is_some_and(|m| m.contains("mpi4py")),
                "the native frame is mpi4py's: {s:?}"
            );
            assert!(s.native.is_some(), "the native frame is named: {s:?}");
            assert!(s.note.is_none(), "{s:?}");
        }
    }
    let r0 = &recs[0];
    let line = marker_any("python/sites.py", "py-recv-late");
    // An MPI call mpi4py makes with the GIL held (the MPI_Allgather of a
    // Reduce_scatter without counts) is at its Python line too, as is the
    // one it makes without.
    let held = marker_any("python/sites.py", "py-gil-held");
    for r in &recs {
        for f in ["MPI_Allgather", "MPI_Reduce_scatter"] {
            assert_eq!(
                entries_at(r, f, "sites.py", held)
                    .iter()
                    .map(|e| e.count)
                    .sum::<u64>(),
                1,
                "rank {}: {f} at line {held}\n{}",
                r.rank,
                dump_sites(r)
            );
        }
    }
    // A call made through mpi4py's own Python code (mpi4py.util.pkl5) is at
    // the line that called it.
    let pkl5 = marker_any("python/sites.py", "py-pkl5");
    assert!(
        r0.sites
            .iter()
            .any(|s| site_is(s, "sites.py", pkl5) && s.function.as_deref() == Some("main")),
        "no site at the pkl5 line {pkl5}\n{}",
        dump_sites(r0)
    );
    let late = entries_at(r0, "MPI_Recv", "sites.py", line);
    assert_eq!(
        late.iter().map(|e| e.count).sum::<u64>(),
        10,
        "{}",
        dump_sites(r0)
    );
    assert!(late
        .iter()
        .all(|e| site(r0, e.site).and_then(|s| s.function.as_deref()) == Some("recv_late")));
    let report = report_of(&run, &out);
    check_sites(&report, &out, RECV_LINES, SEND_LINES, 1);
    // The report's sites say they are Python's and name the native frame.
    for s in sites(&report) {
        assert_eq!(s["language"], "python", "{s}");
        assert!(s["native"].as_str().is_some(), "{s}");
    }
    // The report states what Python sites cost.
    let text = report_text(&run);
    assert!(
        text.contains("Python sites"),
        "the tool cost names the Python sites' cost:\n{text}"
    );
}

#[test]
fn python_sites_move_to_the_callers_at_depth_2() {
    let (out, run) = sites_run("py_sites_depth2", &[], &[("MPIOVER_DEPTH", "2")]);
    let report = report_of(&run, &out);
    check_sites(
        &report,
        &out,
        ["py-call-recv-late", "py-call-recv-a", "py-call-recv-b"],
        ["py-call-send-late", "py-call-send-a", "py-call-send-b"],
        1,
    );
    let ctx = describe_sites(&report);
    assert!(
        time_at(&report, "py-recv-late", "MPI_Recv").is_none(),
        "no site is left at depth 1's line\n{ctx}"
    );
}

#[test]
fn python_sites_of_threads_are_their_lines() {
    let (out, run) = sites_run("py_sites_threads", &["threads"], &[]);
    let recs = read_records(&run).unwrap_or_else(|e| panic!("{e}\n{}", out.dump()));
    for r in &recs {
        let py = r.tool.python.as_ref().expect("Python sites");
        assert_eq!(py.fallbacks, 0, "rank {}: {py:?}", r.rank);
    }
    let report = report_of(&run, &out);
    check_sites(&report, &out, RECV_LINES, SEND_LINES, 2);
}

#[test]
fn python_sites_off_leave_the_nearest_native_frame() {
    let (out, run) = sites_run("py_sites_off", &[], &[("MPIOVER_PY_SITES", "off")]);
    let recs = read_records(&run).unwrap_or_else(|e| panic!("{e}\n{}", out.dump()));
    for r in &recs {
        assert!(r.tool.python.is_none(), "rank {}", r.rank);
        for s in &r.sites {
            assert!(s.language.is_none(), "{s:?}");
            assert!(
                s.note
                    .as_deref()
                    .is_some_and(|n| n.starts_with("python: nearest native frame")),
                "{s:?}"
            );
        }
    }
}

#[test]
fn an_unsupported_interpreter_falls_back_with_one_warning() {
    // The interpreter taken for one the tool cannot read (as 3.12 would be).
    let (out, run) = sites_run(
        "py_sites_unsupported",
        &[],
        &[("MPIOVER_DEBUG", "py-unsupported")],
    );
    let recs = read_records(&run).unwrap_or_else(|e| panic!("{e}\n{}", out.dump()));
    for r in &recs {
        assert!(r.tool.python.is_none(), "rank {}", r.rank);
        let w: Vec<&String> = r
            .warnings
            .iter()
            .filter(|w| w.starts_with("python:"))
            .collect();
        assert_eq!(w.len(), 1, "rank {}: {:?}", r.rank, r.warnings);
        assert!(w[0].contains("not supported"), "{w:?}");
        for s in &r.sites {
            assert!(
                s.note
                    .as_deref()
                    .is_some_and(|n| n.starts_with("python: nearest native frame")),
                "{s:?}"
            );
        }
    }
    // Once on stderr (rank 0), not once per call.
    assert_eq!(
        out.stderr.matches("is not supported").count(),
        1,
        "{}",
        out.dump()
    );
}

/// Root causes of an mpi4py program: the late sender's region, with a
/// Python line at both ends (from one `comm.Send` to the next, where it
/// sleeps).
#[test]
fn python_root_cause_has_python_lines_at_both_ends() {
    let py = python_with_mpi4py();
    let script = examples_src().join("python").join("late_sender.py");
    let r = record_program(
        "python_root_cause_has_python_lines_at_both_ends",
        2,
        &py,
        &[script.to_str().expect("utf-8 path"), "10", "30"],
        calibrated_profile(),
    );
    let ctx = context(&r);
    let recv = marker_any("python/late_sender.py", "py-recv");
    let send = u64::from(marker_any("python/late_sender.py", "py-send"));
    let s = site_at(&r.report, "late_sender.py", recv, "MPI_Recv")
        .unwrap_or_else(|| panic!("no MPI_Recv site at late_sender.py:{recv}\n{ctx}"));
    assert_eq!(s["wait_state"], "Late Sender", "{s:#}\n{ctx}");
    let c = s["root_causes"]
        .get(0)
        .unwrap_or_else(|| panic!("no root cause\n{s:#}\n{ctx}"));
    assert_eq!(c["rank"], 1, "{c:#}");
    for end in ["from", "to"] {
        let e = &c["region"][end];
        assert!(
            e["file"]
                .as_str()
                .is_some_and(|f| file_is(f, "late_sender.py")),
            "{end} is not a line of late_sender.py: {c:#}"
        );
        assert_eq!(e["line"].as_u64(), Some(send), "{end}: {c:#}");
        assert_eq!(e["mpi_function"], "MPI_Send", "{c:#}");
    }
}
