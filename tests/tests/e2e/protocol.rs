//! The eager/rendezvous threshold is measured, and the wait states use it: a
//! blocking wavefront (`examples/wavefront.c`) at 4 ranks whose 16 KiB
//! messages are above the limit the calibration measured on this machine but
//! below the 64 KiB that used to be assumed: its `MPI_Send` waits (the
//! downstream rank still computes its previous block) are Late Receiver.

use crate::harness::*;

#[test]
fn protocol_wavefront_sends_above_the_measured_eager_limit_wait_as_late_receivers() {
    let prof = quick_profile("protocol_calibration", 4, "MPI_Send,MPI_Recv", "1,16Ki");
    let profile = mpiover_common::profile::Profile::load(&prof).expect("profile");
    let protocol = profile
        .protocol
        .clone()
        .expect("the profile has a measured eager limit");
    let limit = protocol
        .eager_limit_same_host
        .expect("a same-host pair was measured");
    assert!(
        limit < 16 * 1024,
        "this test needs an eager limit below 16 KiB on this machine: {protocol:?}"
    );
    // 6 blocks of 2048 unsigned longs (16 KiB), 5 ms of computing per block.
    let p = profile_program(
        "protocol_wavefront",
        4,
        &example("wavefront"),
        &["6", "5", "2048"],
        &[("MPIOVER_PROFILE", prof.to_str().expect("utf-8 path"))],
    );
    let report = report_json(&p.dir, &prof, &p.out);
    let ctx = format!("{report:#}\n{}", p.out.dump());
    let m = &report["methods"];
    assert_eq!(m["rendezvous_bytes"], limit + 1, "{ctx}");
    assert_eq!(m["rendezvous_source"], "profile", "{ctx}");
    let send = site_at(
        &report,
        "wavefront.c",
        marker("wavefront.c", "wavefront-send-helper"),
        "MPI_Send",
    )
    .unwrap_or_else(|| panic!("no MPI_Send site at the send helper\n{ctx}"));
    assert_eq!(send["wait_state"], "Late Receiver", "{ctx}");
    assert!(send["overhead_s"].as_f64().unwrap_or(0.0) > 0.0, "{ctx}");
    // Without the measurement, 16 KiB sends fell under the assumed 64 KiB
    // limit and had no wait state: the option restores that reading.
    let o = std::process::Command::new(mpiover_bin())
        .arg("report")
        .arg(&p.dir)
        .arg("--profile")
        .arg(&prof)
        .args(["--eager-limit", "65536", "--format", "json"])
        .output()
        .expect("mpiover report");
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let s = site_at(
        &r,
        "wavefront.c",
        marker("wavefront.c", "wavefront-send-helper"),
        "MPI_Send",
    )
    .expect("send site");
    assert!(s["wait_state"].is_null(), "{s:#}");
    assert_eq!(r["methods"]["rendezvous_source"], "option");
}
