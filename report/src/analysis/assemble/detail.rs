//! What only the HTML export shows: the call-time distributions, sources and
//! the per-rank heat map of the top sites.

use mpiover_aggregate::display_bins::dist_edge;
use mpiover_aggregate::{Loc, Spread};

use crate::analysis::site_row::Built;
use crate::analysis::Options;
use crate::model::{Detail, Dist, Excerpt, Heatmap, Metric, RegionRef, RegionReport};

/// Details of the top `opts.detail_sites` sites of `built` (ranked).
pub(crate) fn details(built: &[Built], opts: &Options, world: u32, overhead_known: bool) -> Detail {
    let nd = opts.detail_sites.min(built.len());
    let mut detail = Detail {
        heatmap: None,
        dists: vec![None; built.len()],
        sources: vec![None; built.len()],
        regions: Vec::new(),
    };
    for (i, b) in built.iter().take(nd).enumerate() {
        let (lo, hi) = match (
            b.acc.dist.iter().position(|&c| c > 0),
            b.acc.dist.iter().rposition(|&c| c > 0),
        ) {
            (Some(lo), Some(hi)) => (lo, hi),
            _ => continue,
        };
        let has_t = b.acc.calls_with_tmax > 0;
        detail.dists[i] = Some(Dist {
            edges: (lo..=hi + 1).map(dist_edge).collect(),
            counts: b.acc.dist[lo..=hi].to_vec(),
            tmax_min_s: has_t.then_some(b.acc.tmax_min),
            tmax_mean_s: has_t.then(|| b.acc.tmax_sum.get() / b.acc.calls_with_tmax as f64),
            tmax_max_s: has_t.then_some(b.acc.tmax_max),
        });
        if opts.read_sources {
            if let Loc::Line(f, l) = &b.key.loc {
                detail.sources[i] = crate::source::read_source(f, *l, 4);
            }
        }
    }
    if nd > 0 {
        let world = world.max(1);
        let per_col = world.div_ceil(128);
        let cols: Vec<(u32, u32)> = (0..world.div_ceil(per_col))
            .map(|c| (c * per_col, ((c + 1) * per_col).min(world) - 1))
            .collect();
        let values = built
            .iter()
            .take(nd)
            .map(|b| {
                // A bounded site keeps every column's largest value.
                // (Its width checked: a damaged log must not index past it.)
                let fits = |s: &&Spread| {
                    s.world == world
                        && s.heat_time.len() == cols.len()
                        && s.heat_overhead.len() == cols.len()
                };
                if let Some(s) = b.acc.spread.as_ref().filter(fits) {
                    let heat = if overhead_known {
                        &s.heat_overhead
                    } else {
                        &s.heat_time
                    };
                    return heat
                        .iter()
                        .map(|&v| (!v.is_nan()).then_some(f64::from(v)))
                        .collect();
                }
                let mut row: Vec<Option<f64>> = vec![None; cols.len()];
                for r in &b.acc.per_rank {
                    let v = if overhead_known {
                        r.overhead.unwrap_or(0.0)
                    } else {
                        r.time
                    };
                    let c = &mut row[(r.rank / per_col) as usize];
                    *c = Some(c.map_or(v, |x: f64| x.max(v)));
                }
                row
            })
            .collect();
        detail.heatmap = Some(Heatmap {
            metric: if overhead_known {
                Metric::Overhead
            } else {
                Metric::Time
            },
            rows: (0..nd).collect(),
            cols,
            values,
        });
    }
    detail
}

/// The source lines of the regions the HTML shows: the first
/// [`crate::model::TOP_REGIONS`], and those the detailed sites name as root
/// causes. Indexed like `regions`; empty unless sources are read.
pub(crate) fn region_sources(
    regions: &[RegionReport],
    built: &[Built],
    opts: &Options,
) -> Vec<Vec<Excerpt>> {
    if !opts.read_sources {
        return Vec::new();
    }
    let named: Vec<&RegionRef> = built
        .iter()
        .take(opts.detail_sites)
        .filter_map(|b| b.report.root_causes.as_ref())
        .flatten()
        .map(|c| &c.region)
        .collect();
    regions
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if i < crate::model::TOP_REGIONS || named.contains(&&r.region) {
                crate::source::read_region(&r.region)
            } else {
                Vec::new()
            }
        })
        .collect()
}
