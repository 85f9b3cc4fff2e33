//! Reading a run directory: records parsed and folded in parallel, one
//! worker per core, then checked as a run.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use mpiover_aggregate::{Aggregate, EagerLimit, JobAggregate};
use mpiover_common::record::Record;
use mpiover_common::run::{RankInfo, RunCheck, RunDir, RunError, RunSummary};

use super::Options;
use crate::analysis::assemble::finish;
use crate::analysis::rendezvous::rendezvous_of;
use crate::model::Report;
use crate::tmax::TmaxSource;

/// Reads a run directory and computes its report.
pub fn analyze_dir(
    dir: &Path,
    tmax: Option<&dyn TmaxSource>,
    opts: &Options,
) -> Result<Report, RunError> {
    let rd = RunDir::open(dir)?;
    let sources = rd.sources();
    let merged = read_merged(&rd, tmax, opts)?;
    let again = merged.is_some() && (tmax.is_some() || opts.eager_limit.is_some());
    // Only needed when neither the option nor a profile given decides: the
    // first record's view (the profile it was recorded with, what the
    // library stated).
    let first = if merged.is_none()
        && opts.eager_limit.is_none()
        && tmax.and_then(|t| t.rendezvous_bytes()).is_none()
    {
        sources.first().and_then(|src| src.read().ok())
    } else {
        None
    };
    let (merged, infos_merged, (rdv, rdv_source, rdv_detail)) = match merged {
        Some((agg, infos, rdv)) => (Some(agg), infos, rdv),
        None => (None, Vec::new(), rendezvous_of(opts, tmax, first.as_ref())),
    };
    let n = sources.len();
    if n == 0 && merged.is_none() {
        // Only a job log, and it holds no rank: its index is empty (the
        // directory is not what is wrong, the log is).
        if let Some(l) = &rd.log {
            return Err(RunError::Invalid {
                path: l.path.clone(),
                what: "the job log holds no rank (its index is empty)".into(),
            });
        }
        return Err(RunError::Empty {
            path: dir.to_path_buf(),
            other_files: 0,
        });
    }
    let threads = if opts.threads > 0 {
        opts.threads
    } else {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    }
    .min(n)
    .max(1);
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let errors: Mutex<Vec<(usize, RunError)>> = Mutex::new(Vec::new());
    let infos: Mutex<Vec<(usize, RankInfo)>> = Mutex::new(Vec::with_capacity(n));
    let mut total = merged.unwrap_or_default();
    let symbols = super::symbols::Symbols::new();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut agg = Aggregate::new(opts.detail_sites > 0);
                    let mut my_infos = Vec::new();
                    // Workers take files in increasing order, so every file
                    // before a failing one is still read: the error reported
                    // is the first in file order, whatever the scheduling.
                    while !stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let src = &sources[i];
                        match src.read() {
                            Ok(mut rec) => {
                                symbols.resolve(&mut rec);
                                my_infos.push((i, RankInfo::of_source(src, &rec)));
                                agg.keep_keys(super::level::sampled(i, n));
                                agg.add_record(&rec, tmax, rdv);
                            }
                            Err(e) => {
                                stop.store(true, Ordering::Relaxed);
                                errors.lock().unwrap().push((i, e));
                            }
                        }
                    }
                    infos.lock().unwrap().extend(my_infos);
                    agg
                })
            })
            .collect();
        for h in handles {
            total.merge(h.join().expect("report worker panicked"));
        }
    });
    let mut errors = errors.into_inner().unwrap();
    if !errors.is_empty() {
        errors.sort_by_key(|(i, _)| *i);
        return Err(errors.remove(0).1);
    }
    let mut infos = infos.into_inner().unwrap();
    infos.sort_by_key(|(i, _)| *i);
    let mut check = RunCheck::new();
    for info in infos_merged {
        check.add(info)?;
    }
    for (_, info) in infos {
        check.add(info)?;
    }
    let summary = check.finish().expect("a listed run directory has records");
    let mut report = finish(
        total,
        summary,
        &dir.display().to_string(),
        tmax,
        opts,
        (rdv, rdv_source, rdv_detail),
    );
    if again {
        report.warnings.push(
            "the job log is merged: its sites were evaluated against the profile or eager limit \
             given, from the job's merged histograms, but the per-rank figures (each rank's \
             overhead at a site, the wait matrix, the late peers) keep the tmax the run was \
             recorded with; record with MPIOVER_FORMAT=both to keep the per-rank records"
                .into(),
        );
    }
    Ok(report)
}

