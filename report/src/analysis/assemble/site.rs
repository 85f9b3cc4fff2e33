//! One site of the report from its accumulator: totals, wait state, late
//! ranks, the completion links.

use std::collections::BTreeMap;

use mpiover_aggregate::{HashMap, PeerAcc, SiteAcc, SiteKey};
use mpiover_common::functions::WaitState;

use crate::analysis::late::{charge_multi, late_by_arrival, MAX_LATE};
use crate::analysis::per_rank;
use crate::analysis::site_row::{file_line, function_name, Built};
use crate::model::{LateBasis, Significance, SiteReport, WaitedFor};

/// An `inlined_into` item, `function (file:line)`, with its function
/// demangled.
pub(crate) fn demangle_inlined(item: &str) -> String {
    let (f, rest) = match item.find(" (") {
        Some(i) => item.split_at(i),
        None => (item, ""),
    };
    format!("{}{rest}", mpiover_common::demangle::demangle(f))
}

/// The keys of a count map, most counted first, at most `n`.
pub(crate) fn top_keys<K: Clone + Ord>(m: &BTreeMap<K, u64>, n: usize) -> Vec<K> {
    let mut v: Vec<(&K, &u64)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.into_iter().take(n).map(|(k, _)| k.clone()).collect()
}

/// `part` over `whole`, 0 when the whole is 0.
fn share(part: Option<f64>, whole: f64) -> Option<f64> {
    part.map(|p| if whole > 0.0 { p / whole } else { 0.0 })
}

/// The report row of one site (ranked and tested later).
pub(crate) fn build_site(
    key: SiteKey,
    mut acc: SiteAcc,
    wait: &mut HashMap<(u32, u32), PeerAcc>,
    mpi_time: f64,
    app_time: f64,
) -> Built {
    acc.per_rank.sort_by_key(|r| r.rank);
    charge_multi(&mut acc, wait);
    let has_tmax = acc.calls_with_tmax > 0;
    let overhead = has_tmax.then(|| acc.overhead.get());
    let pr = per_rank(&acc.per_rank, acc.spread.as_ref(), has_tmax);
    let ovh = overhead.unwrap_or(0.0);
    let wait_state = main_wait_state(&acc, ovh);
    let (late, basis) = late_ranks(&acc, wait_state, ovh, pr.overhead_median_s);
    let late: Vec<(u32, f64)> = late.into_iter().take(MAX_LATE).collect();
    let time = acc.time.get();
    let (file, line) = file_line(&key.loc);
    let report = SiteReport {
        rank: 0,
        position: 0,
        mpi_function: key.mpi.clone(),
        file,
        line,
        function: function_name(&key),
        function_signature: key.function.clone(),
        location: key.loc.display(),
        module: acc.site.module.clone(),
        offset: acc.site.offset.clone(),
        inlined_into: acc
            .site
            .inlined_into
            .iter()
            .map(|f| demangle_inlined(f))
            .collect(),
        note: acc.site.note.clone(),
        language: acc.site.language.clone(),
        native: acc.site.native.clone(),
        calls: acc.calls,
        time_s: time,
        bytes: acc.bytes.min(u64::MAX as u128) as u64,
        min_call_s: if acc.min.is_finite() { acc.min } else { 0.0 },
        max_call_s: acc.max,
        time_share_of_mpi: if mpi_time > 0.0 { time / mpi_time } else { 0.0 },
        overhead_s: overhead,
        tmax_s: has_tmax.then(|| acc.tmax_sum.get()),
        tmax_sum_s: has_tmax.then(|| acc.tmax_sum.get()),
        exceed_fraction: has_tmax
            .then(|| (acc.calls_over.get() / acc.calls_with_tmax as f64).clamp(0.0, 1.0)),
        calls_over_tmax: has_tmax.then(|| acc.calls_over.get()),
        expected_exceed_fraction: None,
        calls_with_tmax: acc.calls_with_tmax,
        out_of_range_calls: acc.out_of_range_calls,
        overhead_share_of_mpi: share(overhead, mpi_time),
        overhead_share_of_app: share(overhead, app_time),
        share_of_mpi_time: share(overhead, mpi_time),
        share_of_app_time: share(overhead, app_time),
        wait_state,
        late_ranks: late.iter().map(|l| l.0).collect(),
        late_basis: basis.filter(|_| !late.is_empty()),
        late_ranks_s: late.iter().map(|l| l.1).collect(),
        significant: false,
        // Every site is tested or says why not (`test_significance`).
        significance: Significance::NoTmax,
        margin: None,
        p_value: None,
        q_value: None,
        per_rank: pr,
        completes: acc.completes.iter().cloned().collect(),
        posted_at: posted_at(&acc),
        waited_for: waited_for(&acc, ovh),
        root_causes: None,
        root_causes_share: None,
        completed_at: top_keys(&acc.completed_at, usize::MAX),
        tmax_composed: top_keys(&acc.composed, 8)
            .into_iter()
            .map(str::to_string)
            .collect(),
        tmax_missing: top_keys(&acc.missing, 8),
    };
    Built { key, acc, report }
}

