//! Writing the record: once per process, at `MPI_Finalize` (after
//! `PMPI_Finalize`, so that its time is in the record), `MPI_Abort`, process
//! exit, or a fatal signal (best effort). Recording stops first; every
//! thread's aggregates are merged, call sites located and resolved, and the
//! JSON goes to a temporary name that is then renamed to `rank-NNNNNN.json`,
//! so a reader never sees half a file. No MPI call is made here.
//!
//! At process exit and on a signal the process may be killed at any moment
//! (mpirun tears a job down with SIGTERM, then SIGKILL): the record is first
//! written with its sites only located (module, build-id, offset; each site's
//! `note` says "unresolved (signal)" / "unresolved (exit)"), which takes well
//! under a millisecond, and then rewritten with file, line and function once
//! the debug information was read. A signal that arrives while the record is
//! being written waits for the write to end (see `interpose/src/init/mod.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU8, Ordering::*};

use mpiover_common::histogram::Histogram;
use mpiover_common::record::{self, Entry, Folded, FunctionTotal, Record, Timer, Tool};

use crate::names::{FN_NAMES, NFUNCS};
use crate::rt::{self, CallKey, KeyStats, SiteRef};
use crate::run::INFO;
use crate::timer;

/// On a fatal signal during the job log merge: makes sure the record kept
/// for it is this rank's own file; false when no merge runs.
/// Async-signal-safe (see `spare`).
pub fn save_merging() -> bool {
    crate::spare::write_in_handler()
}

/// Set when writing starts (recording cannot be switched on again).
pub static WRITTEN: AtomicBool = AtomicBool::new(false);
/// 0: not written, 1: being written (by thread `WRITER_TID`), 2: done.
pub static PHASE: AtomicU8 = AtomicU8::new(0);
pub static WRITER_TID: AtomicI32 = AtomicI32::new(0);
/// An asynchronous signal that arrived on the writing thread while it wrote
/// outside a signal handler; delivered again when the write is done.
pub static PENDING_SIG: AtomicI32 = AtomicI32::new(0);
/// A signal handler on another thread waits for the write (debug output).
pub static WAITING_SIG: AtomicI32 = AtomicI32::new(0);

/// The kernel id of the calling thread.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no preconditions (async-signal-safe).
    unsafe { libc::syscall(libc::SYS_gettid) as i32 }
}

struct Merged {
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
    over: u64,
    tmax_s: Option<mpiover_common::profile::Lookup>,
    tmax_composed: Option<&'static str>,
    tmax_missing: Option<&'static str>,
    /// Posts: where their requests were completed (0: not seen).
    done_ra: SiteRef,
    hist: Histogram,
}

fn name_of(fid: u16) -> String {
    FN_NAMES
        .get(fid as usize)
        .copied()
        .unwrap_or("other")
        .to_string()
}

/// What every thread recorded, summed over threads.
struct Gathered {
    /// Calls and ticks per function id.
    funcs: Vec<[u64; 2]>,
    merged: HashMap<CallKey, Merged>,
    folded: Folded,
    regions: crate::region_records::Regions,
    /// Requests the map dropped, and completions it could not match.
    dropped: u64,
    unmatched: u64,
    py_calls: u64,
    py_fallbacks: u64,
    /// Threads still inside an update, whose tables were not read.
    left_out: u32,
    /// The kernel offered the barrier that stops other threads' updates.
    barrier: bool,
}

