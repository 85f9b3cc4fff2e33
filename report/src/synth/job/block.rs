//! One block of ranks of the synthetic job, as the aggregate their records
//! would fold into: each site's sums, rows, peers and keys, the wait
//! matrix, the regions and the ranks' rows.

use mpiover_aggregate::display_bins::dist_bin;
use mpiover_aggregate::{
    Aggregate, Fx, KeyAcc, PeerAcc, RankAcc, RankSite, RegionAcc, RegionId, RegionRank, SiteAcc,
};
use std::sync::Arc;

use mpiover_aggregate::rank_totals::ProfileRow;
use mpiover_common::histogram::{bucket_index, Bucket, Histogram};
use mpiover_common::profile::Basis;
use mpiover_common::record::Entry;

use super::{unit, Job, Kind, SiteModel};

/// What one rank did at one site.
struct Call {
    calls: u64,
    /// Per call: the call itself, and the wait for another rank.
    own_s: f64,
    wait_s: f64,
    root: bool,
}

impl Call {
    fn time(&self) -> f64 {
        self.calls as f64 * (self.own_s + self.wait_s)
    }
}

fn call(job: &Job, m: &SiteModel, s: u32, rank: u32) -> Call {
    let u = unit(job.seed, u64::from(rank), u64::from(s));
    let own_s = m.base_s * (1.0 + 0.3 * u);
    let jitter = 1e-7 * u;
    let wait_s = match m.kind {
        Kind::FromLeft if job.slow(job.left(rank)) => 50e-6 + jitter,
        Kind::FromLeft => jitter,
        Kind::ToRight => 0.0,
        Kind::Collective if job.slow(rank) => 0.0,
        Kind::Collective => 20e-6 * (0.5 + 0.5 * u),
        Kind::Broadcast if rank == 0 => 0.0,
        Kind::Broadcast => 4e-6 * u,
    };
    Call {
        calls: m.calls,
        own_s,
        wait_s,
        root: m.kind == Kind::Broadcast && rank == 0,
    }
}

/// The aggregate of ranks `lo..hi`.
pub(super) fn block(job: &Job, lo: u32, hi: u32) -> Aggregate {
    let mut agg = Aggregate::new(true);
    let n = (hi - lo) as usize;
    let (mut mpi, mut ovh, mut calls) = (vec![0.0; n], vec![0.0; n], vec![0u64; n]);
    for (s, m) in job.sites.iter().enumerate() {
        let mut acc = SiteAcc::new(lo, &m.site);
        // One row per rank: sized once rather than grown.
        acc.per_rank.reserve(n);
        if m.kind != Kind::Collective && m.kind != Kind::Broadcast {
            acc.peers.reserve(n);
            acc.pairs.reserve(n);
            acc.pair_waits.reserve(n);
            acc.waited_for.reserve(n);
            agg.wait.reserve(n);
        }
        let mut keys: [Option<KeyAcc>; 2] = [None, None];
        for rank in lo..hi {
            let c = call(job, m, s as u32, rank);
            let i = (rank - lo) as usize;
            let o = site_row(&mut acc, &mut agg, job, m, rank, &c);
            key_row(&mut keys[usize::from(c.root)], m, job.ranks, rank, &c, o);
            // Every call had a tmax (recorded against a profile).
            agg.lookups.entries += 1;
            agg.lookups.calls += c.calls;
            mpi[i] += c.time();
            ovh[i] += o;
            calls[i] += c.calls;
        }
        for (role, k) in keys.into_iter().enumerate() {
            if let Some(k) = k {
                let role = (m.kind == Kind::Broadcast)
                    .then(|| if role == 1 { "root" } else { "nonroot" }.to_string());
                let completes = m.posted_at.as_ref().map(|_| "MPI_Irecv".to_string());
                let id = (
                    m.key.clone(),
                    m.function.to_string(),
                    job.ranks,
                    m.bytes,
                    role,
                    completes,
                    None,
                );
                agg.keys.insert(id, k);
            }
        }
        // What the site's requests were posted at, once per site rather
        // than per rank (every rank's calls complete the same post).
        if let Some(at) = &m.posted_at {
            acc.completes.insert("MPI_Irecv".into());
            acc.posted_at.insert(at.clone(), acc.calls);
        }
        agg.sites.insert(m.key.clone(), acc);
        add_region(&mut agg, job, s, lo, hi);
    }
    let meta = Meta::new(lo, hi);
    for rank in lo..hi {
        let i = (rank - lo) as usize;
        agg.ranks
            .push(rank_row(job, rank, mpi[i], ovh[i], calls[i], &meta));
    }
    agg
}

