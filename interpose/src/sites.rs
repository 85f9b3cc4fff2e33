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

use std::os::raw::c_void;
use std::sync::atomic::Ordering::Relaxed;

use mpiover_common::record::Site;

use crate::objects::{objects, Obj};
use crate::rt::SiteRef;

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
