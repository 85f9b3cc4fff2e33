//! A synthetic job of any size, made directly as the merged job log's
//! aggregate (`gen_records --log`): a million ranks in a minute or two,
//! where folding a record per rank would take an hour.
//!
//! The job is the scale benchmark's ring (`scale_record`): sites of mixed
//! kinds (receives and waits on the left neighbour, sends to the right one,
//! allreduces, broadcasts from rank 0, barriers), a few hundred calls each.
//! What makes it worth reporting is its imbalance: one rank in 4,096 (and
//! rank 7) computes half as fast again as the others, so its right
//! neighbour waits for it at every receive (Late Sender), and every other
//! rank waits for the slow ones at the collectives (Wait at NxN); every
//! rank's time varies by a few per cent around its site's base time.
//! The code between two consecutive sites is a region, whose time per
//! pass grows with the rank's slowness: the root cause of the waits.
//!
//! Ranks are built in blocks, each block's aggregate bounded and merged
//! into the job's with [`JobAggregate::merge`], the operation the ranks of
//! a job apply up their tree, so that the log holds what a job's merge
//! would write, in bounded memory.

mod block;

use mpiover_aggregate::{JobAggregate, RendezvousSource, SiteKey, Thresholds};
use mpiover_common::functions::WaitState;
use mpiover_common::record::Site;

use super::site;

/// Ranks per block built at once.
const BLOCK: u32 = 8192;

/// What every rank does at one site.
pub(crate) struct SiteModel {
    pub(crate) site: Site,
    pub(crate) key: SiteKey,
    pub(crate) function: &'static str,
    pub(crate) kind: Kind,
    pub(crate) bytes: u64,
    pub(crate) calls: u64,
    pub(crate) base_s: f64,
    pub(crate) tmax_s: f64,
    /// The wait state of its waits (that of its non-root ranks).
    pub(crate) state: Option<WaitState>,
    /// The line that posted the requests it completes.
    pub(crate) posted_at: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    /// Waits for its left neighbour's message.
    FromLeft,
    /// Sends to its right neighbour (eager: never waits).
    ToRight,
    /// All ranks wait for the slowest.
    Collective,
    /// Rank 0 sends to all.
    Broadcast,
}

/// splitmix64: a deterministic hash of the job's seed, a rank and a site.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A number in [0, 1) drawn for (seed, a, b).
pub(crate) fn unit(seed: u64, a: u64, b: u64) -> f64 {
    (mix(seed ^ mix(a ^ mix(b))) >> 11) as f64 / (1u64 << 53) as f64
}

/// The job: its size and the sites every rank calls.
pub struct Job {
    pub(crate) ranks: u32,
    pub(crate) seed: u64,
    pub(crate) sites: Vec<SiteModel>,
}

impl Job {
    pub fn new(ranks: u32, nsites: u32, seed: u64) -> Job {
        let sites = (0..nsites)
            .map(|s| {
                let file = format!("/home/user/app/src/module{:02}.c", s / 20);
                let line = 100 + 7 * s;
                let site = site(s, &file, line, &format!("kernel_{}", s / 4));
                let h = mix(seed ^ u64::from(s));
                let bytes = 8u64 << (h % 14);
                let base_s = 2e-6 + bytes as f64 * 1e-10;
                let (function, kind, completes) = match s % 10 {
                    0..=2 => ("MPI_Recv", Kind::FromLeft, None),
                    3 => ("MPI_Send", Kind::ToRight, None),
                    4 | 5 => ("MPI_Wait", Kind::FromLeft, Some("MPI_Irecv")),
                    6 | 7 => ("MPI_Allreduce", Kind::Collective, None),
                    8 => ("MPI_Bcast", Kind::Broadcast, None),
                    _ => ("MPI_Barrier", Kind::Collective, None),
                };
                let state = mpiover_aggregate::entry_wait_state(
                    function,
                    bytes,
                    (kind == Kind::Broadcast).then_some("nonroot"),
                    completes,
                    None,
                    mpiover_aggregate::DEFAULT_RENDEZVOUS_BYTES,
                );
                SiteModel {
                    key: SiteKey::of_call(&site, function),
                    posted_at: completes.map(|_| format!("{file}:{}", line - 3)),
                    site,
                    function,
                    kind,
                    bytes,
                    calls: 200 + (h >> 20) % 1800,
                    base_s,
                    // The 0.9 quantile of base + Exp(0.3 base), as the
                    // record fixtures' profile says.
                    tmax_s: base_s * (1.0 + 0.3 * 10f64.ln()),
                    state,
                }
            })
            .collect();
        Job { ranks, seed, sites }
    }

