//! A finished report to export in tests: the fixture run's, analysed, with a
//! root cause under its top site and regions.

use mpiover_common::run::{RankInfo, RunCheck};

use crate::model::{RegionRef, RegionReport, Report, RootCause};
use crate::prose::regions::tests::end;

/// The fixture run's report, with a root cause under its top site (a
/// collective) and regions, as the text and HTML tests read it.
pub(crate) fn fixture_report() -> Report {
    let records = crate::synth::fixture_run(true);
    let mut check = RunCheck::new();
    for r in &records {
        check
            .add(RankInfo::of(std::path::Path::new("x"), r))
            .unwrap();
    }
    let opts = crate::analysis::Options::default();
    let mut r =
        crate::analysis::analyze_records("run", &records, check.finish().unwrap(), None, &opts);
    let region = RegionRef {
        from: end("/home/user/halo/solver.c", 80, Some("solve"), "MPI_Bcast"),
        to: end(
            "/home/user/halo/solver.c",
            88,
            Some("solve"),
            "MPI_Allreduce",
        ),
    };
    r.sites[0].significant = true;
    r.sites[0].root_causes = Some(vec![RootCause {
        rank: 0,
        region: region.clone(),
        excess_s: 0.4,
        share: 0.9,
        via: vec![],
    }]);
    r.sites[0].root_causes_share = Some(0.9);
    r.regions = vec![RegionReport {
        region,
        ranks: 4,
        passes: 2000,
        time_s: 0.7,
        max_s: 0.4,
        median_s: 0.1,
        min_s: 0.09,
        max_rank: 0,
        imbalance_s: 0.3,
    }];
    r
}
