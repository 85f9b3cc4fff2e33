//! From a run directory to a finished [`Report`].
//!
//! Records are parsed in parallel (one worker per core) and folded at once into
//! per-worker aggregates, then dropped: memory holds one record per worker plus
//! the aggregates (per site: totals, a display histogram and one small row per
//! rank), whatever the number of ranks.
//!
//! **Site identity.** A report site is (location, enclosing function, MPI
//! function), where the location is `file:line` when the address was resolved,
//! else module + offset from the load bias (stable under ASLR), else the raw
//! address. Entries of all ranks with the same identity are one site, whatever
//! their p, bytes, peer or address.
//!
//! **Determinism.** Sums of seconds are accumulated in fixed point (1e-15 s
//! units, i128), which is exact and independent of the order in which workers
//! fold records, so the output does not depend on scheduling.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use mpiover_common::completion::{KeyRef, Requests};
use mpiover_common::functions::{class_of, wait_state, EventClass, WaitState};
use mpiover_common::histogram::bucket_bounds;
use mpiover_common::profile::{Basis, MpiTValue};
use mpiover_common::record::{Entry, Record, Site};
use mpiover_common::run::{parse_record, RankInfo, RunCheck, RunDir, RunError, RunSummary};

use crate::model::*;
use crate::signif;
use crate::tmax::{Tmax, TmaxSource};

/// Last-resort threshold of the rendezvous protocol, when neither the
/// option, nor the profile (which measures it), nor the library (`MPI_T`,
/// recorded by the interposer) says: Open MPI's TCP BTL and MPICH's nemesis
/// network modules switch at 64 KiB.
pub const DEFAULT_RENDEZVOUS_BYTES: u64 = 64 * 1024;

/// Default of [`Options::min_share`]: 0.1 % of the MPI time.
pub const DEFAULT_MIN_SHARE: f64 = 0.001;

/// How a report is computed.
#[derive(Debug, Clone)]
pub struct Options {
    /// False discovery rate of the significance test.
    pub alpha: f64,
    /// Smallest overhead, as a share of the run's MPI time (all ranks), with
    /// which a statistically significant site is flagged; below it the site
    /// is "negligible". With thousands of calls the test detects shifts of a
    /// few nanoseconds per call between calibration and run (another cache
    /// state, another clock frequency): real, and not worth anyone's time.
    pub min_share: f64,
    /// Sends of at least this many bytes are rendezvous sends.
    pub eager_limit: Option<u64>,
    /// Worker threads for parsing (0: one per core).
    pub threads: usize,
    /// Sites that get HTML details (distribution, heat map row, source).
    pub detail_sites: usize,
    /// Read source files around the detailed sites.
    pub read_sources: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            alpha: 0.05,
            min_share: DEFAULT_MIN_SHARE,
            eager_limit: None,
            threads: 0,
            detail_sites: 20,
            read_sources: false,
        }
    }
}

/// The multiply-rotate hash of rustc (FxHash): several times faster than
/// the default SipHash on the short keys folded per record entry, where the
/// hashing was a visible share of the report's time on thousands of ranks.
/// No protection against adversarial keys is needed here, and nothing depends
/// on the iteration order of these maps (the results are sorted).
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl Hasher for FxHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// Order-independent exact sum of seconds (1e-15 s units).
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct Fx(i128);

const FX_SCALE: f64 = 1e15;

impl Fx {
    fn add(&mut self, x: f64) {
        self.0 += (x * FX_SCALE).round() as i128;
    }
    fn merge(&mut self, o: Fx) {
        self.0 += o.0;
    }
    fn get(self) -> f64 {
        self.0 as f64 / FX_SCALE
    }
}

/// Where a site is, as far as it was resolved.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Loc {
    Line(String, u32),
    File(String),
    Module(String, String),
    Address(String),
    Folded,
}

impl Loc {
    fn of(site: &Site, function: &str) -> Loc {
        if function == "other" {
            return Loc::Folded;
        }
        match (&site.file, site.line, &site.module, &site.offset) {
            (Some(f), Some(l), _, _) => Loc::Line(f.clone(), l),
            (Some(f), None, _, _) => Loc::File(f.clone()),
            (None, _, Some(m), Some(o)) => Loc::Module(m.clone(), o.clone()),
            _ => Loc::Address(site.address.clone()),
        }
    }

    fn display(&self) -> String {
        match self {
            Loc::Line(f, l) => format!("{f}:{l}"),
            Loc::File(f) => f.clone(),
            Loc::Module(m, o) => {
                let base = m.rsplit('/').next().unwrap_or(m);
                format!("{base}+{o}")
            }
            Loc::Address(a) => a.clone(),
            Loc::Folded => "(folded keys)".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct SiteKey {
    loc: Loc,
    function: Option<String>,
    mpi: String,
}

/// Log-spaced display bins: 20 per decade from 1 ns to 10^4 s.
const DIST_LO: f64 = 1e-9;
const DIST_PER_DECADE: f64 = 20.0;
const DIST_BINS: usize = 13 * 20;

fn dist_bin(t: f64) -> usize {
    if t <= DIST_LO {
        return 0;
    }
    (((t / DIST_LO).log10() * DIST_PER_DECADE) as usize).min(DIST_BINS - 1)
}

fn dist_edge(i: usize) -> f64 {
    DIST_LO * 10f64.powf(i as f64 / DIST_PER_DECADE)
}

/// One rank's figures at one site.
#[derive(Debug, Clone, Copy)]
struct RankSite {
    rank: u32,
    calls: u64,
    time: f64,
    /// Overhead of the calls that had a tmax; `None` when none had.
    overhead: Option<f64>,
    root: bool,
}

#[derive(Debug, Default, Clone)]
struct PeerAcc {
    overhead: Fx,
    time: Fx,
    calls: u64,
}

#[derive(Debug, Clone)]
struct SiteAcc {
    /// Lowest rank that contributed, and the site as that rank resolved it.
    shown_by: u32,
    site: Site,
    calls: u64,
    time: Fx,
    bytes: u128,
    min: f64,
    max: f64,
    overhead: Fx,
    tmax_sum: Fx,
    calls_over: Fx,
    calls_with_tmax: u64,
    out_of_range_calls: u64,
    tmax_min: f64,
    tmax_max: f64,
    /// How the least certain tmax of the site was estimated, when known.
    basis: Option<Basis>,
    /// Overhead per wait state (`None`: overhead that indicates no wait state).
    states: BTreeMap<Option<&'static str>, Fx>,
    peers: HashMap<u32, PeerAcc>,
    per_rank: Vec<RankSite>,
    dist: Vec<u64>,
    completes: BTreeSet<String>,
    posted_at: BTreeMap<String, u64>,
    /// Posts: where their requests were completed (calls).
    completed_at: BTreeMap<String, u64>,
    /// Calls whose tmax was composed, per rule; calls without a tmax, per reason.
    composed: BTreeMap<&'static str, u64>,
    missing: BTreeMap<String, u64>,
    /// Completions that waited on requests to or from several peers: whom
    /// they waited for is decided once every rank is in (`charge_multi`).
    multi: Vec<MultiWait>,
    /// (late peer, posting line) -> overhead charged.
    waited_for: HashMap<(u32, Option<String>), Fx>,
}

/// One rank's waiting at a completion site whose requests went to or came
/// from several peers.
#[derive(Debug, Clone)]
struct MultiWait {
    rank: u32,
    overhead: f64,
    time: f64,
    calls: u64,
    /// The peers it may have waited for, with the line that posted each
    /// one's request.
    candidates: Vec<(u32, Option<String>)>,
}

impl SiteAcc {
    fn new(rank: u32, site: &Site) -> SiteAcc {
        SiteAcc {
            shown_by: rank,
            site: site.clone(),
            calls: 0,
            time: Fx::default(),
            bytes: 0,
            min: f64::INFINITY,
            max: 0.0,
            overhead: Fx::default(),
            tmax_sum: Fx::default(),
            calls_over: Fx::default(),
            calls_with_tmax: 0,
            out_of_range_calls: 0,
            tmax_min: f64::INFINITY,
            tmax_max: 0.0,
            basis: None,
            states: BTreeMap::new(),
            peers: HashMap::default(),
            per_rank: Vec::new(),
            dist: vec![0; DIST_BINS],
            completes: BTreeSet::new(),
            posted_at: BTreeMap::new(),
            completed_at: BTreeMap::new(),
            composed: BTreeMap::new(),
            missing: BTreeMap::new(),
            multi: Vec::new(),
            waited_for: HashMap::default(),
        }
    }

    fn merge(&mut self, o: SiteAcc) {
        if o.shown_by < self.shown_by {
            self.shown_by = o.shown_by;
            self.site = o.site;
        }
        self.calls += o.calls;
        self.time.merge(o.time);
        self.bytes += o.bytes;
        self.min = self.min.min(o.min);
        self.max = self.max.max(o.max);
        self.overhead.merge(o.overhead);
        self.tmax_sum.merge(o.tmax_sum);
        self.calls_over.merge(o.calls_over);
        self.calls_with_tmax += o.calls_with_tmax;
        self.out_of_range_calls += o.out_of_range_calls;
        self.tmax_min = self.tmax_min.min(o.tmax_min);
        self.tmax_max = self.tmax_max.max(o.tmax_max);
        self.basis = weaker(self.basis, o.basis);
        for (k, v) in o.states {
            self.states.entry(k).or_default().merge(v);
        }
        for (k, v) in o.peers {
            let p = self.peers.entry(k).or_default();
            p.overhead.merge(v.overhead);
            p.time.merge(v.time);
            p.calls += v.calls;
        }
        self.per_rank.extend(o.per_rank);
        for (a, b) in self.dist.iter_mut().zip(o.dist) {
            *a += b;
        }
        self.completes.extend(o.completes);
        for (k, v) in o.posted_at {
            *self.posted_at.entry(k).or_default() += v;
        }
        for (k, v) in o.completed_at {
            *self.completed_at.entry(k).or_default() += v;
        }
        for (k, v) in o.composed {
            *self.composed.entry(k).or_default() += v;
        }
        for (k, v) in o.missing {
            *self.missing.entry(k).or_default() += v;
        }
        self.multi.extend(o.multi);
        for (k, v) in o.waited_for {
            self.waited_for.entry(k).or_default().merge(v);
        }
    }
}

#[derive(Debug, Clone)]
struct RankAcc {
    rank: u32,
    host: String,
    app_time: f64,
    /// Without start-up and shut-down.
    mpi_time: f64,
    startup: f64,
    shutdown: f64,
    event_time: f64,
    overhead: Option<f64>,
    calls: u64,
    cost_per_call: f64,
    finished: String,
    command: Vec<String>,
    mpi_library: String,
    thread_level: String,
    start: f64,
    end: f64,
    timer_name: String,
    timer_resolution: f64,
    timer_cost: f64,
    depth: u32,
    profile: Option<(String, bool, Option<f64>, Option<String>)>,
    warnings: Vec<String>,
}

/// What one worker folds its records into.
#[derive(Debug, Default)]
struct Agg {
    sites: HashMap<SiteKey, SiteAcc>,
    ranks: Vec<RankAcc>,
    /// (waiter, peer) -> overhead, time, calls.
    wait: HashMap<(u32, u32), PeerAcc>,
    lookups: Lookups,
    folded_keys: u64,
    folded_calls: u64,
    /// Fill the display histograms (only the HTML export shows them).
    want_dist: bool,
    /// Display bin of each histogram bucket for the timer unit `bin_unit`
    /// (`u16::MAX`: not computed yet): saves a logarithm per bucket.
    bin_cache: Vec<u16>,
    bin_unit: f64,
    scratch: Vec<(usize, u64)>,
}

impl Agg {
    fn new(want_dist: bool) -> Agg {
        Agg {
            want_dist,
            ..Agg::default()
        }
    }

    /// Display bin of a histogram bucket (its midpoint) for timer unit `unit`.
    fn bucket_bin(&mut self, index: usize, unit: f64) -> usize {
        if self.bin_unit != unit || self.bin_cache.is_empty() {
            self.bin_cache.clear();
            self.bin_cache
                .resize(mpiover_common::histogram::MAX_INDEX, u16::MAX);
            self.bin_unit = unit;
        }
        let c = &mut self.bin_cache[index];
        if *c == u16::MAX {
            let (lo, hi) = bucket_bounds(index);
            *c = dist_bin((lo as f64 + hi as f64) / 2.0 * unit) as u16;
        }
        *c as usize
    }
}

/// Wait state that overhead in one aggregation key indicates.
/// `requests` is what one call of a completion completed (records since
/// completions carry it): a completion of requests of several kinds waits
/// for a late sender when any of them is a receive, for a late receiver when
/// they are sends of rendezvous size.
pub fn entry_wait_state(
    function: &str,
    bytes: u64,
    role: Option<&str>,
    completes: Option<&str>,
    requests: Option<Requests>,
    rendezvous_bytes: u64,
) -> Option<&'static str> {
    let class = class_of(function)?;
    match class {
        EventClass::Send => wait_state(class, is_rendezvous(function, bytes, rendezvous_bytes))
            .map(WaitState::as_str),
        EventClass::CollectiveOneToN if role == Some("root") => None,
        EventClass::CollectiveNToOne if role == Some("nonroot") => None,
        EventClass::Completion => {
            let per_request = |r: &Requests| bytes / u64::from(r.n.max(1));
            let c = match (completes, requests) {
                (Some(c), Some(r)) if r.n > 1 => {
                    // Several requests of one kind: the message size decides.
                    return entry_wait_state(
                        function,
                        per_request(&r),
                        role,
                        Some(c),
                        None,
                        rendezvous_bytes,
                    );
                }
                (Some(c), _) => c,
                (None, Some(r)) if r.recv > 0 => return Some("Late Sender"),
                (None, Some(r)) if r.send > 0 => {
                    return entry_wait_state(
                        "MPI_Send",
                        per_request(&r),
                        role,
                        None,
                        None,
                        rendezvous_bytes,
                    )
                }
                (None, _) => return None,
            };
            match c {
                "MPI_Irecv" | "MPI_Imrecv" | "MPI_Recv_init" => Some("Late Sender"),
                "MPI_Isend" | "MPI_Send_init" => {
                    entry_wait_state("MPI_Send", bytes, role, None, None, rendezvous_bytes)
                }
                "MPI_Irsend" | "MPI_Rsend_init" => {
                    entry_wait_state("MPI_Rsend", bytes, role, None, None, rendezvous_bytes)
                }
                "MPI_Issend" | "MPI_Ssend_init" => Some("Late Receiver"),
                "MPI_Ibsend" | "MPI_Bsend_init" => None,
                _ if c.starts_with("MPI_I") && class_of(c) == Some(EventClass::Post) => {
                    // A non-blocking collective: the wait state of its blocking twin.
                    let rest = &c[5..];
                    let blocking = format!("MPI_{}{}", rest[..1].to_ascii_uppercase(), &rest[1..]);
                    match class_of(&blocking) {
                        Some(EventClass::Send | EventClass::Recv | EventClass::Completion)
                        | None => None,
                        Some(_) => {
                            entry_wait_state(&blocking, bytes, role, None, None, rendezvous_bytes)
                        }
                    }
                }
                _ => None,
            }
        }
        other => wait_state(other, false).map(WaitState::as_str),
    }
}

/// Whether a blocking send of this size waits for its receiver.
pub fn is_rendezvous(function: &str, bytes: u64, rendezvous_bytes: u64) -> bool {
    match function {
        "MPI_Ssend" => true,
        "MPI_Bsend" => false,
        _ => bytes >= rendezvous_bytes,
    }
}

fn is_p2p(class: Option<EventClass>) -> bool {
    matches!(
        class,
        Some(
            EventClass::Send
                | EventClass::Recv
                | EventClass::SendRecv
                | EventClass::Probe
                | EventClass::Completion
        )
    )
}

/// The less certain of two known bases (unknown ones do not count).
fn weaker(a: Option<Basis>, b: Option<Basis>) -> Option<Basis> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.weaker(y)),
        (x, y) => x.or(y),
    }
}

