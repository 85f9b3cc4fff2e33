//! The per-thread request map: what a pending request was posted by, so
//! that its completion knows what it completed.

use super::SiteRef;

/// What a pending request was posted as. Laid out (`repr(C)`, 64 bytes) so
/// that the post's constant fields (function, kind, flags) share a word and
/// are written together, and so that the two flags a completion tests first
/// (`persistent`, `cancel`) are one 16-bit word (`usual`).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct ReqInfo {
    pub handle: usize,
    /// The posting communicator (bits), to translate a status's source.
    pub comm: usize,
    /// Where the request was last posted (its `*_init` or the latest
    /// `MPI_Start`), and where a persistent one was created.
    pub ra: SiteRef,
    pub init_ra: SiteRef,
    pub bytes: u64,
    /// Index of the posting key's entry in the thread's table (`u32::MAX`:
    /// none; the table holds at most 2^24 keys), checked against `ra` and
    /// `fid` before use.
    pub agg: u32,
    /// What its completion adds to the completing call's receive and send
    /// counts, as one word (`NRECV_1` and `NSEND_1`, see `CallKey::add_p2p`):
    /// set once at the post, so that a completion adds without testing the
    /// request's kind.
    pub counts: u32,
    pub p: u32,
    pub peer: i32,
    pub fid: u16,
    pub persistent: bool,
    /// `MPI_Cancel` was called on it: its completion checks the status.
    pub cancel: bool,
    pub recv: bool,
    /// A persistent request between `MPI_Start` and its completion.
    pub active: bool,
    /// Posted to or from `MPI_PROC_NULL` (a persistent one: the others never
    /// enter the map): moves nothing, ignored by completions and starts.
    pub proc_null: bool,
}

const _: () = assert!(std::mem::size_of::<ReqInfo>() == 64);
// `usual` reads `persistent` and `cancel` as one 16-bit word.
const _: () =
    assert!(std::mem::offset_of!(ReqInfo, cancel) == std::mem::offset_of!(ReqInfo, persistent) + 1);

/// A point-to-point receive's and send's `counts` (a non-blocking
/// collective's are 0).
pub const NRECV_1: u32 = 1;
pub const NSEND_1: u32 = 1 << 16;

impl ReqInfo {
    pub(crate) const EMPTY: ReqInfo = ReqInfo {
        handle: 0,
        comm: 0,
        ra: SiteRef::NONE,
        init_ra: SiteRef::NONE,
        bytes: 0,
        agg: u32::MAX,
        counts: 0,
        p: 0,
        peer: 0,
        fid: 0,
        persistent: false,
        cancel: false,
        recv: false,
        active: false,
        proc_null: false,
    };

    /// Neither persistent nor cancelled: the completion that only merges
    /// and forgets. One load and test for both flags (a completion per
    /// request tests it).
    #[inline(always)]
    pub(crate) fn usual(&self) -> bool {
        let base = (self as *const ReqInfo).cast::<u8>();
        let at = std::mem::offset_of!(ReqInfo, persistent);
        // SAFETY: `persistent` and `cancel` are adjacent bytes of `self`
        // (asserted above), read through a pointer to the whole struct's
        // memory; both are `bool`s, so the word is 0 only when both are
        // false. Unaligned: read as such.
        unsafe { base.add(at).cast::<u16>().read_unaligned() == 0 }
    }
}

/// Request handles returned by posts to or from `MPI_PROC_NULL` that are not
/// in the map (Open MPI returns one shared `ompi_request_empty` for all of
/// them, MPICH a built-in complete request per kind): a completion of one of
/// them is ignored rather than counted as an unknown request.
pub(crate) const NULL_REQS: usize = 4;

pub(crate) const REQ_SLOTS: usize = 1 << 13;
/// Pending requests one thread's map holds.
pub const REQ_CAPACITY: usize = REQ_SLOTS * 7 / 8 - 1;

/// A map's slots.
pub(crate) type Slots = [ReqInfo; REQ_SLOTS];

/// Open addressing, linear probing with backward-shift deletion; a post that
/// finds the table full is not remembered (its completion then has no
/// `completes`) and counted in `dropped`.
pub struct ReqMap {
    /// Allocated at the thread's first post. A fixed-size array, so that an
    /// index masked to `REQ_SLOTS - 1` needs no bounds check on the hot path.
    pub(crate) slots: Option<Box<Slots>>,
    pub(crate) len: usize,
    /// Posts not remembered because the map was full.
    pub dropped: u64,
}

/// Every index into the slots is masked with it, so that the compiler sees
/// it in range: no bounds check, and no panic path, on the hot path.
pub(crate) const MASK: usize = REQ_SLOTS - 1;

impl ReqMap {
    pub(crate) fn new() -> ReqMap {
        ReqMap {
            slots: None,
            len: 0,
            dropped: 0,
        }
    }

