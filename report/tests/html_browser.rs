//! The HTML report in a real headless browser (Debian's chromium): it loads
//! without console errors, its script runs, the charts are there, and a
//! screenshot is saved under the test's output directory
//! (`$CARGO_TARGET_TMPDIR/html-browser/report.png`).
//!
//! Skips, saying why, when no chromium is installed (`apt-get install -y
//! chromium`); `MPIOVER_CHROMIUM` names another binary.

use std::path::{Path, PathBuf};
use std::process::Command;

mod browser;
use browser::*;

use mpiover_common::record::rank_file_name;
use mpiover_report::synth;

#[test]
fn html_report_renders_in_chromium() {
    let Some(bin) = chromium_or_skip("html_report_renders_in_chromium") else {
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-browser");
    let _ = std::fs::remove_dir_all(&dir);
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    // The fixture, with its sources where the report can read them.
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    for f in ["halo.c", "solver.c", "io.c"] {
        // Lines longer than the page is wide: the excerpts must wrap them.
        let text: String = (1..=100)
            .map(|i| {
                format!(
                    "/* {f} line {i} */ int x{i} = {i}; /* {} */\n",
                    "why ".repeat(60)
                )
            })
            .collect();
        std::fs::write(src.join(f), text).unwrap();
    }
    for mut r in synth::fixture_run(true) {
        for s in &mut r.sites {
            if let Some(f) = &s.file {
                let base = f.rsplit('/').next().unwrap().to_string();
                s.file = Some(src.join(base).to_string_lossy().into_owned());
            }
        }
        std::fs::write(
            run.join(rank_file_name(r.rank)),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
    }
    let html = dir.join("report.html");
    report(&run, &html);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("solver.c line 88"), "source lines are shown");
    let url = format!("file://{}", html.display());

    // The DOM after scripts ran.
    let (dom, log) = browser(&bin, &["--dump-dom"], &url);
    let msgs = console(&log);
    assert!(msgs.is_empty(), "console messages: {msgs:#?}");
    assert!(
        dom.contains("data-ready=\"1\""),
        "the page's script ran to its end"
    );
    for id in [
        "bar-chart",
        "heat-map",
        "wait-matrix-svg",
        "dist-1",
        "sites-table",
    ] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "{id} in the DOM");
    }
    assert!(dom.matches("<rect").count() > 50, "charts have marks");

    // Every section within the window at a laptop's and a desktop's
    // width, with screenshots for people.
    assert_fits(&bin, &html, &dir, "fixture");
}

/// A run of 4,096 ranks on 128 hosts (the scale benchmark's records): the
/// heat map and the wait matrix group the ranks, and the page still fits.
#[test]
fn html_report_of_4096_ranks_fits_the_window() {
    let Some(bin) = chromium_or_skip("html_report_of_4096_ranks_fits_the_window") else {
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-browser-4096");
    let _ = std::fs::remove_dir_all(&dir);
    let run = dir.join("run");
    std::fs::create_dir_all(&run).unwrap();
    let ranks = 4096;
    for rank in 0..ranks {
        let r = synth::scale_record(rank, ranks, 40, 7);
        std::fs::write(
            run.join(rank_file_name(rank)),
            serde_json::to_vec(&r).unwrap(),
        )
        .unwrap();
    }
    let html = dir.join("report.html");
    report(&run, &html);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("4096 ranks"), "the header counts the ranks");
    let l = assert_fits(&bin, &html, &dir, "synth-4096");
    assert!(l[0].checked("histograms") >= 5, "{:#?}", l[0]);
}

/// A merged job log of 65,536 ranks, its per-rank detail bounded: the
/// page stays small, says how the heat map groups the ranks, loads without
/// errors and fits the window.
#[test]
fn html_report_of_a_bounded_job_log_stays_small_and_fits() {
    let Some(bin) = chromium_or_skip("html_report_of_a_bounded_job_log_stays_small_and_fits")
    else {
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("html-browser-65536");
    let _ = std::fs::remove_dir_all(&dir);
    let run = dir.join("run");
    let ranks = 65536;
    synth::write_scale_log(&run, ranks, 200, 7, 2).unwrap();
    let html = dir.join("report.html");
    report(&run, &html);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.len() < 20 << 20, "{} bytes of HTML", page.len());
    assert!(page.contains("65536 ranks"), "the header counts the ranks");
    assert!(
        page.contains("groups of 512 ranks"),
        "the heat map says how it groups the ranks"
    );
    let url = format!("file://{}", html.display());
    let (dom, log) = browser(&bin, &["--dump-dom"], &url);
    let msgs = console(&log);
    assert!(msgs.is_empty(), "console messages: {msgs:#?}");
    assert!(dom.contains("data-ready=\"1\""), "the page's script ran");
    assert_fits(&bin, &html, &dir, "log-65536");
}

/// `mpiover report RUN -o HTML`, which must succeed.
fn report(run: &Path, html: &Path) {
    let out = Command::new(env!("CARGO_BIN_EXE_mpiover"))
        .args([
            "report",
            run.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
