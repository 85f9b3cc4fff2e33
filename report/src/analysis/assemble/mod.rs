//! From the aggregate to the finished report, in named steps: totals,
//! the profile and warnings, one row per site, significance, ranking, the
//! HTML details, the wait matrix, the summary and the methods.

use mpiover_aggregate::Aggregate;
use mpiover_common::run::RunSummary;

use super::Options;
use crate::analysis::site_row::Built;
use crate::model::{Methods, Report, SiteReport, Stability, REPORT_SCHEMA};
use crate::signif;
use crate::tmax::TmaxSource;

mod detail;
mod matrix;
mod significance;
pub(crate) mod site;
mod stability;
mod summary;
mod warnings;

use detail::{details, region_sources};
use matrix::wait_matrix;
use significance::{rank_sites, test_significance, weak_tmax_warning};
use site::build_site;
use summary::{rank_reports, run_info, summary, timer_info, tool_cost, Totals};
use warnings::profile_and_warnings;

/// The statistical test the report applies, as the methods name it.
const TEST: &str = "one-sided test of the calls over tmax against the share expected by chance: \
                   beta-binomial around 1 - q_max with the spread of tmax estimated from the profile's \
                   calibration samples (binomial when the profile does not say), \
                   Benjamini-Hochberg across sites at false discovery rate alpha";

/// What to do when no profile gave tmax, as commands to paste: calibrate
/// with `launch` (the run's MPI, as many ranks as the run) as the README
/// does, then report on the run at `dir` against that profile.
fn no_profile_hint(dir: &str, launch: &str) -> String {
    use mpiover_common::suggest::{program, quote};
    format!(
        "no profile gave tmax, so sites are ranked by time (as mpiP does) and overhead is unknown: \
         calibrate this machine (`{launch} {} --quick -o profile.json`) and re-analyse the run \
         against it (`{} report {} --profile profile.json`), or record with a profile, to rank \
         sites by the time they waste",
        program("mpiover-calibrate"),
        program("mpiover"),
        quote(dir)
    )
}

/// Where the eager limits come from, in words, and for a run on several
/// hosts with a profile that measured one host only, that its limit is
/// applied across hosts too.
fn rendezvous_detail(
    detail: String,
    rdv: mpiover_aggregate::Thresholds,
    source: mpiover_aggregate::RendezvousSource,
    hosts: &[String],
) -> String {
    if hosts.len() > 1
        && rdv.cross_host.is_none()
        && source == mpiover_aggregate::RendezvousSource::Profile
    {
        format!(
            "{detail}; the profile measured no limit across hosts: the same-host one is applied \
             to sends across hosts too"
        )
    } else {
        detail
    }
}

pub(crate) fn finish(
    mut agg: Aggregate,
    run: RunSummary,
    dir: &str,
    tmax: Option<&dyn TmaxSource>,
    opts: &Options,
    (rdv, rdv_source, rdv_detail): mpiover_aggregate::EagerLimit,
) -> Report {
    agg.ranks.sort_by_key(|r| r.rank);
    let ranks = &agg.ranks;
    let totals = Totals::of(ranks);
    // Hosts are shared strings: their distinct addresses first, a handful
    // per host, rather than a million strings sorted.
    let mut hosts: Vec<&str> = ranks.iter().map(|r| &*r.host).collect();
    hosts.dedup();
    hosts.sort_unstable();
    hosts.dedup();
    let hosts: Vec<String> = hosts.into_iter().map(str::to_string).collect();

    let lookups = agg.lookups.clone();
    let (profile, q_max, mut warnings) = profile_and_warnings(ranks, &run, &hosts, tmax, &lookups);
    let overhead_known = lookups.entries > 0;
    // The machine's level against the calibration's, from every key's
    // histogram: read before the sites are, since it decides their verdicts.
    let level = (overhead_known && opts.level_check)
        .then(|| super::level::of_run(&agg, tmax))
        .flatten();
    warnings.extend(level.as_ref().and_then(super::level::warning));

    let bounded_detail = {
        let sites = agg.sites.values().filter(|s| s.spread.is_some()).count() as u64;
        let regions = agg.regions.values().filter(|g| g.spread.is_some()).count() as u64;
        (sites + regions > 0).then_some(crate::model::BoundedDetail { sites, regions })
    };
    let mut built: Vec<Built> = agg
        .sites
        .drain()
        .map(|(key, acc)| build_site(key, acc, &mut agg.wait, totals.mpi, totals.app))
        .collect();
    let min_calls = test_significance(&mut built, q_max, opts, totals.mpi)
        .or_else(|| q_max.map(|q| signif::min_calls(q, opts.alpha)));
    let keys = agg.keys.iter().chain(&agg.keys_cross_host);
    stability::retest(
        &mut built,
        keys,
        tmax,
        q_max,
        level.as_ref(),
        opts,
        totals.mpi,
    );
    rank_sites(&mut built, overhead_known);
    super::causes::sort_rows(&mut agg.regions);
    let regions = {
        let index = super::causes::RegionIndex::new(&agg.regions);
        super::causes::root_causes(&mut built, &index, &agg.wait);
        super::causes::region_reports(&agg.regions)
    };
    // Suggested commands use the run's MPI and as many ranks as the run.
    let library = ranks.first().map_or("", |r| &*r.mpi_library);
    let launch = mpiover_common::suggest::launcher(library, run.ranks.max(2));
    let profile_path = profile.as_ref().map_or("PROFILE".to_string(), |p| {
        mpiover_common::suggest::quote(&p.path)
    });
    warnings.extend(weak_tmax_warning(&built, &launch, &profile_path));

    let mut detail = details(&built, opts, run.ranks, overhead_known);
    detail.regions = region_sources(&regions, &built, opts);
    let sites: Vec<SiteReport> = built.into_iter().map(|b| b.report).collect();
    let wait_matrix = wait_matrix(&agg.wait, &agg.wait_dropped, overhead_known, ranks);
    let rendezvous_detail = rendezvous_detail(rdv_detail, rdv, rdv_source, &hosts);

    Report {
        schema: REPORT_SCHEMA.into(),
        generator: format!("mpiover {}", env!("CARGO_PKG_VERSION")),
        run: run_info(dir, &run, ranks, hosts),
        summary: summary(&sites, &totals, overhead_known),
        sites,
        ranks: rank_reports(ranks),
        wait_matrix,
        regions,
        methods: Methods {
            profile,
            q_max,
            alpha: opts.alpha,
            test: TEST.into(),
            min_calls,
            min_share: opts.min_share,
            rendezvous_bytes: rdv.same_host,
            rendezvous_bytes_cross_host: rdv.cross_host,
            rendezvous_source: rdv_source,
            rendezvous_detail,
            lookups,
            tool: tool_cost(ranks, &totals),
            timer: timer_info(ranks),
            folded_keys: agg.folded_keys,
            folded_calls: agg.folded_calls,
            depth: ranks[0].depth,
            hint: (!overhead_known).then(|| no_profile_hint(dir, &launch)),
            stability: Stability {
                tmax_spread: if overhead_known {
                    opts.tmax_spread
                } else {
                    1.0
                },
                level,
            },
            bounded_detail,
        },
        warnings,
        detail,
    }
}