/// One rank's call at a site into the site's sums; its overhead.
fn site_row(
    acc: &mut SiteAcc,
    agg: &mut Aggregate,
    job: &Job,
    m: &SiteModel,
    rank: u32,
    c: &Call,
) -> f64 {
    let per_call = c.own_s + c.wait_s;
    // A tenth of the calls are over tmax by chance; a call that waited is.
    let over = if c.wait_s > 0.2 * m.base_s { 1.0 } else { 0.1 };
    let overhead = c.calls as f64 * ((per_call - m.tmax_s).max(0.0) + 0.01 * m.base_s);
    let time = c.time();
    acc.calls += c.calls;
    acc.time.add(time);
    acc.bytes += u128::from(m.bytes) * u128::from(c.calls);
    acc.min = acc.min.min(c.own_s * 0.8);
    acc.max = acc.max.max(per_call * 1.5);
    acc.overhead.add(overhead);
    acc.tmax_sum.add(m.tmax_s * c.calls as f64);
    acc.calls_over.add(over * c.calls as f64);
    acc.calls_with_tmax += c.calls;
    acc.tmax_min = acc.tmax_min.min(m.tmax_s);
    acc.tmax_max = acc.tmax_max.max(m.tmax_s);
    acc.basis = Some(Basis::new(1000, false));
    let state = if c.root { None } else { m.state };
    acc.states.entry(state).or_default().add(overhead);
    if let Some(d) = acc.dist.get_mut(dist_bin(per_call)) {
        *d += c.calls;
    }
    let peer = match m.kind {
        Kind::FromLeft => Some(job.left(rank)),
        Kind::ToRight => Some(job.right(rank)),
        _ => None,
    };
    if let Some(peer) = peer {
        let mut pa = PeerAcc::default();
        pa.time.add(time);
        pa.calls = c.calls;
        if m.kind == Kind::FromLeft {
            pa.overhead.add(overhead);
            acc.add_pair_wait(rank, peer, overhead, time, c.calls);
            if let Some(at) = &m.posted_at {
                // Each peer is waited for by its right neighbour only.
                acc.waited_for.insert((peer, Some(at.clone())), {
                    let mut o = Fx::default();
                    o.add(overhead);
                    o
                });
            }
        }
        acc.peers.entry(peer).or_default().merge(&pa);
        agg.wait.entry((rank, peer)).or_default().merge(&pa);
        if m.posted_at.is_none() {
            *acc.pairs.entry((rank, peer)).or_default() += c.calls as u32;
        }
    }
    acc.per_rank.push(RankSite {
        rank,
        calls: c.calls,
        time,
        overhead: Some(overhead),
        root: c.root,
    });
    overhead
}

/// One rank's call into its key's merged entry (the job's histogram).
fn key_row(k: &mut Option<KeyAcc>, m: &SiteModel, p: u32, rank: u32, c: &Call, overhead: f64) {
    let ns = ((c.own_s + c.wait_s) * 1e9) as u64;
    let idx = bucket_index(ns) as u32;
    let hist = || Histogram {
        buckets: vec![Bucket(idx, c.calls, ns * c.calls)],
    };
    match k {
        Some(k) => {
            let e = &mut k.entry;
            e.count += c.calls;
            e.sum_s += c.time();
            e.min_s = e.min_s.min(c.own_s);
            e.max_s = e.max_s.max(c.own_s + c.wait_s);
            e.overhead_s = Some(e.overhead_s.unwrap_or(0.0) + overhead);
            let b = &mut e.hist.buckets;
            match b.binary_search_by_key(&idx, |b| b.0) {
                Ok(i) => {
                    b[i].1 += c.calls;
                    b[i].2 = b[i].2.saturating_add(ns * c.calls);
                }
                Err(i) => b.insert(i, Bucket(idx, c.calls, ns * c.calls)),
            }
            k.entries += 1;
        }
        None => {
            *k = Some(KeyAcc {
                rank,
                unit_s: 1e-9,
                entries: 1,
                entry: Entry {
                    site: 0,
                    function: m.function.into(),
                    p,
                    bytes: m.bytes,
                    peer: None,
                    cross_host: None,
                    role: (m.kind == Kind::Broadcast)
                        .then(|| if c.root { "root" } else { "nonroot" }.into()),
                    completes: m.posted_at.as_ref().map(|_| "MPI_Irecv".into()),
                    post_site: None,
                    requests: None,
                    completed_at: None,
                    count: c.calls,
                    sum_s: c.time(),
                    min_s: c.own_s,
                    max_s: c.own_s + c.wait_s,
                    tmax_s: Some(m.tmax_s),
                    overhead_s: Some(overhead),
                    tmax_out_of_range: false,
                    tmax_basis: Some(Basis::new(1000, false)),
                    tmax_composed: None,
                    tmax_missing: None,
                    hist: hist(),
                },
            })
        }
    }
}

