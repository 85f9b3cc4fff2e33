//! Call-site resolution, done once per distinct address when the record is
//! written, on the rank that saw the address (ASLR makes addresses
//! meaningless elsewhere).
//!
//! - file, line, enclosing function: `backtrace::resolve` (gimli, inline
//!   aware). It looks up `ra - 1` itself, so the call instruction's line is
//!   found, not the next statement's. The innermost frame gives the line; the
//!   frames it was inlined into go to `inlined_into`.
//! - module path, GNU build-id, offset from the load bias: `dl_iterate_phdr`,
//!   for offline resolution (`addr2line -e MODULE OFFSET-1`).

use std::ffi::CStr;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::Ordering::Relaxed;

use mpiover_common::record::Site;

use crate::rt::SiteRef;

/// A loaded object.
pub struct Obj {
    pub path: String,
    pub bias: usize,
    /// [lo, hi) of its PT_LOAD segments.
    pub ranges: Vec<(usize, usize)>,
    /// Those of them mapped readable (`PF_R`): the only memory the tail-call
    /// check reads.
    pub readable: Vec<(usize, usize)>,
    pub build_id: Option<String>,
}

fn note_build_id(mut p: usize, end: usize) -> Option<String> {
    // Elf64_Nhdr: namesz, descsz, type (u32 each), then name, desc (4-aligned).
    while p + 12 <= end {
        // SAFETY: within a loaded PT_NOTE segment.
        let (namesz, descsz, ty) = unsafe {
            (
                std::ptr::read_unaligned(p as *const u32) as usize,
                std::ptr::read_unaligned((p + 4) as *const u32) as usize,
                std::ptr::read_unaligned((p + 8) as *const u32),
            )
        };
        let name = p + 12;
        let desc = name + ((namesz + 3) & !3);
        let next = desc + ((descsz + 3) & !3);
        if next > end {
            return None;
        }
        // SAFETY: ranges checked against the segment.
        let nm = unsafe { std::slice::from_raw_parts(name as *const u8, namesz) };
        if ty == 3 && nm.starts_with(b"GNU") {
            // SAFETY: ranges checked against the segment, as the name's.
            let d = unsafe { std::slice::from_raw_parts(desc as *const u8, descsz) };
            return Some(d.iter().map(|b| format!("{b:02x}")).collect());
        }
        p = next;
    }
    None
}

