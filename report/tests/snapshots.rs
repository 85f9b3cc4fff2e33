//! Snapshot tests: the text, CSV and JSON outputs on the fixed fixtures under
//! `tests/fixtures/` must equal the insta snapshots under `tests/snapshots/`.
//! After an intended change, update them with `INSTA_UPDATE=always cargo test
//! -p mpiover-report --test snapshots` (or `cargo insta review`) and review
//! the diff; the same run rewrites fixtures that the generator (`synth`) now
//! writes differently.

use std::path::Path;

use mpiover_common::record::rank_file_name;
use mpiover_report::analysis::{analyze_dir, Options};
use mpiover_report::export::{export, ExportOptions, ReportFormat};
use mpiover_report::synth;

/// Whether this run updates snapshots (and so the fixtures too).
fn updating() -> bool {
    std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always")
}

/// `got` must equal the snapshot `name` (`tests/snapshots/name.snap`).
fn check(name: &str, got: &[u8]) {
    let text = String::from_utf8(got.to_vec()).expect("every export is UTF-8");
    insta::with_settings!({ prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(name, text);
    });
}

fn run(fixture: &str, format: ReportFormat, threads: usize) -> Vec<u8> {
    let opts = Options {
        threads,
        ..Options::default()
    };
    let r = analyze_dir(Path::new(&format!("tests/fixtures/{fixture}")), None, &opts).unwrap();
    export(&r, format, &ExportOptions::default())
}

#[test]
fn fixtures_are_what_the_generator_writes() {
    for (name, online) in [("run-online", true), ("run-noprofile", false)] {
        for rec in synth::fixture_run(online) {
            let p = Path::new("tests/fixtures")
                .join(name)
                .join(rank_file_name(rec.rank));
            let bytes = serde_json::to_vec(&rec).unwrap();
            if updating() {
                // Rewrite only what changed: other tests read these files.
                if std::fs::read(&p).ok().as_deref() != Some(bytes.as_slice()) {
                    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                    std::fs::write(&p, &bytes).unwrap();
                }
            } else {
                assert!(
                    std::fs::read(&p).unwrap() == bytes,
                    "{} is stale: rewrite it with INSTA_UPDATE=always",
                    p.display()
                );
            }
        }
    }
}

#[test]
fn text_snapshots() {
    check("online_txt", &run("run-online", ReportFormat::Text, 0));
    check(
        "noprofile_txt",
        &run("run-noprofile", ReportFormat::Text, 0),
    );
}

#[test]
fn csv_snapshots() {
    check("online_csv", &run("run-online", ReportFormat::Csv, 0));
    check("noprofile_csv", &run("run-noprofile", ReportFormat::Csv, 0));
}

#[test]
fn json_snapshots() {
    check("online_json", &run("run-online", ReportFormat::Json, 0));
    check(
        "noprofile_json",
        &run("run-noprofile", ReportFormat::Json, 0),
    );
}

#[test]
fn output_does_not_depend_on_the_number_of_threads() {
    let one = run("run-online", ReportFormat::Json, 1);
    for t in [2, 3, 4] {
        assert!(
            one == run("run-online", ReportFormat::Json, t),
            "{t} threads"
        );
    }
}

#[test]
fn json_keeps_the_stable_keys_of_the_format() {
    let v: serde_json::Value =
        serde_json::from_slice(&run("run-online", ReportFormat::Json, 0)).unwrap();
    assert_eq!(v["schema"], "mpiover-report/2");
    for k in ["ranks", "command", "mpi_library"] {
        assert!(v["run"].get(k).is_some(), "run.{k}");
    }
    for k in ["app_time_s", "mpi_time_s", "overhead_s"] {
        assert!(v["summary"][k].is_number(), "summary.{k}");
    }
    let s = &v["sites"][0];
    for k in [
        "mpi_function",
        "file",
        "line",
        "function",
        "calls",
        "time_s",
        "bytes",
        "overhead_s",
        "tmax_sum_s",
        "exceed_fraction",
        "significant",
        "wait_state",
        "late_ranks",
        "per_rank",
    ] {
        assert!(s.get(k).is_some(), "sites[].{k}");
    }
    let v: serde_json::Value =
        serde_json::from_slice(&run("run-noprofile", ReportFormat::Json, 0)).unwrap();
    assert!(v["summary"]["overhead_s"].is_null());
    assert!(v["sites"][0]["overhead_s"].is_null());
}

