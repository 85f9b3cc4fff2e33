//! What happens inside `MPI_Init` / `MPI_Init_thread` (after `PMPI_Init*`
//! succeeded): options, world geometry, timer, run directory (decided by rank
//! 0 and broadcast with `PMPI_Bcast`), the tool's own cost per call, and the
//! handlers that write the record at exit or on a fatal signal.

use std::os::raw::c_int;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::*};
use std::sync::OnceLock;

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::{rt, timer};

/// Facts about the run, fixed at init; read when the record is written.
pub struct RunInfo {
    pub rank: u32,
    pub ranks: u32,
    pub host: String,
    pub pid: u32,
    pub mpi_library: String,
    pub thread_level: String,
    pub command: Vec<String>,
    pub start_unix_s: f64,
    pub start_mono_ns: u64,
    pub run_id: String,
    /// None: no records are written (the directory was not writable).
    pub dir: Option<PathBuf>,
    pub timer_resolution_s: f64,
    pub timer_cost_s: f64,
    pub cost_per_call_s: f64,
    pub depth: u32,
    pub max_keys: u32,
    pub warnings: Vec<String>,
    /// The eager limit the library states through `MPI_T`, if it does.
    pub eager_limit: Option<mpiover_common::profile::MpiTValue>,
}

pub static INFO: OnceLock<RunInfo> = OnceLock::new();
static INIT_STARTED: AtomicBool = AtomicBool::new(false);
/// `CLOCK_MONOTONIC` (ns) and Unix time (f64 bits) at the entry of the first
/// `MPI_Init*`: the start of the application time.
static ENTRY_MONO_NS: AtomicU64 = AtomicU64::new(0);
static ENTRY_UNIX_BITS: AtomicU64 = AtomicU64::new(0);
/// `MPIOVER_QUIET` set; `MPIOVER_DEBUG` set (timings of the record write on
/// stderr); `MPIOVER_DEBUG=slow-write` (tests: 300 ms pass between the quick
/// and the resolved write of a record at exit or on a signal).
static QUIET: AtomicBool = AtomicBool::new(false);
static DEBUG: AtomicBool = AtomicBool::new(false);
static SLOW_WRITE: AtomicBool = AtomicBool::new(false);

pub fn quiet() -> bool {
    QUIET.load(Relaxed)
}

pub fn debug() -> bool {
    DEBUG.load(Relaxed)
}

pub fn slow_write() -> bool {
    SLOW_WRITE.load(Relaxed)
}

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

/// One warning: into the record always, on stderr once (rank 0 only for
/// warnings every rank would repeat).
pub fn warn(warnings: &mut Vec<String>, msg: String, print: bool) {
    if print && !quiet() {
        eprintln!("mpiover: warning: {msg}");
    }
    warnings.push(msg);
}

struct Options {
    depth: u32,
    max_keys: u32,
    timer: Option<bool>,
    out: Option<String>,
}

fn options(warnings: &mut Vec<String>, print: bool) -> Options {
    let mut o = Options {
        depth: 1,
        max_keys: 4096,
        timer: None,
        out: None,
    };
    let num = |name: &str, lo: u64, hi: u64, default: u64, w: &mut Vec<String>| -> u64 {
        match std::env::var(name) {
            Err(std::env::VarError::NotPresent) => default,
            Ok(v) => match v.trim().parse::<u64>() {
                Ok(n) if (lo..=hi).contains(&n) => n,
                _ => {
                    warn(
                        w,
                        format!("{name}={v:?} is not an integer in {lo}..={hi}; using {default}"),
                        print,
                    );
                    default
                }
            },
            Err(_) => {
                warn(
                    w,
                    format!("{name} is not valid UTF-8; using {default}"),
                    print,
                );
                default
            }
        }
    };
    o.depth = num("MPIOVER_DEPTH", 1, 64, 1, warnings) as u32;
    o.max_keys = num("MPIOVER_MAX_KEYS", 1, 1 << 20, 4096, warnings) as u32;
    match crate::timer::choice_from_env() {
        Ok(choice) => o.timer = choice,
        Err(v) => warn(
            warnings,
            format!("MPIOVER_TIMER={v:?} is not tsc, clock or auto; using auto"),
            print,
        ),
    }
    match std::env::var("MPIOVER_OUT") {
        Ok(v) if !v.is_empty() => o.out = Some(v),
        _ => {}
    }
    o
}