    /// A slow rank: rank 7 and about one in 4,096.
    pub(crate) fn slow(&self, rank: u32) -> bool {
        rank == 7 % self.ranks || mix(self.seed ^ 0x51_0e ^ u64::from(rank)).is_multiple_of(4096)
    }

    pub(crate) fn left(&self, rank: u32) -> u32 {
        (rank + self.ranks - 1) % self.ranks
    }

    pub(crate) fn right(&self, rank: u32) -> u32 {
        (rank + 1) % self.ranks
    }
}

/// The merged aggregate of a synthetic job of `ranks` ranks and `sites`
/// sites, built with `threads` threads.
pub fn scale_job(ranks: u32, sites: u32, seed: u64, threads: u32) -> JobAggregate {
    let job = Job::new(ranks.max(1), sites, seed);
    let blocks = job.ranks.div_ceil(BLOCK);
    let threads = threads.clamp(1, blocks);
    let parts: Vec<JobAggregate> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|t| {
                let job = &job;
                s.spawn(move || {
                    let mut part: Option<JobAggregate> = None;
                    let mut b = t;
                    while b < blocks {
                        let lo = b * BLOCK;
                        let one = job_part(job, lo, (lo + BLOCK).min(job.ranks));
                        match part.as_mut() {
                            Some(p) => p.merge(one),
                            None => part = Some(one),
                        }
                        b += threads;
                    }
                    part
                })
            })
            .collect();
        hs.into_iter()
            .filter_map(|h| h.join().unwrap_or(None))
            .collect()
    });
    parts
        .into_iter()
        .reduce(|mut a, b| {
            a.merge(b);
            a
        })
        .unwrap_or_else(|| job_part(&job, 0, 0))
}

impl Job {
    /// The ranks `lo..hi` as a part of the job, bounded (one rank: the
    /// part that rank folds at `MPI_Finalize`).
    pub fn part(&self, lo: u32, hi: u32) -> JobAggregate {
        job_part(self, lo, hi)
    }
}

/// The synthetic job of [`scale_job`] as the merged job log
/// (`job.mpiover-log`) in `dir`, as its rank 0 would write it; the bytes
/// written.
pub fn write_scale_log(
    dir: &std::path::Path,
    ranks: u32,
    sites: u32,
    seed: u64,
    threads: u32,
) -> std::io::Result<u64> {
    use mpiover_common::run::joblog::{LogHeader, LogWriter, LOG_FILE_NAME, MERGED_LOG_SCHEMA};
    let job = scale_job(ranks, sites, seed, threads);
    let payload = job.encode().map_err(std::io::Error::other)?;
    let mut held: Vec<u32> = job.ranks().map(|(r, _)| r).collect();
    held.sort_unstable();
    drop(job);
    std::fs::create_dir_all(dir)?;
    let path = dir.join(LOG_FILE_NAME);
    let header = LogHeader {
        schema: MERGED_LOG_SCHEMA.into(),
        run_id: format!("scale-{seed}"),
        ranks,
        writer: "gen_records".into(),
    };
    let f = std::fs::File::create(&path)?;
    let mut w = LogWriter::new(std::io::BufWriter::new(f), &header)?;
    w.merged(&held, &payload)?;
    w.finish()?;
    Ok(std::fs::metadata(&path)?.len())
}

/// The ranks `lo..hi` as a part of the job, bounded.
fn job_part(job: &Job, lo: u32, hi: u32) -> JobAggregate {
    let agg = block::block(job, lo, hi);
    let rdv = (
        Thresholds::uniform(mpiover_aggregate::DEFAULT_RENDEZVOUS_BYTES),
        RendezvousSource::Default,
        "default: no profile measured it and the library does not state it".to_string(),
    );
    JobAggregate::from_parts(agg, job.ranks, lo, rdv)
}