/// The figures of one entry once tmax is known.
struct EntryEval {
    tmax: Option<Tmax>,
    overhead: f64,
    calls_over: f64,
    /// Why there is no tmax although a profile was used.
    missing: Option<String>,
}

fn evaluate(e: &Entry, unit_s: f64, tmax: Option<&dyn TmaxSource>) -> EntryEval {
    let none = EntryEval {
        tmax: None,
        overhead: 0.0,
        calls_over: 0.0,
        missing: None,
    };
    if e.function == "other" {
        return none;
    }
    match tmax {
        Some(src) => match src.tmax(&KeyRef {
            function: &e.function,
            p: e.p,
            bytes: e.bytes,
            role: e.role.as_deref(),
            completes: e.completes.as_deref(),
            requests: e.requests,
        }) {
            Ok(t) if t.s.is_finite() && t.s >= 0.0 => {
                let ex = e.hist.excess(unit_s, t.s);
                EntryEval {
                    tmax: Some(t),
                    overhead: ex.overhead_s,
                    calls_over: ex.calls_over,
                    missing: None,
                }
            }
            Ok(_) => EntryEval {
                missing: Some("the profile's tmax is not a number".into()),
                ..none
            },
            Err(m) => EntryEval {
                missing: Some(m.to_string()),
                ..none
            },
        },
        None => match e.tmax_s {
            Some(t) if t.is_finite() && t >= 0.0 => {
                let ex = e.hist.excess(unit_s, t);
                EntryEval {
                    tmax: Some(Tmax {
                        s: t,
                        out_of_range: e.tmax_out_of_range,
                        basis: e.tmax_basis,
                        composed: composed_rule(e.tmax_composed.as_deref()),
                    }),
                    overhead: e
                        .overhead_s
                        .filter(|o| o.is_finite())
                        .unwrap_or(ex.overhead_s),
                    calls_over: ex.calls_over,
                    missing: None,
                }
            }
            _ => EntryEval {
                missing: e.tmax_missing.clone(),
                ..none
            },
        },
    }
}

/// A composition rule named in a record, as the catalogue's own string
/// (the report keeps one copy of each rule's wording).
fn composed_rule(r: Option<&str>) -> Option<&'static str> {
    let r = r?;
    Some(
        mpiover_common::completion::RULES
            .iter()
            .copied()
            .find(|k| *k == r)
            .unwrap_or("composed from other measurements"),
    )
}

/// An `inlined_into` item, `function (file:line)`, with its function
/// demangled.
fn demangle_inlined(item: &str) -> String {
    let (f, rest) = match item.find(" (") {
        Some(i) => item.split_at(i),
        None => (item, ""),
    };
    format!("{}{rest}", mpiover_common::demangle::demangle(f))
}

/// Whether a post's requests are receives.
fn is_receive_post(function: &str) -> bool {
    matches!(function, "MPI_Irecv" | "MPI_Imrecv" | "MPI_Recv_init")
}

