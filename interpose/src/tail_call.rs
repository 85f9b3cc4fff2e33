//! Tail calls that move a call site (x86-64).
//!
//! A helper whose last act is an MPI call (`return MPI_Bcast(...)`) is
//! compiled at -O2 into a jump: the MPI call then returns straight to the
//! helper's caller, and its return address is the caller's line, after the
//! call of the *helper*. The site is right about where the program waits,
//! but the line shown calls the helper, not MPI. When the record is written
//! (never on the hot path), the instruction before each depth-1 return
//! address is decoded: a direct `call rel32` or a `call *GOT(%rip)`, followed
//! through a PLT stub to the function it reaches. When that function is a
//! known function that is not MPI's, the MPI call was reached through a
//! tail call in it, and the site says so.
//!
//! Only memory inside the readable segments of loaded objects is read, and a
//! target counts only when it is the exact start of a symbol, so that an
//! instruction that merely looks like a call never names a function.

use std::ffi::CStr;
use std::os::raw::c_void;

use crate::objects::Obj;
use crate::site_ref::SiteRef;

/// Whether `[a, a + len)` lies in one readable segment of a loaded object.
fn readable(objs: &[Obj], a: usize, len: usize) -> bool {
    let Some(end) = a.checked_add(len) else {
        return false;
    };
    objs.iter()
        .flat_map(|o| o.readable.iter())
        .any(|&(lo, hi)| a >= lo && end <= hi)
}

/// `len` bytes at `a`, if they are readable.
fn bytes<const N: usize>(objs: &[Obj], a: usize) -> Option<[u8; N]> {
    if !readable(objs, a, N) {
        return None;
    }
    let mut b = [0u8; N];
    // SAFETY: [a, a + N) lies in a readable PT_LOAD segment of a loaded
    // object (checked above), which stays mapped while the record is written.
    unsafe { std::ptr::copy_nonoverlapping(a as *const u8, b.as_mut_ptr(), N) };
    Some(b)
}

/// The pointer stored at `a`, if readable.
fn pointer(objs: &[Obj], a: usize) -> Option<usize> {
    bytes::<8>(objs, a).map(usize::from_le_bytes)
}

/// What the call instruction ending at `ra` calls, if it is a direct call or
/// a call through the GOT.
fn call_target(objs: &[Obj], ra: usize) -> Option<usize> {
    let before: [u8; 6] = bytes(objs, ra.checked_sub(6)?)?;
    let rel = i32::from_le_bytes([before[2], before[3], before[4], before[5]]) as isize;
    if before[0] == 0xFF && before[1] == 0x15 {
        // call *disp32(%rip) (-fno-plt): the GOT slot holds the target.
        return pointer(objs, ra.wrapping_add_signed(rel));
    }
    if before[1] == 0xE8 {
        // call rel32.
        return Some(ra.wrapping_add_signed(rel));
    }
    None
}

/// Where a PLT stub at `a` jumps (through its GOT slot), or `a` itself.
fn through_plt(objs: &[Obj], a: usize) -> usize {
    let Some(b) = bytes::<11>(objs, a) else {
        return a;
    };
    // endbr64 (IBT stubs of .plt.sec) first, then `bnd jmp` or `jmp`.
    let (at, b) = if b[..4] == [0xF3, 0x0F, 0x1E, 0xFA] {
        (a + 4, &b[4..])
    } else {
        (a, &b[..])
    };
    let (len, disp) = if b[0] == 0xF2 && b[1] == 0xFF && b[2] == 0x25 {
        (7, &b[3..7])
    } else if b[0] == 0xFF && b[1] == 0x25 {
        (6, &b[2..6])
    } else {
        return a;
    };
    let rel = i32::from_le_bytes([disp[0], disp[1], disp[2], disp[3]]) as isize;
    pointer(objs, (at + len).wrapping_add_signed(rel)).unwrap_or(a)
}

