//! A site's spread over ranks.

use mpiover_aggregate::{RankSite, Spread};

use crate::model::PerRank;

pub(crate) fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// A site's spread over ranks from its rows, or, when the site was
/// bounded in a merged job log (`spread`, holding every rank), the count
/// and medians from its sketches (within their stated error) and the
/// extremes from the rows kept (exact: the rows of the largest and
/// smallest values are always kept).
pub(crate) fn per_rank(
    rows: &[RankSite],
    spread: Option<&Spread>,
    overhead_known: bool,
) -> PerRank {
    let mut pr = per_rank_of_rows(rows, overhead_known);
    if let Some(s) = spread.filter(|s| s.time.n > rows.len() as u64) {
        pr.ranks = s.time.n.min(u64::from(u32::MAX)) as u32;
        pr.time_median_s = s.time.median();
        if pr.overhead_median_s.is_some() && s.overhead.n > 0 {
            pr.overhead_median_s = Some(s.overhead.median());
        }
    }
    pr
}

fn per_rank_of_rows(rows: &[RankSite], overhead_known: bool) -> PerRank {
    let mut times: Vec<f64> = rows.iter().map(|r| r.time).collect();
    times.sort_by(f64::total_cmp);
    // Ties go to the lowest rank (rows are sorted by rank).
    let arg = |f: &dyn Fn(&RankSite) -> f64, max: bool| -> u32 {
        let mut best: Option<(f64, u32)> = None;
        for r in rows {
            let v = f(r);
            let better = match best {
                None => true,
                Some((b, _)) => (max && v > b) || (!max && v < b),
            };
            if better {
                best = Some((v, r.rank));
            }
        }
        best.map_or(0, |b| b.1)
    };
    let time_min_rank = arg(&|r| r.time, false);
    let time_max_rank = arg(&|r| r.time, true);
    let mut ovh: Vec<f64> = rows.iter().filter_map(|r| r.overhead).collect();
    ovh.sort_by(f64::total_cmp);
    let has_ovh = overhead_known && !ovh.is_empty();
    PerRank {
        ranks: rows.len() as u32,
        time_min_s: times.first().copied().unwrap_or(0.0),
        time_median_s: median_sorted(&times),
        time_max_s: times.last().copied().unwrap_or(0.0),
        time_min_rank,
        time_max_rank,
        overhead_min_s: has_ovh.then(|| ovh[0]),
        overhead_median_s: has_ovh.then(|| median_sorted(&ovh)),
        overhead_max_s: has_ovh.then(|| ovh[ovh.len() - 1]),
        worst_rank: if has_ovh {
            arg(&|r| r.overhead.unwrap_or(0.0), true)
        } else {
            time_max_rank
        },
    }
}