/// Builds this rank's record from every thread's aggregates, with its sites
/// located but not symbolized; returns it with each site's reference
/// (`addrs[i]` is site `i`).
pub fn build(finished: &str) -> Option<(Record, Vec<SiteRef>)> {
    let info = INFO.get()?;
    let unit = timer::unit_s();
    let end_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    let app_time_s = timer::mono_ns().wrapping_sub(info.start_mono_ns) as f64 * 1e-9;

    let g = gather();
    let addrs = number_sites(&g.merged, &g.regions);
    let objs = crate::objects::objects();
    let sites = addrs
        .iter()
        .map(|(&ra, &id)| crate::sites::locate(id, ra, &objs))
        .collect();
    let warnings = record_warnings(info, &g);
    let entries = entries(g.merged, &addrs, unit);
    let (regions, regions_folded) = g.regions.into_record(&addrs, unit);
    let (functions, calls, ticks) = function_totals(&g.funcs, unit);

    let rec = Record {
        end_unix_s,
        app_time_s,
        mpi_time_s: ticks as f64 * unit,
        finished: finished.to_string(),
        timer: Timer {
            name: timer::name().to_string(),
            unit_s: unit,
            resolution_s: info.timer_resolution_s,
            cost_s: info.timer_cost_s,
        },
        tool: Tool {
            version: env!("CARGO_PKG_VERSION").to_string(),
            cost_per_call_s: info.cost_per_call_s,
            calls,
            depth: info.depth,
            max_keys: info.max_keys,
            merge_s: None,
            python: info
                .python
                .as_ref()
                .map(|(name, cost)| record::PythonSites {
                    interpreter: name.clone(),
                    cost_per_call_s: *cost,
                    calls: g.py_calls,
                    fallbacks: g.py_fallbacks,
                }),
        },
        profile: crate::overhead::usage(),
        sites,
        functions,
        entries,
        folded: g.folded,
        warnings,
        eager_limit: crate::run::eager_limit(),
        regions,
        regions_folded,
        ..info.head.clone()
    };
    Some((rec, addrs.into_keys().collect()))
}

/// Sums every thread's aggregates, once recording is off (`write_record`).
fn gather() -> Gathered {
    let me = rt::this_thread_state();
    let mut g = Gathered {
        funcs: vec![[0u64; 2]; NFUNCS + 1],
        merged: HashMap::new(),
        folded: Folded::default(),
        regions: Default::default(),
        dropped: 0,
        unmatched: 0,
        py_calls: 0,
        py_fallbacks: 0,
        left_out: 0,
        barrier: false,
    };
    // Recording is off (`write_record`); after this barrier no other thread
    // starts an update, and the ones inside one are waited for (`rt::quiesce`).
    g.barrier = rt::barrier_all_threads();
    for ts in rt::threads() {
        // SAFETY: states are never freed, and no other thread changes this
        // one's table once it is not `updating` (see above).
        let ts = unsafe { &*ts };
        if !std::ptr::eq(ts, me) {
            // A thread preempted inside its update finishes it at its next
            // time slice: give it the CPU (machines run more ranks and
            // threads than cores), for at most 200 ms.
            let t0 = timer::mono_ns();
            while ts.updating.load(Acquire) && timer::mono_ns().wrapping_sub(t0) < 200_000_000 {
                std::thread::yield_now();
            }
            if ts.updating.load(Acquire) {
                // Stuck inside an update (stopped by a debugger, or the
                // scheduler): its table is not read rather than read torn.
                g.left_out += 1;
                continue;
            }
        }
        if !ts.current() {
            continue; // recorded before an MPI_Pcontrol(2) reset
        }
        for (acc, f) in g.funcs.iter_mut().zip(ts.funcs.iter()) {
            acc[0] += f[0];
            acc[1] = acc[1].wrapping_add(f[1]);
        }
        let (d, u) = ts.request_counts();
        g.dropped += d;
        g.unmatched += u;
        g.py_calls += ts.py_calls;
        g.py_fallbacks += ts.py.as_ref().map_or(0, |c| c.fallbacks);
        g.folded.calls += ts.table.folded_calls;
        g.folded.keys += ts.table.folded_keys();
        merge_entries(&mut g.merged, &ts.table.entries);
        g.regions.add(&ts.regions);
    }
    g
}

