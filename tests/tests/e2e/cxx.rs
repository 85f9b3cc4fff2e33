//! C++ (`examples/cxx/exchanger.cpp`): MPI calls in class methods, template
//! instances and a namespace show under the names a C++ programmer writes
//! (`halo::Exchanger::receive(int)`), at the right lines, in every output
//! format; the late sender is found at the receive; the record keeps the
//! linkage name beside the readable one.

use std::process::Command;

use crate::harness::*;

const FILE: &str = "exchanger.cpp";

fn line(tag: &str) -> u32 {
    marker(&format!("cxx/{FILE}"), tag)
}

fn report(dir: &std::path::Path, format: &str) -> String {
    let o = Command::new(mpiover_bin())
        .arg("report")
        .arg(dir)
        .args(["--format", format])
        .env_remove("LD_PRELOAD")
        .output()
        .expect("mpiover report");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("utf-8")
}

#[test]
fn cxx_sites_show_demangled_names_at_their_lines_in_every_format() {
    let p = profile_program(
        "cxx_exchanger",
        2,
        &example_in("cxx", "exchanger"),
        &["10", "20"],
        &[],
    );
    let r0 = &p.records[0];
    let ctx = format!("{}\n{}", dump_sites(r0), p.out.dump());
    // The record: readable name, linkage name beside it.
    let recv = r0
        .entries
        .iter()
        .find(|e| e.function == "MPI_Recv")
        .unwrap_or_else(|| panic!("no MPI_Recv entry\n{ctx}"));
    let s = site(r0, recv.site).expect("site");
    assert!(site_is(s, FILE, line("cxx-recv")), "{ctx}");
    assert_eq!(
        s.function.as_deref(),
        Some("halo::Exchanger::receive(int)"),
        "{ctx}"
    );
    assert_eq!(
        s.symbol.as_deref(),
        Some("_ZN4halo9Exchanger7receiveEi"),
        "{ctx}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&report(&p.dir, "json")).expect("JSON report");
    let sites = json["sites"].as_array().expect("sites");
    let at = |tag: &str| {
        sites
            .iter()
            .find(|s| s["line"].as_u64() == Some(u64::from(line(tag))))
            .unwrap_or_else(|| panic!("no site at the {tag} line\n{json:#}"))
    };
    assert_eq!(at("cxx-recv")["function"], "halo::Exchanger::receive");
    assert_eq!(
        at("cxx-recv")["function_signature"],
        "halo::Exchanger::receive(int)"
    );
    assert_eq!(at("cxx-send")["function"], "halo::Exchanger::send");
    assert_eq!(
        at("cxx-send")["function_signature"],
        "halo::Exchanger::send(int)"
    );
    let sum = at("cxx-allreduce")["function"].as_str().unwrap_or("");
    assert!(sum.contains("halo::global_sum<"), "{sum}");
    // The late sender's wait is at the receive: the top site by time.
    assert_eq!(sites[0]["line"].as_u64(), Some(u64::from(line("cxx-recv"))));
    let injected = injected_s(&p.out, "exchanger", 1);
    let t = sites[0]["time_s"].as_f64().unwrap_or(0.0);
    assert!(
        t >= 0.9 * injected,
        "{t} s at the receive, {injected} s injected"
    );

    // No mangled name anywhere a user reads.
    let html = report(&p.dir, "html");
    for (format, out) in [
        ("text", report(&p.dir, "text")),
        ("csv", report(&p.dir, "csv")),
        ("html", html.clone()),
        ("json", serde_json::to_string(&json["sites"]).unwrap()),
    ] {
        assert!(
            !out.contains("_ZN4halo"),
            "{format} output shows a mangled name:\n{out}"
        );
        assert!(out.contains("halo::Exchanger::receive"), "{format}:\n{out}");
    }
}
