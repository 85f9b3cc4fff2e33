//! The kept samples through a merge, and what a fitted entry tells the
//! significance test.

use super::{entry, grid};
use crate::profile::fit_model::FitModel;
use crate::profile::index::Basis;
use crate::profile::load::HostLoad;
use crate::profile::samples::Samples;
use crate::profile::schema::Profile;

/// Merged runs keep their samples one after the other, in the order of
/// `runs`; an entry whose other part has no samples (an older profile) has
/// none, rather than samples that describe one run only.
#[test]
fn merge_concatenates_the_runs_samples() {
    let mut a = grid();
    let mut b = grid();
    b.runs[0].id = "run-b".into();
    let ta = [1.0e-6, 1.2e-6, 1.1e-6];
    let tb = [0.9e-6, 1.4e-6];
    for e in &mut a.entries {
        e.samples = Samples::encode(&ta, 1e-9);
    }
    for e in &mut b.entries {
        e.samples = Samples::encode(&tb, 1e-9);
    }
    a.entries[1].samples = None;
    a.invalidate_index();
    b.invalidate_index();
    let m = Profile::merge(&a, &b, false).unwrap();
    let e = m.entry(&a.entries[0].key()).unwrap();
    let s = e.samples.as_ref().expect("both runs had samples");
    assert_eq!(s.runs, vec![3, 2]);
    let by = s.times_by_run().unwrap();
    for (got, want) in by.concat().iter().zip(ta.iter().chain(tb.iter())) {
        assert!((got - want).abs() < 1e-12, "{got} {want}");
    }
    assert!(m.entry(&a.entries[1].key()).unwrap().samples.is_none());
    // Written and read back unchanged.
    let back = Profile::from_json(&m.to_json(), std::path::Path::new("m.json")).unwrap();
    assert_eq!(back.entry(&a.entries[0].key()).unwrap().samples, e.samples);
}

/// Only the one-parameter families get the fitted (tight) null of the
/// significance test; a larger family's tail quantile is as uncertain as
/// the empirical one.
#[test]
fn basis_is_fitted_only_for_one_parameter_models() {
    let mut e = entry("MPI_Recv", 2, 8, None, 1e-6);
    for (model, fitted) in [
        (FitModel::Poisson, true),
        (FitModel::Exponential, true),
        (FitModel::NegBinomial, false),
        (FitModel::LogNormal, false),
        (FitModel::Mixture, false),
    ] {
        e.model = Some(model);
        e.fallback = false;
        assert_eq!(Basis::of(&e).fitted, fitted, "{model}");
    }
    e.fallback = true;
    e.model = Some(FitModel::Poisson);
    assert!(!Basis::of(&e).fitted);
}

/// The drift reading: an entry whose second half of samples is 30 % slower
/// reads 1.3; the last run's samples count, not a merged earlier run's; a
/// run with too few qualifying entries states no drift, and one above the
/// limit is unsteady (not busy: no other process used the CPUs).
#[test]
fn drift_reads_the_halves_of_the_last_run() {
    let mut times: Vec<f64> = (0..50).map(|i| 1.0e-6 + (i % 5) as f64 * 1e-9).collect();
    times.extend((0..50).map(|i| 1.3e-6 + (i % 5) as f64 * 1e-9));
    let s = Samples::encode(&times, 1e-10).unwrap();
    let d = s.half_drift(HostLoad::DRIFT_MIN_SAMPLES).unwrap();
    assert!((d - 1.3).abs() < 0.01, "{d}");
    assert!(s.half_drift(101).is_none());
    let steady = Samples::encode(&[2.0e-6; 60], 1e-10).unwrap();
    let both = Samples::concat(&[&s, &steady]).unwrap().unwrap();
    assert_eq!(both.half_drift(40), Some(1.0));

    let idle = HostLoad {
        others_cpus: 0.01,
        ..Default::default()
    };
    let few = idle
        .clone()
        .with_drift(vec![1.5; HostLoad::DRIFT_MIN_ENTRIES - 1]);
    assert!(few.drift.is_none() && !few.unsteady, "{few:?}");
    let calm = idle.clone().with_drift(vec![1.04; 30]);
    assert!(!calm.unsteady && calm.drift == Some(1.04), "{calm:?}");
    let moved = idle.with_drift(vec![1.2; 30]);
    assert!(
        moved.unsteady && !moved.busy && moved.drift_entries == 30,
        "{moved:?}"
    );
    assert!(
        moved.describe().contains("moved x1.20"),
        "{}",
        moved.describe()
    );
}