/// Adds one thread's keys to the rank's.
fn merge_entries(merged: &mut HashMap<CallKey, Merged>, entries: &[KeyStats]) {
    for a in entries {
        let (count, sum) = (a.count(), a.sum());
        if count == 0 {
            continue;
        }
        let h = a.hist.sparse();
        match merged.get_mut(&a.key) {
            Some(m) => {
                m.count += count;
                m.sum = m.sum.wrapping_add(sum);
                m.min = m.min.min(a.min);
                m.max = m.max.max(a.max);
                m.over = m.over.wrapping_add(a.over);
                m.hist.merge(&h);
                if !a.done_ra.is_none() {
                    m.done_ra = a.done_ra;
                }
            }
            None => {
                merged.insert(
                    a.key,
                    Merged {
                        count,
                        sum,
                        min: a.min,
                        max: a.max,
                        over: a.over,
                        tmax_s: a.tmax_s,
                        tmax_composed: a.tmax_composed,
                        tmax_missing: a.tmax_missing,
                        done_ra: a.done_ra,
                        hist: h,
                    },
                );
            }
        }
    }
}

/// Sites: every distinct site of the keys and regions, numbered in order.
fn number_sites(
    merged: &HashMap<CallKey, Merged>,
    regions: &crate::region_records::Regions,
) -> BTreeMap<SiteRef, u32> {
    let mut addrs: BTreeMap<SiteRef, u32> = BTreeMap::new();
    regions.sites(&mut addrs);
    for (k, m) in merged {
        addrs.insert(k.ra, 0);
        if !k.post_ra.is_none() {
            addrs.insert(k.post_ra, 0);
        }
        if !m.done_ra.is_none() {
            addrs.insert(m.done_ra, 0);
        }
    }
    for (i, v) in addrs.values_mut().enumerate() {
        *v = i as u32;
    }
    addrs
}

/// The record's entries, by time spent, heaviest first.
fn entries(
    merged: HashMap<CallKey, Merged>,
    addrs: &BTreeMap<SiteRef, u32>,
    unit: f64,
) -> Vec<Entry> {
    let mut entries: Vec<Entry> = merged
        .into_iter()
        .map(|(k, m)| Entry {
            site: addrs.get(&k.ra).copied().unwrap_or(0),
            requests: k.requests(&name_of(k.fid)),
            completed_at: if !m.done_ra.is_none() {
                addrs.get(&m.done_ra).copied()
            } else {
                None
            },
            tmax_composed: m.tmax_composed.map(str::to_string),
            tmax_missing: m.tmax_missing.map(str::to_string),
            function: name_of(k.fid),
            p: k.p,
            bytes: k.bytes,
            peer: (k.peer != rt::NONE_PEER).then_some(k.peer),
            cross_host: (k.peer != rt::NONE_PEER)
                .then(|| crate::overhead::crosses_host(k.peer))
                .flatten(),
            role: rt::role_name(k.role).map(str::to_string),
            completes: (k.completes != rt::NONE_FN).then(|| name_of(k.completes)),
            post_site: if !k.post_ra.is_none() {
                addrs.get(&k.post_ra).copied()
            } else {
                None
            },
            count: m.count,
            sum_s: m.sum as f64 * unit,
            min_s: m.min as f64 * unit,
            max_s: m.max as f64 * unit,
            tmax_s: m.tmax_s.map(|t| t.tmax_s),
            overhead_s: m.tmax_s.map(|_| m.over as f64 * unit),
            tmax_out_of_range: m.tmax_s.is_some_and(|t| t.out_of_range),
            tmax_basis: m.tmax_s.map(|t| t.basis),
            hist: m.hist,
        })
        .collect();
    entries.sort_by(|a, b| b.sum_s.total_cmp(&a.sum_s).then(a.site.cmp(&b.site)));
    entries
}

/// Calls and time per function, heaviest first, with the totals of calls
/// and ticks.
fn function_totals(funcs: &[[u64; 2]], unit: f64) -> (Vec<FunctionTotal>, u64, u64) {
    let mut functions = Vec::new();
    let (mut calls, mut ticks) = (0u64, 0u64);
    for (fid, f) in funcs.iter().enumerate().take(NFUNCS) {
        if f[0] == 0 {
            continue;
        }
        calls += f[0];
        ticks = ticks.wrapping_add(f[1]);
        functions.push(FunctionTotal {
            function: name_of(fid as u16),
            calls: f[0],
            time_s: f[1] as f64 * unit,
        });
    }
    functions.sort_by(|a, b| b.time_s.total_cmp(&a.time_s));
    (functions, calls, ticks)
}

