use proptest::prelude::*;

use crate::profile::fit_model::FitModel;
use crate::profile::index::{is_point_to_point, Query};
use crate::profile::merge::combine_runs;
use crate::profile::schema::{
    CalibrationRun, ClockSync, Environment, Measured, Method, Profile, ProfileEntry, RankClock,
    StopReason, SyncMethod,
};

fn entry(function: &str, p: u32, bytes: u64, role: Option<&str>, tmax: f64) -> ProfileEntry {
    ProfileEntry {
        function: function.into(),
        p,
        bytes,
        role: role.map(String::from),
        same_host: if is_point_to_point(function) {
            Some(true)
        } else {
            None
        },
        measured: Measured {
            hosts: 1,
            n: 200,
            n_invalid: 3,
            n_late: 2,
            n_overrun: 1,
            n_preempted: 0,
            min_s: tmax * 0.5,
            median_s: tmax * 0.6,
            median_ci_s: Some([tmax * 0.58, tmax * 0.62]),
            max_s: Some(tmax * 2.0),
            q90_s: Some(tmax * 0.9),
            q99_s: Some(tmax * 1.5),
            tmax_s: tmax,
            model: Some(FitModel::Exponential),
            lambda: Some(1e6),
            params: None,
            chi2: Some(3.0),
            df: Some(4),
            critical: Some(9.49),
            accepted: true,
            fallback: false,
            tail_test: None,
            bin_width_s: Some(1e-7),
            window_s: Some(1e-4),
            stop: Some(StopReason::Stable),
            sum_s: Some(tmax * 120.0),
            elapsed_s: Some(0.1),
            note: None,
        },
        runs: vec![],
        samples: None,
    }
}

fn env() -> Environment {
    Environment {
        hosts: vec!["node1".into()],
        ranks: 4,
        ranks_per_host: vec![4],
        mpi_library: "Open MPI v4.1.4, package: Debian".into(),
        cpu_model: "AMD EPYC".into(),
        ..Default::default()
    }
}

fn profile(entries: Vec<ProfileEntry>) -> Profile {
    let mut p = Profile::new(
        env(),
        Method {
            q_max: 0.99,
            alpha: 0.05,
            ..Default::default()
        },
    );
    p.runs.push(CalibrationRun {
        id: "run-a".into(),
        ..Default::default()
    });
    for e in entries {
        p.push_entry(e);
    }
    p
}

fn grid() -> Profile {
    let mut es = vec![];
    for (pi, p) in [2u32, 3, 4, 8].into_iter().enumerate() {
        for (bi, b) in [1u64, 10, 100, 1000, 10000].into_iter().enumerate() {
            let t = 1e-6 * (1.0 + pi as f64) * (1.0 + bi as f64 * bi as f64);
            es.push(entry("MPI_Allreduce", p, b, None, t));
            es.push(entry("MPI_Bcast", p, b, Some("root"), t));
            es.push(entry("MPI_Bcast", p, b, Some("nonroot"), 2.0 * t));
        }
    }
    for b in [1u64, 100, 10000] {
        es.push(entry("MPI_Send", 2, b, None, 1e-6 * b as f64));
        es.push(entry("MPI_Wait", 2, b, Some("MPI_Irecv"), 3e-6));
        es.push(entry("MPI_Wait", 2, b, Some("MPI_Isend"), 1e-6));
    }
    profile(es)
}

#[test]
fn base_points_are_exact() {
    let p = grid();
    for e in &p.entries {
        let l = p
            .tmax(&e.function, e.p, e.bytes, e.role.as_deref())
            .unwrap();
        assert_eq!(l.tmax_s, e.tmax_s, "{}", e.key());
        assert!(l.exact && !l.out_of_range, "{}", e.key());
        assert_eq!(l.kind(), "exact");
    }
}

