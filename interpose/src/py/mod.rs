//! Python sites: an MPI call made from CPython through mpi4py is attributed
//! to the innermost frame of the Python code that made it (file, line,
//! function), chosen by `MPIOVER_DEPTH` as native callers are (1: the line
//! that called the mpi4py method; 2: its caller), frames of mpi4py's own
//! Python modules skipped. The native frame (mpi4py's extension module) is
//! kept in the site as secondary information.
//!
//! How, without the GIL (mpi4py releases it around blocking calls) and
//! without calling into Python:
//!
//! - At `MPI_Init*` ([`init`]): the process is CPython when the interpreter's
//!   symbols resolve (`Py_GetVersion`, `PyGILState_GetThisThreadState`, the
//!   type objects); its minor version selects a [`layout::PyLayout`] (3.11
//!   only); mpi4py's extension modules (`mpi4py/MPI.*.so`) give the address
//!   ranges whose MPI calls are Python's. Anything else: Python sites stay
//!   off and the calls are at the nearest native frame, with one warning.
//! - Per call whose return address lies in mpi4py ([`site`]): the calling
//!   thread's `PyThreadState` (thread-specific storage, valid with the GIL
//!   released), its current `_PyInterpreterFrame` and the frames below it.
//!   This thread is inside MPI, so no other thread pushes or pops these
//!   frames, and each frame holds a strong reference to its code object: the
//!   memory read is alive and stable. Every code object read is checked to
//!   be one (`ob_type == &PyCode_Type`), every instruction pointer to lie in
//!   its code; a failed check gives the native site for that call.
//! - The hot key is (return address, code object, instruction offset) with a
//!   fingerprint of the code object (the addresses of its file name,
//!   qualified name and line table, and its first line), so that a code
//!   object freed and another allocated at its address is not mistaken for
//!   it. A per-thread direct-mapped cache maps the key to a site id; a miss
//!   resolves file, line and function once (the strings and the location
//!   table are read in place: immutable objects held by the live frame) into
//!   a process-wide, bounded table of sites.
//! - The site's index goes into the key as a [`SiteRef::python`]; the
//!   writer gives such a site the Python file, line and function and the
//!   native frame's module, offset and symbol ([`lookup`]).

pub mod layout;
pub mod linetable;
mod read;
mod start;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::{Mutex, OnceLock};

use layout::PyLayout;
use read::{fingerprint, rd, rd_ptr, read_bytes, read_str};
#[cfg(test)]
use start::mpi4py_modules;
pub use start::{disable, init, interpreter, parse_version};

use crate::site_ref::SiteRef;

/// Python sites are on (set once at `MPI_Init*`): the only thing a process
/// that is not Python pays is loading this flag once per call.
pub static ON: AtomicBool = AtomicBool::new(false);

/// Address ranges of mpi4py's extension modules.
const MAX_RANGES: usize = 4;
static RANGES: [(AtomicUsize, AtomicUsize); MAX_RANGES] =
    [const { (AtomicUsize::new(0), AtomicUsize::new(0)) }; MAX_RANGES];

/// Whether a return address lies in mpi4py's extension module.
#[inline(always)]
pub fn in_mpi4py(ra: usize) -> bool {
    RANGES
        .iter()
        .any(|(l, h)| ra >= l.load(Relaxed) && ra < h.load(Relaxed))
}

/// The interpreter, as found at `MPI_Init*`.
struct Interp {
    layout: &'static PyLayout,
    /// `PyGILState_GetThisThreadState`.
    tstate: unsafe extern "C" fn() -> usize,
    code_type: usize,
    str_type: usize,
    bytes_type: usize,
    /// `CPython 3.11.7`.
    name: String,
    /// mpi4py's package directories, each ending in `/`: code whose file is
    /// below one is mpi4py's own and skipped.
    dirs: Vec<String>,
}

static INTERP: OnceLock<Interp> = OnceLock::new();

/// One resolved Python site.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PySite {
    /// The native return address (in mpi4py's extension module).
    pub native_ra: usize,
    pub file: String,
    pub line: Option<u32>,
    pub function: String,
}

/// Resolved sites by id: written once each, read without a lock (the record
/// may be written from a signal handler on a thread that holds `REG`).
static SITES: OnceLock<Box<[OnceLock<PySite>]>> = OnceLock::new();

