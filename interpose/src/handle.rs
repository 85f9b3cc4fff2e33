//! [`Handle`]: MPI handles as bits. Shared by the hot path (`rt`'s
//! caches and keys) and the Fortran conversions below it, so it lives
//! below both.

/// Handles as bits, whatever the MPI's handle representation.
pub trait Handle: Copy {
    fn bits(self) -> usize;
}
impl<T> Handle for *mut T {
    #[inline(always)]
    fn bits(self) -> usize {
        self as usize
    }
}
impl Handle for i32 {
    #[inline(always)]
    fn bits(self) -> usize {
        self as u32 as usize
    }
}
