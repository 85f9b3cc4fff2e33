//! `mpiover profile refit` and `mpiover profile check`: the error models
//! refitted on the samples a profile keeps, and judged out of sample.
//!
//! A model is worth having when it predicts calls it was not fitted to. The
//! check asks three questions of every entry that kept its samples:
//!
//! 1. **Which model.** The entry's whole sample is fitted as the calibrator
//!    fits it (same q_max, alpha, timer resolution): the chosen family, or
//!    the empirical q_max quantile when every family is rejected.
//! 2. **Out of sample.** The sample is split by measurement order into the
//!    even and the odd samples (alternate windows, so both halves see the same
//!    moments of the run). tmax is fitted on the even half; the share of the
//!    odd half above it should be 1 - q_max. The same share is computed for
//!    the even half's empirical q_max quantile (the fallback), so the two can
//!    be compared at the same N.
//! 3. **How many samples.** The stopping rule (tmax over the last prefixes
//!    within `rel_tol` of terr,max) is applied to growing prefixes, every 25
//!    samples from 50 on: the first length at which it holds is what the
//!    entry needed.
//!
//! With `--against OTHER` the same entries of a second calibration are fitted
//! too, and the ratio of their tmax (larger over smaller) says how far one
//! calibration's tmax is from the next one's; the stored empirical 99th
//! percentiles (`q99_s`) of the same entries are the baseline.
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context};
use mpiover_common::profile::{Profile, ProfileEntry, ProfileKey};
use mpiover_stats::{
    fit, Estimator, FitOptions, FitResult, QMax, Sample, Stop, StoppingRule, TailFit,
};
use serde::Serialize;

/// Shortest prefix the sample-size question starts from.
const FIRST_PREFIX: usize = 50;

/// The fit options a profile's entries were fitted with.
pub fn fit_options(p: &Profile) -> FitOptions {
    FitOptions {
        // The calibrator's floor: bins are never narrower than 1 ns.
        resolution_s: p.environment.timer.resolution_s.max(1e-9),
        q_max: p.method.q_max,
        alpha: p.method.alpha,
        ..FitOptions::default()
    }
}

/// An entry's samples in measurement order; an error names the entry.
pub fn entry_times(path: &Path, e: &ProfileEntry) -> anyhow::Result<Option<Vec<f64>>> {
    match &e.samples {
        None => Ok(None),
        Some(s) => s.times_s().map(Some).map_err(|err| {
            anyhow::anyhow!("{}: entry {}: samples: {err}", path.display(), e.key())
        }),
    }
}

/// What the check found for one entry.
#[derive(Debug, Clone, Serialize)]
pub struct EntryCheck {
    pub key: String,
    pub n: usize,
    /// The chosen family on the whole sample, none when empirical.
    pub model: Option<String>,
    pub tmax_s: f64,
    /// The empirical q_max quantile of the whole sample.
    pub empirical_tmax_s: f64,
    /// Share of the odd half above the even half's tmax (the product's:
    /// model, else empirical), and above its empirical quantile.
    pub exceed: Option<f64>,
    pub exceed_empirical: Option<f64>,
    /// The tail model's fit and test on the whole sample, when every body
    /// model was rejected (accepted or not).
    pub tail: Option<TailFit>,
    /// Whether the even half's tmax came from a model.
    pub half_modelled: bool,
    /// Samples the stopping rule needed (none: not within the sample).
    pub needed: Option<usize>,
}

/// Fits one entry's sample and answers the three questions.
pub fn check_entry(
    key: &ProfileKey,
    times: &[f64],
    opts: &FitOptions,
    rule: &StoppingRule,
) -> EntryCheck {
    let whole = fit(times, opts).ok();
    let (even, odd) = halves(times);
    let above = |t: f64| share_above(&odd, t);
    let half = fit(&even, opts).ok();
    EntryCheck {
        key: key.to_string(),
        n: times.len(),
        model: whole
            .as_ref()
            .and_then(|r| r.model_name())
            .map(str::to_string),
        tmax_s: whole.as_ref().map_or(f64::NAN, |r| r.tmax_s),
        empirical_tmax_s: whole.as_ref().map_or(f64::NAN, |r| r.empirical_tmax_s),
        exceed: half.as_ref().map(|h| above(h.tmax_s)),
        exceed_empirical: half.as_ref().map(|h| above(h.empirical_tmax_s)),
        tail: whole.as_ref().and_then(|r| r.tail.clone()),
        half_modelled: half.as_ref().is_some_and(|h| !h.fallback),
        needed: samples_needed(times, opts, rule),
    }
}