/// The linkage name of the function that starts exactly at `a`: from the
/// loader's tables, else from the object's symbol tables and debug
/// information (a local helper of the executable is in no dynamic symbol
/// table; the executable's are read already for its sites).
fn symbol_at(objs: &[Obj], a: usize) -> Option<String> {
    // The loader's tables first: an MPI entry point is a dynamic symbol, and
    // reading a library's debug information (libmpiover's own is large)
    // would cost the writer tens of milliseconds.
    if let Some(name) = dynamic_symbol_at(a) {
        return Some(name);
    }
    // resolve() looks up `addr - 1` (it takes return addresses): `a + 1`
    // asks for the function of byte `a`, `a` for the byte before it.
    let of = |addr: usize| {
        let mut found: Option<(Option<String>, Option<usize>)> = None;
        backtrace::resolve(addr as *mut c_void, |sym| {
            if found.is_none() {
                let name = sym.name().map(|n| match n.as_str() {
                    Some(raw) => raw.to_string(),
                    None => n.to_string(),
                });
                found = Some((name, sym.addr().map(|s| s as usize)));
            }
        });
        found.unwrap_or((None, None))
    };
    let (name, start) = of(a + 1);
    // The symbol's address as the object file states it: before or after
    // the load bias, depending on where it was found.
    let bias = objs
        .iter()
        .find(|o| o.ranges.iter().any(|&(lo, hi)| a >= lo && a < hi))
        .map_or(0, |o| o.bias);
    let starts_here = match start {
        Some(s) => s == a || bias.wrapping_add(s) == a,
        // Debug information gives no start: `a` starts a function when the
        // byte before it belongs to another (or to none).
        None => name.is_some() && of(a).0 != name,
    };
    starts_here.then_some(name).flatten()
}

/// The loader's view: the dynamic symbol that starts exactly at `a`.
fn dynamic_symbol_at(a: usize) -> Option<String> {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads the loader's tables and fills `info`.
    let found = unsafe { libc::dladdr(a as *const c_void, info.as_mut_ptr()) };
    if found == 0 {
        return None;
    }
    // SAFETY: dladdr returned non-zero, so `info` is initialized.
    let info = unsafe { info.assume_init() };
    if info.dli_sname.is_null() || info.dli_saddr as usize != a {
        return None;
    }
    // SAFETY: a NUL-terminated name in the loader's symbol table.
    let name = unsafe { CStr::from_ptr(info.dli_sname) };
    Some(name.to_string_lossy().into_owned())
}

/// An MPI entry point in any binding: `MPI_Send`, `PMPI_Send`, `mpi_send_`,
/// `MPI_SEND`, `mpi_send_f08_`, Open MPI's `ompi_*` f08 glue.
fn is_mpi(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["mpi_", "pmpi_", "ompi_", "__mpi_f08"]
        .iter()
        .any(|p| n.starts_with(p))
}

/// The function an MPI call at depth-1 return address `ra` was reached
/// through by a tail call, when the instruction before `ra` calls a known
/// function that is not MPI's.
pub fn through(objs: &[Obj], ra: usize) -> Option<String> {
    let call = call_target(objs, ra);
    let target = call.map(|c| through_plt(objs, c));
    let name = target.and_then(|t| symbol_at(objs, t));
    if crate::run::debug() {
        eprintln!(
            "mpiover: debug: tail call check at {ra:#x}: calls {call:x?}, reaches {target:x?} \
             ({name:?})"
        );
    }
    let name = name?;
    (!is_mpi(&name)).then(|| mpiover_common::demangle::demangle(&name).into_owned())
}

/// "reached through a tail call in F" when the call before `ra` calls a
/// function that is not MPI's (never for a Python site).
pub(crate) fn note(objs: &[Obj], at: SiteRef) -> Option<String> {
    let ra = at.native_ra()?;
    let f = through(objs, ra)?;
    Some(format!(
        "reached through a tail call in {f}: this line calls {f}, whose last act is \
         the MPI call (-fno-optimize-sibling-calls keeps the call in {f})"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mpi_names_of_every_binding_are_mpi() {
        for n in [
            "MPI_Bcast",
            "PMPI_Bcast",
            "mpi_bcast_",
            "MPI_BCAST",
            "mpi_bcast_f08_",
        ] {
            assert!(is_mpi(n), "{n}");
        }
        for n in ["share", "compute_mpi_halo", "_Z5sharePi"] {
            assert!(!is_mpi(n), "{n}");
        }
    }

    #[test]
    fn nothing_is_read_outside_readable_segments() {
        let objs = [Obj {
            path: "x".into(),
            bias: 0,
            ranges: vec![(0x1000, 0x2000)],
            readable: vec![(0x1000, 0x2000)],
            build_id: None,
        }];
        assert!(readable(&objs, 0x1000, 6));
        assert!(!readable(&objs, 0x1ffc, 6));
        assert!(!readable(&objs, 0xffa, 6));
        assert!(!readable(&objs, usize::MAX - 2, 6));
        assert_eq!(call_target(&objs, 0x3000), None);
    }

    #[test]
    fn a_call_in_memory_of_no_loaded_object_is_not_decoded() {
        let objs = crate::objects::objects();
        let mut buf = [0u8; 64];
        buf[26] = 0xE8;
        let ra = buf.as_ptr() as usize + 32;
        assert_eq!(call_target(&objs, ra), None);
    }
}