/// The code between site `s` and the next one: a pass per call of the
/// next, slower on a slow rank.
fn add_region(agg: &mut Aggregate, job: &Job, s: usize, lo: u32, hi: u32) {
    let (from, to) = (&job.sites[s], &job.sites[(s + 1) % job.sites.len()]);
    let work_s = 20e-6 * (1.0 + (s % 7) as f64);
    let mut acc = RegionAcc {
        shown_by: lo,
        from: from.site.clone(),
        to: to.site.clone(),
        count: 0,
        time: Fx::default(),
        per_rank: Vec::with_capacity((hi - lo) as usize),
        spread: None,
    };
    for rank in lo..hi {
        let speed = 1.0
            + 0.04 * unit(job.seed, u64::from(rank), 1 << 40)
            + if job.slow(rank) { 0.5 } else { 0.0 };
        let time = to.calls as f64 * work_s * speed;
        acc.count += to.calls;
        acc.time.add(time);
        acc.per_rank.push(RegionRank {
            rank,
            count: to.calls,
            time,
        });
    }
    let id = RegionId {
        from: from.key.clone(),
        to: to.key.clone(),
    };
    agg.regions.insert(id, acc);
}

fn rank_row(job: &Job, rank: u32, mpi: f64, overhead: f64, calls: u64, meta: &Meta) -> RankAcc {
    let app = 100.0 + unit(job.seed, u64::from(rank), 1 << 41);
    RankAcc {
        rank,
        host: meta.host(rank),
        app_time: app,
        mpi_time: mpi,
        startup: 0.0,
        shutdown: 0.0,
        event_time: mpi,
        overhead: Some(overhead),
        calls,
        cost_per_call: 4e-8,
        merge_s: None,
        py_cost: None,
        py_calls: 0,
        finished: meta.finished.clone(),
        command: meta.command.clone(),
        mpi_library: meta.library.clone(),
        thread_level: meta.thread_level.clone(),
        start: 1_767_225_600.0,
        end: 1_767_225_600.0 + app,
        timer_name: meta.timer.clone(),
        timer_resolution: 1e-9,
        timer_cost: 2.7e-8,
        depth: 1,
        profile: Some(meta.profile.clone()),
        warnings: meta.warnings.clone(),
    }
}

/// What the ranks' rows share (one copy each, as a log's reader makes).
pub(super) struct Meta {
    hosts: Vec<Arc<str>>,
    lo: u32,
    finished: Arc<str>,
    command: Arc<[String]>,
    library: Arc<str>,
    thread_level: Arc<str>,
    timer: Arc<str>,
    profile: Arc<ProfileRow>,
    warnings: Arc<[String]>,
}

impl Meta {
    /// For ranks `lo..hi`, 32 per host.
    fn new(lo: u32, hi: u32) -> Meta {
        let hosts = (lo / 32..hi.div_ceil(32))
            .map(|h| format!("node{h:05}").into())
            .collect();
        Meta {
            hosts,
            lo,
            finished: "finalize".into(),
            command: vec!["./app".into(), "-n".into(), "100".into()].into(),
            library: "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4".into(),
            thread_level: "single".into(),
            timer: "rdtsc".into(),
            profile: Arc::new(("/profiles/scale.json".into(), true, Some(0.9), None)),
            warnings: Vec::new().into(),
        }
    }

    fn host(&self, rank: u32) -> Arc<str> {
        self.hosts[(rank / 32 - self.lo / 32) as usize].clone()
    }
}
