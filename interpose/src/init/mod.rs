//! What happens inside `MPI_Init` / `MPI_Init_thread` (after `PMPI_Init*`
//! succeeded): options, world geometry, timer, run directory (decided by rank
//! 0 and broadcast with `PMPI_Bcast`), the tool's own cost per call, and the
//! handlers that write the record at exit or on a fatal signal.

use std::os::raw::c_int;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use mpiover_common::record::Record;

use crate::{rt, timer};

mod about;
mod cost;
mod foreign;
mod run_dir;
mod signals;

pub use about::*;
use cost::*;
pub use foreign::check_before_init;
use run_dir::*;
use signals::install_exit_handlers;

use crate::run::{warn, RunInfo, EAGER_LIMIT, INFO};

/// Asks the library's eager limit through `MPI_T`, once, on entry of
/// `MPI_Finalize`: the report's rendezvous threshold when no profile
/// measured one. Not at `MPI_Init`, because initializing `MPI_T` in Open MPI
/// registers every component's variables, thousands of allocations from the
/// program's heap, most freed again: the holes they leave change where the
/// program's next allocations land (Open MPI's `osc/rdma` then refused an
/// `MPI_Win_attach` of small `MPI_Alloc_mem` blocks that without the tool
/// shared pages; `examples/dynamic_window.c`, test
/// `transparency_dynamic_window_attach`). At finalize the
/// program's heap is done with. A record written without `MPI_Finalize`
/// (exit, signal, abort) has no stated limit.
pub fn ask_eager_limit() {
    if INFO.get().is_none() || EAGER_LIMIT.get().is_some() {
        return;
    }
    let _busy = rt::busy();
    if let Some((cvar, bytes)) = mpiover_mpisys::mpit::eager_limit() {
        let _ = EAGER_LIMIT.set(mpiover_common::profile::MpiTValue {
            cvar: cvar.to_string(),
            bytes,
        });
    }
}

static INIT_STARTED: AtomicBool = AtomicBool::new(false);

/// `CLOCK_MONOTONIC` (ns) and Unix time (f64 bits) at the entry of the first
/// `MPI_Init*`: the start of the application time.
static ENTRY_MONO_NS: AtomicU64 = AtomicU64::new(0);

static ENTRY_UNIX_BITS: AtomicU64 = AtomicU64::new(0);

/// Called on entry of `MPI_Init*` (before the PMPI call): remembers when the
/// application's MPI life started (first call only) and returns the
/// monotonic time, to time the call.
pub fn note_init_entry() -> u64 {
    let m = crate::timer::mono_ns();
    if ENTRY_MONO_NS.compare_exchange(0, m, SeqCst, SeqCst).is_ok() {
        let u = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        ENTRY_UNIX_BITS.store(u.to_bits(), SeqCst);
    }
    m
}

/// Whether recording can be switched on (initialized, record not written).
pub fn recording_possible() -> bool {
    INFO.get().is_some() && !crate::write::WRITTEN.load(Relaxed)
}

const BCAST_LEN: usize = 8192;

/// Called by `MPI_Session_init`: a process that has not called `MPI_Init*`
/// is told once (rank 0 of the launcher, unless `MPIOVER_QUIET`) that its
/// sessions are not profiled; after `MPI_Init*` nothing is said (the world
/// model's calls are recorded as usual, and calls on a session's
/// communicators are recorded like any other).
pub fn note_session() {
    static SAID: AtomicBool = AtomicBool::new(false);
    if INIT_STARTED.load(SeqCst) || SAID.swap(true, SeqCst) {
        return;
    }
    if !crate::opt::get().quiet && foreign::launcher_rank_is_zero() {
        crate::run::say_warning(
            "MPI_Session_init before MPI_Init: mpiover records from MPI_Init or \
             MPI_Init_thread on, so MPI used through sessions alone is not profiled (no record \
             is written unless the process also calls MPI_Init)",
        );
    }
}