fn report_of(fixture: &str) -> mpiover_report::model::Report {
    analyze_dir(
        Path::new(&format!("tests/fixtures/{fixture}")),
        None,
        &Options::default(),
    )
    .unwrap()
}

/// Removes ANSI escape sequences (`ESC [ ... m`).
fn strip_ansi(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Colour adds escape codes and nothing else: with them stripped, the
/// coloured text is the plain text, so columns stay aligned.
#[test]
fn colour_changes_nothing_but_escape_codes() {
    for fixture in ["run-online", "run-noprofile"] {
        let r = report_of(fixture);
        let plain = export(&r, ReportFormat::Text, &ExportOptions::default());
        let coloured = export(
            &r,
            ReportFormat::Text,
            &ExportOptions {
                color: true,
                ..ExportOptions::default()
            },
        );
        let plain = String::from_utf8(plain).unwrap();
        let coloured = String::from_utf8(coloured).unwrap();
        assert!(coloured.contains("\x1b[1;31m") || fixture == "run-noprofile");
        assert!(coloured.contains("\x1b[1m"), "{fixture}: bold headings");
        let stripped = strip_ansi(&coloured);
        for (i, (a, b)) in plain.lines().zip(stripped.lines()).enumerate() {
            assert_eq!(a, b, "{fixture}: line {}", i + 1);
        }
        assert_eq!(plain, stripped, "{fixture}");
    }
}

/// The HTML sites table: sum of tmax, share of application time and, with a
/// profile, the per-rank overhead spread (time spread without one).
#[test]
fn html_sites_table_has_tmax_app_share_and_rank_overhead() {
    use mpiover_report::units::{pct, secs};
    let table = |html: &str| -> String {
        let start = html.find("id=\"sites-table\"").expect("sites table");
        let end = start + html[start..].find("</table>").unwrap();
        html[start..end].to_string()
    };
    // The spread's three values, each kept whole where the cell wraps.
    let spread = |lo: &str, med: &str, hi: &str| {
        format!(
            "><span class=\"v\">{lo}</span> / <span class=\"v\">{med}</span> / <span class=\"v\">{hi}</span></td>"
        )
    };
    let r = report_of("run-online");
    let t = table(
        &String::from_utf8(export(&r, ReportFormat::Html, &ExportOptions::default())).unwrap(),
    );
    for h in ["Sum tmax", "% app", "Rank overhead min / med / max"] {
        assert!(t.contains(&format!(">{h}</th>")), "{h}: {t}");
    }
    assert!(!t.contains("Rank time min"), "{t}");
    let rows: Vec<&str> = t.split("<tr").skip(2).collect();
    assert_eq!(rows.len(), r.sites.len());
    for (s, row) in r.sites.iter().zip(&rows) {
        let p = &s.per_rank;
        if let (Some(tm), Some(share), Some(lo), Some(med), Some(hi)) = (
            s.tmax_sum_s,
            s.overhead_share_of_app,
            p.overhead_min_s,
            p.overhead_median_s,
            p.overhead_max_s,
        ) {
            for cell in [
                format!("data-v=\"{tm}\">{}</td>", secs(tm)),
                format!("data-v=\"{share}\">{}</td>", pct(share)),
                spread(&secs(lo), &secs(med), &secs(hi)),
                format!(">{}</td></tr>", p.worst_rank),
            ] {
                assert!(row.contains(&cell), "{}: {cell} in {row}", s.location);
            }
        } else {
            assert!(
                row.contains(&spread("-", "-", "-")),
                "{}: {row}",
                s.location
            );
        }
    }
    let r = report_of("run-noprofile");
    let t = table(
        &String::from_utf8(export(&r, ReportFormat::Html, &ExportOptions::default())).unwrap(),
    );
    assert!(t.contains(">Rank time min / med / max</th>"), "{t}");
    let p = &r.sites[0].per_rank;
    assert!(t.contains(&spread(
        &secs(p.time_min_s),
        &secs(p.time_median_s),
        &secs(p.time_max_s)
    )));
}