/// The record's warnings: the run's, and what this write could not see.
fn record_warnings(info: &crate::run::RunInfo, g: &Gathered) -> Vec<String> {
    let mut w = request_warnings(&info.warnings, g.dropped, g.unmatched);
    if g.py_fallbacks > 0 {
        w.push(
            "python: some MPI calls made from Python are at the nearest native frame \
             (the interpreter's frames did not read as expected, or the table of Python \
             sites was full)"
                .into(),
        );
    }
    if g.left_out > 0 {
        w.push(
            "a thread was still recording when the record was written: its calls are not \
             in the record"
                .into(),
        );
    }
    if !g.barrier {
        w.push(
            "the kernel offers no membarrier: other threads may still have been recording \
             while the record was read"
                .into(),
        );
    }
    w
}

/// The run's warnings, and what the request map could not attribute. The
/// text holds no per-rank numbers, so that the report lists each once with
/// the ranks that raised it (the counts go to stderr with `MPIOVER_DEBUG`).
fn request_warnings(w: &[String], dropped: u64, unmatched: u64) -> Vec<String> {
    let mut w = w.to_vec();
    if dropped > 0 {
        w.push(format!(
            "request map full: posted requests were not remembered (more than {} \
             pending on one thread); their completions have no posting site",
            rt::REQ_CAPACITY
        ));
    }
    if unmatched > 0 {
        w.push(
            "unmatched completions: completed requests that no wrapped call on the \
             completing thread posted while recording have no posting site (requests \
             made by calls the tool does not time as posts: MPI_Comm_idup, generalized \
             requests, MPI-IO, RMA, MPI-4 persistent collectives, partitioned and \
             MPI_Isendrecv; or posted on another thread, under MPI_Pcontrol(0), or past \
             a full request map)"
                .to_string(),
        );
    }
    if (dropped > 0 || unmatched > 0) && crate::run::debug() {
        eprintln!(
            "mpiover: rank {}: request map: {dropped} posts not remembered, \
             {unmatched} unmatched completions",
            INFO.get().map(|i| i.head.rank).unwrap_or(0)
        );
    }
    w
}

/// How the record is being written.
#[derive(Clone, Copy, PartialEq)]
pub enum When {
    /// `MPI_Finalize`, `MPI_Abort`: resolve, then write once.
    Normal,
    /// `MPI_Finalize` with a job log (`MPIOVER_FORMAT=log|both`), before
    /// `PMPI_Finalize`: resolve, then merge over MPI into the log; the
    /// record is written on its own too with `both`, or when the merge failed.
    Merge,
    /// Process exit without `MPI_Finalize`: mpirun may kill us any moment.
    Exit,
    /// Inside a signal handler.
    Signal,
}

/// Stops recording and writes this rank's record, once. Never panics; a
/// failure gives one warning on stderr. Returns after the write is done (or
/// at once when another thread writes it).
pub fn write_record(finished: &str, when: When) {
    if INFO.get().is_none() || PHASE.compare_exchange(0, 1, SeqCst, SeqCst).is_err() {
        return;
    }
    WRITER_TID.store(gettid(), SeqCst);
    WRITTEN.store(true, SeqCst);
    rt::STATE.fetch_and(!rt::ENABLED, SeqCst);
    {
        let _busy = rt::busy();
        write_now(finished, when);
    }
    let waiting = WAITING_SIG.load(SeqCst);
    PHASE.store(2, SeqCst);
    if crate::run::debug() && waiting != 0 {
        eprintln!("mpiover: debug: signal {waiting} waited on another thread for the write");
    }
    if when != When::Signal {
        let sig = PENDING_SIG.swap(0, SeqCst);
        if sig != 0 {
            if crate::run::debug() {
                eprintln!("mpiover: debug: signal {sig} came during the write; delivered now");
            }
            crate::signal_actions::redeliver(sig);
        }
    }
}

