//! Calibration across hosts, on the fake cluster (`scripts/fake-cluster`,
//! see `fake_cluster.rs`; the report across hosts is in `cross_host.rs`): 2 hosts x 2 ranks.
//!
//! - A two-host calibration has same-host and cross-host point-to-point
//!   entries and both eager limits; under Open MPI the cross-host limit is
//!   compared with what the library states (`btl_tcp_eager_limit`, read
//!   through `MPI_T` and by `ompi_info`), and `profile show` prints both.
//! - A profile of one host used for a run on two, and the reverse, is
//!   flagged by `mpiover record` and by `mpiover report --profile`.
//! - Clocks that disagree: the test-only `MPIOVER_CALIBRATE_TEST_CLOCK_SKEW`
//!   gives node2 an offset and a drift; the synchronization recovers them,
//!   its residual, the windows and the cross-host tmax stay those of a run
//!   without skew (within what a loaded 2-core machine allows), and a drift
//!   that changes sign is said to have put the clock model wrong.
//!
//! The calibrations are small (`--quick`, MPI_Send and MPI_Allreduce of
//! 8 B), about 20 s each; the run without skew is shared by the tests that
//! need it. Outside CI without a cluster the tests say so and pass; under CI
//! a missing cluster fails (`.ci/run` sets it up).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::Value;

use crate::fake_cluster::{cluster_command, cluster_or_skip, launcher};
use crate::harness::*;

const SKEW_VAR: &str = "MPIOVER_CALIBRATE_TEST_CLOCK_SKEW";
/// What node2's clock is given: 5 ms ahead, running 30 ppm fast.
const OFFSET_S: f64 = 0.005;
const DRIFT: f64 = 3e-5;

/// A quick calibration of MPI_Send and MPI_Allreduce (8 B) on `np` ranks
/// of `hosts`, with `env` on the ranks and `extra` arguments: the profile
/// (parsed), its path and the run.
fn calibrate(
    test: &str,
    vars: &[(String, String)],
    np: u32,
    hosts: &str,
    env: &[(&str, &str)],
    extra: &[&str],
) -> (Value, PathBuf, Outcome) {
    let dir = scratch(test);
    let prof = dir.join("profile.json");
    let words = launcher(np, hosts, env);
    let mut c = cluster_command(Path::new(&words[0]), vars);
    c.args(&words[1..])
        .arg(calibrate_bin())
        .args([
            "--quick",
            "--quiet",
            "--functions",
            "MPI_Send,MPI_Allreduce",
        ])
        // A fit point every second besides those before every entry: a
        // drift of 30 ppm stands out of a loaded machine's noise only over
        // enough of them.
        .args(["--sizes", "8", "--resync-interval", "1"])
        .args(extra)
        .arg("-o")
        .arg(&prof)
        .current_dir(&dir);
    let job = format!(
        "{} mpiover-calibrate --quick (fake cluster)",
        words.join(" ")
    );
    let out = run_locked(c, job, &dir);
    assert_eq!(out.code(), Some(0), "{}", out.dump());
    let text = std::fs::read_to_string(&prof)
        .unwrap_or_else(|e| panic!("{}: {e}\n{}", prof.display(), out.dump()));
    let v: Value = serde_json::from_str(&text).expect("profile is JSON");
    (v, prof, out)
}

/// The two-host calibration without skew, once per test process.
fn two_host_profile(vars: &[(String, String)]) -> &'static (Value, PathBuf, Outcome) {
    static P: OnceLock<(Value, PathBuf, Outcome)> = OnceLock::new();
    P.get_or_init(|| {
        calibrate(
            "cross_host_calibration",
            vars,
            4,
            "node1:2,node2:2",
            &[],
            &[],
        )
    })
}

fn entries(p: &Value) -> &Vec<Value> {
    p["entries"].as_array().expect("entries")
}