/// argv from /proc/self/cmdline.
pub fn command_line() -> Vec<String> {
    match std::fs::read("/proc/self/cmdline") {
        Ok(b) => b
            .split(|&c| c == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect(),
        Err(_) => Vec::new(),
    }
}

fn program_name(cmd: &[String]) -> String {
    let base = cmd
        .first()
        .and_then(|a| Path::new(a).file_name())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "program".into());
    mpiover_common::rundir::program_component(&base)
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: buffer and its length.
    let r = unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) };
    if r != 0 {
        return "unknown".into();
    }
    let end = buf.iter().position(|&c| c == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

fn library_version() -> String {
    let n = consts::max_library_version_string().max(256) as usize;
    let mut buf = vec![0u8; n + 1];
    let mut len: c_int = 0;
    // SAFETY: buffer of at least MPI_MAX_LIBRARY_VERSION_STRING bytes.
    let r = unsafe { PMPI_Get_library_version(buf.as_mut_ptr() as *mut libc::c_char, &mut len) };
    if r != 0 {
        return String::new();
    }
    let len = (len.max(0) as usize).min(n);
    String::from_utf8_lossy(buf.get(..len).unwrap_or(&[]))
        .trim_end_matches(['\0', '\n', ' '])
        .to_string()
}

/// The thread level MPI granted (after a plain `MPI_Init`: `single` by
/// default, but Open MPI's `OMPI_MPI_THREAD_LEVEL` and MPICH's
/// `MPIR_CVAR_DEFAULT_THREAD_LEVEL` can raise it).
fn query_thread() -> Option<c_int> {
    let mut l: c_int = 0;
    // SAFETY: MPI is initialized; out-pointer valid.
    (unsafe { PMPI_Query_thread(&mut l) } == 0).then_some(l)
}

fn level_name(level: Option<c_int>) -> String {
    match level {
        None => "single".into(),
        Some(l) if l == consts::thread_single() => "single".into(),
        Some(l) if l == consts::thread_funneled() => "funneled".into(),
        Some(l) if l == consts::thread_serialized() => "serialized".into(),
        Some(l) if l == consts::thread_multiple() => "multiple".into(),
        Some(l) => format!("unknown({l})"),
    }
}

/// Rank 0: chooses and creates the run directory; returns it, or a reason
/// why records cannot be written there.
fn make_run_dir(out: Option<&str>, cmd: &[String]) -> Result<PathBuf, String> {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let dir = match out {
        Some(o) => {
            let p = cwd.join(o);
            std::fs::create_dir_all(&p)
                .map_err(|e| format!("cannot create run directory {}: {e}", p.display()))?;
            // Records of an earlier run in the same directory would mix runs.
            if let Ok(rd) = std::fs::read_dir(&p) {
                for e in rd.flatten() {
                    let n = e.file_name().to_string_lossy().into_owned();
                    if n.starts_with("rank-") && n.ends_with(".json") {
                        let _ = std::fs::remove_file(e.path());
                    }
                }
            }
            p
        }
        None => {
            let base = format!(
                "mpiover-{}-{}",
                program_name(cmd),
                mpiover_common::rundir::local_timestamp()
            );
            let mut made = None;
            for i in 1..1000 {
                let name = if i == 1 {
                    base.clone()
                } else {
                    format!("{base}-{i}")
                };
                let p = cwd.join(name);
                match std::fs::create_dir(&p) {
                    Ok(()) => {
                        made = Some(p);
                        break;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                    Err(e) => {
                        return Err(format!("cannot create run directory {}: {e}", p.display()))
                    }
                }
            }
            made.ok_or_else(|| {
                format!(
                    "cannot create a run directory {base}-N in {}",
                    cwd.display()
                )
            })?
        }
    };
    let probe = dir.join(format!(".mpiover-probe-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .map_err(|e| format!("cannot write into run directory {}: {e}", dir.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(dir)
}

const BCAST_LEN: usize = 8192;

/// Called once, after `PMPI_Init*` succeeded: `fid` is the function
/// (`MPI_Init`, `MPI_Init_thread`, or their Fortran twins, which report under
/// the C name) and `init_ns` how long the PMPI call took.
pub fn on_init(level: Option<c_int>, fid: u16, init_ns: u64) {
    if INIT_STARTED.swap(true, SeqCst) {
        return;
    }
    QUIET.store(std::env::var_os("MPIOVER_QUIET").is_some(), SeqCst);
    if let Some(d) = std::env::var_os("MPIOVER_DEBUG") {
        DEBUG.store(true, SeqCst);
        SLOW_WRITE.store(d.to_string_lossy().contains("slow-write"), SeqCst);
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
    let opts = options(&mut warnings, print);
    rt::DEPTH.store(opts.depth, Relaxed);
    rt::MAX_KEYS.store(opts.max_keys, Relaxed);
    rt::init_world(rank, size);
    crate::sites::init_self_range();
    crate::fort::init_sentinels();
    timer::init(opts.timer);
    let command = command_line();

    // Rank 0 decides the directory and the run id; everybody learns them.
    let mut buf = vec![0u8; BCAST_LEN];
    if rank == 0 {
        let run_id = format!(
            "{}-{:x}-{:x}",
            mpiover_common::rundir::local_timestamp(),
            std::process::id(),
            timer::now() & 0xffff_ffff
        );
        let msg = match make_run_dir(opts.out.as_deref(), &command) {
            Ok(d) => format!("1\n{run_id}\n{}", d.display()),
            Err(e) => {
                warn(
                    &mut warnings,
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

    let mpi_library = library_version();
    crate::profile_hook::load(
        rank.max(0) as u32,
        size.max(0) as u32,
        &mpi_library,
        &mut warnings,
    );
    let (res, cost) = timer::characterize(timer::unit_quick());
    let info = RunInfo {
        rank: rank.max(0) as u32,
        ranks: size.max(0) as u32,
        host: hostname(),
        pid: std::process::id(),
        mpi_library,
        thread_level: level_name(level.or_else(query_thread)),
        command,
        start_unix_s,
        start_mono_ns,
        run_id,
        dir,
        timer_resolution_s: res,
        timer_cost_s: cost,
        cost_per_call_s: 0.0,
        depth: opts.depth,
        max_keys: opts.max_keys,
        warnings,
        // Asked once, at start-up, outside any wrapper (the busy guard is
        // still held): the report's rendezvous threshold when no profile
        // measured one.
        eager_limit: mpiover_mpisys::mpit::eager_limit().map(|(cvar, bytes)| {
            mpiover_common::profile::MpiTValue {
                cvar: cvar.to_string(),
                bytes,
            }
        }),
    };
    drop(busy);

    // The tool's own cost, with recording on, then forgotten.
    rt::STATE.fetch_or(rt::ENABLED, SeqCst);
    let cost_per_call_s = measure_cost(info.timer_cost_s);
    let ts = rt::this_thread_state();
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

/// Added time per call of the wrapped path: a one-`int` `MPI_Allreduce` on
/// `MPI_COMM_SELF` (an event, and a call that does not run the progress
/// engine, whose time varies by microseconds with the other ranks' traffic)
/// through the wrapper vs `PMPI_Allreduce`. Seven repetitions of eleven
/// alternating pairs of batches; in each repetition the fastest batch of
/// either kind is taken (noise only ever adds time) and their difference is
/// the repetition's estimate; the result is the median of the repetitions,
/// never below two timer reads (the wrapper reads the timer twice).
fn measure_cost(timer_cost_s: f64) -> f64 {
    const BATCH: u64 = 100;
    const PAIRS: usize = 11;
    const REPS: usize = 7;
    let (a, mut b): (c_int, c_int) = (1, 0);
    let sb = &a as *const c_int as *const libc::c_void;
    let rb = &mut b as *mut c_int as *mut libc::c_void;
    let (ty, op, comm) = (consts::int(), consts::op_sum(), consts::comm_self());
    let mut est = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let (mut direct, mut wrapped) = (u64::MAX, u64::MAX);
        for _ in 0..PAIRS {
            let t0 = timer::mono_ns();
            for _ in 0..BATCH {
                // SAFETY: valid buffers of one int each.
                unsafe { PMPI_Allreduce(sb, rb, 1, ty, op, comm) };
            }
            let t1 = timer::mono_ns();
            for _ in 0..BATCH {
                // SAFETY: as above; goes through the generated wrapper.
                unsafe { crate::wrappers::MPI_Allreduce(sb, rb, 1, ty, op, comm) };
            }
            let t2 = timer::mono_ns();
            direct = direct.min(t1.wrapping_sub(t0));
            wrapped = wrapped.min(t2.wrapping_sub(t1));
        }
        est.push((wrapped as f64 - direct as f64) / BATCH as f64 * 1e-9);
        if debug() {
            eprintln!(
                "mpiover: debug: cost batch minima: direct {:.1} ns, wrapped {:.1} ns",
                direct as f64 / BATCH as f64,
                wrapped as f64 / BATCH as f64
            );
        }
    }
    est.sort_by(|a, b| a.total_cmp(b));
    let median = est.get(est.len() / 2).copied().unwrap_or(0.0);
    let floor = 2.0 * timer_cost_s;
    if median.is_finite() {
        median.max(floor)
    } else {
        floor
    }
}

// ---------------------------------------------------------------------------
// Exit and signals
// ---------------------------------------------------------------------------

extern "C" fn at_exit() {
    crate::write::write_record("exit", crate::write::When::Exit);
}

const SIGNALS: [(c_int, &str); 5] = [
    (libc::SIGTERM, "signal:SIGTERM"),
    (libc::SIGINT, "signal:SIGINT"),
    (libc::SIGSEGV, "signal:SIGSEGV"),
    (libc::SIGABRT, "signal:SIGABRT"),
    (libc::SIGBUS, "signal:SIGBUS"),
];

struct OldActions(std::cell::UnsafeCell<[libc::sigaction; 5]>);
// SAFETY: written once in `install_exit_handlers` before any handler of
// ours is installed, only read afterwards.
unsafe impl Sync for OldActions {}
static OLD: OldActions = OldActions(std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }));

/// Size of the alternate signal stack (virtual; pages are committed only as
/// the handler touches them).
const ALT_STACK_BYTES: usize = 4 << 20;

/// An alternate signal stack for the thread that initializes MPI (normally
/// the main thread), unless it has one already: a stack overflow raises
/// SIGSEGV with no stack left to run a handler on, and without this the
/// record of such a rank was lost. Mapped once, never freed (the handler may
/// run until the process ends). Other threads keep the kernel's default; an
/// application that installs its own alternate stack later replaces ours.
fn install_alt_stack() {
    // SAFETY: sigaltstack and mmap with valid pointers; the mapping is
    // private to this call and handed to the kernel only when it succeeded.
    unsafe {
        let mut cur: libc::stack_t = std::mem::zeroed();
        if libc::sigaltstack(std::ptr::null(), &mut cur) != 0
            || cur.ss_flags & libc::SS_DISABLE == 0
        {
            return;
        }
        let page = 4096;
        let base = libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK_BYTES + page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        );
        if base == libc::MAP_FAILED {
            return;
        }
        // Guard page below the stack: an overflow of the handler itself faults
        // cleanly instead of writing into whatever lies below.
        libc::mprotect(base, page, libc::PROT_NONE);
        let ss = libc::stack_t {
            ss_sp: (base as *mut u8).add(page) as *mut libc::c_void,
            ss_flags: 0,
            ss_size: ALT_STACK_BYTES,
        };
        if libc::sigaltstack(&ss, std::ptr::null_mut()) != 0 {
            libc::munmap(base, ALT_STACK_BYTES + page);
        }
    }
}

fn install_exit_handlers() {
    install_alt_stack();
    // SAFETY: plain libc calls with valid pointers.
    unsafe {
        libc::atexit(at_exit);
        let old = &mut *OLD.0.get();
        for (i, (sig, _)) in SIGNALS.iter().enumerate() {
            let mut cur: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(*sig, std::ptr::null(), &mut cur) != 0 {
                continue;
            }
            if cur.sa_sigaction == libc::SIG_IGN {
                continue; // an ignored signal does not end the process
            }
            old[i] = cur;
        }
        for (i, (sig, _)) in SIGNALS.iter().enumerate() {
            if old[i].sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as *const () as usize;
            act.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(*sig, &act, std::ptr::null_mut());
        }
    }
}

fn old_action(sig: c_int) -> Option<libc::sigaction> {
    let i = SIGNALS.iter().position(|(s, _)| *s == sig)?;
    // SAFETY: OLD is only read after installation.
    Some(unsafe { (*OLD.0.get())[i] })
}

/// Delivers `sig` again with the disposition it had before the tool (the
/// writer calls this for a signal that arrived on its own thread while it
/// wrote outside a handler).
pub fn redeliver(sig: c_int) {
    let Some(old) = old_action(sig) else { return };
    // SAFETY: restoring the previous disposition and raising.
    unsafe {
        libc::sigaction(sig, &old, std::ptr::null_mut());
        libc::raise(sig);
    }
}

/// The signal being handled when the watchdog fires.
static DYING: AtomicI32 = AtomicI32::new(0);
static OLD_ALRM: OldAlarm = OldAlarm(std::cell::UnsafeCell::new(unsafe { std::mem::zeroed() }));
struct OldAlarm(std::cell::UnsafeCell<libc::sigaction>);
// SAFETY: written only by the thread that armed the watchdog (DYING guards
// it), read when disarming.
unsafe impl Sync for OldAlarm {}

/// Writing the record from a signal handler allocates; if the signal came in
/// the middle of `malloc` on this thread, that can deadlock. The watchdog
/// (SIGALRM after 10 s) then ends the process with the original signal, so
/// that the exit status is the one without the tool.
extern "C" fn watchdog(_: c_int) {
    let sig = DYING.load(SeqCst);
    // SAFETY: async-signal-safe calls only.
    unsafe {
        let mut dfl: libc::sigaction = std::mem::zeroed();
        dfl.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(sig, &dfl, std::ptr::null_mut());
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
        libc::_exit(128 + sig);
    }
}

fn arm_watchdog(sig: c_int) {
    if DYING.compare_exchange(0, sig, SeqCst, SeqCst).is_err() {
        return;
    }
    // SAFETY: async-signal-safe calls with valid pointers.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = watchdog as *const () as usize;
        act.sa_flags = libc::SA_ONSTACK;
        libc::sigemptyset(&mut act.sa_mask);
        libc::sigaction(libc::SIGALRM, &act, OLD_ALRM.0.get());
        libc::alarm(10);
    }
}

/// The process lives on after all (a handler of the application took the
/// signal): the watchdog must not fire.
fn disarm_watchdog() {
    if DYING.load(SeqCst) == 0 {
        return;
    }
    // SAFETY: async-signal-safe calls; OLD_ALRM was written when arming.
    unsafe {
        libc::alarm(0);
        libc::sigaction(libc::SIGALRM, OLD_ALRM.0.get(), std::ptr::null_mut());
    }
    DYING.store(0, SeqCst);
}

/// Sleeps about a millisecond (async-signal-safe).
fn nap() {
    let t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };
    // SAFETY: valid timespec.
    unsafe { libc::nanosleep(&t, std::ptr::null_mut()) };
}

extern "C" fn on_signal(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    use crate::write::{PENDING_SIG, PHASE, WRITER_TID};
    let Some(i) = SIGNALS.iter().position(|(s, _)| *s == sig) else {
        return;
    };
    let Some(old) = old_action(sig) else { return };
    let fatal_anyway = matches!(sig, libc::SIGSEGV | libc::SIGBUS | libc::SIGABRT);
    let dies = old.sa_sigaction == libc::SIG_DFL || fatal_anyway;
    if dies {
        if PHASE.load(SeqCst) == 0 {
            arm_watchdog(sig);
            // Best effort: the process is about to die.
            crate::write::write_record(SIGNALS[i].1, crate::write::When::Signal);
        }
        if PHASE.load(SeqCst) == 1 {
            if WRITER_TID.load(SeqCst) == crate::write::gettid() {
                // This thread was writing (at exit, at MPI_Finalize) when the
                // signal came: let it finish; it delivers the signal again.
                // A fault inside the writer itself cannot wait.
                if !fatal_anyway && old.sa_sigaction == libc::SIG_DFL {
                    PENDING_SIG.store(sig, SeqCst);
                    return;
                }
            } else {
                // Another thread writes: wait for it (mpirun's SIGKILL comes
                // about a second after its SIGTERM).
                arm_watchdog(sig);
                crate::write::WAITING_SIG.store(sig, SeqCst);
                let mut n = 0;
                while PHASE.load(SeqCst) == 1 && n < 9000 {
                    nap();
                    n += 1;
                }
            }
        }
    }
    // SAFETY: restoring and chaining to the previous disposition.
    unsafe {
        libc::sigaction(sig, &old, std::ptr::null_mut());
        if old.sa_sigaction == libc::SIG_DFL {
            // Blocked while we run; delivered with the default action on return.
            libc::raise(sig);
        } else if old.sa_sigaction != libc::SIG_IGN {
            disarm_watchdog();
            if old.sa_flags & libc::SA_SIGINFO != 0 {
                let f: extern "C" fn(c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                    std::mem::transmute(old.sa_sigaction);
                f(sig, info, ctx);
            } else {
                let f: extern "C" fn(c_int) = std::mem::transmute(old.sa_sigaction);
                f(sig);
            }
        }
    }
}
