//! Python: an mpi4py program runs unchanged under the
//! profiler, and its MPI calls are recorded at the nearest native frame
//! (mpi4py's extension module), with a note saying so. Needs mpi4py built
//! against the MPI under test (`pip install --no-binary=mpi4py mpi4py`).

use std::path::PathBuf;
use std::process::Command;

use crate::harness::*;

fn python() -> String {
    std::env::var("MPIOVER_PYTHON").unwrap_or_else(|_| "python3".into())
}

/// The interpreter, checked to import an mpi4py built against the MPI under
/// test (fails, never skips, when it cannot: the suite must not pass without
/// having run this). Under MPICH, scripts/setup builds a second mpi4py into
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
         for MPICH scripts/setup builds one into target/mpi4py-mpich)",
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
    // at a native site in mpi4py noted as such (comm.reduce's pickled
    // messages are received elsewhere in mpi4py).
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
    for e in &recv {
        let s = site(r0, e.site).expect("site");
        assert!(
            s.module
                .as_deref()
                .is_some_and(|m| m.contains("mpi4py") || m.contains(".cpython-")),
            "the nearest native frame is mpi4py's: {s:?}"
        );
        assert!(
            s.note
                .as_deref()
                .is_some_and(|n| n.starts_with("python: nearest native frame")),
            "the site says it stands for Python code: {s:?}"
        );
    }
    // The report says so too, not only the record.
    let rep = Command::new(mpiover_bin())
        .arg("report")
        .arg(&run)
        .output()
        .expect("running mpiover report");
    let text = String::from_utf8_lossy(&rep.stdout);
    assert!(rep.status.success(), "{text}");
    assert!(
        text.contains("python: nearest native frame"),
        "the report notes that the site stands for Python code:\n{text}"
    );
}
