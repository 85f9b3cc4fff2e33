//! What a wrapper asks the guard about its arguments: communicator facts,
//! world ranks, bytes of a datatype, the role of a rooted call.

use mpiover_mpisys::*;

use super::comms::CommInfo;
use super::guard::Guard;
use super::state::{Role, ToCount};
use super::threads::ThreadState;

impl Guard {
    #[inline(always)]
    pub(crate) fn ts(&mut self) -> &mut ThreadState {
        // SAFETY: the state belongs to this thread and is never freed.
        unsafe { &mut *self.ts.as_ptr() }
    }

    /// Communicator facts (cached per thread).
    #[inline(always)]
    pub fn comm(&mut self, comm: MPI_Comm) -> CommInfo {
        self.ts().comms.lookup(comm)
    }

    /// Communicator facts, and rank `r` of `comm` as a rank of the world
    /// (as `world_rank`), found together.
    #[inline(always)]
    pub fn comm_peer(&mut self, comm: MPI_Comm, r: i32) -> (CommInfo, i32) {
        self.ts().comms.lookup_peer(comm, r)
    }

    /// A rank of `comm` (`info`) as a rank of the world; `MPI_PROC_NULL`,
    /// `MPI_ANY_SOURCE` and invalid ranks give no peer.
    #[inline(always)]
    pub fn world_rank(&mut self, info: &CommInfo, r: i32) -> i32 {
        self.ts().comms.world_rank(info, r)
    }

    /// (in, out) degrees of a topology communicator.
    pub fn degrees(&mut self, comm: MPI_Comm, info: &CommInfo) -> (u32, u32) {
        self.ts().comms.degrees(comm, info)
    }

    /// `PMPI_Type_size_x`, cached per thread; 0 for count 0 (the datatype
    /// may then be anything).
    #[inline(always)]
    pub fn bytes(&mut self, count: u64, dt: MPI_Datatype) -> u64 {
        if count == 0 {
            return 0;
        }
        count.saturating_mul(self.ts().types.size(dt))
    }

    /// Sum of `counts[i] * size(types[i])` for `i < n` (`Alltoallw`).
    ///
    /// # Safety
    /// Both arrays are null or hold at least `n` elements.
    pub unsafe fn wbytes<T: ToCount>(
        &mut self,
        counts: *const T,
        types: *const MPI_Datatype,
        n: u32,
    ) -> u64 {
        if types.is_null() {
            return 0;
        }
        // SAFETY: both arrays hold `n` elements (the contract).
        unsafe { self.counts_times_sizes(counts, n, |i| *types.add(i)) }
    }

    /// Sum of `counts[i] * size(type_of(i))` for `i < n`.
    ///
    /// # Safety
    /// `counts` is null or holds at least `n` elements, and `type_of` may be
    /// called for every `i < n`.
    pub(crate) unsafe fn counts_times_sizes<T: ToCount>(
        &mut self,
        counts: *const T,
        n: u32,
        type_of: impl Fn(usize) -> MPI_Datatype,
    ) -> u64 {
        if counts.is_null() {
            return 0;
        }
        let mut s = 0u64;
        for i in 0..n as usize {
            // SAFETY: `i < n` (the contract).
            let c = unsafe { (*counts.add(i)).cnt() };
            if c > 0 {
                s = s.saturating_add(self.bytes(c, type_of(i)));
            }
        }
        s
    }

    /// Role of this rank for a rooted collective.
    #[inline(always)]
    pub fn role(&self, info: &CommInfo, root: i32) -> Role {
        if info.inter {
            if root == MPI_ROOT {
                Role::Root
            } else {
                Role::NonRoot
            }
        } else if root == info.rank {
            Role::Root
        } else {
            Role::NonRoot
        }
    }
}
