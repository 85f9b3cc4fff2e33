//! From the aggregate to the finished report, in named steps: totals,
//! the profile and warnings, one row per site, significance, ranking, the
//! HTML details, the wait matrix, the summary and the methods.

use super::*;

mod detail;
mod matrix;
mod significance;
mod site;
mod warnings;

use detail::details;
use matrix::wait_matrix;
use significance::{rank_sites, test_significance, weak_tmax_warning};
use site::build_site;
use warnings::profile_and_warnings;

/// A site on its way into the report.
pub(crate) struct Built {
    pub(crate) key: SiteKey,
    pub(crate) acc: SiteAcc,
    pub(crate) report: SiteReport,
}

pub(crate) fn finish(
    mut agg: Aggregate,
    summary: RunSummary,
    dir: &str,
    tmax: Option<&dyn TmaxSource>,
    opts: &Options,
    (rdv, rdv_source, rdv_detail): mpiover_aggregate::EagerLimit,
) -> Report {
    agg.ranks.sort_by_key(|r| r.rank);
    let ranks = &agg.ranks;
    let first = &ranks[0];
    let sum = |f: &dyn Fn(&RankAcc) -> f64| ranks.iter().map(f).sum::<f64>();
    let app_time = sum(&|r| r.app_time);
    let mpi_time = sum(&|r| r.mpi_time);
    let startup = sum(&|r| r.startup);
    let shutdown = sum(&|r| r.shutdown);
    let event_time = sum(&|r| r.event_time);
    let mut hosts: Vec<String> = ranks.iter().map(|r| r.host.clone()).collect();
    hosts.sort();
    hosts.dedup();

    let lookups = agg.lookups.clone();
    let (profile, q_max, warnings) = profile_and_warnings(ranks, &summary, &hosts, tmax, &lookups);
    let overhead_known = lookups.entries > 0;

    // Build every site.
    let mut built: Vec<Built> = agg
        .sites
        .drain()
        .map(|(key, acc)| build_site(key, acc, &mut agg.wait, mpi_time, app_time))
        .collect();

    let min_calls = test_significance(&mut built, q_max, opts, mpi_time)
        .or_else(|| q_max.map(|q| signif::min_calls(q, opts.alpha)));
    rank_sites(&mut built, overhead_known);
    let mut warnings = warnings;
    warnings.extend(weak_tmax_warning(&built, summary.ranks));

    let detail = details(&built, opts, summary.ranks, overhead_known);
    let sites: Vec<SiteReport> = built.into_iter().map(|b| b.report).collect();

    let wait_matrix = wait_matrix(&agg.wait, overhead_known);

    // Summary.
    let overhead_total = overhead_known.then(|| {
        let mut t = Fx::default();
        for s in &sites {
            t.add(s.overhead_s.unwrap_or(0.0));
        }
        t.get()
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
        .map(|s| crate::export::prose::sentence(s, mpi_time, overhead_known))
        .collect();
    let mut costs: Vec<f64> = ranks.iter().map(|r| r.cost_per_call).collect();
    costs.sort_by(f64::total_cmp);
    let tool_time = sum(&|r| r.tool_time());
    let mut py_costs: Vec<f64> = ranks.iter().filter_map(|r| r.py_cost).collect();
    py_costs.sort_by(f64::total_cmp);
    let tool_calls: u64 = ranks.iter().map(|r| r.calls).sum();
    let hint = (!overhead_known).then(|| {
        "no profile gave tmax, so sites are ranked by time (as mpiP does) and overhead is unknown: \
         calibrate this machine with mpiover-calibrate and re-run `mpiover report RUN_DIR --profile PROFILE` \
         (or record with a profile) to rank sites by the time they waste"
            .to_string()
    });
    Report {
        schema: REPORT_SCHEMA.into(),
        generator: format!("mpiover {}", env!("CARGO_PKG_VERSION")),
        run: RunInfo {
            dir: dir.to_string(),
            run_id: summary.run_id.clone(),
            ranks: summary.ranks,
            ranks_present: summary.present.len() as u32,
            command: first.command.clone(),
            mpi_library: first.mpi_library.clone(),
            thread_level: first.thread_level.clone(),
            hosts,
            start_unix_s: ranks.iter().map(|r| r.start).fold(f64::INFINITY, f64::min),
            end_unix_s: ranks.iter().map(|r| r.end).fold(0.0, f64::max),
        },
        summary: Summary {
            app_time_s: app_time,
            app_wall_s: ranks.iter().map(|r| r.app_time).fold(0.0, f64::max),
            mpi_time_s: mpi_time,
            startup_s: startup,
            shutdown_s: shutdown,
            event_time_s: event_time,
            overhead_s: overhead_total,
            overhead_share_of_mpi: overhead_total.map(|o| if mpi_time > 0.0 { o / mpi_time } else { 0.0 }),
            overhead_share_of_app: overhead_total.map(|o| if app_time > 0.0 { o / app_time } else { 0.0 }),
            ranked_by: if overhead_known {
                RankedBy::Overhead
            } else {
                RankedBy::Time
            },
            calls: sites.iter().map(|s| s.calls).sum(),
            sites: sites.len(),
            significant_sites: sites.iter().filter(|s| s.significant).count(),
            worst,
        },
        sites,
        ranks: ranks
            .iter()
            .map(|r| RankReport {
                rank: r.rank,
                host: r.host.clone(),
                app_time_s: r.app_time,
                mpi_time_s: r.mpi_time,
                event_time_s: r.event_time,
                overhead_s: r.overhead,
                calls: r.calls,
                tool_time_s: r.tool_time(),
                finished: r.finished.clone(),
            })
            .collect(),
        wait_matrix,
        methods: Methods {
            profile,
            q_max,
            alpha: opts.alpha,
            test: "one-sided test of the calls over tmax against the share expected by chance: \
                   beta-binomial around 1 - q_max with the spread of tmax estimated from the profile's \
                   calibration samples (binomial when the profile does not say), \
                   Benjamini-Hochberg across sites at false discovery rate alpha"
                .into(),
            min_calls,
            min_share: opts.min_share,
            rendezvous_bytes: rdv,
            rendezvous_source: rdv_source,
            rendezvous_detail: rdv_detail,
            lookups,
            tool: ToolCost {
                cost_per_call_s: median_sorted(&costs),
                python_cost_per_call_s: (!py_costs.is_empty()).then(|| median_sorted(&py_costs)),
                python_calls: ranks.iter().map(|r| r.py_calls).sum(),
                calls: tool_calls,
                time_s: tool_time,
                share_of_app: if app_time > 0.0 { tool_time / app_time } else { 0.0 },
                log_merge_s: ranks.iter().filter_map(|r| r.merge_s).reduce(f64::max),
            },
            timer: TimerInfo {
                name: first.timer_name.clone(),
                resolution_s: ranks.iter().map(|r| r.timer_resolution).fold(0.0, f64::max),
                cost_s: ranks.iter().map(|r| r.timer_cost).fold(0.0, f64::max),
            },
            folded_keys: agg.folded_keys,
            folded_calls: agg.folded_calls,
            depth: first.depth,
            hint,
        },
        warnings,
        detail,
    }
}