/// The entry of MPI_Send p=2 8 B between ranks of one host (`same`) or of
/// two.
fn send_entry(p: &Value, same: bool) -> Option<&Value> {
    entries(p).iter().find(|e| {
        e["function"] == "MPI_Send" && e["p"] == 2 && e["bytes"] == 8 && e["same_host"] == same
    })
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn profile_show(prof: &Path) -> String {
    let o = Command::new(mpiover_bin())
        .args(["profile", "show"])
        .arg(prof)
        .env_remove("LD_PRELOAD")
        .output()
        .expect("mpiover profile show");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `btl_tcp_eager_limit` as `ompi_info` states it.
fn ompi_info_tcp_eager_limit() -> Option<u64> {
    let o = Command::new("ompi_info")
        .args(["--param", "btl", "tcp", "--level", "9", "--parsable"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&o.stdout).lines().find_map(|l| {
        l.strip_prefix("mca:btl:tcp:param:btl_tcp_eager_limit:value:")
            .and_then(|v| v.trim().parse().ok())
    })
}

#[test]
fn cross_host_calibration_has_both_pairs_both_eager_limits_and_collectives_at_p4() {
    let test = "cross_host_calibration_has_both_pairs_both_eager_limits_and_collectives_at_p4";
    let Some(vars) = cluster_or_skip(test) else {
        return;
    };
    let (p, prof, out) = two_host_profile(&vars);
    let ctx = || format!("{}\n{}", prof.display(), out.dump());
    assert_eq!(
        p["environment"]["hosts"],
        serde_json::json!(["node1", "node2"]),
        "{}",
        ctx()
    );
    assert_eq!(
        p["environment"]["ranks_per_host"],
        serde_json::json!([2, 2]),
        "{}",
        ctx()
    );
    // Point-to-point between two ranks of a host and across the hosts.
    let same = send_entry(p, true).unwrap_or_else(|| panic!("no same-host MPI_Send\n{}", ctx()));
    let cross = send_entry(p, false).unwrap_or_else(|| panic!("no cross-host MPI_Send\n{}", ctx()));
    assert_eq!(same["hosts"], 1, "{same}");
    assert_eq!(cross["hosts"], 2, "{cross}");
    assert!(
        f(&same["tmax_s"]) > 0.0 && f(&cross["tmax_s"]) > 0.0,
        "{same}\n{cross}"
    );
    // The collectives at the job's p, over both hosts. (Each host has its
    // own share of the machine's cores, 1 of 2 here, so its 2 ranks
    // outnumber them: they yield while they wait for a window and the
    // library's, while it polls.)
    let at4 = entries(p)
        .iter()
        .find(|e| e["function"] == "MPI_Allreduce" && e["p"] == 4)
        .unwrap_or_else(|| panic!("MPI_Allreduce p=4 not measured\n{}", ctx()));
    assert_eq!(at4["hosts"], 2, "{at4}");
    assert!(f(&at4["tmax_s"]) > 0.0, "{at4}");
    eprintln!(
        "e2e: {test}: MPI_Allreduce p=4 over 2 hosts: tmax {:.1} us",
        f(&at4["tmax_s"]) * 1e6
    );
    // Both eager limits.
    let proto = &p["protocol"];
    let same_lim = proto["eager_limit_same_host"].as_u64();
    let cross_lim = proto["eager_limit_cross_host"].as_u64();
    assert!(
        same_lim.is_some() && cross_lim.is_some(),
        "{proto}\n{}",
        ctx()
    );
    let (same_lim, cross_lim) = (same_lim.unwrap_or(0), cross_lim.unwrap_or(0));
    eprintln!(
        "e2e: {test}: eager limits: same host {same_lim} B, across hosts {cross_lim} B; {proto}"
    );
    if mpi_flavor() != "mpich" {
        // Open MPI: vader within a host, TCP between. What the library
        // states for TCP counts the headers of the first fragment, so the
        // largest eager payload is a few dozen bytes below it.
        let stated = &proto["mpi_t_cross_host"];
        assert_eq!(stated["cvar"], "btl_tcp_eager_limit", "{proto}");
        let stated = stated["bytes"].as_u64().unwrap_or(0);
        if let Some(info) = ompi_info_tcp_eager_limit() {
            assert_eq!(stated, info, "MPI_T and ompi_info disagree");
        }
        // The search finds 65480 B (56 B of headers below). A send of an
        // eager size slowed past half the receiver's 3 ms lateness (a rank
        // preempted on a loaded 2-core machine) reads as a wait and the
        // bisection settles lower (57343 B and 63 B, beside other builds):
        // on a host the calibration calls busy only the upper bound holds.
        assert!(
            cross_lim <= stated,
            "cross-host eager limit {cross_lim} B, the library states {stated} B\n{}",
            ctx()
        );
        let busy = p["runs"]
            .as_array()
            .and_then(|r| r.last())
            .is_some_and(|r| r["load"]["busy"] == true);
        if busy {
            eprintln!("e2e: {test}: busy host: the cross-host eager limit is not compared closely");
        } else {
            assert!(
                stated - cross_lim <= 128 && same_lim < cross_lim,
                "cross-host eager limit {cross_lim} B, the library states {stated} B\n{}",
                ctx()
            );
        }
    }
    // `profile show` prints both.
    let show = profile_show(prof);
    let line = show
        .lines()
        .find(|l| l.trim_start().starts_with("eager:"))
        .unwrap_or_else(|| panic!("no eager line\n{show}"));
    assert!(
        line.contains(&format!("same host {same_lim} B"))
            && line.contains(&format!("across hosts {cross_lim} B")),
        "{line}"
    );
    if mpi_flavor() != "mpich" {
        assert!(line.contains("btl_tcp_eager_limit = "), "{line}");
    }
}

/// A profile measured on `hosts` (`ranks_per_host` each), by hand: one
/// MPI_Allreduce entry; environment fields other than the hosts left out
/// (not compared).
fn hand_profile_on(dir: &Path, name: &str, hosts: &[&str], ranks_per_host: u32) -> PathBuf {
    let env = mpiover_common::profile::Environment {
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
        ranks: ranks_per_host * hosts.len() as u32,
        ranks_per_host: vec![ranks_per_host; hosts.len()],
        ..Default::default()
    };
    crate::profile_use::hand_profile(
        dir,
        name,
        env,
        vec![crate::profile_use::point("MPI_Allreduce", 8, None, 20e-6)],
    )
}

/// `mpiover record --profile P -- <np ranks on hosts> imbalanced_allreduce
/// 2 1`, then the text report with `--profile P`: both outputs.
fn record_and_report(
    test: &str,
    vars: &[(String, String)],
    np: u32,
    hosts: &str,
    profile: &Path,
) -> (String, String) {
    let dir = scratch(test);
    let (run, out) = crate::fake_cluster::record_on(
        &dir,
        vars,
        "auto",
        Some(profile),
        np,
        hosts,
        "imbalanced_allreduce",
        &["2", "1"],
    );
    (
        format!("{}{}", out.stdout, out.stderr),
        crate::cross_host::text_report(&run, Some(profile)),
    )
}

#[test]
fn cross_host_profile_of_one_host_for_two_and_the_reverse_is_flagged() {
    let test = "cross_host_profile_of_one_host_for_two_and_the_reverse_is_flagged";
    let Some(vars) = cluster_or_skip(test) else {
        return;
    };
    let dir = scratch(test);
    // Measured on node1 alone (4 ranks), used for 2 ranks on each host.
    let one = hand_profile_on(&dir, "one-host.json", &["node1"], 4);
    let (rec, rep) = record_and_report(&format!("{test}-1to2"), &vars, 4, "node1:2,node2:2", &one);
    let want =
        "hosts differ: profile measured on 1 host (node1), this run is on 2 hosts (node1,node2)";
    for (what, text) in [("record", &rec), ("report --profile", &rep)] {
        assert!(text.contains(want), "{what} does not flag it:\n{text}");
    }
    assert!(
        rec.contains("one-host.json"),
        "record does not name the profile:\n{rec}"
    );
    assert!(
        rep.contains("one-host.json") && rep.contains("does NOT match"),
        "{rep}"
    );
    // Measured across node1 and node2, used for 2 ranks on node1.
    let two = hand_profile_on(&dir, "two-hosts.json", &["node1", "node2"], 2);
    let (rec, rep) = record_and_report(&format!("{test}-2to1"), &vars, 2, "node1:2", &two);
    let want =
        "hosts differ: profile measured on 2 hosts (node1,node2), this run is on 1 host (node1)";
    for (what, text) in [("record", &rec), ("report --profile", &rep)] {
        assert!(text.contains(want), "{what} does not flag it:\n{text}");
    }
    assert!(
        rec.contains("two-hosts.json"),
        "record does not name the profile:\n{rec}"
    );
    assert!(
        rep.contains("two-hosts.json") && rep.contains("does NOT match"),
        "{rep}"
    );
    // The same layout as measured is not flagged.
    let (rec, rep) = record_and_report(&format!("{test}-2to2"), &vars, 4, "node1:2,node2:2", &two);
    assert!(
        !rec.contains("hosts differ") && !rep.contains("hosts differ"),
        "{rec}\n{rep}"
    );
}

/// The clock model of `rank` in a profile.
fn rank_clock(p: &Value, rank: u64) -> &Value {
    p["method"]["clock_sync"]["ranks"]
        .as_array()
        .and_then(|r| r.iter().find(|c| c["rank"] == rank))
        .unwrap_or_else(|| panic!("no clock of rank {rank}: {}", p["method"]["clock_sync"]))
}

fn worst_residual(p: &Value) -> f64 {
    (1..4)
        .map(|r| f(&rank_clock(p, r)["residual_s"]))
        .fold(0.0, f64::max)
}

/// Invalid windows of an entry, as a fraction of all its windows.
fn invalid_fraction(e: &Value) -> f64 {
    let (n, bad) = (f(&e["n"]), f(&e["n_invalid"]));
    bad / (n + bad).max(1.0)
}

#[test]
fn clock_skew_of_a_host_is_recovered_and_leaves_windows_and_cross_host_tmax_alone() {
    let test = "clock_skew_of_a_host_is_recovered_and_leaves_windows_and_cross_host_tmax_alone";
    let Some(vars) = cluster_or_skip(test) else {
        return;
    };
    let (base, _, _) = two_host_profile(&vars);
    let skew = format!("host=node2:{OFFSET_S}:{DRIFT}");
    let (p, prof, out) = calibrate(test, &vars, 4, "node1:2,node2:2", &[(SKEW_VAR, &skew)], &[]);
    let ctx = || format!("{}\n{}", prof.display(), out.dump());
    assert!(
        p["method"]["notes"].to_string().contains(SKEW_VAR),
        "the profile does not say a test setting was in force\n{}",
        ctx()
    );
    // node2's ranks (2, 3) read L = t + offset + drift * t: at a rank's
    // reference time the true time was t = (L - offset) / (1 + drift), so
    // local - global = L - t there. node1's rank 1 shares rank 0's clock.
    for rank in [2, 3] {
        let c = rank_clock(&p, rank);
        let l = f(&c["ref_local_s"]);
        let want = l - (l - OFFSET_S) / (1.0 + DRIFT);
        let (got, drift) = (f(&c["offset_s"]), f(&c["drift"]));
        eprintln!(
            "e2e: {test}: rank {rank}: offset {got:.9} s (injected {want:.9} s at local {l:.3} s: \
             {OFFSET_S} s + {DRIFT} x t), drift {drift:.4e} (injected {DRIFT:e}), residual {:.1} us",
            f(&c["residual_s"]) * 1e6
        );
        assert!(
            (got - want).abs() < 200e-6,
            "rank {rank}: offset {got} s, want {want} s\n{c}"
        );
        assert!(
            (drift - DRIFT).abs() < 0.1 * DRIFT,
            "rank {rank}: drift {drift}\n{c}"
        );
    }
    assert_show_prints_the_skew(&prof, &p);
    let c1 = rank_clock(&p, 1);
    assert!(f(&c1["offset_s"]).abs() < 200e-6, "rank 1 on node1: {c1}");
    assert!(f(&c1["drift"]).abs() < 0.1 * DRIFT, "rank 1 on node1: {c1}");
    // The residual is that of the machine, not of the skew: on a loaded
    // 2-core machine fit points spoiled by preemption put it anywhere from
    // microseconds to a millisecond or two with or without skew, so the
    // bound is loose (the recovered drift above is what shows the slope
    // learned; an offset left in would leave 5 ms).
    let (rs, rb) = (worst_residual(&p), worst_residual(base));
    eprintln!(
        "e2e: {test}: worst residual {:.1} us with skew, {:.1} us without",
        rs * 1e6,
        rb * 1e6
    );
    // The noise is judged by the run without skew and by rank 1 of this
    // one (on node1, not skewed): 0.3-1 us on an idle machine (Open MPI),
    // 0.06-2.5 ms seen on a loaded one and under MPICH, whose ranks spin.
    let noise = rb.max(f(&c1["residual_s"])).max(1e-3);
    for rank in [2, 3] {
        let r = f(&rank_clock(&p, rank)["residual_s"]);
        assert!(
            r < 3.0 * noise,
            "rank {rank}: residual {r} s, noise {noise} s\n{}",
            ctx()
        );
    }
    // Windows: the cross-host entry keeps valid windows, about as many as
    // without skew; its tmax is the same within what the load moves it.
    let (sk, bs) = (send_entry(&p, false), send_entry(base, false));
    let (Some(sk), Some(bs)) = (sk, bs) else {
        panic!(
            "a cross-host MPI_Send is missing\n{}\nwithout skew: {base}",
            ctx()
        );
    };
    let (fs, fb) = (invalid_fraction(sk), invalid_fraction(bs));
    let (ts, tb) = (f(&sk["tmax_s"]), f(&bs["tmax_s"]));
    eprintln!(
        "e2e: {test}: cross-host MPI_Send 8 B: tmax {:.1} us with skew, {:.1} us without; \
         invalid windows {:.0} % and {:.0} %; kept {} and {}",
        ts * 1e6,
        tb * 1e6,
        fs * 100.0,
        fb * 100.0,
        sk["n"],
        bs["n"]
    );
    assert!(f(&sk["n"]) >= 30.0, "too few valid windows with skew: {sk}");
    // Which share of windows is invalid is the load's doing here: 11-16 %
    // with or without skew on an idle machine, 60-92 % on one shared with
    // other builds. A skew left in would make all of them late.
    assert!(
        fs < 0.98,
        "invalid {fs} with skew, {fb} without\n{sk}\n{bs}"
    );
    // A 5 ms offset left in would put milliseconds into tmax (or every
    // window out); the load moves tmax by a factor of 3 or so between runs
    // (67 us against 24 us once), the fastest call hardly.
    assert!(
        ts < 6.0 * tb && tb < 6.0 * ts,
        "cross-host tmax {ts} s with skew, {tb} s without\n{sk}\n{bs}"
    );
    let (ms, mb) = (f(&sk["min_s"]), f(&bs["min_s"]));
    assert!(
        ms < 3.0 * mb + 5e-6 && mb < 3.0 * ms + 5e-6,
        "cross-host fastest call {ms} s with skew, {mb} s without\n{sk}\n{bs}"
    );
}

#[test]
fn clock_skew_whose_drift_flips_is_said_to_have_put_the_clock_model_wrong() {
    let test = "clock_skew_whose_drift_flips_is_said_to_have_put_the_clock_model_wrong";
    let Some(vars) = cluster_or_skip(test) else {
        return;
    };
    // node2's clock drifts 1000 ppm, changing sign every 3 s: its offset
    // swings through 3 ms, which no line follows for long.
    // The run must outlast a flip or two: the grid alone takes 1-2 s here,
    // so it is measured in 4 rounds spread over 9 s.
    let skew = "host=node2:0:1e-3:3";
    let (p, prof, out) = calibrate(
        test,
        &vars,
        4,
        "node1:2,node2:2",
        &[(SKEW_VAR, skew)],
        &["--rounds", "4", "--spread", "9"],
    );
    let ctx = || format!("{}\n{}", prof.display(), out.dump());
    assert!(
        out.stderr.contains("the clock model went wrong"),
        "{}",
        ctx()
    );
    assert!(out.stderr.contains("(node2)"), "{}", ctx());
    for rank in [2, 3] {
        let c = rank_clock(&p, rank);
        eprintln!("e2e: {test}: rank {rank}: {c}");
        assert!(
            c["model_failures"].as_u64().unwrap_or(0) >= 1,
            "rank {rank}: {c}\n{}",
            ctx()
        );
        assert!(f(&c["prediction_error_s"]) > 300e-6, "rank {rank}: {c}");
    }
    let show = profile_show(&prof);
    assert!(
        show.contains("CLOCK MODEL WENT WRONG") && show.contains("rank 2"),
        "{show}"
    );
}

/// `mpiover profile show` prints node2's clock as injected: its offset at
/// the start of the run (the first fit point, local time `L0`, where the
/// true time was `(L0 - offset) / (1 + drift)`) and its drift in ppm.
fn assert_show_prints_the_skew(prof: &Path, p: &Value) {
    let out = Command::new(mpiover_bin())
        .args(["profile", "show"])
        .arg(prof)
        .output()
        .expect("mpiover profile show");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("node2 (ranks 2-3): offset +"))
        .unwrap_or_else(|| panic!("no clock line of node2:\n{text}"));
    let num = |after: &str| -> f64 {
        let rest = &line[line.find(after).expect(after) + after.len()..];
        let v: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '+' || *c == '-')
            .collect();
        v.parse().unwrap_or_else(|_| panic!("{after} in {line}"))
    };
    let c = rank_clock(p, 2);
    let l0 = f(&c["ref_local_s"]) - f(&c["span_s"]) / 2.0;
    let want_ms = (l0 - (l0 - OFFSET_S) / (1.0 + DRIFT)) * 1e3;
    // The offset is printed in the unit that suits it: milliseconds, or
    // seconds once the drift has run up past one (30 ppm of a clock read
    // 11 hours after boot is 1.2 s).
    let scale = if line.contains(" ms at the start") {
        1.0
    } else if line.contains(" s at the start") {
        1e3
    } else {
        panic!("no offset at the start: {line}")
    };
    let (ms, ppm) = (num("offset ") * scale, num("drift "));
    // Seconds are printed to the millisecond: half of one more.
    let tol = if scale > 1.0 { 0.7 } else { 0.2 };
    assert!(
        (ms - want_ms).abs() < tol,
        "offset {ms} ms, injected {want_ms:.3} ms: {line}"
    );
    assert!(
        (ppm - DRIFT * 1e6).abs() < 3.0,
        "drift {ppm} ppm, injected 30: {line}"
    );
}