/// Called once, after `PMPI_Init*` succeeded: `fid` is the function
/// (`MPI_Init`, `MPI_Init_thread`, or their Fortran twins, which report under
/// the C name) and `init_ns` how long the PMPI call took.
pub fn on_init(level: Option<c_int>, fid: u16, init_ns: u64) {
    if INIT_STARTED.swap(true, SeqCst) {
        return;
    }
    let opts = crate::opt::get();
    // Built for another MPI library: every handle of ours would be invalid
    // in the program's library. Recording stays off (every wrapper then only
    // forwards), and no MPI call of ours is made.
    if let Some(msg) = foreign::foreign_library() {
        if !opts.quiet && foreign::launcher_rank_is_zero() {
            eprintln!("mpiover: {msg}");
        }
        return;
    }
    let busy = rt::busy();
    if ENTRY_MONO_NS.load(SeqCst) == 0 {
        note_init_entry();
    }
    let start_unix_s = f64::from_bits(ENTRY_UNIX_BITS.load(SeqCst));
    let start_mono_ns = ENTRY_MONO_NS.load(SeqCst);
    let (mut rank, mut size) = (0 as c_int, 1 as c_int);
    // SAFETY: MPI is initialized; out-pointers valid.
    unsafe {
        PMPI_Comm_rank(consts::comm_world(), &mut rank);
        PMPI_Comm_size(consts::comm_world(), &mut size);
    }
    let print = rank == 0;
    let mut warnings = Vec::new();
    for p in &opts.problems {
        warn(&mut warnings, p.clone(), print);
    }
    rt::set_depth(opts.depth);
    rt::MAX_KEYS.store(opts.max_keys, Relaxed);
    rt::init_world(rank, size);
    rt::register_barrier();
    crate::sites::init_self_range();
    crate::py::init(&crate::objects::objects(), opts, &mut warnings, print);
    crate::fort_conv::init_sentinels();
    timer::init(opts.timer.use_tsc());
    rt::set_clock();
    let command = command_line();

    let (run_id, dir) = agree_run_dir(rank, opts, &command, &mut warnings);

    let mpi_library = library_version();
    crate::overhead::load(
        rank.max(0) as u32,
        size.max(0) as u32,
        &mpi_library,
        &mut warnings,
    );
    let (res, cost) = timer::characterize(timer::unit_quick());
    let info = RunInfo {
        head: Record {
            schema: mpiover_common::record::RECORD_SCHEMA.to_string(),
            run_id,
            rank: rank.max(0) as u32,
            ranks: size.max(0) as u32,
            host: hostname(),
            pid: std::process::id(),
            mpi_library,
            thread_level: level_name(level.or_else(query_thread)),
            command,
            start_unix_s,
            ..Record::default()
        },
        start_mono_ns,
        dir,
        timer_resolution_s: res,
        timer_cost_s: cost,
        cost_per_call_s: 0.0,
        python: None,
        depth: opts.depth,
        max_keys: opts.max_keys,
        warnings,
    };
    drop(busy);

    // The tool's own cost, with recording on, then forgotten.
    rt::STATE.fetch_or(rt::ENABLED, SeqCst);
    let cost_per_call_s = measure_cost(info.timer_cost_s);
    let mut info = info;
    let ts = rt::this_thread_state();
    measure_python_cost(ts, &mut info, opts.depth, print);
    if !ts.is_null() {
        // SAFETY: this thread's own state, not in use right now.
        unsafe { (*ts).reset() };
    }
    let _ = INFO.set(RunInfo {
        cost_per_call_s,
        ..info
    });
    // Every call is counted, MPI_Init* too (its PMPI time; the tool's own
    // set-up above is application time outside MPI).
    if let Some(mut g) = rt::enter() {
        g.plain(fid, timer::ticks_from_ns(init_ns));
    }
    install_exit_handlers();
}

/// Rank 0 decides the run directory and the run id; every rank learns them
/// (collective over `MPI_COMM_WORLD`). No directory: no records, a warning.
fn agree_run_dir(
    rank: c_int,
    opts: &crate::opt::Opts,
    command: &[String],
    warnings: &mut Vec<String>,
) -> (String, Option<PathBuf>) {
    let mut buf = vec![0u8; BCAST_LEN];
    if rank == 0 {
        let run_id = format!(
            "{}-{:x}-{:x}",
            mpiover_common::run::dir::local_timestamp(),
            std::process::id(),
            timer::now() & 0xffff_ffff
        );
        let msg = match make_run_dir(opts.out.as_deref(), command) {
            Ok(d) => format!("1\n{run_id}\n{}", d.display()),
            Err(e) => {
                warn(
                    warnings,
                    format!("{e}; no records will be written (the application runs on)"),
                    true,
                );
                format!("0\n{run_id}\n{e}")
            }
        };
        let m = msg.as_bytes();
        let n = m.len().min(BCAST_LEN - 1);
        buf[..n].copy_from_slice(&m[..n]);
    }
    // SAFETY: every rank passes a buffer of BCAST_LEN bytes.
    unsafe {
        PMPI_Bcast(
            buf.as_mut_ptr() as *mut libc::c_void,
            BCAST_LEN as c_int,
            consts::byte(),
            0,
            consts::comm_world(),
        );
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(BCAST_LEN);
    let text = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut parts = text.splitn(3, '\n');
    let ok = parts.next() == Some("1");
    let run_id = parts.next().unwrap_or("").to_string();
    let rest = parts.next().unwrap_or("").to_string();
    let dir = if ok { Some(PathBuf::from(&rest)) } else { None };
    if !ok && rank != 0 {
        warnings.push(format!("{rest}; no records will be written"));
    }
    (run_id, dir)
}

/// The added cost per call of a Python site, measured on this thread
/// (start-up runs inside mpi4py's import); a failed self-test switches
/// Python sites off.
fn measure_python_cost(ts: *mut rt::ThreadState, info: &mut RunInfo, depth: u32, print: bool) {
    if crate::py::ON.load(Relaxed) && !ts.is_null() {
        // SAFETY: this thread's own state, not in use right now.
        let cache = unsafe { &mut (*ts).py };
        match crate::py::measure_cost(cache, depth) {
            Ok(cost) => {
                info.python = crate::py::interpreter().map(|n| (n, cost.unwrap_or(0.0)));
            }
            Err(_) => crate::py::disable(
                &mut info.warnings,
                print,
                "the interpreter's frames did not read as expected at start-up",
            ),
        }
    }
}