impl Agg {
    fn add_record(&mut self, rec: &Record, tmax: Option<&dyn TmaxSource>, rendezvous_bytes: u64) {
        let unit = rec.timer.unit_s;
        let site_of = |id: u32| -> &Site {
            match rec.sites.get(id as usize) {
                Some(s) if s.id == id => s,
                _ => rec
                    .sites
                    .iter()
                    .find(|s| s.id == id)
                    .expect("checked by check_record"),
            }
        };
        let mut event_time = 0.0;
        let mut rank_overhead: Option<f64> = None;
        // Completion site -> the point-to-point requests completed there:
        // (peer, posting line, whether a receive).
        let mut posts_done: HashMap<u32, Vec<(u32, String, bool)>> = HashMap::default();
        for e in &rec.entries {
            if let (Some(done), Some(peer)) = (e.completed_at, e.peer.filter(|&p| p >= 0)) {
                if class_of(&e.function) == Some(EventClass::Post) {
                    let at = Loc::of(site_of(e.site), &e.function).display();
                    let v = posts_done.entry(done).or_default();
                    let item = (peer as u32, at, is_receive_post(&e.function));
                    if !v.contains(&item) {
                        v.push(item);
                    }
                }
            }
        }
        for e in &rec.entries {
            let site = site_of(e.site);
            let key = SiteKey {
                loc: Loc::of(site, &e.function),
                function: if e.function == "other" {
                    None
                } else {
                    // Records written before names were demangled.
                    site.function
                        .as_deref()
                        .map(|f| mpiover_common::demangle::demangle(f).into_owned())
                },
                mpi: e.function.clone(),
            };
            let ev = evaluate(e, unit, tmax);
            let class = class_of(&e.function);
            let state = entry_wait_state(
                &e.function,
                e.bytes,
                e.role.as_deref(),
                e.completes.as_deref(),
                e.requests,
                rendezvous_bytes,
            );
            if e.function != "other" {
                match ev.tmax {
                    Some(t) => {
                        self.lookups.entries += 1;
                        self.lookups.calls += e.count;
                        if t.out_of_range {
                            self.lookups.out_of_range_entries += 1;
                            self.lookups.out_of_range_calls += e.count;
                        }
                    }
                    None => {
                        self.lookups.missing_entries += 1;
                        self.lookups.missing_calls += e.count;
                    }
                }
            }
            let acc = self
                .sites
                .entry(key.clone())
                .or_insert_with(|| SiteAcc::new(rec.rank, site));
            if rec.rank < acc.shown_by {
                acc.shown_by = rec.rank;
                acc.site = site.clone();
            }
            acc.calls += e.count;
            acc.time.add(e.sum_s);
            acc.bytes += e.bytes as u128 * e.count as u128;
            if e.count > 0 {
                acc.min = acc.min.min(e.min_s);
                acc.max = acc.max.max(e.max_s);
            }
            if let Some(Tmax {
                s: t,
                out_of_range: oor,
                basis,
                ..
            }) = ev.tmax
            {
                acc.basis = weaker(acc.basis, basis);
                acc.overhead.add(ev.overhead);
                acc.tmax_sum.add(t * e.count as f64);
                acc.calls_over.add(ev.calls_over);
                acc.calls_with_tmax += e.count;
                if oor {
                    acc.out_of_range_calls += e.count;
                }
                acc.tmax_min = acc.tmax_min.min(t);
                acc.tmax_max = acc.tmax_max.max(t);
                acc.states.entry(state).or_default().add(ev.overhead);
                if let Some(rule) = ev.tmax.and_then(|t| t.composed) {
                    *acc.composed.entry(rule).or_default() += e.count;
                }
            }
            if let Some(why) = &ev.missing {
                *acc.missing.entry(why.clone()).or_default() += e.count;
            }
            if let Some(done) = e.completed_at {
                let at = Loc::of(site_of(done), &e.function).display();
                *acc.completed_at.entry(at).or_default() += e.count;
            }
            let waits = matches!(state, Some("Late Sender" | "Late Receiver"));
            if let (Some(done), true) = (
                posts_done.get(&e.site),
                class == Some(EventClass::Completion),
            ) {
                if e.post_site.is_none() {
                    for (_, at, _) in done {
                        *acc.posted_at.entry(at.clone()).or_default() += e.count;
                    }
                }
                if waits && e.peer.is_none() && ev.tmax.is_some() && ev.overhead > 0.0 {
                    // Several peers: whom it waited for is decided once every
                    // rank's wait at this site is known.
                    let want_recv = state == Some("Late Sender");
                    let candidates: Vec<(u32, Option<String>)> = done
                        .iter()
                        .filter(|(_, _, recv)| *recv == want_recv)
                        .map(|(p, at, _)| (*p, Some(at.clone())))
                        .collect();
                    if !candidates.is_empty() {
                        acc.multi.push(MultiWait {
                            rank: rec.rank,
                            overhead: ev.overhead,
                            time: e.sum_s,
                            calls: e.count,
                            candidates,
                        });
                    }
                }
            }
            let p2p_peer = e
                .peer
                .filter(|&p| p >= 0 && is_p2p(class))
                .map(|p| p as u32);
            if let Some(peer) = p2p_peer {
                // A completion's late peer and posting line (a blocking
                // call's late peer is in `peers` already).
                let completion = class == Some(EventClass::Completion);
                if completion && waits && ev.tmax.is_some() && ev.overhead > 0.0 {
                    // The posting line: the completion's own when all its
                    // requests shared one, else that of the requests to or
                    // from this peer of the kind that waits.
                    let want_recv = state == Some("Late Sender");
                    let at = e
                        .post_site
                        .map(|ps| Loc::of(site_of(ps), &e.function).display())
                        .or_else(|| {
                            posts_done.get(&e.site)?.iter().find_map(|(p, at, recv)| {
                                (*p == peer && *recv == want_recv).then(|| at.clone())
                            })
                        });
                    acc.waited_for
                        .entry((peer, at))
                        .or_default()
                        .add(ev.overhead);
                }
                let pa = acc.peers.entry(peer).or_default();
                pa.time.add(e.sum_s);
                pa.calls += e.count;
                let cell = self.wait.entry((rec.rank, peer)).or_default();
                cell.time.add(e.sum_s);
                cell.calls += e.count;
                if waits && ev.tmax.is_some() {
                    pa.overhead.add(ev.overhead);
                    cell.overhead.add(ev.overhead);
                }
            }
            if self.want_dist {
                let mut bins = std::mem::take(&mut self.scratch);
                bins.clear();
                for b in &e.hist.buckets {
                    bins.push((self.bucket_bin(b.index(), unit), b.count()));
                }
                let acc = self.sites.get_mut(&key).expect("inserted above");
                for &(bin, c) in &bins {
                    acc.dist[bin] += c;
                }
                self.scratch = bins;
            }
            let acc = self.sites.get_mut(&key).expect("inserted above");
            if let Some(c) = &e.completes {
                acc.completes.insert(c.clone());
            }
            if let Some(ps) = e.post_site {
                let s = site_of(ps);
                *acc.posted_at
                    .entry(Loc::of(s, &e.function).display())
                    .or_default() += e.count;
            }
            // One row per rank and site: a record's entries are folded one
            // after another and its rank is unique in a run, so the site's
            // last row is this record's if it has one.
            if acc.per_rank.last().map(|r| r.rank) != Some(rec.rank) {
                acc.per_rank.push(RankSite {
                    rank: rec.rank,
                    calls: 0,
                    time: 0.0,
                    overhead: None,
                    root: false,
                });
            }
            let l = acc.per_rank.last_mut().expect("pushed above");
            l.calls += e.count;
            l.time += e.sum_s;
            l.root |= e.role.as_deref() == Some("root");
            if ev.tmax.is_some() {
                *l.overhead.get_or_insert(0.0) += ev.overhead;
                *rank_overhead.get_or_insert(0.0) += ev.overhead;
            }
            event_time += e.sum_s;
        }
        self.folded_keys += rec.folded.keys;
        self.folded_calls += rec.folded.calls;
        // Start-up and shut-down are not the application's communication:
        // they go on their own line, out of the MPI time every %MPI divides by.
        let (mut startup, mut shutdown) = (0.0, 0.0);
        for f in &rec.functions {
            match f.function.as_str() {
                "MPI_Init" | "MPI_Init_thread" => startup += f.time_s,
                "MPI_Finalize" => shutdown += f.time_s,
                _ => {}
            }
        }
        self.ranks.push(RankAcc {
            rank: rec.rank,
            host: rec.host.clone(),
            app_time: rec.app_time_s,
            mpi_time: (rec.mpi_time_s - startup - shutdown).max(0.0),
            startup,
            shutdown,
            event_time,
            overhead: rank_overhead,
            calls: rec.tool.calls,
            cost_per_call: rec.tool.cost_per_call_s,
            finished: rec.finished.clone(),
            command: rec.command.clone(),
            mpi_library: rec.mpi_library.clone(),
            thread_level: rec.thread_level.clone(),
            start: rec.start_unix_s,
            end: rec.end_unix_s,
            timer_name: rec.timer.name.clone(),
            timer_resolution: rec.timer.resolution_s,
            timer_cost: rec.timer.cost_s,
            depth: rec.tool.depth,
            profile: rec
                .profile
                .as_ref()
                .map(|p| (p.path.clone(), p.matched, p.q_max, p.note.clone())),
            warnings: rec.warnings.clone(),
        });
    }

    fn merge(&mut self, o: Agg) {
        for (k, v) in o.sites {
            match self.sites.get_mut(&k) {
                Some(a) => a.merge(v),
                None => {
                    self.sites.insert(k, v);
                }
            }
        }
        self.ranks.extend(o.ranks);
        for (k, v) in o.wait {
            let c = self.wait.entry(k).or_default();
            c.overhead.merge(v.overhead);
            c.time.merge(v.time);
            c.calls += v.calls;
        }
        let l = &mut self.lookups;
        l.entries += o.lookups.entries;
        l.calls += o.lookups.calls;
        l.out_of_range_entries += o.lookups.out_of_range_entries;
        l.out_of_range_calls += o.lookups.out_of_range_calls;
        l.missing_entries += o.lookups.missing_entries;
        l.missing_calls += o.lookups.missing_calls;
        self.folded_keys += o.folded_keys;
        self.folded_calls += o.folded_calls;
    }
}

/// [`rendezvous`] for a run whose first record is `first`: without a profile
/// given, the one the run was recorded with is asked (when it can be read).
fn rendezvous_of(
    opts: &Options,
    tmax: Option<&dyn TmaxSource>,
    first: Option<&Record>,
) -> (u64, &'static str, String) {
    let recorded = match (tmax, first.and_then(|r| r.profile.as_ref())) {
        (None, Some(p)) => mpiover_common::profile::Profile::load(&p.path)
            .ok()
            .and_then(|p| p.protocol?.rendezvous_bytes()),
        _ => None,
    };
    rendezvous(
        opts,
        tmax,
        recorded,
        first.and_then(|r| r.eager_limit.as_ref()),
    )
}

/// The threshold of the rendezvous protocol and where it came from, in this
/// order: `--eager-limit`, the profile's measurement (the profile given, or
/// the one the run was recorded with: `recorded`), what the library states
/// through `MPI_T` (recorded by the interposer), a default.
fn rendezvous(
    opts: &Options,
    tmax: Option<&dyn TmaxSource>,
    recorded: Option<u64>,
    mpi_t: Option<&MpiTValue>,
) -> (u64, &'static str, String) {
    if let Some(b) = opts.eager_limit {
        (b, "option", "--eager-limit".into())
    } else if let Some(b) = tmax.and_then(|t| t.rendezvous_bytes()).or(recorded) {
        (b, "profile", "measured by the calibration (profile)".into())
    } else if let Some(m) = mpi_t {
        (
            m.bytes.saturating_add(1),
            "mpi_t",
            format!("the MPI library's control variable {} (MPI_T)", m.cvar),
        )
    } else {
        (
            DEFAULT_RENDEZVOUS_BYTES,
            "default",
            "default: no profile measured it and the library does not state it".into(),
        )
    }
}