/// Hot key with fingerprint -> site; the next free index.
struct Reg {
    ids: HashMap<(usize, usize, u32, u64), SiteRef>,
    next: usize,
}

static REG: Mutex<Option<Reg>> = Mutex::new(None);

/// Why a call got no Python site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    /// Python sites are off.
    Off,
    /// The thread runs no Python code (no thread state, no frame).
    NoFrame,
    /// The interpreter's state did not look as expected.
    Unreadable,
    /// The table of sites is full.
    Full,
}

// ---------------------------------------------------------------------------
// The per-call path
// ---------------------------------------------------------------------------

const CODE_SLOTS: usize = 256;
const SITE_SLOTS: usize = 512;
/// Frames looked at, at most, per call.
const MAX_FRAMES: usize = 1024;
/// Attempts at the table's lock before a call falls back.
const LOCK_TRIES: usize = 100_000;

#[derive(Clone, Copy)]
struct CodeSlot {
    code: usize,
    fp: u64,
    skip: bool,
}

#[derive(Clone, Copy)]
struct SiteSlot {
    ra: usize,
    code: usize,
    off: u32,
    fp: u64,
    id: SiteRef,
}

/// A thread's caches (allocated at its first call from Python).
pub struct Cache {
    codes: Box<[CodeSlot]>,
    sites: Box<[SiteSlot]>,
    /// Calls made from Python that fell back to the native site because
    /// the interpreter's state did not look right or the table was full.
    pub fallbacks: u64,
}

impl Cache {
    fn new() -> Cache {
        Cache {
            // On the heap directly (a thread's stack may be small).
            codes: vec![
                CodeSlot {
                    code: 0,
                    fp: 0,
                    skip: false,
                };
                CODE_SLOTS
            ]
            .into_boxed_slice(),
            sites: vec![
                SiteSlot {
                    ra: 0,
                    code: 0,
                    off: 0,
                    fp: 0,
                    id: SiteRef::NONE,
                };
                SITE_SLOTS
            ]
            .into_boxed_slice(),
            fallbacks: 0,
        }
    }

    /// Whether a code object is mpi4py's own.
    ///
    /// # Safety
    /// `code` is a live code object.
    #[inline(always)]
    unsafe fn skipped(&mut self, it: &Interp, code: usize, fp: u64) -> Result<bool, Fail> {
        let i = ((code >> 4) ^ (code >> 12)) & (CODE_SLOTS - 1);
        if let Some(s) = self.codes.get(i) {
            if s.code == code && s.fp == fp {
                return Ok(s.skip);
            }
        }
        // SAFETY: a live code object (this function's contract).
        let file =
            unsafe { read_str(it, rd(code + it.layout.code_filename)) }.ok_or(Fail::Unreadable)?;
        let skip = it.dirs.iter().any(|d| file.starts_with(d.as_str()));
        if let Some(s) = self.codes.get_mut(i) {
            *s = CodeSlot { code, fp, skip };
        }
        Ok(skip)
    }

    /// The site of (ra, code, off).
    ///
    /// # Safety
    /// `code` is a live code object and `off` an instruction of it.
    #[inline(always)]
    unsafe fn site(
        &mut self,
        it: &Interp,
        ra: usize,
        code: usize,
        off: u32,
        fp: u64,
    ) -> Result<SiteRef, Fail> {
        let h = (ra ^ code.rotate_left(17) ^ (off as usize).wrapping_mul(0x9e37_79b9)) as u64;
        let i = ((h ^ (h >> 9) ^ (h >> 21)) as usize) & (SITE_SLOTS - 1);
        if let Some(s) = self.sites.get(i) {
            if s.ra == ra && s.code == code && s.off == off && s.fp == fp && !s.id.is_none() {
                return Ok(s.id);
            }
        }
        // SAFETY: this function's contract.
        let id = unsafe { resolve(it, ra, code, off, fp) }?;
        if let Some(s) = self.sites.get_mut(i) {
            *s = SiteSlot {
                ra,
                code,
                off,
                fp,
                id,
            };
        }
        Ok(id)
    }
}

