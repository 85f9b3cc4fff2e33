//! The merged job log's aggregate against the report on per-rank records:
//! folded per rank, through its encoding, merged in any order, and evaluated
//! again against another profile.

use std::path::Path;

use mpiover_aggregate::JobAggregate;
use mpiover_common::profile::MpiTValue;
use mpiover_common::record::Record;
use mpiover_common::run::{RankInfo, RunCheck, RunSummary};

use super::{assemble, Options};
use crate::analysis::load::{analyze_records, job_aggregate_of};
use crate::synth;
use crate::tmax::TmaxSource;

fn summary_of(records: &[Record]) -> RunSummary {
    let mut c = RunCheck::new();
    for r in records {
        c.add(RankInfo::of(Path::new("x"), r)).unwrap();
    }
    c.finish().unwrap()
}

/// Records of several ranks folded in the job, each part through its
/// encoding, merged up a tree in another order than the ranks': the
/// report equals the report on the records themselves.
#[test]
fn a_merged_aggregate_reports_like_its_records() {
    for online in [true, false] {
        let mut records = synth::fixture_run(online);
        let n = records.len() as u32;
        let extra: Vec<Record> = (0..5)
            .map(|i| {
                let mut r = synth::scale_record(n + i, n + 5, 12, 7 + u64::from(i));
                r.run_id = records[0].run_id.clone();
                r
            })
            .collect();
        records.extend(extra);
        for r in &mut records {
            r.ranks = n + 5;
        }
        let opts = Options::default();
        let direct = analyze_records("run", &records, summary_of(&records), None, &opts);
        let mut parts: Vec<JobAggregate> = records
            .iter()
            .rev()
            .map(|r| JobAggregate::decode(&job_aggregate_of(r).encode().unwrap()).unwrap())
            .collect();
        while parts.len() > 1 {
            let b = parts.pop().unwrap();
            let mut a = parts.pop().unwrap();
            a.merge(JobAggregate::decode(&b.encode().unwrap()).unwrap());
            parts.insert(0, a);
        }
        let (agg, rdv) = parts.pop().unwrap().into_parts();
        let merged = assemble::finish(agg, summary_of(&records), "run", None, &opts, rdv);
        assert_eq!(
            serde_json::to_value(&merged).unwrap(),
            serde_json::to_value(&direct).unwrap(),
            "online {online}"
        );
    }
}

/// Records without online overhead, given a profile at report time:
/// the merged log's sites, evaluated again from its merged keys, carry
/// the overhead, calls over tmax and wait state of the per-rank path.
#[test]
fn merged_keys_evaluate_the_sites_against_another_profile() {
    // The library states an eager limit that the profile given does not
    // measure: the report on either path falls back to it.
    let mut records = synth::fixture_run(false);
    for r in &mut records {
        r.eager_limit = Some(MpiTValue {
            cvar: "btl_x_eager_limit".into(),
            bytes: 4095,
        });
    }
    let prof = crate::tmax::FnTmax {
        name: "p.json".into(),
        q_max: Some(0.9),
        f: |f: &str, _p: u32, _b: u64, _r: Option<&str>| {
            let (base_s, noise_s) = match f {
                "MPI_Recv" => (5e-6, 1e-6),
                "MPI_Wait" => (250e-6, 20e-6),
                "MPI_Allreduce" => (10e-6, 2e-6),
                "MPI_Bcast" => (20e-6, 4e-6),
                "MPI_Send" => (3e-6, 0.5e-6),
                _ => return None,
            };
            let t = synth::Times {
                base_s,
                noise_s,
                delay_s: 0.0,
            };
            Some((synth::fixture_tmax(t), false))
        },
    };
    let opts = Options::default();
    let direct = analyze_records("run", &records, summary_of(&records), Some(&prof), &opts);
    let mut job = records
        .iter()
        .map(|r| JobAggregate::decode(&job_aggregate_of(r).encode().unwrap()).unwrap())
        .reduce(|mut a, b| {
            a.merge(b);
            a
        })
        .unwrap();
    let rdv = job.rendezvous_given(opts.eager_limit, prof.rendezvous_bytes());
    let src: &dyn TmaxSource = &prof;
    assert!(job.reevaluate(Some(src), rdv.0));
    let (agg, _) = job.into_parts();
    let merged = assemble::finish(agg, summary_of(&records), "run", Some(&prof), &opts, rdv);
    assert_eq!(merged.sites.len(), direct.sites.len());
    assert_eq!(
        (
            merged.methods.rendezvous_bytes,
            &merged.methods.rendezvous_source
        ),
        (
            direct.methods.rendezvous_bytes,
            &direct.methods.rendezvous_source
        )
    );
    assert_eq!(direct.methods.rendezvous_bytes, 4096);
    assert!(direct
        .sites
        .iter()
        .any(|s| s.overhead_s.unwrap_or(0.0) > 0.0));
    for d in &direct.sites {
        let m = merged
            .sites
            .iter()
            .find(|m| m.location == d.location && m.mpi_function == d.mpi_function)
            .unwrap_or_else(|| panic!("no {} in the merged report", d.location));
        let close = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => (a - b).abs() <= 1e-9 * a.abs().max(1e-12),
            (a, b) => a.is_none() && b.is_none(),
        };
        assert!(
            close(d.overhead_s, m.overhead_s),
            "{}: {:?} vs {:?}",
            d.location,
            d.overhead_s,
            m.overhead_s
        );
        assert_eq!(d.wait_state, m.wait_state, "{}", d.location);
        assert_eq!(d.significant, m.significant, "{}", d.location);
    }
    assert_eq!(
        serde_json::to_value(&merged.methods.lookups).unwrap(),
        serde_json::to_value(&direct.methods.lookups).unwrap()
    );
}

#[test]
fn a_damaged_aggregate_is_an_error_not_a_panic() {
    let rec = synth::scale_record(0, 1, 5, 1);
    let good = job_aggregate_of(&rec).encode().unwrap();
    for i in (0..good.len()).step_by(5) {
        let mut b = good.clone();
        b[i] ^= 0xa5;
        let _ = JobAggregate::decode(&b);
    }
    assert!(JobAggregate::decode(&good[..good.len() / 2]).is_err());
}