/// Reads a run directory and computes its report.
pub fn analyze_dir(
    dir: &Path,
    tmax: Option<&dyn TmaxSource>,
    opts: &Options,
) -> Result<Report, RunError> {
    let rd = RunDir::open(dir)?;
    // Only needed when neither the option nor a profile given decides: the
    // first record's view (the profile it was recorded with, what the
    // library stated).
    let first = if opts.eager_limit.is_none() && tmax.and_then(|t| t.rendezvous_bytes()).is_none() {
        rd.files.first().and_then(|path| {
            let bytes = std::fs::read(path).ok()?;
            parse_record(path, &bytes).ok()
        })
    } else {
        None
    };
    let (rdv, rdv_source, rdv_detail) = rendezvous_of(opts, tmax, first.as_ref());
    let n = rd.files.len();
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
    let mut total = Agg::default();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut agg = Agg::new(opts.detail_sites > 0);
                    let mut my_infos = Vec::new();
                    // Workers take files in increasing order, so every file
                    // before a failing one is still read: the error reported
                    // is the first in file order, whatever the scheduling.
                    while !stop.load(Ordering::Relaxed) {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= n {
                            break;
                        }
                        let path = &rd.files[i];
                        let res = std::fs::read(path)
                            .map_err(|source| RunError::Io {
                                path: path.clone(),
                                source,
                            })
                            .and_then(|bytes| parse_record(path, &bytes));
                        match res {
                            Ok(rec) => {
                                my_infos.push((i, RankInfo::of(path, &rec)));
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
    for (_, info) in infos {
        check.add(info)?;
    }
    let summary = check.finish().expect("a listed run directory has records");
    Ok(finish(
        total,
        summary,
        &dir.display().to_string(),
        tmax,
        opts,
        (rdv, rdv_source, rdv_detail),
    ))
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
    let mut agg = Agg::new(opts.detail_sites > 0);
    for r in records {
        agg.add_record(r, tmax, rdv);
    }
    finish(agg, summary, dir, tmax, opts, (rdv, rdv_source, rdv_detail))
}

fn median_sorted(v: &[f64]) -> f64 {
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn per_rank(rows: &[RankSite], overhead_known: bool) -> PerRank {
    let mut times: Vec<f64> = rows.iter().map(|r| r.time).collect();
    times.sort_by(f64::total_cmp);
    // Ties go to the lowest rank (rows are sorted by rank).
    let arg = |f: &dyn Fn(&RankSite) -> f64, max: bool| -> u32 {
        let mut best: Option<(f64, u32)> = None;
        for r in rows {
            let v = f(r);
            let better = match best {
                None => true,
                Some((b, _)) => (max && v > b) || (!max && v < b),
            };
            if better {
                best = Some((v, r.rank));
            }
        }
        best.map_or(0, |b| b.1)
    };
    let time_min_rank = arg(&|r| r.time, false);
    let time_max_rank = arg(&|r| r.time, true);
    let mut ovh: Vec<f64> = rows.iter().filter_map(|r| r.overhead).collect();
    ovh.sort_by(f64::total_cmp);
    let has_ovh = overhead_known && !ovh.is_empty();
    PerRank {
        ranks: rows.len() as u32,
        time_min_s: times.first().copied().unwrap_or(0.0),
        time_median_s: median_sorted(&times),
        time_max_s: times.last().copied().unwrap_or(0.0),
        time_min_rank,
        time_max_rank,
        overhead_min_s: has_ovh.then(|| ovh[0]),
        overhead_median_s: has_ovh.then(|| median_sorted(&ovh)),
        overhead_max_s: has_ovh.then(|| ovh[ovh.len() - 1]),
        worst_rank: if has_ovh {
            arg(&|r| r.overhead.unwrap_or(0.0), true)
        } else {
            time_max_rank
        },
    }
}

const MAX_LATE: usize = 16;

/// Late ranks of a collective site: the ranks that spent the least time per
/// call in it arrived last. The reference is the upper quartile over ranks of
/// the time per call (robust to a few slow ranks, and right while up to three
/// quarters of the ranks are late); the lateness of a rank is the reference
/// minus its time per call, times its calls. Ranks whose lateness per call is
/// at least half the largest count, when that largest is at least 5 % of the
/// reference.
fn late_by_arrival(rows: &[RankSite], exclude_roots: bool) -> Vec<(u32, f64)> {
    let cand: Vec<(&RankSite, f64)> = rows
        .iter()
        .filter(|r| !(exclude_roots && r.root) && r.calls > 0)
        .map(|r| (r, r.time / r.calls as f64))
        .collect();
    if cand.len() < 2 {
        return Vec::new();
    }
    let mut per_call: Vec<f64> = cand.iter().map(|c| c.1).collect();
    per_call.sort_by(f64::total_cmp);
    let reference = per_call[(per_call.len() * 3 / 4).min(per_call.len() - 1)];
    let spread = reference - per_call[0];
    if spread <= 0.0 || spread < 0.05 * reference {
        return Vec::new();
    }
    let mut late: Vec<(u32, f64)> = cand
        .iter()
        .filter(|(_, m)| reference - m >= 0.5 * spread)
        .map(|(r, m)| (r.rank, (reference - m) * r.calls as f64))
        .collect();
    late.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    late
}

/// Charges the waits of completions with requests to or from several peers
/// (`SiteAcc::multi`) to the peers each one waited for: among its candidate
/// peers, those whose own overhead per call at the same site is within a
/// quarter of this rank's of the smallest (a peer that waited least arrived
/// last), equally. Feeds the site's peers (late ranks), the wait matrix and
/// `waited_for`.
fn charge_multi(acc: &mut SiteAcc, wait: &mut HashMap<(u32, u32), PeerAcc>) {
    if acc.multi.is_empty() {
        return;
    }
    let mut per_call: HashMap<u32, f64> = HashMap::default();
    for r in &acc.per_rank {
        if r.calls > 0 {
            per_call.insert(r.rank, r.overhead.unwrap_or(0.0) / r.calls as f64);
        }
    }
    let own = |q: u32| per_call.get(&q).copied().unwrap_or(0.0);
    for m in std::mem::take(&mut acc.multi) {
        let mut peers: Vec<u32> = m.candidates.iter().map(|c| c.0).collect();
        peers.sort_unstable();
        peers.dedup();
        let least = peers.iter().map(|&q| own(q)).fold(f64::INFINITY, f64::min);
        let mine = m.overhead / m.calls.max(1) as f64;
        let late: Vec<u32> = peers
            .into_iter()
            .filter(|&q| own(q) <= least + 0.25 * mine)
            .collect();
        let n = late.len().max(1) as f64;
        for q in late {
            let share = m.overhead / n;
            let pa = acc.peers.entry(q).or_default();
            pa.overhead.add(share);
            pa.time.add(m.time / n);
            pa.calls += m.calls;
            let cell = wait.entry((m.rank, q)).or_default();
            cell.overhead.add(share);
            cell.time.add(m.time / n);
            cell.calls += m.calls;
            let lines: Vec<&Option<String>> = m
                .candidates
                .iter()
                .filter(|c| c.0 == q)
                .map(|c| &c.1)
                .collect();
            for at in &lines {
                acc.waited_for
                    .entry((q, (*at).clone()))
                    .or_default()
                    .add(share / lines.len() as f64);
            }
        }
    }
}

/// The keys of a count map, most counted first, at most `n`.
fn top_keys<K: Clone + Ord>(m: &BTreeMap<K, u64>, n: usize) -> Vec<K> {
    let mut v: Vec<(&K, &u64)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.into_iter().take(n).map(|(k, _)| k.clone()).collect()
}

struct Built {
    key: SiteKey,
    acc: SiteAcc,
    report: SiteReport,
}

fn finish(
    mut agg: Agg,
    summary: RunSummary,
    dir: &str,
    tmax: Option<&dyn TmaxSource>,
    opts: &Options,
    (rdv, rdv_source, rdv_detail): (u64, &'static str, String),
) -> Report {
    agg.ranks.sort_by_key(|r| r.rank);
    let ranks = &agg.ranks;
    let first = &ranks[0];
    let sum = |f: &dyn Fn(&RankAcc) -> f64| ranks.iter().map(f).sum::<f64>();
    let app_time = sum(&|r| r.app_time);
    let mpi_time = sum(&|r| r.mpi_time);
    let startup = sum(&|r| r.startup);
    let shutdown = sum(&|r| r.shutdown);
    let event_time = sum(&|r| r.event_time);
    let mut hosts: Vec<String> = ranks.iter().map(|r| r.host.clone()).collect();
    hosts.sort();
    hosts.dedup();

    // The profile and q_max: --profile wins over what the records say.
    let mut warnings: Vec<String> = summary.warnings.iter().map(|w| w.to_string()).collect();
    let (profile, q_max) = match tmax {
        Some(src) => {
            let m = src.matches(&first.mpi_library, &hosts);
            (
                Some(ProfileMethod {
                    source: "--profile".into(),
                    path: src.name(),
                    matched: m.as_ref().map(|m| m.0),
                    note: m.map(|m| m.1).filter(|s| !s.is_empty()),
                }),
                src.q_max(),
            )
        }
        None => {
            let used: Vec<&(String, bool, Option<f64>, Option<String>)> =
                ranks.iter().filter_map(|r| r.profile.as_ref()).collect();
            match used.first() {
                None => (None, None),
                Some(p) => {
                    let matched = used.iter().all(|u| u.1);
                    let mut paths: Vec<&str> = used.iter().map(|u| u.0.as_str()).collect();
                    paths.sort();
                    paths.dedup();
                    let mut qs: Vec<f64> = used.iter().filter_map(|u| u.2).collect();
                    qs.sort_by(f64::total_cmp);
                    qs.dedup();
                    if paths.len() > 1 || qs.len() > 1 {
                        warnings.push(format!(
                            "ranks used different profiles or q_max ({}); overhead mixes them",
                            paths.join(", ")
                        ));
                    }
                    (
                        Some(ProfileMethod {
                            source: "record".into(),
                            path: p.0.clone(),
                            matched: Some(matched),
                            note: p.3.clone(),
                        }),
                        qs.first().copied(),
                    )
                }
            }
        }
    };
    if let Some(p) = &profile {
        if p.matched == Some(false) {
            warnings.push(format!(
                "the profile {} was measured in another environment than this run{}: tmax may not fit",
                p.path,
                p.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
            ));
        }
    }
    let lookups = agg.lookups.clone();
    if lookups.out_of_range_calls > 0 {
        warnings.push(format!(
            "{} of {} calls with a tmax were outside the profile's measured range (p or bytes): their tmax is clamped to the nearest measured point",
            lookups.out_of_range_calls, lookups.calls
        ));
    }
    if tmax.is_some() && lookups.missing_calls > 0 {
        warnings.push(format!(
            "the profile has no tmax for {} calls ({} keys): they count in time but not in overhead",
            lookups.missing_calls, lookups.missing_entries
        ));
    }
    // The tool's own warnings, once each, with the ranks that raised them.
    let mut tool_w: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for r in ranks {
        for w in &r.warnings {
            tool_w.entry(w.as_str()).or_default().push(r.rank);
        }
    }
    for (w, rs) in tool_w {
        warnings.push(format!("{w} ({})", mpiover_common::run::rank_list(&rs, 5)));
    }

    let overhead_known = lookups.entries > 0;
    let mut min_calls = q_max.map(|q| signif::min_calls(q, opts.alpha));

    // Build every site.
    let mut built: Vec<Built> = agg
        .sites
        .drain()
        .map(|(key, mut acc)| {
            acc.per_rank.sort_by_key(|r| r.rank);
            charge_multi(&mut acc, &mut agg.wait);
            let has_tmax = acc.calls_with_tmax > 0;
            let overhead = has_tmax.then(|| acc.overhead.get());
            let pr = per_rank(&acc.per_rank, has_tmax);
            let ovh = overhead.unwrap_or(0.0);
            // The wait state with the most overhead.
            let wait_state = if ovh > 0.0 {
                acc.states
                    .iter()
                    .max_by(|a, b| a.1 .0.cmp(&b.1 .0).then(b.0.cmp(a.0)))
                    .and_then(|(s, v)| if v.get() > 0.0 { *s } else { None })
            } else {
                None
            };
            let (late, basis) = match wait_state {
                Some("Late Sender" | "Late Receiver") => {
                    let mut v: Vec<(u32, f64)> = acc
                        .peers
                        .iter()
                        .map(|(&p, a)| (p, a.overhead.get()))
                        .filter(|&(_, o)| o > 0.0 && o >= 0.01 * ovh)
                        .collect();
                    v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                    (v, Some("peer"))
                }
                Some("Late Broadcast") => {
                    let mut roots: Vec<(u32, f64)> = acc
                        .per_rank
                        .iter()
                        .filter(|r| r.root)
                        .map(|r| (r.rank, r.overhead.unwrap_or(0.0)))
                        .collect();
                    roots.sort_by_key(|r| r.0);
                    if roots.is_empty() {
                        (late_by_arrival(&acc.per_rank, false), Some("arrival"))
                    } else {
                        // Lateness of a root: the median non-root wait.
                        let others = pr.overhead_median_s.unwrap_or(0.0);
                        (
                            roots.into_iter().map(|(r, _)| (r, others)).collect(),
                            Some("root"),
                        )
                    }
                }
                Some("Early Reduce") => (late_by_arrival(&acc.per_rank, true), Some("arrival")),
                Some(_) => (late_by_arrival(&acc.per_rank, false), Some("arrival")),
                None => (Vec::new(), None),
            };
            let late: Vec<(u32, f64)> = late.into_iter().take(MAX_LATE).collect();
            let time = acc.time.get();
            let (file, line) = match &key.loc {
                Loc::Line(f, l) => (Some(f.clone()), Some(*l)),
                Loc::File(f) => (Some(f.clone()), None),
                _ => (None, None),
            };
            let mut posted: Vec<(String, u64)> =
                acc.posted_at.iter().map(|(k, v)| (k.clone(), *v)).collect();
            posted.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
            let report = SiteReport {
                rank: 0,
                mpi_function: key.mpi.clone(),
                file,
                line,
                function: key.function.clone(),
                location: key.loc.display(),
                module: acc.site.module.clone(),
                offset: acc.site.offset.clone(),
                inlined_into: acc
                    .site
                    .inlined_into
                    .iter()
                    .map(|f| demangle_inlined(f))
                    .collect(),
                note: acc.site.note.clone(),
                calls: acc.calls,
                time_s: time,
                bytes: acc.bytes.min(u64::MAX as u128) as u64,
                min_call_s: if acc.min.is_finite() { acc.min } else { 0.0 },
                max_call_s: acc.max,
                time_share_of_mpi: if mpi_time > 0.0 { time / mpi_time } else { 0.0 },
                overhead_s: overhead,
                tmax_s: has_tmax.then(|| acc.tmax_sum.get()),
                exceed_fraction: has_tmax
                    .then(|| (acc.calls_over.get() / acc.calls_with_tmax as f64).clamp(0.0, 1.0)),
                calls_over_tmax: has_tmax.then(|| acc.calls_over.get()),
                expected_exceed_fraction: None,
                calls_with_tmax: acc.calls_with_tmax,
                out_of_range_calls: acc.out_of_range_calls,
                share_of_mpi_time: overhead
                    .map(|o| if mpi_time > 0.0 { o / mpi_time } else { 0.0 }),
                share_of_app_time: overhead
                    .map(|o| if app_time > 0.0 { o / app_time } else { 0.0 }),
                wait_state: wait_state.map(str::to_string),
                late_ranks: late.iter().map(|l| l.0).collect(),
                late_basis: basis.filter(|_| !late.is_empty()).map(str::to_string),
                late_ranks_s: late.iter().map(|l| l.1).collect(),
                significant: false,
                significance: String::new(),
                p_value: None,
                q_value: None,
                per_rank: pr,
                completes: acc.completes.iter().cloned().collect(),
                posted_at: posted.into_iter().take(5).map(|p| p.0).collect(),
                waited_for: {
                    let mut v: Vec<WaitedFor> = acc
                        .waited_for
                        .iter()
                        .map(|((peer, at), o)| WaitedFor {
                            peer: *peer,
                            posted_at: at.clone(),
                            overhead_s: o.get(),
                        })
                        .filter(|w| w.overhead_s > 0.0 && w.overhead_s >= 0.01 * ovh)
                        .collect();
                    v.sort_by(|a, b| {
                        b.overhead_s
                            .total_cmp(&a.overhead_s)
                            .then(a.peer.cmp(&b.peer))
                            .then(a.posted_at.cmp(&b.posted_at))
                    });
                    v.truncate(8);
                    v
                },
                completed_at: top_keys(&acc.completed_at, 5),
                tmax_composed: top_keys(&acc.composed, 8)
                    .into_iter()
                    .map(str::to_string)
                    .collect(),
                tmax_missing: top_keys(&acc.missing, 8),
            };
            Built { key, acc, report }
        })
        .collect();

    // Significance: one-sided test per site against the calibration's own
    // spread (`signif::Null`), BH across sites.
    let mut tested: Vec<(usize, f64, signif::Null)> = Vec::new();
    for (i, b) in built.iter_mut().enumerate() {
        let s = &mut b.report;
        if s.calls_with_tmax == 0 || s.mpi_function == "other" {
            s.significance = "no tmax".into();
            continue;
        }
        let Some(q) = q_max else {
            s.significance = "no q_max".into();
            continue;
        };
        let null = signif::Null::new(q, b.acc.basis);
        let n = s.calls_with_tmax;
        let k = (s.calls_over_tmax.unwrap_or(0.0).round() as u64).min(n);
        let p = null.p_value(k, n);
        s.p_value = Some(p);
        s.expected_exceed_fraction = Some(null.expected_share());
        tested.push((i, p, null));
    }
    // The fewest calls any tested site needs (the least certain tmax decides).
    if let Some(m) = tested.iter().map(|t| t.2.min_calls(opts.alpha)).max() {
        min_calls = Some(m);
    }
    let qv = signif::bh_adjust(&tested.iter().map(|t| t.1).collect::<Vec<_>>());
    for (&(i, _, null), q) in tested.iter().zip(qv) {
        let s = &mut built[i].report;
        s.q_value = Some(q);
        let expected = s.calls_with_tmax as f64 * null.expected_share();
        let over = s.calls_over_tmax.unwrap_or(0.0);
        let material = s.overhead_s.unwrap_or(0.0) >= opts.min_share * mpi_time;
        if q <= opts.alpha && over > expected && material {
            s.significant = true;
            s.significance = "significant".into();
        } else if q <= opts.alpha && over > expected {
            s.significance = "negligible".into();
            s.late_ranks.clear();
            s.late_ranks_s.clear();
            s.late_basis = None;
        } else {
            s.significance = if s.calls_with_tmax < null.min_calls(opts.alpha) {
                "too few calls"
            } else {
                "not significant"
            }
            .into();
            // Whom a chance-level wait was on says nothing.
            s.late_ranks.clear();
            s.late_ranks_s.clear();
            s.late_basis = None;
        }
    }

    // Ranking: by overhead when known, then time, then identity.
    built.sort_by(|a, b| {
        let (x, y) = (&a.report, &b.report);
        let ko = |s: &SiteReport| s.overhead_s.unwrap_or(-1.0);
        if overhead_known {
            ko(y).total_cmp(&ko(x))
        } else {
            std::cmp::Ordering::Equal
        }
        .then(y.time_s.total_cmp(&x.time_s))
        .then_with(|| a.key.cmp(&b.key))
    });
    for (i, b) in built.iter_mut().enumerate() {
        b.report.rank = i + 1;
    }

    // Details of the top sites for the HTML export.
    let nd = opts.detail_sites.min(built.len());
    let mut detail = Detail {
        heatmap: None,
        dists: vec![None; built.len()],
        sources: vec![None; built.len()],
    };
    for (i, b) in built.iter().take(nd).enumerate() {
        let (lo, hi) = match (
            b.acc.dist.iter().position(|&c| c > 0),
            b.acc.dist.iter().rposition(|&c| c > 0),
        ) {
            (Some(lo), Some(hi)) => (lo, hi),
            _ => continue,
        };
        let has_t = b.acc.calls_with_tmax > 0;
        detail.dists[i] = Some(Dist {
            edges: (lo..=hi + 1).map(dist_edge).collect(),
            counts: b.acc.dist[lo..=hi].to_vec(),
            tmax_min_s: has_t.then_some(b.acc.tmax_min),
            tmax_mean_s: has_t.then(|| b.acc.tmax_sum.get() / b.acc.calls_with_tmax as f64),
            tmax_max_s: has_t.then_some(b.acc.tmax_max),
        });
        if opts.read_sources {
            if let Loc::Line(f, l) = &b.key.loc {
                detail.sources[i] = read_source(f, *l, 4);
            }
        }
    }
    if nd > 0 {
        let world = summary.ranks.max(1);
        let per_col = world.div_ceil(128);
        let cols: Vec<(u32, u32)> = (0..world.div_ceil(per_col))
            .map(|c| (c * per_col, ((c + 1) * per_col).min(world) - 1))
            .collect();
        let values = built
            .iter()
            .take(nd)
            .map(|b| {
                let mut row: Vec<Option<f64>> = vec![None; cols.len()];
                for r in &b.acc.per_rank {
                    let v = if overhead_known {
                        r.overhead.unwrap_or(0.0)
                    } else {
                        r.time
                    };
                    let c = &mut row[(r.rank / per_col) as usize];
                    *c = Some(c.map_or(v, |x: f64| x.max(v)));
                }
                row
            })
            .collect();
        detail.heatmap = Some(Heatmap {
            metric: if overhead_known {
                "overhead_s"
            } else {
                "time_s"
            }
            .into(),
            rows: (0..nd).collect(),
            cols,
            values,
        });
    }

    let sites: Vec<SiteReport> = built.into_iter().map(|b| b.report).collect();

    // Wait matrix.
    let metric_ovh = overhead_known;
    let mut cells: Vec<WaitCell> = agg
        .wait
        .iter()
        .map(|(&(w, p), a)| WaitCell {
            waiter: w,
            peer: p,
            value_s: if metric_ovh {
                a.overhead.get()
            } else {
                a.time.get()
            },
            calls: a.calls,
        })
        .filter(|c| c.value_s > 0.0)
        .collect();
    cells.sort_by(|a, b| {
        b.value_s
            .total_cmp(&a.value_s)
            .then(a.waiter.cmp(&b.waiter))
            .then(a.peer.cmp(&b.peer))
    });
    let total_s = {
        let mut t = Fx::default();
        for a in agg.wait.values() {
            t.merge(if metric_ovh { a.overhead } else { a.time });
        }
        t.get()
    };
    let cells_total = cells.len();
    cells.truncate(10_000);

    // Summary.
    let overhead_total = overhead_known.then(|| {
        let mut t = Fx::default();
        for s in &sites {
            t.add(s.overhead_s.unwrap_or(0.0));
        }
        t.get()
    });
    let worst = sites
        .iter()
        .filter(|s| {
            if overhead_known {
                s.overhead_s.unwrap_or(0.0) > 0.0
            } else {
                s.time_s > 0.0
            }
        })
        .take(3)
        .map(|s| sentence(s, mpi_time, overhead_known))
        .collect();
    let mut costs: Vec<f64> = ranks.iter().map(|r| r.cost_per_call).collect();
    costs.sort_by(f64::total_cmp);
    let tool_time = sum(&|r| r.cost_per_call * r.calls as f64);
    let tool_calls: u64 = ranks.iter().map(|r| r.calls).sum();
    let hint = (!overhead_known).then(|| {
        "no profile gave tmax, so sites are ranked by time (as mpiP does) and overhead is unknown: \
         calibrate this machine with mpiover-calibrate and re-run `mpiover report RUN_DIR --profile PROFILE` \
         (or record with a profile) to rank sites by the time they waste"
            .to_string()
    });
    Report {
        schema: REPORT_SCHEMA.into(),
        generator: format!("mpiover {}", env!("CARGO_PKG_VERSION")),
        run: RunInfo {
            dir: dir.to_string(),
            run_id: summary.run_id.clone(),
            ranks: summary.ranks,
            ranks_present: summary.present.len() as u32,
            command: first.command.clone(),
            mpi_library: first.mpi_library.clone(),
            thread_level: first.thread_level.clone(),
            hosts,
            start_unix_s: ranks.iter().map(|r| r.start).fold(f64::INFINITY, f64::min),
            end_unix_s: ranks.iter().map(|r| r.end).fold(0.0, f64::max),
        },
        summary: Summary {
            app_time_s: app_time,
            app_wall_s: ranks.iter().map(|r| r.app_time).fold(0.0, f64::max),
            mpi_time_s: mpi_time,
            startup_s: startup,
            shutdown_s: shutdown,
            event_time_s: event_time,
            overhead_s: overhead_total,
            overhead_share_of_mpi: overhead_total.map(|o| if mpi_time > 0.0 { o / mpi_time } else { 0.0 }),
            overhead_share_of_app: overhead_total.map(|o| if app_time > 0.0 { o / app_time } else { 0.0 }),
            ranked_by: if overhead_known { "overhead" } else { "time" }.into(),
            calls: sites.iter().map(|s| s.calls).sum(),
            sites: sites.len(),
            significant_sites: sites.iter().filter(|s| s.significant).count(),
            worst,
        },
        sites,
        ranks: ranks
            .iter()
            .map(|r| RankReport {
                rank: r.rank,
                host: r.host.clone(),
                app_time_s: r.app_time,
                mpi_time_s: r.mpi_time,
                event_time_s: r.event_time,
                overhead_s: r.overhead,
                calls: r.calls,
                tool_time_s: r.cost_per_call * r.calls as f64,
                finished: r.finished.clone(),
            })
            .collect(),
        wait_matrix: WaitMatrix {
            metric: if metric_ovh { "overhead_s" } else { "time_s" }.into(),
            total_s,
            cells_total,
            cells,
        },
        methods: Methods {
            profile,
            q_max,
            alpha: opts.alpha,
            test: "one-sided test of the calls over tmax against the share expected by chance: \
                   beta-binomial around 1 - q_max with the spread of tmax estimated from the profile's \
                   calibration samples (binomial when the profile does not say), \
                   Benjamini-Hochberg across sites at false discovery rate alpha"
                .into(),
            min_calls,
            min_share: opts.min_share,
            rendezvous_bytes: rdv,
            rendezvous_source: rdv_source.into(),
            rendezvous_detail: rdv_detail,
            lookups,
            tool: ToolCost {
                cost_per_call_s: median_sorted(&costs),
                calls: tool_calls,
                time_s: tool_time,
                share_of_app: if app_time > 0.0 { tool_time / app_time } else { 0.0 },
            },
            timer: TimerInfo {
                name: first.timer_name.clone(),
                resolution_s: ranks.iter().map(|r| r.timer_resolution).fold(0.0, f64::max),
                cost_s: ranks.iter().map(|r| r.timer_cost).fold(0.0, f64::max),
            },
            folded_keys: agg.folded_keys,
            folded_calls: agg.folded_calls,
            depth: first.depth,
            hint,
        },
        warnings,
        detail,
    }
}

/// One sentence about a site for the summary.
fn sentence(s: &SiteReport, mpi_time: f64, overhead_known: bool) -> String {
    use crate::units::{count, pct, secs};
    let place = match &s.function {
        Some(f) => format!(
            "{} in {}()",
            s.location,
            mpiover_common::demangle::without_parameters(f)
        ),
        None => s.location.clone(),
    };
    if overhead_known {
        let ovh = s.overhead_s.unwrap_or(0.0);
        let mut t = format!(
            "{place}: {} lost {} beyond tmax in {} calls ({} of MPI time)",
            s.mpi_function,
            secs(ovh),
            count(s.calls),
            pct(if mpi_time > 0.0 { ovh / mpi_time } else { 0.0 })
        );
        if let Some(w) = &s.wait_state {
            t.push_str(&format!(", {w}"));
            if !s.late_ranks.is_empty() {
                let who: Vec<String> = s.late_ranks.iter().take(3).map(|r| r.to_string()).collect();
                let verb = match s.late_basis.as_deref() {
                    Some("peer") => "waiting mostly on rank",
                    _ => "late rank",
                };
                t.push_str(&format!(
                    ", {verb}{} {}",
                    if who.len() > 1 { "s" } else { "" },
                    who.join(", ")
                ));
            }
        }
        if !s.significant {
            t.push_str(&format!(" ({})", s.significance));
        }
        t.push('.');
        t
    } else {
        format!(
            "{place}: {} took {} in {} calls ({} of MPI time).",
            s.mpi_function,
            secs(s.time_s),
            count(s.calls),
            pct(s.time_share_of_mpi)
        )
    }
}

/// `context` lines either side of `line` of `path`, if readable and small.
fn read_source(path: &str, line: u32, context: u32) -> Option<Source> {
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 16 << 20 {
        return None;
    }
    let text = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&text);
    let lo = line.saturating_sub(context).max(1);
    let hi = line + context;
    let lines: Vec<(u32, String)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i as u32 + 1, l))
        .filter(|(n, _)| *n >= lo && *n <= hi)
        .map(|(n, l)| (n, l.chars().take(200).collect()))
        .collect();
    if !lines.iter().any(|(n, _)| *n == line) {
        return None;
    }
    Some(Source {
        path: path.to_string(),
        lines,
        highlight: line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::{self, fixture_tmax, Times};
    use crate::tmax::FnTmax;

    fn summary_of(records: &[Record]) -> RunSummary {
        let mut c = RunCheck::new();
        for r in records {
            c.add(RankInfo::of(Path::new("x"), r)).unwrap();
        }
        c.finish().unwrap()
    }

    fn report(records: &[Record], tmax: Option<&dyn TmaxSource>) -> Report {
        analyze_records(
            "run",
            records,
            summary_of(records),
            tmax,
            &Options::default(),
        )
    }

    fn site<'a>(r: &'a Report, loc_end: &str, mpi: &str) -> &'a SiteReport {
        r.sites
            .iter()
            .find(|s| s.location.ends_with(loc_end) && s.mpi_function == mpi)
            .unwrap_or_else(|| panic!("no site {loc_end} {mpi}"))
    }

    /// The fixture's machine, as a profile: the tmax the fixture recorded.
    struct FixtureProfile(f64);

    impl TmaxSource for FixtureProfile {
        fn tmax(&self, k: &KeyRef) -> Result<Tmax, mpiover_common::completion::Missing> {
            let (base_s, noise_s) = match k.function {
                "MPI_Recv" => (5e-6, 1e-6),
                "MPI_Isend" => (1e-6, 0.2e-6),
                "MPI_Wait" => (250e-6, 20e-6),
                "MPI_Allreduce" => (10e-6, 2e-6),
                "MPI_Bcast" => (20e-6, 4e-6),
                "MPI_Send" => (3e-6, 0.5e-6),
                _ => return Err(mpiover_common::completion::Missing("not in the fixture")),
            };
            let t = Times {
                base_s,
                noise_s,
                delay_s: 0.0,
            };
            Ok(Tmax {
                s: fixture_tmax(t),
                out_of_range: false,
                basis: None,
                composed: None,
            })
        }
        fn name(&self) -> String {
            "mock.json".into()
        }
        fn q_max(&self) -> Option<f64> {
            Some(self.0)
        }
    }

    fn fixture_profile(q_max: f64) -> FixtureProfile {
        FixtureProfile(q_max)
    }

    fn check_fixture_attribution(r: &Report) {
        assert_eq!(r.summary.ranked_by, "overhead");
        let recv = site(r, "halo.c:42", "MPI_Recv");
        // Rank 2 waits 2 ms in each of its 200 receives from rank 1.
        let o = recv.overhead_s.unwrap();
        assert!((o - 0.4).abs() < 0.04, "{o}");
        assert_eq!(recv.wait_state.as_deref(), Some("Late Sender"));
        assert_eq!(recv.late_ranks, vec![1]);
        assert_eq!(recv.late_basis.as_deref(), Some("peer"));
        assert!(recv.significant);
        assert_eq!(recv.per_rank.worst_rank, 2);
        let wait = site(r, "halo.c:57", "MPI_Wait");
        let o = wait.overhead_s.unwrap();
        assert!((o - 0.1).abs() < 0.01, "{o}");
        assert_eq!(wait.wait_state.as_deref(), Some("Late Receiver"));
        assert_eq!(wait.late_ranks, vec![3]);
        assert_eq!(
            wait.posted_at,
            vec!["/home/user/halo/halo.c:55".to_string()]
        );
        assert_eq!(wait.completes, vec!["MPI_Isend".to_string()]);
        let ar = site(r, "solver.c:88", "MPI_Allreduce");
        // Ranks 1-3 wait 300 us in each of 500 calls.
        let o = ar.overhead_s.unwrap();
        assert!((o - 0.45).abs() < 0.045, "{o}");
        assert_eq!(ar.wait_state.as_deref(), Some("Wait at NxN"));
        assert_eq!(ar.late_ranks, vec![0]);
        assert_eq!(ar.late_basis.as_deref(), Some("arrival"));
        assert!(ar.significant);
        for (l, f) in [
            ("io.c:10", "MPI_Bcast"),
            ("libhelper.so+0x1a2b", "MPI_Send"),
        ] {
            let s = site(r, l, f);
            assert!(!s.significant, "{l}");
            assert_eq!(s.significance, "not significant");
            assert!(s.late_ranks.is_empty());
            let ex = s.exceed_fraction.unwrap();
            assert!((0.03..0.2).contains(&ex), "{l}: {ex}");
        }
        assert_eq!(r.summary.significant_sites, 3);
        assert_eq!(r.sites[0].mpi_function, "MPI_Allreduce");
        assert_eq!(r.summary.worst.len(), 3);
        // Wait matrix: rank 2 waited on rank 1 most.
        let c = &r.wait_matrix.cells[0];
        assert_eq!((c.waiter, c.peer), (2, 1));
        assert_eq!(r.wait_matrix.metric, "overhead_s");
    }

    #[test]
    fn online_overhead_is_attributed() {
        let r = report(&synth::fixture_run(true), None);
        check_fixture_attribution(&r);
        let p = r.methods.profile.as_ref().unwrap();
        assert_eq!(p.source, "record");
        assert_eq!(p.matched, Some(true));
        assert_eq!(r.methods.q_max, Some(0.9));
    }

    /// A significant site whose overhead is a small share of the MPI time is
    /// "negligible", not flagged; with `min_share` 0 the test alone decides.
    #[test]
    fn small_significant_sites_are_negligible() {
        let records = synth::fixture_run(true);
        let base = report(&records, None);
        let mpi = base.summary.mpi_time_s;
        let flagged: Vec<&SiteReport> = base.sites.iter().filter(|s| s.significant).collect();
        assert!(flagged.len() >= 2, "{}", flagged.len());
        // A threshold between the smallest and the largest flagged overhead.
        let (lo, hi) = flagged.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), s| {
            let o = s.overhead_s.unwrap();
            (lo.min(o), hi.max(o))
        });
        let min_share = (lo + hi) / 2.0 / mpi;
        let opts = Options {
            min_share,
            ..Options::default()
        };
        let r = analyze_records("run", &records, summary_of(&records), None, &opts);
        assert_eq!(r.methods.min_share, min_share);
        for s in &flagged {
            let t = site(&r, &s.location, &s.mpi_function);
            let big = s.overhead_s.unwrap() >= min_share * mpi;
            assert_eq!(t.significant, big, "{}", s.location);
            if big {
                assert_eq!(t.late_ranks, s.late_ranks);
            } else {
                assert_eq!(t.significance, "negligible");
                assert!(t.late_ranks.is_empty(), "{}", s.location);
                assert_eq!(t.p_value, s.p_value, "the test itself is unchanged");
            }
        }
        let zero = Options {
            min_share: 0.0,
            ..Options::default()
        };
        let z = analyze_records("run", &records, summary_of(&records), None, &zero);
        let flagged_zero = z.sites.iter().filter(|s| s.significant).count();
        assert!(flagged_zero >= flagged.len());
    }

    #[test]
    fn reanalysis_against_a_profile_matches_online() {
        let online = report(&synth::fixture_run(true), None);
        let prof = fixture_profile(0.9);
        // Records without online tmax, re-analysed from the histograms.
        let re = report(&synth::fixture_run(false), Some(&prof));
        check_fixture_attribution(&re);
        assert_eq!(re.methods.profile.as_ref().unwrap().source, "--profile");
        for s in &online.sites {
            let t = re
                .sites
                .iter()
                .find(|x| x.location == s.location && x.mpi_function == s.mpi_function)
                .unwrap();
            match (s.overhead_s, t.overhead_s) {
                (Some(a), Some(b)) => assert!(
                    (a - b).abs() <= 0.01 * a + 1e-6,
                    "{}: {a} vs {b}",
                    s.location
                ),
                (a, b) => assert_eq!(a.is_none(), b.is_none()),
            }
        }
    }

    #[test]
    fn a_larger_tmax_leaves_no_significant_site() {
        let prof = FnTmax {
            name: "slow.json".into(),
            q_max: Some(0.99),
            f: |_: &str, _: u32, _: u64, _: Option<&str>| Some((1.0, true)),
        };
        let r = report(&synth::fixture_run(false), Some(&prof));
        assert_eq!(r.summary.overhead_s, Some(0.0));
        assert_eq!(r.summary.significant_sites, 0);
        assert!(r
            .sites
            .iter()
            .all(|s| s.wait_state.is_none() && s.late_ranks.is_empty()));
        assert!(r.methods.lookups.out_of_range_calls > 0);
        assert!(r
            .warnings
            .iter()
            .any(|w| w.contains("outside the profile's measured range")));
    }

    #[test]
    fn without_a_profile_sites_are_ranked_by_time() {
        let r = report(&synth::fixture_run(false), None);
        assert_eq!(r.summary.ranked_by, "time");
        assert!(r.summary.overhead_s.is_none());
        assert!(r.methods.hint.as_ref().unwrap().contains("--profile"));
        assert!(r.sites.windows(2).all(|w| w[0].time_s >= w[1].time_s));
        assert!(r
            .sites
            .iter()
            .all(|s| s.overhead_s.is_none() && s.wait_state.is_none() && !s.significant));
        assert_eq!(r.wait_matrix.metric, "time_s");
        // Issue 2's figures.
        let s = site(&r, "halo.c:42", "MPI_Recv");
        assert_eq!(s.calls, 800);
        assert_eq!(s.bytes, 800 * 8);
        assert_eq!(s.per_rank.time_max_rank, 2);
        assert_eq!(s.file.as_deref(), Some("/home/user/halo/halo.c"));
        assert_eq!(s.line, Some(42));
        assert_eq!(s.function.as_deref(), Some("exchange"));
        assert_eq!(r.ranks.len(), 4);
        let total: f64 = r.ranks.iter().map(|k| k.mpi_time_s).sum();
        assert!((total - r.summary.mpi_time_s).abs() < 1e-12);
    }

    /// A slow `MPI_Init_thread` (227 ms in one real run) is start-up, on its
    /// own line: it is not MPI time, and no %MPI is a share of it.
    #[test]
    fn startup_and_shutdown_are_not_mpi_time() {
        let mut recs = synth::fixture_run(false);
        for r in &mut recs {
            r.mpi_time_s += 5.0 + 0.5;
            r.functions.push(mpiover_common::record::FunctionTotal {
                function: "MPI_Init_thread".into(),
                calls: 1,
                time_s: 5.0,
            });
            r.functions.push(mpiover_common::record::FunctionTotal {
                function: "MPI_Finalize".into(),
                calls: 1,
                time_s: 0.5,
            });
        }
        let plain = report(&synth::fixture_run(false), None);
        let r = report(&recs, None);
        let n = recs.len() as f64;
        // The fixture's own MPI_Init (10 ms a rank) is start-up too.
        assert!(
            (r.summary.startup_s - n * 5.01).abs() < 1e-9,
            "{}",
            r.summary.startup_s
        );
        assert!((r.summary.shutdown_s - n * 0.5).abs() < 1e-9);
        assert!((r.summary.mpi_time_s - plain.summary.mpi_time_s).abs() < 1e-9);
        let total: f64 = r.ranks.iter().map(|k| k.mpi_time_s).sum();
        assert!((total - r.summary.mpi_time_s).abs() < 1e-9);
        let (a, b) = (
            site(&r, "halo.c:42", "MPI_Recv"),
            site(&plain, "halo.c:42", "MPI_Recv"),
        );
        assert!((a.time_share_of_mpi - b.time_share_of_mpi).abs() < 1e-12);
        let text = String::from_utf8(crate::export::export(
            &r,
            crate::export::Format::Text,
            &crate::export::ExportOptions {
                top: None,
                color: false,
            },
        ))
        .unwrap();
        assert!(text.contains("Start-up/shut-down"), "{text}");
    }

    #[test]
    fn sites_match_by_location_not_address() {
        // Two ranks, different addresses (ASLR), same line; an unresolved
        // site at the same module offset; a third line that differs.
        let mut recs = Vec::new();
        for r in 0..2u32 {
            let mut rec = synth::empty_record("aslr", r, 2, "h");
            let mut a = synth::site(0, "a.c", 10, "f");
            a.address = format!("0x{:x}", 0x5000 + r * 0x1000);
            let mut u = synth::site(1, "x", 0, "");
            u.file = None;
            u.line = None;
            u.function = None;
            u.module = Some("/lib/libx.so".into());
            u.offset = Some("0x40".into());
            u.address = format!("0x{:x}", 0x7000 + r * 0x1000);
            let b = synth::site(2, "a.c", 11 + r, "f");
            rec.sites = vec![a, u, b];
            let mut rng = synth::Rng::new(r as u64);
            for (sid, f) in [
                (0, "MPI_Recv"),
                (1, "MPI_Recv"),
                (2, "MPI_Recv"),
                (0, "MPI_Barrier"),
            ] {
                synth::push_entry(
                    &mut rec,
                    &mut rng,
                    synth::EntrySpec {
                        site: sid,
                        function: f,
                        p: 2,
                        bytes: 8,
                        peer: Some(1 - r as i32),
                        role: None,
                        completes: None,
                        post_site: None,
                        count: 10,
                        times: Times {
                            base_s: 1e-6,
                            noise_s: 1e-7,
                            delay_s: 0.0,
                        },
                        tmax_s: 2e-6,
                    },
                    false,
                    100,
                );
            }
            recs.push(rec);
        }
        let r = report(&recs, None);
        let locs: Vec<(String, String, u32)> = r
            .sites
            .iter()
            .map(|s| (s.location.clone(), s.mpi_function.clone(), s.per_rank.ranks))
            .collect();
        assert_eq!(r.sites.len(), 5, "{locs:?}");
        assert_eq!(site(&r, "a.c:10", "MPI_Recv").per_rank.ranks, 2);
        assert_eq!(site(&r, "a.c:10", "MPI_Barrier").per_rank.ranks, 2);
        assert_eq!(site(&r, "libx.so+0x40", "MPI_Recv").per_rank.ranks, 2);
        assert_eq!(site(&r, "a.c:11", "MPI_Recv").per_rank.ranks, 1);
        assert_eq!(site(&r, "a.c:12", "MPI_Recv").per_rank.ranks, 1);
    }

    #[test]
    fn wait_states_follow_scalasca() {
        let w = |f, b, role, c| entry_wait_state(f, b, role, c, None, 65536);
        assert_eq!(w("MPI_Recv", 8, None, None), Some("Late Sender"));
        assert_eq!(w("MPI_Send", 8, None, None), None);
        assert_eq!(w("MPI_Send", 1 << 20, None, None), Some("Late Receiver"));
        assert_eq!(w("MPI_Ssend", 8, None, None), Some("Late Receiver"));
        assert_eq!(w("MPI_Bsend", 1 << 20, None, None), None);
        assert_eq!(
            w("MPI_Wait", 8, None, Some("MPI_Irecv")),
            Some("Late Sender")
        );
        assert_eq!(
            w("MPI_Waitall", 1 << 20, None, Some("MPI_Isend")),
            Some("Late Receiver")
        );
        assert_eq!(w("MPI_Wait", 8, None, Some("MPI_Isend")), None);
        assert_eq!(
            w("MPI_Wait", 8, None, Some("MPI_Iallreduce")),
            Some("Wait at NxN")
        );
        assert_eq!(
            w("MPI_Wait", 8, None, Some("MPI_Ibarrier")),
            Some("Wait at Barrier")
        );
        assert_eq!(
            w("MPI_Wait", 8, Some("nonroot"), Some("MPI_Ibcast")),
            Some("Late Broadcast")
        );
        assert_eq!(w("MPI_Wait", 8, None, None), None);
        assert_eq!(w("MPI_Allreduce", 8, None, None), Some("Wait at NxN"));
        assert_eq!(
            w("MPI_Bcast", 8, Some("nonroot"), None),
            Some("Late Broadcast")
        );
        assert_eq!(w("MPI_Bcast", 8, Some("root"), None), None);
        assert_eq!(w("MPI_Reduce", 8, Some("root"), None), Some("Early Reduce"));
        assert_eq!(w("MPI_Reduce", 8, Some("nonroot"), None), None);
        assert_eq!(w("MPI_Isend", 8, None, None), None);
        assert_eq!(w("MPI_Foo", 8, None, None), None);
        assert_eq!(
            entry_wait_state("MPI_Send", 4096, None, None, None, 4096),
            Some("Late Receiver")
        );
        // Completions of several kinds of request: receives mean a late
        // sender; sends alone, a late receiver only at rendezvous size.
        let req = |n, recv, send| Some(Requests { n, recv, send });
        let m = |bytes, r| entry_wait_state("MPI_Waitall", bytes, None, None, r, 4096);
        assert_eq!(m(52 * 100, req(52, 26, 26)), Some("Late Sender"));
        assert_eq!(m(26 * 100, req(26, 0, 26)), None);
        assert_eq!(m(26 * 8192, req(26, 0, 26)), Some("Late Receiver"));
        assert_eq!(m(0, req(0, 0, 0)), None);
        // Many sends of one kind: the message size, not the sum, decides.
        assert_eq!(
            entry_wait_state(
                "MPI_Waitall",
                26 * 100,
                None,
                Some("MPI_Isend"),
                req(26, 0, 26),
                4096
            ),
            None
        );
    }

    #[test]
    fn late_ranks_by_arrival() {
        let rows: Vec<RankSite> = (0..8)
            .map(|r| RankSite {
                rank: r,
                calls: 10,
                time: if r == 5 {
                    0.01
                } else if r == 2 {
                    0.4
                } else {
                    1.0
                },
                overhead: None,
                root: r == 0,
            })
            .collect();
        let late = late_by_arrival(&rows, false);
        assert_eq!(late.iter().map(|l| l.0).collect::<Vec<_>>(), vec![5, 2]);
        // Balanced: nobody is late.
        let flat: Vec<RankSite> = rows
            .iter()
            .map(|r| RankSite {
                time: 1.0 + 0.001 * r.rank as f64,
                ..*r
            })
            .collect();
        assert!(late_by_arrival(&flat, false).is_empty());
        // Different call counts at the same time per call: nobody is late.
        let counts: Vec<RankSite> = rows
            .iter()
            .map(|r| RankSite {
                calls: 10 + 100 * r.rank as u64,
                time: 1e-3 * (10 + 100 * r.rank) as f64,
                ..*r
            })
            .collect();
        assert!(late_by_arrival(&counts, false).is_empty());
        // One very slow rank (noise) does not make everybody late.
        let mut noisy: Vec<RankSite> = (0..64)
            .map(|r| RankSite {
                rank: r,
                calls: 100,
                time: 1.0 + 1e-3 * (r % 7) as f64,
                overhead: None,
                root: false,
            })
            .collect();
        noisy[9].time = 0.2;
        noisy[40].time = 9.0;
        let late = late_by_arrival(&noisy, false);
        assert_eq!(late.iter().map(|l| l.0).collect::<Vec<_>>(), vec![9]);
        // Roots are left out for Early Reduce.
        assert_eq!(
            late_by_arrival(&rows, true)
                .iter()
                .map(|l| l.0)
                .collect::<Vec<_>>(),
            vec![5, 2]
        );
    }

    #[test]
    fn too_few_calls_are_marked() {
        let mut recs = Vec::new();
        let mut rec = synth::empty_record("few", 0, 1, "h");
        rec.sites = vec![synth::site(0, "a.c", 1, "f")];
        rec.profile = Some(mpiover_common::record::ProfileUse {
            path: "p".into(),
            matched: true,
            q_max: Some(0.5),
            note: None,
        });
        let mut rng = synth::Rng::new(3);
        synth::push_entry(
            &mut rec,
            &mut rng,
            synth::EntrySpec {
                site: 0,
                function: "MPI_Recv",
                p: 1,
                bytes: 8,
                peer: Some(0),
                role: None,
                completes: None,
                post_site: None,
                count: 3,
                times: Times {
                    base_s: 1e-3,
                    noise_s: 1e-6,
                    delay_s: 0.0,
                },
                tmax_s: 1e-6,
            },
            true,
            100,
        );
        recs.push(rec);
        let r = report(&recs, None);
        assert_eq!(r.sites[0].significance, "too few calls");
        assert_eq!(r.methods.min_calls, Some(5));
    }

    #[test]
    fn source_lines_around_a_site() {
        let p = std::env::temp_dir().join(format!("mpiover-src-{}.c", std::process::id()));
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&p, text).unwrap();
        let s = read_source(p.to_str().unwrap(), 10, 2).unwrap();
        assert_eq!(
            s.lines.iter().map(|l| l.0).collect::<Vec<_>>(),
            vec![8, 9, 10, 11, 12]
        );
        assert_eq!(s.lines[2].1, "line 10");
        assert!(read_source(p.to_str().unwrap(), 99, 2).is_none());
        assert!(read_source("/nonexistent/x.c", 1, 2).is_none());
        let _ = std::fs::remove_file(p);
    }

    #[test]
    fn fixed_point_sums_do_not_depend_on_order() {
        let xs = [0.1, 1e-9, 3.3, 7e-7, 2.5e-3];
        let mut a = Fx::default();
        let mut b = Fx::default();
        for x in xs {
            a.add(x);
        }
        for x in xs.iter().rev() {
            b.add(*x);
        }
        assert_eq!(a, b);
        assert!((a.get() - xs.iter().sum::<f64>()).abs() < 1e-12);
    }
}