#[test]
fn interpolation_in_log_bytes_and_log_p() {
    let p = grid();
    // Between 10 and 100 bytes at p = 2: geometric midpoint sqrt(1000) ~ 31.6.
    let a = p.tmax("MPI_Allreduce", 2, 10, None).unwrap().tmax_s;
    let b = p.tmax("MPI_Allreduce", 2, 100, None).unwrap().tmax_s;
    let m = p.tmax("MPI_Allreduce", 2, 32, None).unwrap();
    assert!(!m.exact && !m.out_of_range);
    let t = (32f64.ln() - 10f64.ln()) / (100f64.ln() - 10f64.ln());
    assert!((m.tmax_s - (a + t * (b - a))).abs() < 1e-15);
    // p = 6 between rows 4 and 8, in ln p.
    let v4 = p.tmax("MPI_Allreduce", 4, 100, None).unwrap().tmax_s;
    let v8 = p.tmax("MPI_Allreduce", 8, 100, None).unwrap().tmax_s;
    let l6 = p.tmax("MPI_Allreduce", 6, 100, None).unwrap();
    let s = (6f64.ln() - 4f64.ln()) / (8f64.ln() - 4f64.ln());
    assert!((l6.tmax_s - (v4 + s * (v8 - v4))).abs() < 1e-15);
    assert_eq!((l6.p_lo, l6.p_hi), (4, 8));
    assert_eq!(l6.kind(), "interpolated");
}

#[test]
fn outside_range_uses_nearest_edge_and_flags() {
    let p = grid();
    let hi = p.tmax("MPI_Allreduce", 8, 10000, None).unwrap().tmax_s;
    let l = p.tmax("MPI_Allreduce", 64, 1 << 30, None).unwrap();
    assert!(l.out_of_range);
    assert_eq!(l.tmax_s, hi);
    assert_eq!(l.kind(), "out of range");
    let lo = p.tmax("MPI_Allreduce", 1, 1, None).unwrap();
    assert!(lo.out_of_range);
    assert_eq!(
        lo.tmax_s,
        p.tmax("MPI_Allreduce", 2, 1, None).unwrap().tmax_s
    );
    // b = 0 is the 1-byte point, not out of range.
    let z = p.tmax("MPI_Allreduce", 2, 0, None).unwrap();
    assert!(z.exact && !z.out_of_range);
}

#[test]
fn point_to_point_ignores_p() {
    let p = grid();
    let l = p.tmax("MPI_Send", 64, 100, None).unwrap();
    assert!(l.exact && !l.out_of_range);
    assert_eq!(l.tmax_s, 1e-6 * 100.0);
}

#[test]
fn roles_and_waits() {
    let p = grid();
    let r = p.tmax("MPI_Bcast", 2, 10, Some("root")).unwrap().tmax_s;
    let n = p.tmax("MPI_Bcast", 2, 10, Some("nonroot")).unwrap().tmax_s;
    assert_eq!(n, 2.0 * r);
    assert!(p.tmax("MPI_Bcast", 2, 10, None).is_none());
    assert_eq!(
        p.tmax("MPI_Wait", 2, 100, Some("MPI_Irecv"))
            .unwrap()
            .tmax_s,
        3e-6
    );
    assert_eq!(
        p.tmax("MPI_Wait", 2, 100, Some("irecv")).unwrap().tmax_s,
        3e-6
    );
    assert_eq!(
        p.tmax("MPI_Wait", 2, 100, Some("MPI_Isend"))
            .unwrap()
            .tmax_s,
        1e-6
    );
    // A role given for a function without roles is ignored.
    assert!(p.tmax("MPI_Allreduce", 2, 10, Some("root")).is_some());
    assert!(p.tmax("MPI_Alltoallw", 2, 10, None).is_none());
}

#[test]
fn same_host_preference() {
    let mut a = entry("MPI_Recv", 2, 8, None, 1e-6);
    a.same_host = Some(true);
    let mut b = entry("MPI_Recv", 2, 8, None, 5e-6);
    b.same_host = Some(false);
    let p = profile(vec![a, b]);
    assert_eq!(p.tmax("MPI_Recv", 2, 8, None).unwrap().tmax_s, 5e-6);
    let q = Query {
        function: "MPI_Recv",
        p: 2,
        bytes: 8,
        role: None,
        same_host: Some(true),
    };
    assert_eq!(p.tmax_query(&q).unwrap().tmax_s, 1e-6);
}

