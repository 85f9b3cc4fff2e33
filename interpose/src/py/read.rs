//! Reading the interpreter's memory: fields of its objects at the offsets
//! the layout gives, without calling into Python.

use super::layout::PyLayout;
use super::{Fail, Interp};

/// Reads a `T` at `addr`.
///
/// # Safety
/// `addr` lies in a live object of the interpreter of at least
/// `addr + size_of::<T>()` bytes.
#[inline(always)]
pub(super) unsafe fn rd<T: Copy>(addr: usize) -> T {
    // SAFETY: this function's contract.
    unsafe { std::ptr::read_unaligned(addr as *const T) }
}

/// A pointer read at `addr` that must be non-null and 8-aligned.
///
/// # Safety
/// As [`rd`].
#[inline(always)]
pub(super) unsafe fn rd_ptr(addr: usize) -> Result<usize, Fail> {
    // SAFETY: this function's contract.
    let p: usize = unsafe { rd(addr) };
    if p == 0 || p & 7 != 0 {
        Err(Fail::Unreadable)
    } else {
        Ok(p)
    }
}

/// What identifies a code object beyond its address.
///
/// # Safety
/// `code` is a live code object.
#[inline(always)]
pub(super) unsafe fn fingerprint(l: &PyLayout, code: usize) -> u64 {
    // SAFETY: fields of a live code object (this function's contract).
    let (f, q, t, first) = unsafe {
        (
            rd::<usize>(code + l.code_filename) as u64,
            rd::<usize>(code + l.code_qualname) as u64,
            rd::<usize>(code + l.code_linetable) as u64,
            rd::<i32>(code + l.code_firstlineno) as u64,
        )
    };
    f ^ q.rotate_left(21) ^ t.rotate_left(42) ^ first.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// The text of a `str` object.
///
/// # Safety
/// `p` is null or a live object (its type is checked).
pub(super) unsafe fn read_str(it: &Interp, p: usize) -> Option<String> {
    let l = it.layout;
    if p == 0 || p & 7 != 0 {
        return None;
    }
    // SAFETY: `p` is a live object (this function's contract), and every
    // object starts with its type.
    if unsafe { rd::<usize>(p + l.ob_type) } != it.str_type {
        return None;
    }
    // SAFETY: `p` is a live `str` (checked above): these are its header's
    // fields, fixed when it was made.
    let (len, state): (isize, u32) = unsafe { (rd(p + l.str_length), rd(p + l.str_state)) };
    if !(0..=1 << 16).contains(&len) {
        return None;
    }
    let len = len as usize;
    let kind = (state & l.state_kind_mask) >> l.state_kind_mask.trailing_zeros();
    let data = if state & l.state_compact_mask != 0 {
        if state & l.state_ascii_mask != 0 {
            p + l.ascii_data
        } else {
            p + l.compact_data
        }
    } else {
        // SAFETY: a non-compact `str` keeps a pointer to its characters.
        unsafe { rd::<usize>(p + l.legacy_data) }
    };
    if data == 0 {
        return None;
    }
    // SAFETY: `data` holds the live `str`'s `len` characters of `kind`
    // bytes each (aligned, checked), immutable as every `str`'s are.
    let chars: Vec<u32> = unsafe {
        match kind {
            1 => std::slice::from_raw_parts(data as *const u8, len)
                .iter()
                .map(|&c| c as u32)
                .collect(),
            2 if data & 1 == 0 => std::slice::from_raw_parts(data as *const u16, len)
                .iter()
                .map(|&c| c as u32)
                .collect(),
            4 if data & 3 == 0 => std::slice::from_raw_parts(data as *const u32, len).to_vec(),
            _ => return None,
        }
    };
    Some(
        chars
            .into_iter()
            .map(|c| char::from_u32(c).unwrap_or('\u{fffd}'))
            .collect(),
    )
}

/// The contents of a `bytes` object.
///
/// # Safety
/// `p` is null or a live object (its type is checked).
pub(super) unsafe fn read_bytes(it: &Interp, p: usize) -> Option<Vec<u8>> {
    let l = it.layout;
    if p == 0 || p & 7 != 0 {
        return None;
    }
    // SAFETY: as `read_str`: a live `bytes` object, immutable.
    unsafe {
        if rd::<usize>(p + l.ob_type) != it.bytes_type {
            return None;
        }
        let len: isize = rd(p + l.ob_size);
        if !(0..=1 << 24).contains(&len) {
            return None;
        }
        Some(std::slice::from_raw_parts((p + l.bytes_sval) as *const u8, len as usize).to_vec())
    }
}
