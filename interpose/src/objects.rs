//! The loaded objects (`dl_iterate_phdr`): path, load bias, segments,
//! GNU build-id. Read by start-up (mpi4py's modules, the tool's own range),
//! the Python sites and the shutdown layer (site resolution, the tail-call
//! check), so it lives below all of them.

use std::ffi::CStr;
use std::os::raw::{c_int, c_void};

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