/// The wait state with the most overhead, if the site has any.
fn main_wait_state(acc: &SiteAcc, ovh: f64) -> Option<WaitState> {
    if ovh > 0.0 {
        acc.states
            .iter()
            // Ties go to the state first by name (the order reports had when
            // states were names).
            .max_by(|a, b| {
                let name = |s: &Option<WaitState>| s.map(WaitState::as_str);
                a.1.cmp(b.1).then(name(b.0).cmp(&name(a.0)))
            })
            .and_then(|(s, v)| if v.get() > 0.0 { *s } else { None })
    } else {
        None
    }
}

/// The ranks the site waited for, latest first, and how they were found:
/// by peer for late senders and receivers, the roots of a late broadcast
/// (charged the median non-root wait), else by arrival.
fn late_ranks(
    acc: &SiteAcc,
    wait_state: Option<WaitState>,
    ovh: f64,
    overhead_median_s: Option<f64>,
) -> (Vec<(u32, f64)>, Option<LateBasis>) {
    match wait_state {
        Some(WaitState::LateSender | WaitState::LateReceiver) => {
            let mut v: Vec<(u32, f64)> = acc
                .peers
                .iter()
                .map(|(&p, a)| (p, a.overhead.get()))
                .filter(|&(_, o)| o > 0.0 && o >= 0.01 * ovh)
                .collect();
            v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            (v, Some(LateBasis::Peer))
        }
        Some(WaitState::LateBroadcast) => {
            let mut roots: Vec<(u32, f64)> = acc
                .per_rank
                .iter()
                .filter(|r| r.root)
                .map(|r| (r.rank, r.overhead.unwrap_or(0.0)))
                .collect();
            roots.sort_by_key(|r| r.0);
            if roots.is_empty() {
                (
                    late_by_arrival(&acc.per_rank, acc.spread.as_ref(), false),
                    Some(LateBasis::Arrival),
                )
            } else {
                // Lateness of a root: the median non-root wait.
                let others = overhead_median_s.unwrap_or(0.0);
                (
                    roots.into_iter().map(|(r, _)| (r, others)).collect(),
                    Some(LateBasis::Root),
                )
            }
        }
        Some(WaitState::EarlyReduce) => (
            late_by_arrival(&acc.per_rank, acc.spread.as_ref(), true),
            Some(LateBasis::Arrival),
        ),
        Some(_) => (
            late_by_arrival(&acc.per_rank, acc.spread.as_ref(), false),
            Some(LateBasis::Arrival),
        ),
        None => (Vec::new(), None),
    }
}

/// Where the requests this site completed were posted, most counted first.
fn posted_at(acc: &SiteAcc) -> Vec<String> {
    let mut posted: Vec<(String, u64)> =
        acc.posted_at.iter().map(|(k, v)| (k.clone(), *v)).collect();
    posted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    posted.into_iter().map(|p| p.0).collect()
}

/// The (peer, post site) pairs that cost the site at least 1% of its
/// overhead, costliest first, at most 8.
fn waited_for(acc: &SiteAcc, ovh: f64) -> Vec<WaitedFor> {
    let mut v: Vec<WaitedFor> = acc
        .waited_for
        .iter()
        .map(|((peer, at), o)| WaitedFor {
            peer: *peer,
            posted_at: at.clone(),
            overhead_s: o.get(),
        })
        .filter(|w| w.overhead_s > 0.0 && w.overhead_s >= 0.01 * ovh)
        .collect();
    v.sort_by(|a, b| {
        b.overhead_s
            .total_cmp(&a.overhead_s)
            .then(a.peer.cmp(&b.peer))
            .then(a.posted_at.cmp(&b.posted_at))
    });
    v.truncate(8);
    v
}