/// The even and the odd samples in measurement order (alternate windows, so
/// both halves see the same moments of the run).
fn halves(times: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let even = times.iter().step_by(2).copied().collect();
    let odd = times.iter().skip(1).step_by(2).copied().collect();
    (even, odd)
}

/// Share of `held_out` above `t`.
fn share_above(held_out: &[f64], t: f64) -> f64 {
    held_out.iter().filter(|&&x| x > t).count() as f64 / held_out.len().max(1) as f64
}

/// The first prefix length (50, 75, ...) at which the rule calls tmax stable.
fn samples_needed(times: &[f64], opts: &FitOptions, rule: &StoppingRule) -> Option<usize> {
    let rule = StoppingRule {
        min_samples: FIRST_PREFIX + (rule.lookback - 1) * rule.step,
        max_samples: usize::MAX,
        ..rule.clone()
    };
    let mut n = rule.min_samples;
    while n <= times.len() {
        if let Stop::Stable { .. } = rule.check(&times[..n], opts) {
            return Some(n);
        }
        n += rule.step;
    }
    None
}

/// (median, p10, p90) of some values; none when there are none.
pub fn spread(mut v: Vec<f64>) -> Option<(f64, f64, f64)> {
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Some((at(0.5), at(0.1), at(0.9)))
}

/// The whole check of a profile, and the comparison with another.
#[derive(Debug, Serialize)]
pub struct Check {
    pub profile: String,
    pub q_max: f64,
    pub entries: usize,
    pub without_samples: usize,
    /// Entries per chosen family on the whole sample.
    pub models: BTreeMap<String, usize>,
    pub empirical: usize,
    /// Out of sample (median, p10, p90 over entries): the product's tmax,
    /// the empirical quantile, and the product's on entries modelled on
    /// their first half only.
    pub exceed: Option<(f64, f64, f64)>,
    pub exceed_empirical: Option<(f64, f64, f64)>,
    pub exceed_modelled: Option<(f64, f64, f64)>,
    pub modelled_halves: usize,
    /// Samples the stopping rule needed (median, p10, p90) and entries never
    /// stable within their samples.
    pub needed: Option<(f64, f64, f64)>,
    pub never_stable: usize,
    /// The stored sample sizes (median, p10, p90): what the calibration spent.
    pub n: Option<(f64, f64, f64)>,
    pub against: Option<Against>,
    pub per_entry: Vec<EntryCheck>,
}

/// Two calibrations' tmax of the same entries.
#[derive(Debug, Serialize)]
pub struct Against {
    pub profile: String,
    pub common: usize,
    /// Larger over smaller tmax (refitted): median, p10, p90.
    pub tmax_ratio: Option<(f64, f64, f64)>,
    /// The same for the stored empirical 99th percentiles and medians.
    pub q99_ratio: Option<(f64, f64, f64)>,
    pub median_ratio: Option<(f64, f64, f64)>,
    /// Per entry, tmax / median in one calibration against the other (larger over smaller):
    /// how far tmax moved beyond its own entry's median.
    pub tmax_over_median_ratio: Option<(f64, f64, f64)>,
    /// Other estimators of the q_max quantile on the same pairs of samples: does any
    /// estimate move less between the calibrations than tmax does?
    pub estimators: Vec<EstimatorSpread>,
}