/// A new hot key: its site from the process-wide table, or resolved and
/// added to it.
///
/// # Safety
/// `code` is a live code object and `off` an instruction of it.
#[cold]
#[inline(never)]
unsafe fn resolve(it: &Interp, ra: usize, code: usize, off: u32, fp: u64) -> Result<SiteRef, Fail> {
    let sites = SITES.get().ok_or(Fail::Off)?;
    // Never blocks for long: a lock held by a thread that is gone (a fork
    // of a thread inside this function) costs a fallback, not a deadlock.
    let mut guard = None;
    for _ in 0..LOCK_TRIES {
        if let Ok(g) = REG.try_lock() {
            guard = Some(g);
            break;
        }
        std::thread::yield_now();
    }
    let mut guard = guard.ok_or(Fail::Full)?;
    let reg = guard.as_mut().ok_or(Fail::Off)?;
    let key = (ra, code, off, fp);
    if let Some(&id) = reg.ids.get(&key) {
        return Ok(id);
    }
    if reg.next >= sites.len() {
        return Err(Fail::Full);
    }
    let l = it.layout;
    // SAFETY: a live code object (this function's contract) and the
    // immutable objects it holds.
    let site = unsafe {
        let file = read_str(it, rd(code + l.code_filename)).ok_or(Fail::Unreadable)?;
        let function = read_str(it, rd(code + l.code_qualname)).unwrap_or_else(|| "?".into());
        let first: i32 = rd(code + l.code_firstlineno);
        let line = read_bytes(it, rd(code + l.code_linetable))
            .and_then(|t| linetable::line_at(&t, first as i64, off as usize * l.code_unit));
        PySite {
            native_ra: ra,
            file,
            line,
            function,
        }
    };
    let n = reg.next;
    let slot = sites.get(n).ok_or(Fail::Full)?;
    let _ = slot.set(site);
    reg.next = n + 1;
    let id = SiteRef::python(n);
    reg.ids.insert(key, id);
    Ok(id)
}

/// The Python site of a call whose native return address `ra` lies in
/// mpi4py: the `depth`-th frame of the calling thread's Python code, not
/// counting mpi4py's own (the outermost one when there are fewer).
#[inline(never)]
pub fn site(cache: &mut Option<Box<Cache>>, ra: usize, depth: u32) -> Result<SiteRef, Fail> {
    let it = INTERP.get().ok_or(Fail::Off)?;
    let r = walk(it, cache, ra, depth);
    if matches!(r, Err(Fail::Unreadable | Fail::Full)) {
        if let Some(c) = cache.as_mut() {
            c.fallbacks += 1;
        }
    }
    r
}

#[inline(always)]
fn walk(
    it: &Interp,
    cache: &mut Option<Box<Cache>>,
    ra: usize,
    depth: u32,
) -> Result<SiteRef, Fail> {
    let l = it.layout;
    // SAFETY: no arguments; reads this thread's thread-specific storage
    // (valid with the GIL released).
    let tstate = unsafe { (it.tstate)() };
    if tstate == 0 || tstate & 7 != 0 {
        return Err(Fail::NoFrame);
    }
    let c = cache.get_or_insert_with(|| Box::new(Cache::new()));
    // Why the reads below are sound: `tstate` is this thread's live thread
    // state; its `cframe` is the root frame record in it or one on this
    // thread's stack below us (an evaluation loop that called into C), and
    // the interpreter frames chained from it belong to this thread, which is
    // here, inside MPI: none is pushed or popped meanwhile, and each holds
    // its code object.
    // SAFETY: a field of this thread's live thread state (see above).
    let cframe = unsafe { rd_ptr(tstate + l.ts_cframe) }?;
    // SAFETY: `cframe` is a live frame record of this thread (see above).
    let mut f: usize = unsafe { rd(cframe + l.cframe_current_frame) };
    let mut found: Option<(usize, u32, u64)> = None;
    let mut n = 0u32;
    for _ in 0..MAX_FRAMES {
        if f == 0 {
            break;
        }
        if f & 7 != 0 {
            return Err(Fail::Unreadable);
        }
        // SAFETY: `f` is a live frame of this thread (see above).
        let code = unsafe { rd_ptr(f + l.frame_code) }?;
        // SAFETY: a live frame holds a live object as its code (see above).
        if unsafe { rd::<usize>(code + l.ob_type) } != it.code_type {
            return Err(Fail::Unreadable);
        }
        // SAFETY: fields of the live frame `f` and of its code object.
        let (prev, first, owner): (usize, i32, u8) = unsafe {
            (
                rd(f + l.frame_prev_instr),
                rd(code + l.code_firsttraceable),
                rd(f + l.frame_owner),
            )
        };
        let start = code + l.code_adaptive;
        let rel = (prev as isize).wrapping_sub(start as isize);
        // A frame pushed but not started yet has no line of its own.
        let incomplete = owner != l.owner_generator && rel < first as isize * l.code_unit as isize;
        if !incomplete {
            // SAFETY: `code` is a live code object (type checked above).
            let units: isize = unsafe { rd(code + l.ob_size) };
            let off = rel / l.code_unit as isize;
            if rel < 0 || off >= units {
                return Err(Fail::Unreadable);
            }
            // SAFETY: as above.
            let fp = unsafe { fingerprint(l, code) };
            // SAFETY: as above.
            if !unsafe { c.skipped(it, code, fp) }? {
                n += 1;
                found = Some((code, off as u32, fp));
                if n >= depth {
                    break;
                }
            }
        }
        // SAFETY: `f` is a live frame of this thread (see above).
        f = unsafe { rd(f + l.frame_previous) };
    }
    let (code, off, fp) = found.ok_or(Fail::NoFrame)?;
    // SAFETY: `code` is the live code object of a frame of this thread and
    // `off` an instruction within it (checked against its size above).
    unsafe { c.site(it, ra, code, off, fp) }
}

