//! The per-thread request map: what a pending request was posted by, so
//! that its completion knows what it completed.

use super::SiteRef;

/// What a pending request was posted as.
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
    pub p: u32,
    pub peer: i32,
    pub fid: u16,
    pub persistent: bool,
    pub recv: bool,
    /// A point-to-point request (not a non-blocking collective's).
    pub p2p: bool,
    /// Index of the posting key's entry in the thread's table
    /// (`usize::MAX`: none), checked against `ra` and `fid` before use.
    pub agg: usize,
    /// A persistent request between `MPI_Start` and its completion.
    pub active: bool,
    /// `MPI_Cancel` was called on it: its completion checks the status.
    pub cancel: bool,
    /// Posted to or from `MPI_PROC_NULL` (a persistent one: the others never
    /// enter the map): moves nothing, ignored by completions and starts.
    pub proc_null: bool,
}

impl ReqInfo {
    pub(crate) const EMPTY: ReqInfo = ReqInfo {
        handle: 0,
        comm: 0,
        ra: SiteRef::NONE,
        init_ra: SiteRef::NONE,
        bytes: 0,
        p: 0,
        peer: 0,
        fid: 0,
        persistent: false,
        recv: false,
        p2p: false,
        agg: usize::MAX,
        active: false,
        cancel: false,
        proc_null: false,
    };
}

/// Request handles returned by posts to or from `MPI_PROC_NULL` that are not
/// in the map (Open MPI returns one shared `ompi_request_empty` for all of
/// them, MPICH a built-in complete request per kind): a completion of one of
/// them is ignored rather than counted as an unknown request.
pub(crate) const NULL_REQS: usize = 4;

pub(crate) const REQ_SLOTS: usize = 1 << 13;
/// Pending requests one thread's map holds.
pub const REQ_CAPACITY: usize = REQ_SLOTS * 7 / 8 - 1;

/// Open addressing, linear probing with backward-shift deletion; a post that
/// finds the table full is not remembered (its completion then has no
/// `completes`) and counted in `dropped`.
pub struct ReqMap {
    pub(crate) slots: Vec<ReqInfo>,
    pub(crate) len: usize,
    /// Posts not remembered because the map was full.
    pub dropped: u64,
}

impl ReqMap {
    pub(crate) fn new() -> ReqMap {
        ReqMap {
            slots: Vec::new(),
            len: 0,
            dropped: 0,
        }
    }

    #[inline(always)]
    pub(crate) fn home(h: usize) -> usize {
        ((h as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 51) as usize & (REQ_SLOTS - 1)
    }

    pub(crate) fn insert(&mut self, r: ReqInfo) {
        if self.slots.is_empty() {
            self.slots = vec![ReqInfo::EMPTY; REQ_SLOTS];
        }
        let mut i = Self::home(r.handle);
        for _ in 0..REQ_SLOTS {
            let Some(s) = self.slots.get_mut(i) else {
                return;
            };
            if s.handle == 0 {
                if self.len >= REQ_CAPACITY {
                    self.dropped += 1;
                    return;
                }
                *s = r;
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
            if s.handle == r.handle && (s.persistent || r.persistent) {
                *s = r;
                return;
            }
            i = (i + 1) & (REQ_SLOTS - 1);
        }
    }

    pub(crate) fn find(&self, h: usize) -> Option<usize> {
        if self.slots.is_empty() || h == 0 {
            return None;
        }
        let mut i = Self::home(h);
        for _ in 0..REQ_SLOTS {
            let s = self.slots.get(i)?;
            if s.handle == 0 {
                return None;
            }
            if s.handle == h {
                return Some(i);
            }
            i = (i + 1) & (REQ_SLOTS - 1);
        }
        None
    }

    pub(crate) fn remove_at(&mut self, mut i: usize) {
        // Backward-shift deletion keeps probe chains intact.
        let mask = REQ_SLOTS - 1;
        let mut j = i;
        loop {
            j = (j + 1) & mask;
            let Some(&s) = self.slots.get(j) else { break };
            if s.handle == 0 {
                break;
            }
            let k = Self::home(s.handle);
            // Move s to i if its home is not cyclically in (i, j].
            let in_range = if i <= j {
                i < k && k <= j
            } else {
                i < k || k <= j
            };
            if !in_range {
                if let Some(d) = self.slots.get_mut(i) {
                    *d = s;
                }
                i = j;
            }
        }
        if let Some(d) = self.slots.get_mut(i) {
            d.handle = 0;
        }
        self.len = self.len.saturating_sub(1);
    }
}