/// One estimator of the q_max quantile judged like tmax: between the calibrations, and out of
/// sample within the profile checked.
#[derive(Debug, Serialize)]
pub struct EstimatorSpread {
    pub estimator: String,
    /// Entries where both calibrations gave an estimate.
    pub entries: usize,
    /// Larger over smaller (median, p10, p90).
    pub ratio: Option<(f64, f64, f64)>,
    /// Share of the odd samples above the even samples' estimate (median, p10, p90).
    pub exceed: Option<(f64, f64, f64)>,
}

/// For every estimator of [`Estimator::COMPARED`], in its order, its A/B ratio and its
/// out-of-sample share per entry pair.
struct EstimatorTally {
    ratio: Vec<Vec<f64>>,
    exceed: Vec<Vec<f64>>,
}

impl EstimatorTally {
    fn new() -> Self {
        let n = Estimator::COMPARED.len();
        EstimatorTally {
            ratio: vec![Vec::new(); n],
            exceed: vec![Vec::new(); n],
        }
    }

    fn add(&mut self, a: &[f64], b: &[f64], q: QMax) {
        let (Ok(sa), Ok(sb)) = (Sample::new(a), Sample::new(b)) else {
            return;
        };
        let (even, odd) = halves(a);
        let half = Sample::new(&even).ok();
        for (i, e) in Estimator::COMPARED.iter().enumerate() {
            if let (Some(x), Some(y)) = (e.estimate(&sa, q), e.estimate(&sb, q)) {
                self.ratio[i].push(ratio(x, y));
            }
            if let Some(t) = half.as_ref().and_then(|h| e.estimate(h, q)) {
                self.exceed[i].push(share_above(&odd, t));
            }
        }
    }

    fn finish(self) -> Vec<EstimatorSpread> {
        Estimator::COMPARED
            .iter()
            .zip(self.ratio)
            .zip(self.exceed)
            .map(|((e, ratio), exceed)| EstimatorSpread {
                estimator: e.name(),
                entries: ratio.len(),
                ratio: spread(ratio),
                exceed: spread(exceed),
            })
            .collect()
    }
}

fn ratio(a: f64, b: f64) -> f64 {
    if a > 0.0 && b > 0.0 {
        a.max(b) / a.min(b)
    } else {
        f64::NAN
    }
}

/// Runs the check on `path` (and `against`).
pub fn check(path: &Path, against: Option<&Path>, rel_tol: f64) -> anyhow::Result<Check> {
    let p = Profile::load(path)?;
    let opts = fit_options(&p);
    let rule = StoppingRule {
        rel_tol,
        ..StoppingRule::default()
    };
    let mut per_entry = Vec::new();
    let mut without = 0;
    for e in &p.entries {
        match entry_times(path, e)? {
            Some(t) => per_entry.push(check_entry(&e.key(), &t, &opts, &rule)),
            None => without += 1,
        }
    }
    if per_entry.is_empty() {
        bail!(
            "{}: no entry keeps its samples (profiles written before they were kept cannot be \
             checked: calibrate again)",
            path.display()
        );
    }
    let mut models = BTreeMap::new();
    for c in &per_entry {
        if let Some(m) = &c.model {
            *models.entry(m.clone()).or_insert(0) += 1;
        }
    }
    let against = against.map(|o| compare((&p, path), &opts, o)).transpose()?;
    let pick =
        |f: &dyn Fn(&EntryCheck) -> Option<f64>| spread(per_entry.iter().filter_map(f).collect());
    Ok(Check {
        profile: path.display().to_string(),
        q_max: p.method.q_max,
        entries: per_entry.len() + without,
        without_samples: without,
        empirical: per_entry.iter().filter(|c| c.model.is_none()).count(),
        models,
        exceed: pick(&|c| c.exceed),
        exceed_empirical: pick(&|c| c.exceed_empirical),
        exceed_modelled: pick(&|c| c.exceed.filter(|_| c.half_modelled)),
        modelled_halves: per_entry.iter().filter(|c| c.half_modelled).count(),
        needed: pick(&|c| c.needed.map(|n| n as f64)),
        never_stable: per_entry.iter().filter(|c| c.needed.is_none()).count(),
        n: pick(&|c| Some(c.n as f64)),
        against,
        per_entry,
    })
}