fn write_now(finished: &str, when: When) {
    let Some(info) = INFO.get() else { return };
    let Some(dir) = info.dir.as_ref() else { return };
    let t0 = timer::mono_ns();
    let Some((mut rec, addrs)) = build(finished) else {
        return;
    };
    let t1 = timer::mono_ns();
    let quick_note = match when {
        When::Normal | When::Merge => None,
        When::Exit => Some("unresolved (exit)"),
        When::Signal => Some("unresolved (signal)"),
    };
    if let Some(note) = quick_note {
        let resolved = std::mem::take(&mut rec.sites);
        rec.sites = resolved.clone();
        for s in rec.sites.iter_mut().filter(|s| s.note.is_none()) {
            s.note = Some(note.to_string());
        }
        if !crate::record_file::save(info, dir, &rec) {
            return;
        }
        rec.sites = resolved;
        if crate::run::slow_write() {
            std::thread::sleep(std::time::Duration::from_millis(300));
        }
    }
    let t2 = timer::mono_ns();
    if when == When::Merge {
        // The sites are resolved once for the job inside the merge. While it
        // waits in MPI a peer may die, and the launcher then ends the job:
        // the record is in this rank's own file before the merge starts
        // (see `spare`), with the sites as they are (the report resolves
        // them from the modules).
        let mut unresolved = rec.clone();
        for s in unresolved.sites.iter_mut().filter(|s| s.note.is_none()) {
            s.note = Some("unresolved (written before the job log merge)".into());
        }
        let spare = crate::spare::Spare::of(unresolved, dir, info.head.rank, info.head.pid);
        if let Some(mut spare) = spare {
            if info.head.ranks <= crate::spare::FILE_MAX_RANKS {
                spare.write_now();
            }
            crate::spare::keep(spare);
        }
        if signal_came() {
            // The launcher is ending the job while the record was built: the
            // merge would wait for ranks that are gone. The spare stays as
            // this rank's record; the signal is delivered after.
            crate::spare::write_in_handler();
            return;
        }
        let merged = crate::merge::into_job_log(info, dir, &mut rec, &addrs, &mut |rec, done| {
            resolve_sites(info, when, rec, &addrs, done)
        });
        let log_only = merged && crate::run::format() == crate::opt::Format::Log;
        crate::spare::take(log_only);
        if log_only {
            return;
        }
    } else {
        resolve_sites(info, when, &mut rec, &addrs, &[]);
    }
    let t3 = timer::mono_ns();
    crate::record_file::save(info, dir, &rec);
    if crate::run::debug() {
        eprintln!(
            "mpiover: debug: rank {} record ({finished}): build {:.3} ms, quick write {:.3} ms, \
             symbolize {} sites {:.3} ms, write {:.3} ms",
            info.head.rank,
            (t1 - t0) as f64 * 1e-6,
            (t2 - t1) as f64 * 1e-6,
            addrs.len(),
            (t3 - t2) as f64 * 1e-6,
            timer::mono_ns().wrapping_sub(t3) as f64 * 1e-6
        );
    }
}

/// Whether a signal came while this thread wrote (held back until the
/// write is done) or another thread's handler waits for the write.
fn signal_came() -> bool {
    PENDING_SIG.load(SeqCst) != 0 || WAITING_SIG.load(SeqCst) != 0
}

/// Resolves the sites not `done` (a missing flag is false): function, file,
/// line, and at depth 1 the tail-call note.
fn resolve_sites(
    info: &crate::run::RunInfo,
    when: When,
    rec: &mut Record,
    addrs: &[SiteRef],
    done: &[bool],
) {
    let todo = |i: usize| !done.get(i).copied().unwrap_or(false);
    for (i, (s, &ra)) in rec.sites.iter_mut().zip(addrs.iter()).enumerate() {
        if todo(i) {
            crate::sites::symbolize(s, ra);
        }
    }
    // Not on the way out (exit, signal): mpirun's SIGKILL may be near, and
    // the note is not worth the resolved record.
    if info.depth == 1 && matches!(when, When::Normal | When::Merge) {
        let objs = crate::objects::objects();
        for (i, (s, &ra)) in rec.sites.iter_mut().zip(addrs.iter()).enumerate() {
            if todo(i) && s.note.is_none() {
                s.note = crate::tail_call::note(&objs, ra);
            }
        }
    }
}
