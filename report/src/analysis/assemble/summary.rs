//! The report's run, summary, per-rank and tool-cost parts, from the ranks'
//! totals and the finished site rows.

use mpiover_aggregate::{Fx, RankAcc};
use mpiover_common::run::RunSummary;

use crate::analysis::per_rank::median_sorted;
use crate::model::{
    RankReport, RankedBy, ReportedRun, Significance, SiteReport, Summary, TimerInfo, ToolCost,
};

/// Sums over the ranks, in rank order (so that the floating-point sums are
/// the same from run to run).
pub(crate) struct Totals {
    pub(crate) app: f64,
    pub(crate) mpi: f64,
    /// The longest rank's application time.
    app_wall: f64,
    startup: f64,
    shutdown: f64,
    event: f64,
    tool: f64,
}

impl Totals {
    pub(crate) fn of(ranks: &[RankAcc]) -> Totals {
        let sum = |f: &dyn Fn(&RankAcc) -> f64| ranks.iter().map(f).sum::<f64>();
        Totals {
            app: sum(&|r| r.app_time),
            mpi: sum(&|r| r.mpi_time),
            app_wall: ranks.iter().map(|r| r.app_time).fold(0.0, f64::max),
            startup: sum(&|r| r.startup),
            shutdown: sum(&|r| r.shutdown),
            event: sum(&|r| r.event_time),
            tool: sum(&|r| r.tool_time()),
        }
    }
}

pub(crate) fn run_info(
    dir: &str,
    run: &RunSummary,
    ranks: &[RankAcc],
    hosts: Vec<String>,
) -> ReportedRun {
    let first = &ranks[0];
    ReportedRun {
        dir: dir.to_string(),
        run_id: run.run_id.clone(),
        ranks: run.ranks,
        ranks_present: run.present.len() as u32,
        command: first.command.to_vec(),
        mpi_library: first.mpi_library.to_string(),
        thread_level: first.thread_level.to_string(),
        hosts,
        start_unix_s: ranks.iter().map(|r| r.start).fold(f64::INFINITY, f64::min),
        end_unix_s: ranks.iter().map(|r| r.end).fold(0.0, f64::max),
    }
}

/// The summary: totals, the overhead and its shares, and a sentence for
/// each of the (up to) three worst sites.
pub(crate) fn summary(sites: &[SiteReport], t: &Totals, overhead_known: bool) -> Summary {
    let overhead_total = overhead_known.then(|| {
        let mut sum = Fx::default();
        for s in sites {
            sum.add(s.overhead_s.unwrap_or(0.0));
        }
        sum.get()
    });
    let worst = sites
        .iter()
        .filter(|s| {
            if overhead_known {
                s.overhead_s.unwrap_or(0.0) > 0.0
            } else {
                s.time_s > 0.0
            }
        })
        .take(3)
        .map(|s| crate::prose::sentence(s, t.mpi, overhead_known))
        .collect();
    let share = |o: f64, whole: f64| if whole > 0.0 { o / whole } else { 0.0 };
    Summary {
        app_time_s: t.app,
        app_wall_s: t.app_wall,
        mpi_time_s: t.mpi,
        startup_s: t.startup,
        shutdown_s: t.shutdown,
        event_time_s: t.event,
        overhead_s: overhead_total,
        overhead_share_of_mpi: overhead_total.map(|o| share(o, t.mpi)),
        overhead_share_of_app: overhead_total.map(|o| share(o, t.app)),
        ranked_by: if overhead_known {
            RankedBy::Overhead
        } else {
            RankedBy::Time
        },
        calls: sites.iter().map(|s| s.calls).sum(),
        sites: sites.len(),
        significant_sites: sites.iter().filter(|s| s.significant).count(),
        marginal_sites: sites
            .iter()
            .filter(|s| {
                matches!(
                    s.significance,
                    Significance::Marginal | Significance::LevelShift
                )
            })
            .count(),
        worst,
    }
}

pub(crate) fn rank_reports(ranks: &[RankAcc]) -> Vec<RankReport> {
    ranks
        .iter()
        .map(|r| RankReport {
            rank: r.rank,
            host: r.host.to_string(),
            app_time_s: r.app_time,
            mpi_time_s: r.mpi_time,
            event_time_s: r.event_time,
            overhead_s: r.overhead,
            calls: r.calls,
            tool_time_s: r.tool_time(),
            finished: r.finished.to_string(),
        })
        .collect()
}

/// What the tool itself cost: the median per-call cost over the ranks and
/// the total time in the tool.
pub(crate) fn tool_cost(ranks: &[RankAcc], t: &Totals) -> ToolCost {
    let mut costs: Vec<f64> = ranks.iter().map(|r| r.cost_per_call).collect();
    costs.sort_by(f64::total_cmp);
    let mut py_costs: Vec<f64> = ranks.iter().filter_map(|r| r.py_cost).collect();
    py_costs.sort_by(f64::total_cmp);
    ToolCost {
        cost_per_call_s: median_sorted(&costs),
        python_cost_per_call_s: (!py_costs.is_empty()).then(|| median_sorted(&py_costs)),
        python_calls: ranks.iter().map(|r| r.py_calls).sum(),
        calls: ranks.iter().map(|r| r.calls).sum(),
        time_s: t.tool,
        share_of_app: if t.app > 0.0 { t.tool / t.app } else { 0.0 },
        log_merge_s: ranks.iter().filter_map(|r| r.merge_s).reduce(f64::max),
    }
}

/// The coarsest timer of the ranks.
pub(crate) fn timer_info(ranks: &[RankAcc]) -> TimerInfo {
    TimerInfo {
        name: ranks[0].timer_name.to_string(),
        resolution_s: ranks.iter().map(|r| r.timer_resolution).fold(0.0, f64::max),
        cost_s: ranks.iter().map(|r| r.timer_cost).fold(0.0, f64::max),
    }
}
