//! A merged job log of more ranks than it keeps rows for (bounded per-rank
//! detail) against the report on the per-rank records of the same job:
//! every exact figure equal, every estimate within its stated bound.

use std::path::Path;

use mpiover_aggregate::{JobAggregate, SKETCH_ALPHA};
use mpiover_common::record::Record;
use mpiover_common::run::{RankInfo, RunCheck, RunSummary};

use super::{assemble, Options};
use crate::analysis::load::{analyze_records, job_aggregate_of};

// The same check as the end-to-end test's on a real job.
#[path = "../../../tests/tests/e2e/estimates.rs"]
mod estimates;

use crate::synth;

fn summary_of(records: &[Record]) -> RunSummary {
    let mut c = RunCheck::new();
    for r in records {
        c.add(RankInfo::of(Path::new("x"), r)).unwrap();
    }
    c.finish().unwrap()
}

/// The parts of `records` merged up the binomial tree the ranks of a job
/// use (rank r takes r + 1, r + 2, r + 4, ... while it is a multiple of
/// twice the step), each part through its encoding.
fn merged_up_the_tree(records: &[Record]) -> JobAggregate {
    let mut parts: Vec<Option<JobAggregate>> =
        records.iter().map(|r| Some(job_aggregate_of(r))).collect();
    let n = parts.len();
    let mut step = 1;
    while step < n {
        for r in (0..n).step_by(2 * step) {
            if r + step < n {
                let child = parts[r + step].take().unwrap().encode().unwrap();
                let parent = parts[r].as_mut().unwrap();
                parent.merge(JobAggregate::decode(&child).unwrap());
            }
        }
        step *= 2;
    }
    JobAggregate::decode(&parts[0].take().unwrap().encode().unwrap()).unwrap()
}

/// 4,096 ranks of the scale benchmark's ring, 20 sites each: the rows of
/// every site and region are bounded in the log (4,096 > BOUND_ROWS).
#[test]
fn a_bounded_log_of_4096_ranks_reports_its_records_exact_figures() {
    let n = 4096;
    assert!(n as usize > mpiover_aggregate::BOUND_ROWS);
    let records: Vec<Record> = (0..n).map(|r| synth::scale_record(r, n, 20, 3)).collect();
    let opts = Options::default();
    let direct = analyze_records("run", &records, summary_of(&records), None, &opts);
    let job = merged_up_the_tree(&records);
    let (agg, rdv) = job.into_parts();
    let kept = agg.sites.values().map(|s| s.per_rank.len()).max().unwrap();
    assert!(kept <= mpiover_aggregate::BOUND_ROWS, "{kept} rows kept");
    let bounded = assemble::finish(agg, summary_of(&records), "run", None, &opts, rdv);
    let mut b = serde_json::to_value(&bounded).unwrap();
    let x = serde_json::to_value(&direct).unwrap();
    estimates::take_estimates(
        &mut b,
        &x,
        SKETCH_ALPHA,
        mpiover_aggregate::Bounds::DEFAULT.keep,
    );
    estimates::assert_the_rest_equal(b, x);
}
