//! The HTML report in a real headless browser (Debian's chromium): it loads
//! without console errors, its script runs, the charts are there, and a
//! screenshot is saved under the test's output directory
//! (`$CARGO_TARGET_TMPDIR/html-browser/report.png`).
//!
//! Skips, saying why, when no chromium is installed (`apt-get install -y
//! chromium`); `MPIOVER_CHROMIUM` names another binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use mpiover_common::record::rank_file_name;
use mpiover_report::synth;

fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MPIOVER_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

fn browser(bin: &Path, args: &[&str], url: &str) -> (String, String) {
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(args)
        .arg(url)
        .output()
        .expect("runs chromium");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn html_report_renders_in_chromium() {
    let Some(bin) = chromium() else {
        // In CI (scripts/setup --tests installs chromium) a missing browser is a
        // failure, not a silent pass.
        assert!(
            std::env::var_os("CI").is_none(),
            "no chromium found under CI: scripts/setup --tests installs it"
        );
        eprintln!("SKIPPED html_report_renders_in_chromium: no chromium found (apt-get install -y chromium, or set MPIOVER_CHROMIUM)");
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
        let text: String = (1..=100)
            .map(|i| format!("/* {f} line {i} */ int x{i} = {i};\n"))
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
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("solver.c line 88"), "source lines are shown");
    let url = format!("file://{}", html.display());

    // The DOM after scripts ran.
    let (dom, log) = browser(&bin, &["--dump-dom"], &url);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
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

    // A screenshot for people.
    let shot = dir.join("report.png");
    let (_, log) = browser(
        &bin,
        &[
            "--hide-scrollbars",
            "--window-size=1280,2400",
            &format!("--screenshot={}", shot.display()),
        ],
        &url,
    );
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:#?}");
    let png = std::fs::read(&shot)
        .unwrap_or_else(|e| panic!("no screenshot {}: {e}\n{log}", shot.display()));
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "a real screenshot"
    );
    eprintln!("screenshot: {}", shot.display());
}
