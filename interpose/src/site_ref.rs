//! [`SiteRef`], the one-word call site of a key: shared by the hot path
//! (`rt` makes them, `py` numbers the Python ones) and the
//! shutdown layer that resolves them, so it lives below both.

/// Where a recorded call was made: a native return address, or (bit 63 set,
/// which user-space addresses never have) the index of a resolved Python site
/// (`py`). One word, so that keys stay as small and as fast to hash
/// and compare as with a bare address; 0 is "no site" (folded keys, an
/// unknown caller, a post that completed nothing).
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug, Default)]
pub struct SiteRef(usize);

impl SiteRef {
    const PYTHON: usize = 1 << 63;

    /// No site.
    pub const NONE: SiteRef = SiteRef(0);

    /// A native call site: the return address of the call.
    #[inline(always)]
    pub const fn native(ra: usize) -> SiteRef {
        SiteRef(ra)
    }

    /// The `idx`-th resolved Python site.
    #[inline(always)]
    pub const fn python(idx: usize) -> SiteRef {
        SiteRef(Self::PYTHON | idx)
    }

    #[inline(always)]
    pub const fn is_python(self) -> bool {
        self.0 & Self::PYTHON != 0
    }

    #[inline(always)]
    pub const fn is_none(self) -> bool {
        self.0 == 0
    }

    /// The index of a Python site; `None` for a native one.
    #[inline(always)]
    pub const fn python_index(self) -> Option<usize> {
        if self.is_python() {
            Some(self.0 & !Self::PYTHON)
        } else {
            None
        }
    }

    /// The return address of a native site; `None` for a Python one.
    #[inline(always)]
    pub const fn native_ra(self) -> Option<usize> {
        if self.is_python() {
            None
        } else {
            Some(self.0)
        }
    }

    /// The word itself, for hashing and slot indices.
    #[inline(always)]
    pub const fn bits(self) -> usize {
        self.0
    }
}
