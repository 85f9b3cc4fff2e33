//! The wait matrix: who waited on whom in point-to-point calls.

use mpiover_aggregate::{HashMap, PeerAcc, RankAcc};

use crate::model::{Metric, WaitCell, WaitMatrix};

/// The matrix of `wait` (waiter, peer): overhead when known, else time;
/// `ranks` (sorted by rank) gives each rank's host.
pub(crate) fn wait_matrix(
    wait: &HashMap<(u32, u32), PeerAcc>,
    dropped: &mpiover_aggregate::WaitDropped,
    overhead_known: bool,
    ranks: &[RankAcc],
) -> WaitMatrix {
    let metric_ovh = overhead_known;
    let host = |r: u32| {
        ranks
            .binary_search_by_key(&r, |k| k.rank)
            .ok()
            .map(|i| ranks[i].host.to_string())
    };
    let mut cells: Vec<WaitCell> = wait
        .iter()
        .map(|(&(w, p), a)| WaitCell {
            waiter: w,
            peer: p,
            waiter_host: None,
            peer_host: None,
            value_s: if metric_ovh {
                a.overhead.get()
            } else {
                a.time.get()
            },
            calls: a.calls,
        })
        .filter(|c| c.value_s > 0.0)
        .collect();
    cells.sort_by(|a, b| {
        b.value_s
            .total_cmp(&a.value_s)
            .then(a.waiter.cmp(&b.waiter))
            .then(a.peer.cmp(&b.peer))
    });
    let total_s = {
        // A bounded matrix's cells dropped in the job are in `dropped`.
        let mut t = if metric_ovh {
            dropped.overhead
        } else {
            dropped.time
        };
        for a in wait.values() {
            t.merge(if metric_ovh { a.overhead } else { a.time });
        }
        t.get()
    };
    let cells_total = cells.len()
        + if metric_ovh {
            dropped.cells_with_overhead
        } else {
            dropped.cells_with_time
        } as usize;
    cells.truncate(10_000);
    for c in &mut cells {
        (c.waiter_host, c.peer_host) = (host(c.waiter), host(c.peer));
    }
    WaitMatrix {
        metric: if metric_ovh {
            Metric::Overhead
        } else {
            Metric::Time
        },
        total_s,
        cells_total,
        cells,
    }
}
