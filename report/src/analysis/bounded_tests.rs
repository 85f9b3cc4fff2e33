//! A merged job log of more ranks than it keeps rows for (bounded per-rank
//! detail) against the report on the per-rank records of the same job:
//! every exact figure equal, every estimate within its stated bound.

use mpiover_aggregate::SKETCH_ALPHA;
use serde_json::Value;

use super::*;
use crate::synth;

fn summary_of(records: &[Record]) -> RunSummary {
    let mut c = RunCheck::new();
    for r in records {
        c.add(RankInfo::of(Path::new("x"), r)).unwrap();
    }
    c.finish().unwrap()
}

/// The parts of `records` merged up the binomial tree the ranks of a job
/// use (rank r takes r + 1, r + 2, r + 4, ... while it is a multiple of
/// twice the step), each part through its encoding.
fn merged_up_the_tree(records: &[Record]) -> JobAggregate {
    let mut parts: Vec<Option<JobAggregate>> =
        records.iter().map(|r| Some(job_aggregate_of(r))).collect();
    let n = parts.len();
    let mut step = 1;
    while step < n {
        for r in (0..n).step_by(2 * step) {
            if r + step < n {
                let child = parts[r + step].take().unwrap().encode().unwrap();
                let parent = parts[r].as_mut().unwrap();
                parent.merge(JobAggregate::decode(&child).unwrap());
            }
        }
        step *= 2;
    }
    JobAggregate::decode(&parts[0].take().unwrap().encode().unwrap()).unwrap()
}

/// `est` is within the sketches' relative error of `exact`.
fn within(est: &Value, exact: &Value, what: &str) {
    let (e, x) = (est.as_f64().unwrap(), exact.as_f64().unwrap());
    assert!(
        (e - x).abs() <= SKETCH_ALPHA * x.abs() + 1e-12,
        "{what}: estimate {e}, exact {x}"
    );
}

/// Checks the estimates of `bounded` against `exact` and replaces them
/// with the exact values, so that what is left must be equal.
fn take_estimates(bounded: &mut Value, exact: &Value) {
    let sites = bounded["sites"].as_array_mut().unwrap();
    for (i, s) in sites.iter_mut().enumerate() {
        let x = &exact["sites"][i];
        for f in ["time_median_s", "overhead_median_s"] {
            within(&s["per_rank"][f], &x["per_rank"][f], f);
            s["per_rank"][f] = x["per_rank"][f].clone();
        }
        // Late ranks by arrival: each one's lateness is the reference
        // time per call (the upper quartile, from the sketch) minus its
        // own, times its calls; a late rank is late by at least 2.5 % of
        // the reference, so the sketch's error is at most 40 alpha of it.
        if s["late_basis"] == "arrival" {
            assert_eq!(s["late_ranks"], x["late_ranks"], "late ranks");
            for (e, t) in s["late_ranks_s"]
                .as_array()
                .unwrap()
                .iter()
                .zip(x["late_ranks_s"].as_array().unwrap())
            {
                let (e, t) = (e.as_f64().unwrap(), t.as_f64().unwrap());
                assert!(
                    (e - t).abs() <= 40.0 * SKETCH_ALPHA * t,
                    "lateness {e} vs {t}"
                );
            }
            s["late_ranks_s"] = x["late_ranks_s"].clone();
        }
        // The figures at the widened tmax are scaled from the keys'
        // histograms of a sample of the ranks, which the bounded log and the
        // records keep for different ranks: an estimate (seen 4 % apart).
        if !s["margin"].is_null() {
            let (m, t) = (&s["margin"], &x["margin"]);
            assert_eq!(m["factor"], t["factor"], "margin factor");
            let close = |f: &str, tol: f64| {
                let (a, b) = (m[f].as_f64().unwrap(), t[f].as_f64().unwrap());
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1e-12),
                    "margin {f}: {a} vs {b}"
                );
            };
            close("overhead_s", 0.10);
            close("calls_over_tmax", 0.01);
            s["margin"] = t.clone();
        }
        // Root causes compare the late rank's regions with a sample of
        // the waiting ranks: an estimate, as the method says.
        for f in ["root_causes", "root_causes_share"] {
            s[f] = x[f].clone();
        }
    }
    let Some(regions) = bounded["regions"].as_array_mut() else {
        return;
    };
    for g in regions.iter_mut() {
        let x = exact["regions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["region"] == g["region"])
            .expect("the same regions");
        within(&g["median_s"], &x["median_s"], "region median");
        // imbalance = max - median: the median's error, absolute.
        let tol = SKETCH_ALPHA * x["median_s"].as_f64().unwrap();
        let d = g["imbalance_s"].as_f64().unwrap() - x["imbalance_s"].as_f64().unwrap();
        assert!(d.abs() <= tol + 1e-12, "imbalance off by {d}");
        g["median_s"] = x["median_s"].clone();
        g["imbalance_s"] = x["imbalance_s"].clone();
    }
    // Regions are ordered by their (estimated) imbalance: compare as sets.
    let key = |g: &Value| g["region"].to_string();
    regions.sort_by_key(key);
}

/// 4,096 ranks of the scale benchmark's ring, 20 sites each: the rows of
/// every site and region are bounded in the log (4,096 > BOUND_ROWS).
#[test]
fn a_bounded_log_of_4096_ranks_reports_its_records_exact_figures() {
    let n = 4096;
    assert!(n as usize > mpiover_aggregate::BOUND_ROWS);
    let records: Vec<Record> = (0..n).map(|r| synth::scale_record(r, n, 20, 3)).collect();
    let opts = Options::default();
    let direct = analyze_records("run", &records, summary_of(&records), None, &opts);
    let job = merged_up_the_tree(&records);
    let (agg, rdv) = job.into_parts();
    let kept = agg.sites.values().map(|s| s.per_rank.len()).max().unwrap();
    assert!(kept <= mpiover_aggregate::BOUND_ROWS, "{kept} rows kept");
    let bounded = assemble::finish(agg, summary_of(&records), "run", None, &opts, rdv);
    let mut b = serde_json::to_value(&bounded).unwrap();
    let mut x = serde_json::to_value(&direct).unwrap();
    take_estimates(&mut b, &x);
    let key = |g: &Value| g["region"].to_string();
    if let Some(r) = x["regions"].as_array_mut() {
        r.sort_by_key(key);
    }
    for part in [
        "run",
        "summary",
        "ranks",
        "wait_matrix",
        "methods",
        "warnings",
    ] {
        assert_eq!(b[part], x[part], "{part}");
    }
    for (i, (s, t)) in b["sites"]
        .as_array()
        .unwrap()
        .iter()
        .zip(x["sites"].as_array().unwrap())
        .enumerate()
    {
        // Field by field (a field copied over as null may be absent there).
        let keys = s
            .as_object()
            .unwrap()
            .keys()
            .chain(t.as_object().unwrap().keys());
        for k in keys {
            assert_eq!(s[k], t[k], "site {i}: {k}");
        }
    }
    assert_eq!(b["regions"], x["regions"]);
}