    #[inline(always)]
    pub(crate) fn home(h: usize) -> usize {
        ((h as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 51) as usize & MASK
    }

    /// The slot at `i` (masked), for a caller that got `i` from `find`
    /// (the tests; a completion reads its slots directly).
    #[cfg(test)]
    pub(crate) fn at(&self, i: usize) -> Option<&ReqInfo> {
        self.slots.as_ref().map(|s| &s[i & MASK])
    }

    #[inline(always)]
    pub(crate) fn at_mut(&mut self, i: usize) -> Option<&mut ReqInfo> {
        self.slots.as_mut().map(|s| &mut s[i & MASK])
    }

    /// Remembers a post. Inlined into the posting wrappers: no call.
    #[inline(always)]
    pub(crate) fn insert(&mut self, r: ReqInfo) {
        self.insert_with(r.handle, r.persistent, || r)
    }

    /// Remembers a post of request `handle` (`persistent`), made by `make`
    /// once its slot is found: the post's fields are written straight into
    /// the slot, not into a copy first.
    #[inline(always)]
    pub(crate) fn insert_with(
        &mut self,
        handle: usize,
        persistent: bool,
        make: impl FnOnce() -> ReqInfo,
    ) {
        let Some(slots) = self.slots.as_mut() else {
            return self.insert_first(make());
        };
        let mut i = Self::home(handle);
        for _ in 0..REQ_SLOTS {
            let s = &mut slots[i & MASK];
            if s.handle == 0 {
                if self.len >= REQ_CAPACITY {
                    return self.full();
                }
                *s = make();
                self.len += 1;
                return;
            }
            // A handle that is already pending is shared: MPI returns one
            // static, already complete request for every send it finished
            // at once (Open MPI's `ompi_request_empty` for small eager
            // `MPI_Isend`s), so several posts may hold it at the same time.
            // Each post keeps its own slot and each completion of the handle
            // takes one. Persistent requests are unique: re-posting one
            // (`*_init` again after a free) replaces it.
            if s.handle == handle && (s.persistent || persistent) {
                *s = make();
                return;
            }
            i = (i + 1) & MASK;
        }
    }

    /// The thread's first post: allocates the slots (cold, once).
    #[cold]
    #[inline(never)]
    fn insert_first(&mut self, r: ReqInfo) {
        let v = vec![ReqInfo::EMPTY; REQ_SLOTS].into_boxed_slice();
        let Ok(slots) = <Box<[ReqInfo; REQ_SLOTS]>>::try_from(v) else {
            return;
        };
        self.slots = Some(slots);
        self.insert(r);
    }

    #[cold]
    #[inline(never)]
    fn full(&mut self) {
        self.dropped += 1;
    }

    #[inline(always)]
    pub(crate) fn find(&self, h: usize) -> Option<usize> {
        Self::find_in(self.slots.as_deref()?, h)
    }

    /// `find` in slots the caller already has (a completion checks that the
    /// map is allocated once, for the find and the removal).
    #[inline(always)]
    pub(crate) fn find_in(slots: &Slots, h: usize) -> Option<usize> {
        // No test for handle 0 (the empty slot's): the probe stops at the
        // first empty slot before any slot could match it.
        let mut i = Self::home(h);
        for _ in 0..REQ_SLOTS {
            let s = slots[i & MASK].handle;
            if s == 0 {
                return None;
            }
            if s == h {
                return Some(i);
            }
            i = (i + 1) & MASK;
        }
        None
    }

    #[inline(always)]
    pub(crate) fn remove_at(&mut self, i: usize) {
        let Some(slots) = self.slots.as_deref_mut() else {
            return;
        };
        Self::remove_in(slots, &mut self.len, i);
    }

    /// `remove_at` in slots the caller already has; `len` is the map's.
    #[inline(always)]
    pub(crate) fn remove_in(slots: &mut Slots, len: &mut usize, i: usize) {
        // Backward-shift deletion keeps probe chains intact. Only the
        // handles are read while scanning: a whole slot is copied only when
        // one moves (a collision, rare).
        let mut i = i & MASK;
        let mut j = i;
        loop {
            j = (j + 1) & MASK;
            let h = slots[j & MASK].handle;
            if h == 0 {
                break;
            }
            let k = Self::home(h);
            // Move slot j to i if its home is not cyclically in (i, j].
            let in_range = if i <= j {
                i < k && k <= j
            } else {
                i < k || k <= j
            };
            if !in_range {
                slots[i & MASK] = slots[j & MASK];
                i = j;
            }
        }
        slots[i & MASK].handle = 0;
        // `len` counts the occupied slots, this one among them: no
        // underflow (and a plain decrement, no saturating compare).
        *len = len.wrapping_sub(1);
    }
}
