//! The limits every input must keep: a time limit (a watchdog thread) and
//! a memory limit (this test binary's allocator counts the bytes live).
//! Neither can be recovered from in-process (a thread cannot be stopped, a
//! refused allocation aborts), so both name the mutant on stderr and end
//! the process: the mutant is reproduced from its format and index.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Bytes an input may hold on top of what was live when it started.
pub const MEMORY_LIMIT: usize = 256 << 20;
/// Time one input may take (release build; the CLI pass allows more).
pub const TIME_LIMIT: Duration = Duration::from_secs(10);

static LIVE: AtomicUsize = AtomicUsize::new(0);
static BASE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ARMED: AtomicBool = AtomicBool::new(false);
/// The size of the request refused, 0: none.
static REFUSED: AtomicUsize = AtomicUsize::new(0);
/// The input being read: format number << 48 | mutant index, and when it
/// started (ms since the watchdog's start, 0: none).
static CURRENT: AtomicU64 = AtomicU64::new(0);
static STARTED_MS: AtomicU64 = AtomicU64::new(0);

pub struct Counting;

// SAFETY: every call is passed to the system allocator unchanged; the
// counters only decide whether to refuse a request (a null return, which
// the GlobalAlloc contract allows).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !self.admit(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's layout, passed on.
        unsafe { System.alloc(l) }
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !self.admit(l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: as alloc.
        unsafe { System.alloc_zeroed(l) }
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Relaxed);
        // SAFETY: p was allocated by System with this layout.
        unsafe { System.dealloc(p, l) }
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() && !self.admit(new - l.size()) {
            return std::ptr::null_mut();
        }
        // SAFETY: p was allocated by System with layout l.
        let q = unsafe { System.realloc(p, l, new) };
        if q.is_null() {
            LIVE.fetch_sub(new.saturating_sub(l.size()), Relaxed);
        } else if new < l.size() {
            LIVE.fetch_sub(l.size() - new, Relaxed);
        }
        q
    }
}

impl Counting {
    /// Counts `n` more bytes; false (and a message naming the mutant) when
    /// an armed input would go above its limit.
    fn admit(&self, n: usize) -> bool {
        let live = LIVE.fetch_add(n, Relaxed) + n;
        if !ARMED.load(Relaxed) {
            return true;
        }
        let used = live.saturating_sub(BASE.load(Relaxed));
        PEAK.fetch_max(used, Relaxed);
        if used <= MEMORY_LIMIT {
            return true;
        }
        LIVE.fetch_sub(n, Relaxed);
        ARMED.store(false, Relaxed);
        REFUSED.store(n, Relaxed);
        let (format, index) = current();
        // No allocation here: a fixed message and two numbers.
        let mut buf = [0u8; 160];
        let mut w = &mut buf[..];
        let _ = write!(
            w,
            "\nFUZZ FAILURE: format {format} mutant {index} asked for {n} bytes, {used} live: over the memory limit\n"
        );
        let len = 160 - w.len();
        let _ = std::io::stderr().write_all(&buf[..len]);
        false
    }
}

fn current() -> (u64, u64) {
    let c = CURRENT.load(Relaxed);
    (c >> 48, c & ((1 << 48) - 1))
}

/// The request refused since the last call, if any.
pub fn take_refused() -> Option<usize> {
    Some(REFUSED.swap(0, Relaxed)).filter(|&n| n > 0)
}

/// The largest memory an input has held since the last call.
pub fn take_peak() -> usize {
    PEAK.swap(0, Relaxed)
}

fn epoch() -> Instant {
    static E: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *E.get_or_init(Instant::now)
}

/// Starts the watchdog once per process: an input over the time limit
/// ends the process with its name.
pub fn start_watchdog() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        epoch();
        std::thread::spawn(|| loop {
            std::thread::sleep(Duration::from_millis(100));
            let t = STARTED_MS.load(Relaxed);
            let now = epoch().elapsed().as_millis() as u64;
            if t > 0 && now.saturating_sub(t) > TIME_LIMIT.as_millis() as u64 {
                let (format, index) = current();
                eprintln!(
                    "\nFUZZ FAILURE: format {format} mutant {index} ran over {:?}: a hang",
                    TIME_LIMIT
                );
                std::process::abort();
            }
        });
    });
}

/// Runs one input under both limits. One at a time: the counters are the
/// process's (tests of this binary run in parallel).
pub fn guarded<T>(format: u64, index: u64, f: impl FnOnce() -> T) -> T {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    CURRENT.store(format << 48 | index, Relaxed);
    BASE.store(LIVE.load(Relaxed), Relaxed);
    STARTED_MS.store(epoch().elapsed().as_millis() as u64 + 1, Relaxed);
    ARMED.store(true, Relaxed);
    let r = f();
    ARMED.store(false, Relaxed);
    STARTED_MS.store(0, Relaxed);
    r
}