fn compare(
    (p, path): (&Profile, &Path),
    opts: &FitOptions,
    other: &Path,
) -> anyhow::Result<Against> {
    let q = Profile::load(other)?;
    let oopts = fit_options(&q);
    let (mut t, mut q99, mut med, mut rel) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut tally = EstimatorTally::new();
    let q_max = QMax::new(p.method.q_max).with_context(|| format!("{}: q_max", path.display()))?;
    let mut common = 0;
    for e in &p.entries {
        let Some(f) = q.entry(&e.key()) else {
            continue;
        };
        common += 1;
        let refit =
            |prof_opts: &FitOptions, x: &ProfileEntry, path: &Path| -> anyhow::Result<f64> {
                Ok(match entry_times(path, x)? {
                    Some(times) => fit(&times, prof_opts).map_or(x.tmax_s, |r: FitResult| r.tmax_s),
                    None => x.tmax_s,
                })
            };
        let (ta, tb) = (refit(opts, e, path)?, refit(&oopts, f, other)?);
        t.push(ratio(ta, tb));
        // tmax as a multiple of its own entry's median: what is left of tmax's move once the
        // entry's typical call has moved with the machine.
        rel.push(ratio(ta / e.median_s, tb / f.median_s));
        if let (Some(a), Some(b)) = (e.q99_s, f.q99_s) {
            q99.push(ratio(a, b));
        }
        med.push(ratio(e.median_s, f.median_s));
        if let (Some(a), Some(b)) = (entry_times(path, e)?, entry_times(other, f)?) {
            tally.add(&a, &b, q_max);
        }
    }
    if common == 0 {
        bail!(
            "{}: no entry in common with the profile checked",
            other.display()
        );
    }
    Ok(Against {
        profile: other.display().to_string(),
        common,
        tmax_ratio: spread(t),
        q99_ratio: spread(q99),
        median_ratio: spread(med),
        tmax_over_median_ratio: spread(rel),
        estimators: tally.finish(),
    })
}

/// The check as text.
pub fn render(c: &Check) -> String {
    use std::fmt::Write;
    let pct = |v: Option<(f64, f64, f64)>| match v {
        Some((m, lo, hi)) => format!(
            "median {:.2} %, p10 {:.2} %, p90 {:.2} %",
            100.0 * m,
            100.0 * lo,
            100.0 * hi
        ),
        None => "-".into(),
    };
    let num = |v: Option<(f64, f64, f64)>| match v {
        Some((m, lo, hi)) => format!("median {m:.0}, p10 {lo:.0}, p90 {hi:.0}"),
        None => "-".into(),
    };
    let rat = |v: Option<(f64, f64, f64)>| match v {
        Some((m, _, hi)) => format!("median {m:.2}, p90 {hi:.2}"),
        None => "-".into(),
    };
    let mut o = String::new();
    let with = c.entries - c.without_samples;
    let modelled = with - c.empirical;
    let _ = writeln!(
        o,
        "profile {}: {} entries, {} with samples (q_max {})",
        c.profile, c.entries, with, c.q_max
    );
    let fams: Vec<String> = c.models.iter().map(|(k, v)| format!("{k} {v}")).collect();
    let _ = writeln!(
        o,
        "  models:        {modelled} of {with} modelled ({:.0} %): {}; {} empirical",
        100.0 * modelled as f64 / with.max(1) as f64,
        if fams.is_empty() {
            "none".into()
        } else {
            fams.join(", ")
        },
        c.empirical
    );
    let _ = writeln!(
        o,
        "  out of sample: share of the odd samples above the even samples' tmax (should be {:.1} %)",
        100.0 * (1.0 - c.q_max)
    );
    let _ = writeln!(o, "    tmax (model, else empirical): {}", pct(c.exceed));
    let _ = writeln!(
        o,
        "    on the {} entries modelled on the even half: {}",
        c.modelled_halves,
        pct(c.exceed_modelled)
    );
    let _ = writeln!(
        o,
        "    empirical quantile:           {}",
        pct(c.exceed_empirical)
    );
    let _ = writeln!(
        o,
        "  samples:       kept {}; the stopping rule needed {} ({} entries not stable within their samples)",
        num(c.n),
        num(c.needed),
        c.never_stable
    );
    if let Some(a) = &c.against {
        let _ = writeln!(
            o,
            "  against {} ({} entries in common), larger over smaller:",
            a.profile, a.common
        );
        let _ = writeln!(o, "    tmax:   {}", rat(a.tmax_ratio));
        let _ = writeln!(o, "    q99_s:  {}", rat(a.q99_ratio));
        let _ = writeln!(o, "    median: {}", rat(a.median_ratio));
        let _ = writeln!(
            o,
            "    tmax / median, per entry: {}",
            rat(a.tmax_over_median_ratio)
        );
        // How much of tmax's spread the machine explains: the medians moved too.
        if let (Some(t), Some(m)) = (a.tmax_ratio, a.median_ratio) {
            let _ = writeln!(
                o,
                "    tmax's median ratio is {:.2} x the medians' ({:.2} against {:.2})",
                t.0 / m.0,
                t.0,
                m.0
            );
            let _ = writeln!(
                o,
                "    other estimators of the {} quantile: A/B ratio; x the medians'; odd samples above the even's",
                c.q_max
            );
            for e in &a.estimators {
                let _ = writeln!(
                    o,
                    "      {:<16} {}; {}; {}",
                    e.estimator,
                    rat(e.ratio),
                    e.ratio.map_or("-".into(), |r| format!("{:.2}", r.0 / m.0)),
                    pct(e.exceed)
                );
            }
        }
    }
    o
}

