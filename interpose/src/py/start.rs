//! Start-up of Python sites (at `MPI_Init*`): find CPython and mpi4py, check
//! the interpreter is one whose frames the tool can read, and switch the
//! sites on, or leave them off with one warning.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::c_char;
use std::sync::atomic::Ordering::*;
use std::sync::OnceLock;

use super::{layout, Interp, Reg, INTERP, ON, RANGES, REG, SITES};

fn dlsym(name: &CStr) -> usize {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks
    // the name up.
    unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) as usize }
}

/// mpi4py's extension modules among the loaded objects: `MPI.*.so` in a
/// directory named `mpi4py`; (range, package directory with a final `/`).
pub(super) fn mpi4py_modules(objs: &[crate::objects::Obj]) -> Vec<((usize, usize), String)> {
    let mut v = Vec::new();
    for o in objs {
        let p = std::path::Path::new(&o.path);
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let parent = p.parent();
        let in_pkg = parent
            .and_then(|d| d.file_name())
            .is_some_and(|d| d == "mpi4py");
        if !(in_pkg && name.starts_with("MPI.") && name.ends_with(".so")) {
            continue;
        }
        let lo = o.ranges.iter().map(|r| r.0).min().unwrap_or(0);
        let hi = o.ranges.iter().map(|r| r.1).max().unwrap_or(0);
        if let Some(d) = parent {
            v.push(((lo, hi), format!("{}/", d.display())));
        }
    }
    v
}

/// `3.11.7 (main, ...)` -> (3, 11, "3.11.7").
pub fn parse_version(v: &str) -> Option<(u32, u32, String)> {
    let num = v.split_whitespace().next()?;
    let mut it = num.split('.');
    let major = it.next()?.parse().ok()?;
    let minor: String = it
        .next()?
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    Some((major, minor.parse().ok()?, num.to_string()))
}

/// The sentence a process gets once when Python sites cannot be had.
fn fallback_warning(why: &str) -> String {
    format!(
        "python: {why}; MPI calls made from Python are attributed to the nearest native frame \
         (mpi4py's extension module), not to Python lines"
    )
}

/// Finds CPython and mpi4py (at `MPI_Init*`, after the tool's own ranges):
/// switches Python sites on, or leaves them off with one warning when
/// mpi4py is loaded but the interpreter is not one the tool can read.
pub fn init(
    objs: &[crate::objects::Obj],
    opts: &crate::opt::Opts,
    warnings: &mut Vec<String>,
    print: bool,
) {
    let (enabled, max_sites) = (opts.py_sites, opts.max_keys);
    let mods = mpi4py_modules(objs);
    if mods.is_empty() || !enabled {
        return;
    }
    let mut warn = |why: String| crate::run::warn(warnings, fallback_warning(&why), print);
    let ver = dlsym(c"Py_GetVersion");
    if ver == 0 {
        warn("mpi4py is loaded but the interpreter's symbols are not visible".into());
        return;
    }
    // SAFETY: Py_GetVersion takes no arguments and returns a static string;
    // it may be called without the GIL.
    let text = unsafe {
        let f: unsafe extern "C" fn() -> *const c_char = std::mem::transmute(ver);
        let p = f();
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    let Some((major, minor, full)) = parse_version(&text) else {
        warn(format!("unknown interpreter version {text:?}"));
        return;
    };
    let layout = if opts.py_unsupported {
        None
    } else {
        layout::for_version(major, minor)
    };
    let Some(layout) = layout else {
        warn(format!(
            "CPython {full} is not supported (3.11 is: its frame layout is the one verified)"
        ));
        return;
    };
    if dlsym(c"_Py_RefTotal") != 0 || dlsym(c"_Py_PrintReferences") != 0 {
        warn(format!(
            "CPython {full} is a debug build (its object layout differs)"
        ));
        return;
    }
    let (ts, code, s, b) = (
        dlsym(c"PyGILState_GetThisThreadState"),
        dlsym(c"PyCode_Type"),
        dlsym(c"PyUnicode_Type"),
        dlsym(c"PyBytes_Type"),
    );
    if ts == 0 || code == 0 || s == 0 || b == 0 {
        warn(format!("CPython {full}: an interpreter symbol is missing"));
        return;
    }
    // SAFETY: `PyGILState_GetThisThreadState` has this signature (it returns
    // a `PyThreadState *`, read here as an address).
    let tstate: unsafe extern "C" fn() -> usize = unsafe { std::mem::transmute(ts) };
    let cap = (max_sites as usize).clamp(64, 1 << 16);
    let _ = SITES.set((0..cap).map(|_| OnceLock::new()).collect());
    if let Ok(mut r) = REG.lock() {
        *r = Some(Reg {
            ids: HashMap::new(),
            next: 0,
        });
    }
    let _ = INTERP.set(Interp {
        layout,
        tstate,
        code_type: code,
        str_type: s,
        bytes_type: b,
        name: format!("CPython {full}"),
        dirs: mods.iter().map(|m| m.1.clone()).collect(),
    });
    for ((lo, hi), (l, h)) in mods.iter().map(|m| m.0).zip(RANGES.iter()) {
        l.store(lo, Relaxed);
        h.store(hi, Relaxed);
    }
    ON.store(true, Relaxed);
    crate::site_ways::site_way(crate::site_ways::WAY_PYTHON, true);
}

/// The interpreter's name, when Python sites are on.
pub fn interpreter() -> Option<String> {
    ON.load(Relaxed)
        .then(|| INTERP.get().map(|i| i.name.clone()))
        .flatten()
}

/// Switches Python sites off (the start-up self-test failed).
pub fn disable(warnings: &mut Vec<String>, print: bool, why: &str) {
    ON.store(false, Relaxed);
    crate::site_ways::site_way(crate::site_ways::WAY_PYTHON, false);
    crate::run::warn(warnings, fallback_warning(why), print);
}
