//! The report of a bounded job log against the report of the per-rank
//! records of the same job: each estimate within the bound that
//! docs/report-format.md ("Exact figures and estimates") states, every other
//! figure equal. Shared by the end-to-end test on a real job and the
//! report crate's unit test on a synthetic one of 4,096 ranks (included
//! there by path), so that both check the same table.

use serde_json::Value;

/// `est` is within the sketches' relative error `alpha` of `exact`.
fn within(est: &Value, exact: &Value, alpha: f64, what: &str) {
    let (e, x) = (num(est, what), num(exact, what));
    assert!(
        (e - x).abs() <= alpha * x.abs() + 1e-12,
        "{what}: estimate {e}, exact {x}"
    );
}

fn list(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

fn num(v: &Value, what: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {v}"))
}

/// Checks the estimates of `bounded` against `exact` (`alpha`: the
/// sketches' relative error; `keep`: the rows kept per criterion) and
/// replaces them with the exact values, so that what is left must be equal.
pub fn take_estimates(bounded: &mut Value, exact: &Value, alpha: f64, keep: usize) {
    // The bounded log says where its figures are estimates; the records
    // are exact everywhere.
    let said = &bounded["methods"]["bounded_detail"];
    assert!(
        said["sites"].as_u64().is_some_and(|n| n > 0),
        "the log's report does not say that it bounded a site: {said}"
    );
    assert!(exact["methods"]["bounded_detail"].is_null());
    if let Some(m) = bounded["methods"].as_object_mut() {
        m.remove("bounded_detail");
    }
    let Some(sites) = bounded["sites"].as_array_mut() else {
        return;
    };
    for (i, s) in sites.iter_mut().enumerate() {
        let x = &exact["sites"][i];
        for f in ["time_median_s", "overhead_median_s"] {
            if s["per_rank"][f].is_null() && x["per_rank"][f].is_null() {
                continue;
            }
            within(&s["per_rank"][f], &x["per_rank"][f], alpha, f);
            s["per_rank"][f] = x["per_rank"][f].clone();
        }
        // Late ranks by arrival: a bounded site lists the `keep` latest
        // (those kept with the smallest time per call). Each one's lateness
        // is the reference time per call (the upper quartile, from the
        // sketch) minus its own, times its calls; a late rank is late by at
        // least 2.5 % of the reference, so the sketch's error is at most 40
        // alpha of it.
        if s["late_basis"] == "arrival" {
            let (e, t) = (list(&s["late_ranks"]), list(&x["late_ranks"]));
            let n = t.len().min(keep);
            assert_eq!(e, t[..n], "site {i}: the {n} latest ranks");
            let (es, ts) = (list(&s["late_ranks_s"]), list(&x["late_ranks_s"]));
            for (e, t) in es.iter().zip(ts) {
                let (e, t) = (num(e, "lateness"), num(&t, "lateness"));
                assert!(
                    (e - t).abs() <= 40.0 * alpha * t,
                    "site {i}: lateness {e} vs {t}"
                );
            }
            s["late_ranks"] = x["late_ranks"].clone();
            s["late_ranks_s"] = x["late_ranks_s"].clone();
        }
        // The figures at the widened tmax are scaled from the keys'
        // histograms of a sample of the ranks, which the bounded log and the
        // records keep for different ranks: an estimate, within 10 %.
        if !s["margin"].is_null() {
            let (m, t) = (&s["margin"], &x["margin"]);
            assert_eq!(m["factor"], t["factor"], "site {i}: margin factor");
            let close = |f: &str, tol: f64| {
                let (a, b) = (num(&m[f], f), num(&t[f], f));
                assert!(
                    (a - b).abs() <= tol * b.abs().max(1e-12),
                    "site {i}: margin {f}: {a} vs {b}"
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
            .into_iter()
            .flatten()
            .find(|x| x["region"] == g["region"])
            .unwrap_or_else(|| panic!("region {} only in the bounded log", g["region"]));
        within(&g["median_s"], &x["median_s"], alpha, "region median");
        // imbalance = max - median: the median's error, absolute.
        let tol = alpha * num(&x["median_s"], "region median");
        let d = num(&g["imbalance_s"], "imbalance") - num(&x["imbalance_s"], "imbalance");
        assert!(d.abs() <= tol + 1e-12, "imbalance off by {d}");
        g["median_s"] = x["median_s"].clone();
        g["imbalance_s"] = x["imbalance_s"].clone();
    }
}

/// After [`take_estimates`]: every part of the two reports equal, sites
/// field by field, regions as sets (they are ordered by their estimated
/// imbalance).
pub fn assert_the_rest_equal(mut bounded: Value, mut exact: Value) {
    let key = |g: &Value| g["region"].to_string();
    for v in [&mut bounded, &mut exact] {
        if let Some(r) = v["regions"].as_array_mut() {
            r.sort_by_key(key);
        }
    }
    for part in [
        "run",
        "summary",
        "ranks",
        "wait_matrix",
        "methods",
        "warnings",
    ] {
        assert_eq!(bounded[part], exact[part], "{part}");
    }
    let (bs, xs) = (&bounded["sites"], &exact["sites"]);
    assert_eq!(
        bs.as_array().map(Vec::len),
        xs.as_array().map(Vec::len),
        "sites"
    );
    for (i, (s, t)) in bs
        .as_array()
        .into_iter()
        .flatten()
        .zip(xs.as_array().into_iter().flatten())
        .enumerate()
    {
        // Field by field (a field copied over as null may be absent there).
        let keys = s
            .as_object()
            .into_iter()
            .flat_map(|o| o.keys())
            .chain(t.as_object().into_iter().flat_map(|o| o.keys()));
        for k in keys {
            assert_eq!(s[k], t[k], "site {i} ({}): {k}", t["location"]);
        }
    }
    assert_eq!(bounded["regions"], exact["regions"], "regions");
}
