//! The HTML report of real runs in a real browser, at a laptop's (1,400 px)
//! and a desktop's (1,920 px) window: the demo's run (`examples/accuracy.c`
//! under a calibrated profile, as `scripts/demo` makes it) and a run over
//! two hosts of the fake cluster. Nothing scrolls sideways, the histograms'
//! labels and marks are clear of each other, every section is in the
//! navigation; the wait matrix of the two-host run names the hosts. The
//! measurements are the browser's (`report/tests/browser`); screenshots are
//! left beside each report.

use std::path::Path;
use std::process::Command;

use crate::fake_cluster::{cluster_or_skip, record_on};
use crate::harness::*;

#[path = "../../../report/tests/browser/mod.rs"]
mod browser;

/// `mpiover report RUN [--profile P] -o DIR/report.html`.
fn html_of(run: &Path, profile: Option<&Path>, dir: &Path) -> std::path::PathBuf {
    let html = dir.join("report.html");
    let mut c = Command::new(mpiover_bin());
    c.arg("report").arg(run).arg("-o").arg(&html);
    if let Some(p) = profile {
        c.arg("--profile").arg(p);
    }
    let out = c.env_remove("LD_PRELOAD").output().expect("mpiover report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    html
}

/// `browser::assert_fits` under the suite's MPI lock: Chromium keeps both
/// cores busy for seconds, and another test's MPI job measuring waits
/// meanwhile would find its ranks descheduled.
fn fits_alone(bin: &Path, html: &Path, dir: &Path, name: &str) -> Vec<browser::Layout> {
    let _guard = mpi_lock();
    browser::assert_fits(bin, html, dir, name)
}

#[test]
fn html_report_of_the_demo_run_fits_the_window() {
    let Some(bin) = browser::chromium_or_skip("html_report_of_the_demo_run_fits_the_window") else {
        return;
    };
    // The demo's calibration (its quality does not matter to the layout).
    let profile = quick_profile(
        "html_demo_profile",
        NP,
        "MPI_Send,MPI_Recv,MPI_Allreduce,MPI_Barrier",
        "1,1000,100000,1Mi",
    );
    let r = record("html_demo", NP, "accuracy", &[], &profile);
    let dir = r.dir.parent().expect("the test's directory").to_path_buf();
    let html = html_of(&r.dir, Some(&profile), &dir);
    let l = fits_alone(&bin, &html, &dir, "demo");
    // The demo's sites have details: a histogram each, labelled and ticked.
    assert!(l[0].checked("histograms") >= 4, "{:#?}", l[0]);
}

#[test]
fn html_report_of_a_two_host_run_fits_the_window_and_names_the_hosts() {
    let Some(vars) = cluster_or_skip("html_two_hosts") else {
        return;
    };
    let Some(bin) = browser::chromium_or_skip("html_two_hosts") else {
        return;
    };
    let dir = scratch("html_two_hosts");
    // A 2 x 2 wavefront: its point-to-point waits cross hosts, so the wait
    // matrix has pairs on both.
    let (run, _) = record_on(
        &dir,
        &vars,
        "per-rank",
        None,
        4,
        "node1:2,node2:2",
        "wavefront",
        &["6", "2"],
    );
    let html = html_of(&run, None, &dir);
    let page = std::fs::read_to_string(&html).unwrap();
    fits_alone(&bin, &html, &dir, "two-hosts");
    // The ranks' hosts in the matrix's labels and its table of pairs.
    let matrix = &page[page.find("id=\"wait-matrix\"").expect("a wait matrix")..];
    let matrix = &matrix[..matrix.find("id=\"details\"").unwrap_or(matrix.len())];
    for host in ["node1", "node2"] {
        assert!(matrix.contains(&format!("<td>{host}</td>")), "{matrix}");
        assert!(matrix.contains(&format!("({host})</text>")), "{matrix}");
    }
}