/// Computes a report from records in memory (tests, tools). The records must
/// already have passed [`RunCheck`].
pub fn analyze_records(
    dir: &str,
    records: &[Record],
    summary: RunSummary,
    tmax: Option<&dyn TmaxSource>,
    opts: &Options,
) -> Report {
    let (rdv, rdv_source, rdv_detail) = rendezvous_of(opts, tmax, records.first());
    let mut agg = Aggregate::new(opts.detail_sites > 0);
    for (i, r) in records.iter().enumerate() {
        agg.keep_keys(super::level::sampled(i, records.len()));
        agg.add_record(r, tmax, rdv);
    }
    finish(agg, summary, dir, tmax, opts, (rdv, rdv_source, rdv_detail))
}

/// One rank's record folded as `mpiover report` folds it without a profile
/// given, as a part of a merged job log (tests, tools; the job folds its
/// own with [`JobAggregate::of_record_in_job`]).
pub fn job_aggregate_of(rec: &Record) -> JobAggregate {
    JobAggregate::of_record(rec, rendezvous_of(&Options::default(), None, Some(rec)))
}

/// The aggregate of a merged job log, its ranks for the run check and the
/// eager limit it was folded with; None without a merged log.
#[allow(clippy::type_complexity)]
fn read_merged(
    rd: &RunDir,
    tmax: Option<&dyn TmaxSource>,
    opts: &Options,
) -> Result<Option<(Aggregate, Vec<RankInfo>, EagerLimit)>, RunError> {
    let Some(log) = rd.log.as_ref().filter(|l| l.is_merged()) else {
        return Ok(None);
    };
    let Some(payload) = log.merged_payload() else {
        return Ok(None);
    };
    let (reader, at) = payload;
    // The decoder's messages repeat unknown values of the payload back:
    // one line, whatever they hold.
    let bad = |what: String| RunError::BadLog {
        path: log.path.clone(),
        offset: at,
        what: format!(
            "the merged frame: {}",
            mpiover_common::one_line::one_line(&what)
        ),
    };
    let mut ja = JobAggregate::read(reader).map_err(|e| bad(e.to_string()))?;
    let mut held: Vec<u32> = ja.ranks().map(|(r, _)| r).collect();
    held.sort_unstable();
    let mut rows: Vec<u32> = (0..log.len()).map(|i| log.rank(i)).collect();
    rows.sort_unstable();
    if held != rows {
        return Err(bad(format!(
            "holds {} ranks, its index {}",
            held.len(),
            rows.len()
        )));
    }
    let mut infos: Vec<RankInfo> = ja
        .ranks()
        .map(|(rank, finished)| RankInfo {
            path: log.frame_path(rank),
            run_id: log.header.run_id.clone(),
            rank,
            ranks: log.header.ranks,
            finished: finished.to_string(),
            from_log: true,
        })
        .collect();
    infos.sort_by_key(|i| i.rank);
    // Another profile or eager limit than the run's: the sites are evaluated
    // again from the merged keys; the per-rank figures cannot be.
    let again = tmax.is_some() || opts.eager_limit.is_some();
    let measured = tmax.and_then(|t| t.rendezvous_bytes());
    let rdv_again = again.then(|| ja.rendezvous_given(opts.eager_limit, measured));
    if let Some(r) = &rdv_again {
        if !ja.reevaluate(tmax, r.0) {
            return Err(RunError::Invalid {
                path: log.path.clone(),
                what: "this merged job log has no merged keys to evaluate against --profile or \
                       --eager-limit"
                    .into(),
            });
        }
    }
    let (agg, rdv) = ja.into_parts();
    if let Some(r) = row_of_a_rank_not_held(&agg, &held) {
        return Err(bad(format!(
            "has a per-rank row of rank {r}, which the log does not hold"
        )));
    }
    Ok(Some((agg, infos, rdv_again.unwrap_or(rdv))))
}

/// The rank of a site's or region's per-rank row that is not one of the
/// log's ranks (`held`, sorted): the report places those rows by rank (the
/// heat map's columns span the world), so a damaged one must stop here.
fn row_of_a_rank_not_held(agg: &Aggregate, held: &[u32]) -> Option<u32> {
    let sites = agg
        .sites
        .values()
        .flat_map(|s| s.per_rank.iter().map(|r| r.rank));
    let regions = agg
        .regions
        .values()
        .flat_map(|g| g.per_rank.iter().map(|r| r.rank));
    sites
        .chain(regions)
        .find(|r| held.binary_search(r).is_err())
}
