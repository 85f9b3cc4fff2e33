//! Root causes on records made in memory: regression tests of the
//! comparison the excess is made against.

use mpiover_common::record::{Region, RegionEnd};

use super::*;
use crate::synth::{self, EntrySpec, Times};

/// 4 ranks of a halo code: the last wait before the Allreduce is at line 40
/// on ranks 0 and 1 and at line 39 on ranks 2 and 3 (it depends on a rank's
/// position); the code from there to the Allreduce took `region_s[rank]`.
/// Ranks 1 to 3 wait in the Allreduce for rank 0.
fn halo_records(region_s: [f64; 4]) -> Vec<Record> {
    let mut rng = mpiover_common::rng::Rng::new(7);
    let slowest = region_s.iter().copied().fold(f64::MIN, f64::max);
    (0..4u32)
        .map(|r| {
            let mut rec = synth::empty_record("halo", r, 4, "h");
            let wait_line = if r < 2 { 40 } else { 39 };
            rec.sites = vec![
                synth::site(0, "halo2d.c", wait_line, "main"),
                synth::site(1, "halo2d.c", 44, "main"),
            ];
            let calls = 200;
            let delay_s = (slowest - region_s[r as usize]) / calls as f64;
            synth::push_entry(
                &mut rec,
                &mut rng,
                EntrySpec {
                    site: 1,
                    function: "MPI_Allreduce",
                    p: 4,
                    bytes: 8,
                    peer: None,
                    role: None,
                    completes: None,
                    post_site: None,
                    count: calls,
                    times: Times {
                        base_s: 10e-6,
                        noise_s: 1e-6,
                        delay_s,
                    },
                    tmax_s: 20e-6,
                },
                true,
                1000,
            );
            rec.regions = vec![Region {
                from: RegionEnd {
                    site: 0,
                    function: "MPI_Wait".into(),
                },
                to: RegionEnd {
                    site: 1,
                    function: "MPI_Allreduce".into(),
                },
                count: calls,
                sum_s: region_s[r as usize],
                hist: Default::default(),
            }];
            rec
        })
        .collect()
}

fn allreduce(r: &Report) -> &SiteReport {
    r.sites
        .iter()
        .find(|s| s.mpi_function == "MPI_Allreduce")
        .expect("the Allreduce site")
}

fn report_of(records: &[Record]) -> Report {
    let mut c = RunCheck::new();
    for r in records {
        c.add(RankInfo::of(Path::new("x"), r)).expect("rank info");
    }
    analyze_records(
        "run",
        records,
        c.finish().expect("summary"),
        None,
        &Options::default(),
    )
}

/// The late rank's stretch is compared with every waiting rank's own way to
/// the wait (their median), whether or not it opened at the same call: a
/// halo exchange's last wait differs with the position. Its excess is
/// 6.5 s against the median 5.5 s, not against rank 1's 6.0 s in the same
/// code alone.
#[test]
fn root_cause_excess_is_against_the_waiting_ranks_own_stretches() {
    let r = report_of(&halo_records([6.5, 6.0, 5.4, 5.5]));
    let s = allreduce(&r);
    assert_eq!(s.late_ranks.first(), Some(&0), "{s:#?}");
    let causes = s
        .root_causes
        .as_ref()
        .expect("a wait state has root causes");
    let c = causes.first().expect("a root cause");
    assert_eq!(c.rank, 0);
    assert_eq!((c.region.from.line, c.region.to.line), (Some(40), Some(44)));
    assert!((c.excess_s - 1.0).abs() < 1e-9, "excess {}", c.excess_s);
    let sum: f64 = causes.iter().map(|c| c.share).sum();
    assert!(sum <= 1.0 + 1e-12, "{s:#?}");
    assert!((s.root_causes_share.unwrap() - sum).abs() < 1e-12, "{s:#?}");
    assert!(c.via.is_empty());
}

/// Regions rank by imbalance (max - median over the ranks that ran them).
#[test]
fn regions_rank_by_imbalance() {
    let r = report_of(&halo_records([6.5, 6.0, 5.4, 5.5]));
    let top = r.regions.first().expect("regions");
    assert_eq!((top.max_rank, top.ranks), (0, 2));
    assert!((top.imbalance_s - 0.25).abs() < 1e-9, "{top:?}");
}

/// Nothing stands out when the region is balanced: no root cause, but the
/// site still says it was analysed (an empty list).
#[test]
fn root_cause_of_a_balanced_region_is_none() {
    let r = report_of(&halo_records([6.02, 6.0, 6.01, 5.99]));
    let s = allreduce(&r);
    assert!(
        s.wait_state.is_some(),
        "the others still wait a little: {s:#?}"
    );
    assert_eq!(s.root_causes.as_deref(), Some(&[][..]), "{s:#?}");
}