/// `mpiover profile refit`: every entry with samples fitted again with this
/// version's models; the fit fields are replaced, the rest kept. Entries of
/// several runs take the largest of their runs' tmax, as a merge does.
pub fn refit(path: &Path, output: &Path) -> anyhow::Result<String> {
    let mut p = Profile::load(path)?;
    let opts = fit_options(&p);
    let (mut done, mut modelled) = (0usize, 0usize);
    let mut fams: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..p.entries.len() {
        let e = &p.entries[i];
        let Some(s) = &e.samples else { continue };
        let by_run = s.times_by_run().map_err(|err| {
            anyhow::anyhow!("{}: entry {}: samples: {err}", path.display(), e.key())
        })?;
        let mut runs = p.entries[i].runs.clone();
        // Samples that cannot be told apart by run are fitted as one run
        // (all of them, not the first run's share).
        let parts = if runs.len() == by_run.len() {
            by_run
        } else {
            runs = vec![p.entries[i].as_run(&p.default_run_id())];
            vec![by_run.concat()]
        };
        for (r, t) in runs.iter_mut().zip(&parts) {
            if let Ok(f) = fit(t, &opts) {
                mpiover_common::profile::fitted::apply(&f, &mut r.measured);
            }
        }
        let merged = mpiover_common::profile::combine_runs(&p.entries[i], runs);
        done += 1;
        if let Some(m) = merged.model.filter(|_| !merged.fallback) {
            modelled += 1;
            *fams.entry(m.to_string()).or_insert(0) += 1;
        }
        p.entries[i] = mpiover_common::profile::ProfileEntry {
            samples: p.entries[i].samples.clone(),
            ..merged
        };
    }
    if done == 0 {
        bail!(
            "{}: no entry keeps its samples (profiles written before they were kept cannot be \
             refitted: calibrate again)",
            path.display()
        );
    }
    p.invalidate_index();
    p.save_atomic(output)
        .with_context(|| format!("writing {}", output.display()))?;
    let fams: Vec<String> = fams.iter().map(|(k, v)| format!("{k} {v}")).collect();
    Ok(format!(
        "{}: {done} entries refitted: {modelled} modelled ({}), {} empirical",
        output.display(),
        fams.join(", "),
        done - modelled
    ))
}
