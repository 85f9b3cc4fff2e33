//! The per-thread datatype size cache.

use mpiover_mpisys::*;

use crate::handle::Handle;

pub(crate) const TYPE_SLOTS: usize = 64;
/// The handle of an empty entry: no datatype's (a pointer, or a 32-bit
/// integer's bits), so that a hit needs one compare.
const EMPTY: (usize, u64) = (usize::MAX, 0);

/// Emptied when a datatype is freed (`ThreadState::sync`, from the state
/// word): a handle may then come back as another datatype.
pub struct TypeCache {
    /// The datatype looked up last and its size: a loop's calls mostly use
    /// one datatype, found here without hashing its handle.
    pub(crate) last: (usize, u64),
    pub(crate) slots: [(usize, u64); TYPE_SLOTS],
}

impl TypeCache {
    pub(crate) fn new() -> TypeCache {
        TypeCache {
            last: EMPTY,
            slots: [EMPTY; TYPE_SLOTS],
        }
    }

    #[inline(always)]
    pub(crate) fn size(&mut self, dt: MPI_Datatype) -> u64 {
        let h = dt.bits();
        if self.last.0 == h {
            return self.last.1;
        }
        let i = ((h >> 4) ^ (h >> 10)) & (TYPE_SLOTS - 1);
        if let Some(s) = self.slots.get(i) {
            if s.0 == h {
                self.last = *s;
                return s.1;
            }
        }
        self.miss(dt, i)
    }

    /// Forgets every size (a datatype was freed).
    #[cold]
    pub(crate) fn clear(&mut self) {
        self.slots = [EMPTY; TYPE_SLOTS];
        self.last = EMPTY;
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn miss(&mut self, dt: MPI_Datatype, i: usize) -> u64 {
        let mut sz: MPI_Count = 0;
        // SAFETY: the datatype is significant for a call that just succeeded.
        let ok = unsafe { PMPI_Type_size_x(dt, &mut sz) } == 0;
        let sz = if ok && sz > 0 { sz as u64 } else { 0 };
        if ok {
            if let Some(s) = self.slots.get_mut(i) {
                *s = (dt.bits(), sz);
            }
            self.last = (dt.bits(), sz);
        }
        sz
    }
}