/// A resolved Python site, for the record.
pub fn lookup(site: SiteRef) -> Option<&'static PySite> {
    SITES.get()?.get(site.python_index()?)?.get()
}

/// The added time per call of a Python site (seconds), measured on the
/// calling thread at start-up (`MPI_Init*`, called by mpi4py's import):
/// seven repetitions of eleven batches of 100 look-ups of the site of the
/// current Python frame, minimum batch per repetition, median over
/// repetitions. `Err` when the interpreter's state could not be read (the
/// self-test: Python sites are then switched off by the caller).
pub fn measure_cost(cache: &mut Option<Box<Cache>>, depth: u32) -> Result<Option<f64>, Fail> {
    let probe = RANGES[0].0.load(Relaxed);
    match site(cache, probe, depth) {
        Err(Fail::Unreadable) => return Err(Fail::Unreadable),
        Err(_) => return Ok(None),
        Ok(_) => {}
    }
    const BATCH: u64 = 100;
    let mut est = Vec::with_capacity(7);
    for _ in 0..7 {
        let mut best = u64::MAX;
        for _ in 0..11 {
            let t0 = crate::timer::mono_ns();
            for _ in 0..BATCH {
                let _ = std::hint::black_box(site(cache, std::hint::black_box(probe), depth));
            }
            best = best.min(crate::timer::mono_ns().wrapping_sub(t0));
        }
        est.push(best as f64 / BATCH as f64 * 1e-9);
    }
    est.sort_by(f64::total_cmp);
    Ok(est.get(est.len() / 2).copied())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(
            parse_version("3.11.7 (main, May  9 2026, 07:35:25) [GCC 12.2.0]"),
            Some((3, 11, "3.11.7".to_string()))
        );
        assert_eq!(
            parse_version("3.12.0rc1 (main)"),
            Some((3, 12, "3.12.0rc1".to_string()))
        );
        assert_eq!(parse_version("garbage"), None);
    }

    #[test]
    fn mpi4py_modules_are_found_by_directory_and_name() {
        let obj = |path: &str| crate::objects::Obj {
            path: path.into(),
            bias: 0,
            ranges: vec![(0x1000, 0x2000)],
            readable: vec![],
            build_id: None,
        };
        let objs = [
            obj("/usr/lib/libmpi.so.40"),
            obj("/x/site-packages/mpi4py/MPI.cpython-311-x86_64-linux-gnu.so"),
            obj("/x/site-packages/other/MPI.cpython-311-x86_64-linux-gnu.so"),
        ];
        let m = mpi4py_modules(&objs);
        assert_eq!(
            m,
            vec![((0x1000, 0x2000), "/x/site-packages/mpi4py/".into())]
        );
    }

    #[test]
    fn python_sites_are_not_addresses() {
        assert!(SiteRef::python(3).is_python());
        assert_eq!(SiteRef::python(3).python_index(), Some(3));
        assert!(!SiteRef::native(0x7fff_ffff_f000).is_python());
        assert!(lookup(SiteRef::native(0x1234)).is_none());
    }
}