#[test]
fn json_roundtrip_and_errors() {
    let p = grid();
    let dir = std::env::temp_dir().join(format!("mpiover-profile-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("p.json");
    p.save_atomic(&path).unwrap();
    let q = Profile::load(&path).unwrap();
    assert_eq!(q.entries, p.entries);
    assert_eq!(q.environment, p.environment);
    // One entry per line.
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.lines()
            .filter(|l| l.contains("\"function\":\"MPI_"))
            .count(),
        p.entries.len()
    );

    let missing = Profile::load(dir.join("nope.json"))
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("nope.json") && missing.contains("cannot read"),
        "{missing}"
    );
    std::fs::write(dir.join("bad.json"), "{\"schema\": \"mpiover-profile/1\", ").unwrap();
    let bad = Profile::load(dir.join("bad.json")).unwrap_err().to_string();
    assert!(
        bad.contains("bad.json") && bad.contains("not valid JSON"),
        "{bad}"
    );
    std::fs::write(dir.join("rec.json"), "{\"schema\": \"mpiover-record/1\"}").unwrap();
    let rec = Profile::load(dir.join("rec.json")).unwrap_err().to_string();
    assert!(rec.contains("not an mpiover profile"), "{rec}");
    std::fs::write(dir.join("v2.json"), "{\"schema\": \"mpiover-profile/2\"}").unwrap();
    let v2 = Profile::load(dir.join("v2.json")).unwrap_err().to_string();
    assert!(v2.contains("not supported"), "{v2}");
    // Regression: a JSON list was "not valid JSON: trailing characters".
    std::fs::write(dir.join("list.json"), "[1, 2]").unwrap();
    let list = Profile::load(dir.join("list.json"))
        .unwrap_err()
        .to_string();
    assert!(
        list.contains("list.json") && list.contains("a JSON list") && !list.contains("trailing"),
        "{list}"
    );
    let dup = text.replacen(
        "\"entries\": [\n",
        &format!(
            "\"entries\": [\n    {},\n",
            serde_json::to_string(&p.entries[0]).unwrap()
        ),
        1,
    );
    std::fs::write(dir.join("dup.json"), dup).unwrap();
    let d = Profile::load(dir.join("dup.json")).unwrap_err().to_string();
    assert!(d.contains("same key"), "{d}");
    let neg = text.replacen(
        &format!(
            "\"tmax_s\":{}",
            serde_json::to_string(&p.entries[0].tmax_s).unwrap()
        ),
        "\"tmax_s\":-1.0",
        1,
    );
    std::fs::write(dir.join("neg.json"), neg).unwrap();
    let n = Profile::load(dir.join("neg.json")).unwrap_err().to_string();
    assert!(n.contains("tmax_s") && n.contains("entry 0"), "{n}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn environment_match() {
    let p = grid();
    assert!(p.matches(&env()).is_ok());
    // Fields the caller does not know are not compared.
    assert!(p.matches(&Environment::default()).is_ok());
    let mut other = env();
    other.mpi_library = "MPICH Version: 4.0.2".into();
    other.hosts = vec!["elsewhere".into()];
    other.ranks_per_host = vec![8];
    let m = p.matches(&other).unwrap_err();
    assert_eq!(m.reasons.len(), 3, "{m}");
    assert!(m.to_string().contains("MPI library differs"));
    assert!(m.to_string().contains("other machine"));
    assert!(m.to_string().contains("8 ranks on a host"));
}

#[test]
fn one_host_against_several_is_a_mismatch_both_ways_but_not_for_merge() {
    let one = grid();
    let mut two_hosts = env();
    two_hosts.hosts = vec!["node1".into(), "node2".into()];
    two_hosts.ranks_per_host = vec![2, 2];
    let m = one.matches(&two_hosts).unwrap_err();
    assert_eq!(m.reasons.len(), 1, "{m}");
    assert!(
        m.reasons[0].starts_with("hosts differ: profile measured on 1 host (node1), this run is on 2 hosts (node1,node2)"),
        "{m}"
    );
    // The reverse: measured across two hosts, used on one.
    let mut across = grid();
    across.environment = two_hosts.clone();
    let m = across.matches(&env()).unwrap_err();
    assert!(
        m.reasons.iter().any(|r| {
            r.starts_with(
            "hosts differ: profile measured on 2 hosts (node1,node2), this run is on 1 host (node1)"
        )
        }),
        "{m}"
    );
    // Several hosts against more: no difference (2 hosts have cross-host entries).
    let mut four = two_hosts.clone();
    four.hosts = (1..=4).map(|i| format!("node{i}")).collect();
    four.ranks_per_host = vec![1; 4];
    assert!(across.matches(&four).is_ok());
    // Not known: not compared.
    assert!(one.hosts_differ(&[]).is_none());
    // Merging a one-host profile with a two-host one is allowed.
    let mut b = across.clone();
    b.runs[0].id = "run-b".into();
    assert!(Profile::merge(&one, &b, false).is_ok());
}

#[test]
fn merge_keeps_both_runs() {
    let a = grid();
    let mut b = grid();
    b.runs[0].id = "run-b".into();
    for e in &mut b.entries {
        e.tmax_s *= 1.1;
        e.min_s *= 0.9;
        e.n = 300;
        e.n_late = 7;
        e.n_overrun = 0;
        e.n_preempted = 4;
        e.n_invalid = 11;
        e.q99_s = e.q99_s.map(|q| q * 1.3);
        e.q90_s = e.q90_s.map(|q| q * 0.8);
        e.sum_s = e.sum_s.map(|x| x * 1.7);
        e.stop = Some(StopReason::MaxSamples);
        e.note = Some("slow".into());
    }
    b.entries.push(entry("MPI_Scan", 2, 1, None, 1e-6));
    b.invalidate_index();
    let m = Profile::merge(&a, &b, false).unwrap();
    assert_eq!(m.runs.len(), 2);
    assert_eq!(m.entries.len(), a.entries.len() + 1);
    let k = a.entries[0].key();
    let e = m.entry(&k).unwrap();
    assert_eq!(e.runs.len(), 2);
    assert_eq!(e.runs[0].run, "run-a");
    assert_eq!(e.runs[1].run, "run-b");
    assert_eq!(e.n, 500);
    assert_eq!(e.n_invalid, 14);
    assert!((e.tmax_s - a.entries[0].tmax_s * 1.1).abs() < 1e-18);
    assert!((e.min_s - a.entries[0].min_s * 0.9).abs() < 1e-18);
    assert_eq!(e.median_s, a.entries[0].median_s);
    assert_eq!(
        m.entry(&b.entries.last().unwrap().key())
            .unwrap()
            .runs
            .len(),
        1
    );
    // Every count and sum is over both runs; quantiles are the larger run's
    // (an upper bound of the pooled quantile); the fit is the larger tmax's.
    let (ea, eb) = (&a.entries[0], b.entry(&k).unwrap());
    assert_eq!(e.n_late, ea.n_late + eb.n_late);
    assert_eq!(e.n_overrun, ea.n_overrun + eb.n_overrun);
    assert_eq!(e.n_preempted, ea.n_preempted + eb.n_preempted);
    assert_eq!(e.n_invalid, e.n_late + e.n_overrun + e.n_preempted);
    assert_eq!(e.sum_s, Some(ea.sum_s.unwrap() + eb.sum_s.unwrap()));
    assert_eq!(
        e.elapsed_s,
        Some(ea.elapsed_s.unwrap() + eb.elapsed_s.unwrap())
    );
    assert_eq!(e.q99_s, Some(ea.q99_s.unwrap().max(eb.q99_s.unwrap())));
    assert_eq!(e.q90_s, Some(ea.q90_s.unwrap().max(eb.q90_s.unwrap())));
    assert_eq!(e.stop, eb.stop);
    assert_eq!(e.note.as_deref(), Some("run run-b: slow"));
    // Merging is order-independent in everything but the order of `runs`.
    let m_ba = Profile::merge(&b, &a, false).unwrap();
    let e_ba = m_ba.entry(&k).unwrap();
    assert_eq!((e_ba.n, e_ba.sum_s, e_ba.tmax_s), (e.n, e.sum_s, e.tmax_s));
    // A run without sum_s (an older profile) leaves the merged sum unknown
    // rather than a sum over part of the samples.
    let mut old = grid();
    old.runs[0].id = "run-old".into();
    for e in &mut old.entries {
        e.sum_s = None;
    }
    assert_eq!(
        Profile::merge(&a, &old, false)
            .unwrap()
            .entry(&k)
            .unwrap()
            .sum_s,
        None
    );
    // Different synchronization methods are refused, even with force.
    let mut sb = grid();
    sb.runs[0].id = "run-sb".into();
    sb.method.sync = SyncMethod::Barrier;
    for force in [false, true] {
        let err = Profile::merge(&a, &sb, force).unwrap_err().to_string();
        assert!(
            err.contains("method.sync") && err.contains("barrier"),
            "{err}"
        );
    }
    // Merging again with a third run keeps all three summaries.
    let mut c = grid();
    c.runs[0].id = "run-c".into();
    let m3 = Profile::merge(&m, &c, false).unwrap();
    assert_eq!(m3.entry(&k).unwrap().runs.len(), 3);
    // Refusals.
    assert!(Profile::merge(&a, &a, false)
        .unwrap_err()
        .to_string()
        .contains("both profiles"));
    let mut d = grid();
    d.runs[0].id = "run-d".into();
    d.method.q_max = 0.9;
    assert!(Profile::merge(&a, &d, false)
        .unwrap_err()
        .to_string()
        .contains("q_max"));
    let mut e2 = grid();
    e2.runs[0].id = "run-e".into();
    e2.environment.mpi_library = "MPICH".into();
    assert!(Profile::merge(&a, &e2, false)
        .unwrap_err()
        .to_string()
        .contains("environments differ"));
    assert!(Profile::merge(&a, &e2, true).is_ok());
}

fn ragged() -> impl Strategy<Value = Vec<(u32, Vec<(u64, f64)>)>> {
    let row = prop::collection::btree_map(1u64..5_000_000, 1e-7f64..1e-2, 1..8)
        .prop_map(|m| m.into_iter().collect::<Vec<_>>());
    prop::collection::btree_map(2u32..200, row, 1..5).prop_map(|m| m.into_iter().collect())
}

fn profile_of(rows: &[(u32, Vec<(u64, f64)>)]) -> Profile {
    let mut es = vec![];
    for (p, pts) in rows {
        for (b, t) in pts {
            es.push(entry("MPI_Alltoall", *p, *b, None, *t));
        }
    }
    profile(es)
}

proptest! {
    #[test]
    fn prop_exact_at_base_points(rows in ragged()) {
        let prof = profile_of(&rows);
        for (p, pts) in &rows {
            for (b, t) in pts {
                let l = prof.tmax("MPI_Alltoall", *p, *b, None).unwrap();
                prop_assert_eq!(l.tmax_s, *t);
                prop_assert!(l.exact && !l.out_of_range);
            }
        }
    }

    #[test]
    fn prop_monotone_between_bytes(rows in ragged(), f1 in 0.0f64..1.0, f2 in 0.0f64..1.0) {
        let prof = profile_of(&rows);
        for (p, pts) in &rows {
            for w in pts.windows(2) {
                let ((b0, t0), (b1, t1)) = (w[0], w[1]);
                let at = |f: f64| b0 + ((b1 - b0) as f64 * f) as u64;
                let (x, y) = if f1 <= f2 { (at(f1), at(f2)) } else { (at(f2), at(f1)) };
                let vx = prof.tmax("MPI_Alltoall", *p, x, None).unwrap();
                let vy = prof.tmax("MPI_Alltoall", *p, y, None).unwrap();
                prop_assert!(!vx.out_of_range && !vy.out_of_range);
                let (lo, hi) = (t0.min(t1), t0.max(t1));
                prop_assert!(vx.tmax_s >= lo && vx.tmax_s <= hi);
                prop_assert!(vy.tmax_s >= lo && vy.tmax_s <= hi);
                if t1 >= t0 { prop_assert!(vy.tmax_s >= vx.tmax_s); } else { prop_assert!(vy.tmax_s <= vx.tmax_s); }
            }
        }
    }

    #[test]
    fn prop_monotone_between_p(rows in ragged(), f1 in 0.0f64..1.0, f2 in 0.0f64..1.0) {
        let prof = profile_of(&rows);
        for w in rows.windows(2) {
            let ((p0, _), (p1, _)) = (&w[0], &w[1]);
            // At a byte count that is a base point of both rows, the value
            // between the rows lies between the two and is monotone in p.
            for (b, _) in &w[0].1 {
                let v0 = prof.tmax("MPI_Alltoall", *p0, *b, None).unwrap();
                let v1 = prof.tmax("MPI_Alltoall", *p1, *b, None).unwrap();
                if v0.out_of_range || v1.out_of_range { continue; }
                let at = |f: f64| p0 + ((p1 - p0) as f64 * f) as u32;
                let (x, y) = if f1 <= f2 { (at(f1), at(f2)) } else { (at(f2), at(f1)) };
                let vx = prof.tmax("MPI_Alltoall", x, *b, None).unwrap().tmax_s;
                let vy = prof.tmax("MPI_Alltoall", y, *b, None).unwrap().tmax_s;
                let (lo, hi) = (v0.tmax_s.min(v1.tmax_s), v0.tmax_s.max(v1.tmax_s));
                prop_assert!(vx >= lo && vx <= hi && vy >= lo && vy <= hi);
                if v1.tmax_s >= v0.tmax_s { prop_assert!(vy >= vx); } else { prop_assert!(vy <= vx); }
            }
        }
    }

    #[test]
    fn prop_outside_is_flagged_edge(rows in ragged()) {
        let prof = profile_of(&rows);
        let (pmax, last) = rows.last().unwrap();
        let l = prof.tmax("MPI_Alltoall", pmax + 1000, last.last().unwrap().0, None).unwrap();
        prop_assert!(l.out_of_range);
        prop_assert_eq!(l.tmax_s, last.last().unwrap().1);
    }
}

#[test]
fn lookup_carries_the_weakest_basis_of_the_points_used() {
    let mut a = entry("MPI_Bcast", 2, 10, Some("root"), 1e-6);
    let mut b = entry("MPI_Bcast", 2, 100, Some("root"), 2e-6);
    a.n = 300;
    b.n = 250;
    b.model = None;
    b.fallback = true;
    b.accepted = false;
    let p = profile(vec![a, b]);
    let at = |bytes| {
        let b = p.tmax("MPI_Bcast", 2, bytes, Some("root")).unwrap().basis;
        (b.n, b.fitted)
    };
    assert_eq!(at(10), (300, true));
    assert_eq!(at(100), (250, false));
    assert_eq!(at(30), (250, false));
    assert_eq!(at(1 << 20), (250, false));
}

#[test]
fn combining_one_run_gives_the_entry_back() {
    let mut e = entry("MPI_Bcast", 4, 100, Some("root"), 3e-6);
    e.note = Some("kept preempted windows".into());
    e.runs = vec![e.as_run("r1")];
    let c = combine_runs(&e, e.runs.clone());
    assert_eq!(c, e);
}

#[test]
fn entries_cut_short_or_measured_with_skewed_clocks_are_weak() {
    let mut a = entry("MPI_Allreduce", 4, 8, None, 10e-6);
    let mut b = entry("MPI_Allreduce", 4, 1000, None, 20e-6);
    a.n = 16;
    b.n = 300;
    let mut p = profile(vec![a, b]);
    p.method.min_samples = 200;
    p.invalidate_index();
    let at = |p: &Profile, bytes| p.tmax("MPI_Allreduce", 4, bytes, None).unwrap().basis;
    assert!(at(&p, 8).is_weak(), "16 of 200 samples");
    assert!(!at(&p, 1000).is_weak());
    assert!(at(&p, 100).is_weak(), "interpolated from a weak point");
    // A clock residual above the calls' median skews every window.
    p.method.sync = SyncMethod::Window;
    p.method.clock_sync = Some(ClockSync {
        ranks: vec![RankClock {
            rank: 1,
            residual_s: 1e-3,
            ..RankClock::default()
        }],
        ..ClockSync::default()
    });
    p.invalidate_index();
    let b = at(&p, 1000);
    assert!(b.skewed && b.is_weak(), "{b:?}");
    // A point-to-point entry is timed with its partner: no skew.
    let mut s = entry("MPI_Send", 2, 8, None, 1e-6);
    s.n = 300;
    p.push_entry(s);
    p.invalidate_index();
    let b = p.tmax("MPI_Send", 2, 8, None).unwrap().basis;
    assert!(!b.skewed, "{b:?}");
}

mod samples;
