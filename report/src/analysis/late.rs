//! Who made a site wait: late ranks of collectives by arrival, the peers of
//! multi-peer completions (`docs/method.md`, "Late ranks").

use mpiover_aggregate::{HashMap, PeerAcc, RankSite, SiteAcc, Spread};

pub(crate) const MAX_LATE: usize = 16;

/// Late ranks of a collective site: the ranks that spent the least time per
/// call in it arrived last. The reference is the upper quartile over ranks of
/// the time per call (robust to a few slow ranks, and right while up to three
/// quarters of the ranks are late); the lateness of a rank is the reference
/// minus its time per call, times its calls. Ranks whose lateness per call is
/// at least half the largest count, when that largest is at least 5 % of the
/// reference. A site bounded in a merged job log takes the reference from
/// its sketch of every rank's time per call (within its stated error) and
/// the late ranks from the rows kept, which hold the smallest times per
/// call.
pub(crate) fn late_by_arrival(
    rows: &[RankSite],
    spread: Option<&Spread>,
    exclude_roots: bool,
) -> Vec<(u32, f64)> {
    let cand: Vec<(&RankSite, f64)> = rows
        .iter()
        .filter(|r| !(exclude_roots && r.root) && r.calls > 0)
        .map(|r| (r, r.time / r.calls as f64))
        .collect();
    if cand.len() < 2 {
        return Vec::new();
    }
    let kept = spread.map(|s| s.keep);
    let mut per_call: Vec<f64> = cand.iter().map(|c| c.1).collect();
    per_call.sort_by(f64::total_cmp);
    let mut reference = per_call[(per_call.len() * 3 / 4).min(per_call.len() - 1)];
    if let Some(s) = spread {
        let all = if exclude_roots {
            &s.per_call_nonroot
        } else {
            &s.per_call
        };
        if all.n > cand.len() as u64 {
            reference = all.nth((all.n.saturating_mul(3) / 4).min(all.n - 1));
        }
    }
    let spread = reference - per_call[0];
    if spread <= 0.0 || spread < 0.05 * reference {
        return Vec::new();
    }
    let mut late: Vec<(u32, f64)> = cand
        .iter()
        .filter(|(_, m)| reference - m >= 0.5 * spread)
        .map(|(r, m)| (r.rank, (reference - m) * r.calls as f64))
        .collect();
    late.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    // A bounded site kept the rows of the `keep` smallest times per call
    // (and a sample): the latest that many are certain, a later one of the
    // sample is not the next latest.
    if let Some(keep) = kept {
        late.truncate(keep as usize);
    }
    late
}

/// Charges the waits of completions with requests to or from several peers
/// (`SiteAcc::multi`) to the peers each one waited for: among its candidate
/// peers, those whose own overhead per call at the same site is within a
/// quarter of this rank's of the smallest (a peer that waited least arrived
/// last), equally. Feeds the site's peers (late ranks), the wait matrix and
/// `waited_for`.
pub(crate) fn charge_multi(acc: &mut SiteAcc, wait: &mut HashMap<(u32, u32), PeerAcc>) {
    if acc.multi.is_empty() {
        return;
    }
    let mut per_call: HashMap<u32, f64> = HashMap::default();
    for r in &acc.per_rank {
        if r.calls > 0 {
            per_call.insert(r.rank, r.overhead.unwrap_or(0.0) / r.calls as f64);
        }
    }
    let own = |q: u32| per_call.get(&q).copied().unwrap_or(0.0);
    for m in std::mem::take(&mut acc.multi) {
        let mut peers: Vec<u32> = m.candidates.iter().map(|c| c.0).collect();
        peers.sort_unstable();
        peers.dedup();
        let least = peers.iter().map(|&q| own(q)).fold(f64::INFINITY, f64::min);
        let mine = m.overhead / m.calls.max(1) as f64;
        let late: Vec<u32> = peers
            .into_iter()
            .filter(|&q| own(q) <= least + 0.25 * mine)
            .collect();
        let n = late.len().max(1) as f64;
        for q in late {
            let share = m.overhead / n;
            let pa = acc.peers.entry(q).or_default();
            pa.overhead.add(share);
            pa.time.add(m.time / n);
            pa.calls += m.calls;
            acc.add_pair_wait(m.rank, q, share, m.time / n, m.calls);
            let cell = wait.entry((m.rank, q)).or_default();
            cell.overhead.add(share);
            cell.time.add(m.time / n);
            cell.calls += m.calls;
            let lines: Vec<&Option<String>> = m
                .candidates
                .iter()
                .filter(|c| c.0 == q)
                .map(|c| &c.1)
                .collect();
            for at in &lines {
                acc.waited_for
                    .entry((q, (*at).clone()))
                    .or_default()
                    .add(share / lines.len() as f64);
            }
        }
    }
}