/// The `dl_iterate_phdr` callback: one loaded object.
///
/// # Safety
/// Called by `dl_iterate_phdr` only, with `data` the `&mut Vec<Obj>` given
/// to it.
unsafe extern "C" fn each(info: *mut libc::dl_phdr_info, _size: usize, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `&mut Vec<Obj>` the caller of dl_iterate_phdr
    // passed (this function's contract), live and not otherwise touched
    // during the iteration.
    let objs = unsafe { &mut *(data as *mut Vec<Obj>) };
    // SAFETY: dl_iterate_phdr passes a valid `dl_phdr_info`, live for this
    // call.
    let info = unsafe { &*info };
    let bias = info.dlpi_addr as usize;
    let mut path = if info.dlpi_name.is_null() {
        String::new()
    } else {
        // SAFETY: a non-null `dlpi_name` is the loader's NUL-terminated
        // string, live for this call.
        unsafe { CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned()
    };
    if path.is_empty() && objs.is_empty() {
        path = std::fs::read_link("/proc/self/exe")
            .map(|p| p.display().to_string())
            .unwrap_or_default();
    }
    let mut ranges = Vec::new();
    let mut readable = Vec::new();
    let mut build_id = None;
    for i in 0..info.dlpi_phnum as usize {
        // SAFETY: `dlpi_phdr` points to the object's `dlpi_phnum` program
        // headers, live for this call.
        let ph = unsafe { &*info.dlpi_phdr.add(i) };
        let lo = bias.wrapping_add(ph.p_vaddr as usize);
        let hi = lo.wrapping_add(ph.p_memsz as usize);
        if ph.p_type == libc::PT_LOAD {
            ranges.push((lo, hi));
            if ph.p_flags & libc::PF_R != 0 {
                readable.push((lo, hi));
            }
        } else if ph.p_type == libc::PT_NOTE && build_id.is_none() {
            build_id = note_build_id(lo, hi);
        }
    }
    objs.push(Obj {
        path,
        bias,
        ranges,
        readable,
        build_id,
    });
    0
}

/// Every loaded object.
pub fn objects() -> Vec<Obj> {
    let mut v: Vec<Obj> = Vec::new();
    // SAFETY: the callback only reads the phdr info it is given.
    unsafe { libc::dl_iterate_phdr(Some(each), &mut v as *mut Vec<Obj> as *mut c_void) };
    v
}

/// Fortran binding libraries that call the C `MPI_*` functions (MPICH and
/// its derivatives); their frames are skipped like the tool's own.
const BINDING_LIBS: &[&str] = &["libmpichfort.", "libmpifort."];

/// Finds libmpiover's own address range and those of the Fortran binding
/// libraries (frames skipped when unwinding).
pub fn init_self_range() {
    let me = crate::rt::unwound_site as *const () as usize;
    let objs = objects();
    for o in &objs {
        let name = std::path::Path::new(&o.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if BINDING_LIBS.iter().any(|b| name.starts_with(b)) {
            let lo = o.ranges.iter().map(|r| r.0).min().unwrap_or(0);
            let hi = o.ranges.iter().map(|r| r.1).max().unwrap_or(0);
            crate::rt::add_binding(lo, hi);
        }
    }
    for o in objs {
        if o.ranges.iter().any(|&(lo, hi)| me >= lo && me < hi) {
            let lo = o.ranges.iter().map(|r| r.0).min().unwrap_or(0);
            let hi = o.ranges.iter().map(|r| r.1).max().unwrap_or(0);
            crate::rt::SELF_LO.store(lo, Relaxed);
            crate::rt::SELF_HI.store(hi, Relaxed);
            return;
        }
    }
}

/// Where one return address lies: module, build-id, offset from the load
/// bias (no symbols: cheap, no file is read). `note` says why it is not
/// resolved further, if it stays like this.
pub fn locate(id: u32, at: SiteRef, objs: &[Obj]) -> Site {
    let Some(ra) = at.native_ra() else {
        return locate_python(id, at, objs);
    };
    let mut site = Site {
        id,
        address: format!("{ra:#x}"),
        module: None,
        build_id: None,
        offset: None,
        function: None,
        symbol: None,
        file: None,
        line: None,
        inlined_into: Vec::new(),
        note: None,
        native: None,
        language: None,
    };
    if ra == 0 {
        site.note = Some("folded keys (MPIOVER_MAX_KEYS reached) or unknown caller".into());
        return site;
    }
    if let Some(o) = objs
        .iter()
        .find(|o| o.ranges.iter().any(|&(lo, hi)| ra >= lo && ra < hi))
    {
        site.module = Some(o.path.clone());
        site.build_id = o.build_id.clone();
        site.offset = Some(format!("{:#x}", ra.wrapping_sub(o.bias)));
    }
    site
}

/// A Python site: the Python file, line and function, and the native
/// frame's address, module and offset.
fn locate_python(id: u32, at: SiteRef, objs: &[Obj]) -> Site {
    let Some(p) = crate::py::lookup(at) else {
        let mut site = locate(id, SiteRef::NONE, objs);
        site.note = Some("python: site not found".into());
        return site;
    };
    let mut site = locate(id, SiteRef::native(p.native_ra), objs);
    site.file = Some(p.file.clone());
    site.line = p.line;
    site.function = Some(p.function.clone());
    site.language = Some("python".into());
    site
}

/// Whether a module is the Python interpreter or an extension module
/// (mpi4py's `MPI.cpython-311-x86_64-linux-gnu.so`).
fn is_python(module: &str) -> bool {
    let name = std::path::Path::new(module)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    name.contains(".cpython-")
        || name.contains(".abi3.")
        || name.starts_with("libpython")
        || name.starts_with("python")
}

/// Adds function, file, line and the inline chain of `ra` to a located site
/// (reads the module's debug information: slow the first time per module).
/// A site in Python (an MPI call made by mpi4py) is the nearest native frame;
/// its note says so.
pub fn symbolize(site: &mut Site, at: SiteRef) {
    if at.is_none() {
        return;
    }
    if let Some(p) = crate::py::lookup(at) {
        // The native frame, as secondary information.
        let mut native = site.clone();
        native.note = None;
        symbolize(&mut native, SiteRef::native(p.native_ra));
        site.native = native.function.map(|f| match (native.file, native.line) {
            (Some(file), Some(line)) => format!("{f} ({file}:{line})"),
            _ => f,
        });
        return;
    }
    if site.module.as_deref().is_some_and(is_python) {
        site.note = Some(
            "python: nearest native frame (the MPI call was made from Python; its Python line \
             is not known)"
                .into(),
        );
    }
    let ra = at.bits();
    let mut frames: Vec<(Option<String>, Option<String>, Option<u32>)> = Vec::new();
    // backtrace looks up ra - 1 itself.
    backtrace::resolve(ra as *mut c_void, |sym| {
        // The raw linkage name, demangled below (C++ as well as Rust).
        let name = sym.name().map(|n| match n.as_str() {
            Some(raw) => raw.to_string(),
            None => n.to_string(),
        });
        let file = sym.filename().map(|f| f.display().to_string());
        frames.push((name, file, sym.lineno()));
    });
    let mut it = frames.into_iter();
    if let Some((name, file, line)) = it.next() {
        if let Some(raw) = name {
            let readable = mpiover_common::demangle::demangle(&raw).into_owned();
            site.symbol = (readable != raw).then_some(raw);
            site.function = Some(readable);
        }
        site.file = file;
        site.line = line;
    }
    site.inlined_into.clear();
    for (name, file, line) in it {
        let f = name
            .map(|n| mpiover_common::demangle::demangle(&n).into_owned())
            .unwrap_or_else(|| "?".into());
        site.inlined_into.push(match (file, line) {
            (Some(file), Some(line)) => format!("{f} ({file}:{line})"),
            (Some(file), None) => format!("{f} ({file})"),
            _ => f,
        });
    }
}

/// Resolves one site fully.
pub fn resolve(id: u32, at: SiteRef, objs: &[Obj]) -> Site {
    let mut site = locate(id, at, objs);
    symbolize(&mut site, at);
    site
}
