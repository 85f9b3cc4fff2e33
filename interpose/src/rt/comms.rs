//! The per-thread communicator cache: size, world ranks, topology, kind.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicU32, Ordering::*};

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::handle::Handle;

use super::state::{COMM_EPOCH, NONE_PEER, WORLD_GROUP, WORLD_RANK, WORLD_SIZE};

/// What an event needs of its communicator.
#[derive(Clone, Copy)]
pub struct CommInfo {
    /// Local group size (`MPI_Comm_size`).
    pub size: u32,
    /// Size of the group peers are ranks of (the remote group of an
    /// intercommunicator, else `size`).
    pub rsize: u32,
    /// This process's rank in the local group.
    pub rank: i32,
    pub inter: bool,
    pub(crate) kind: CommKind,
    pub(crate) slot: u8,
}

/// Which communicator: the two predefined ones translate ranks without a
/// table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum CommKind {
    World,
    SelfComm,
    /// Translate through the cache entry `slot`.
    Other,
}

pub(crate) const COMM_SLOTS: usize = 32;

pub(crate) struct CommEntry {
    pub(crate) handle: usize,
    pub(crate) info: CommInfo,
    pub(crate) world: Box<[i32]>,
    pub(crate) deg: Option<(u32, u32)>,
}

pub struct CommCache {
    pub(crate) epoch: u32,
    pub(crate) entries: Vec<CommEntry>,
    pub(crate) next_victim: usize,
}

pub(crate) static WORLD_INFO_SIZE: AtomicU32 = AtomicU32::new(0);

/// `MPI_COMM_WORLD`'s facts, read from the statics set at init.
#[inline(always)]
fn world_info() -> CommInfo {
    let s = WORLD_INFO_SIZE.load(Relaxed);
    CommInfo {
        size: s,
        rsize: s,
        rank: WORLD_RANK.load(Relaxed) as i32,
        inter: false,
        kind: CommKind::World,
        slot: 0,
    }
}

/// `MPI_COMM_SELF`'s facts.
const SELF_INFO: CommInfo = CommInfo {
    size: 1,
    rsize: 1,
    rank: 0,
    inter: false,
    kind: CommKind::SelfComm,
    slot: 0,
};

/// Records the world's geometry and group at init (with the guard held).
pub fn init_world(rank: i32, size: i32) {
    WORLD_RANK.store(rank.max(0) as u32, Relaxed);
    WORLD_SIZE.store(size.max(0) as u32, Relaxed);
    WORLD_INFO_SIZE.store(size.max(0) as u32, Relaxed);
    let mut g: MaybeUninit<MPI_Group> = MaybeUninit::uninit();
    // SAFETY: plain PMPI call with valid out-pointer.
    unsafe {
        if PMPI_Comm_group(consts::comm_world(), g.as_mut_ptr()) == 0 {
            WORLD_GROUP.store(g.assume_init().bits(), Relaxed);
        }
    }
}

#[cfg(mpi_handles_are_pointers)]
pub(crate) fn world_group() -> MPI_Group {
    WORLD_GROUP.load(Relaxed) as MPI_Group
}
#[cfg(not(mpi_handles_are_pointers))]
pub(crate) fn world_group() -> MPI_Group {
    WORLD_GROUP.load(Relaxed) as u32 as i32 as MPI_Group
}

impl CommCache {
    pub(crate) fn new() -> CommCache {
        CommCache {
            epoch: COMM_EPOCH.load(Relaxed),
            entries: Vec::new(),
            next_victim: 0,
        }
    }

    /// Inlined for the two predefined communicators (two compares, no
    /// call); the others go through the cache (`lookup_other`).
    #[inline(always)]
    pub(crate) fn lookup(&mut self, comm: MPI_Comm) -> CommInfo {
        let h = comm.bits();
        if h == consts::comm_world().bits() {
            return world_info();
        }
        if h == consts::comm_self().bits() {
            return SELF_INFO;
        }
        self.lookup_other_words(comm)
    }

    /// `lookup`, and rank `r` of the communicator as a world rank (as
    /// `world_rank`): each of the predefined communicators' paths translates
    /// on its own (no test of the kind once the paths have joined), and the
    /// others' in the same call as their look-up.
    #[inline(always)]
    pub(crate) fn lookup_peer(&mut self, comm: MPI_Comm, r: i32) -> (CommInfo, i32) {
        let h = comm.bits();
        if h == consts::comm_world().bits() {
            let info = world_info();
            return (info, if r < 0 { NONE_PEER } else { r });
        }
        if h == consts::comm_self().bits() {
            let info = SELF_INFO;
            let w = if r < 0 {
                NONE_PEER
            } else {
                WORLD_RANK.load(Relaxed) as i32
            };
            return (info, w);
        }
        let info = self.lookup_other_words(comm);
        (info, self.world_rank(&info, r))
    }

    /// `lookup_other`, its answer in two registers: returned in memory, it
    /// would make every caller keep the predefined communicators' facts
    /// in memory too, where they join (stores the wrapper does not need).
    #[inline(always)]
    fn lookup_other_words(&mut self, comm: MPI_Comm) -> CommInfo {
        let (a, b) = self.lookup_other_packed(comm);
        CommInfo {
            size: a as u32,
            rsize: (a >> 32) as u32,
            rank: b as u32 as i32,
            inter: (b >> 32) as u8 != 0,
            kind: match (b >> 40) as u8 {
                0 => CommKind::World,
                1 => CommKind::SelfComm,
                _ => CommKind::Other,
            },
            slot: (b >> 48) as u8,
        }
    }

    #[inline(never)]
    fn lookup_other_packed(&mut self, comm: MPI_Comm) -> (u64, u64) {
        let i = self.lookup_other(comm);
        (
            i.size as u64 | (i.rsize as u64) << 32,
            i.rank as u32 as u64
                | (i.inter as u64) << 32
                | (i.kind as u8 as u64) << 40
                | (i.slot as u64) << 48,
        )
    }

    #[inline(never)]
    pub(crate) fn lookup_other(&mut self, comm: MPI_Comm) -> CommInfo {
        let h = comm.bits();
        let e = COMM_EPOCH.load(Relaxed);
        if e != self.epoch {
            self.entries.clear();
            self.epoch = e;
        }
        for (i, c) in self.entries.iter().enumerate() {
            if c.handle == h {
                let mut info = c.info;
                info.slot = i as u8;
                return info;
            }
        }
        self.insert(comm)
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn insert(&mut self, comm: MPI_Comm) -> CommInfo {
        let mut info = CommInfo {
            size: 0,
            rsize: 0,
            rank: -1,
            inter: false,
            kind: CommKind::Other,
            slot: 0,
        };
        let mut world: Vec<i32> = Vec::new();
        let (mut inter, mut size, mut rank) = (0i32, 0i32, -1i32);
        // SAFETY: `comm` is a communicator the wrapped call just used
        // successfully, so a live one; the out-pointers are locals.
        unsafe {
            PMPI_Comm_test_inter(comm, &mut inter);
            PMPI_Comm_size(comm, &mut size);
            PMPI_Comm_rank(comm, &mut rank);
        }
        info.inter = inter != 0;
        info.size = size.max(0) as u32;
        info.rank = rank;
        let mut rsize = size;
        let mut group: MaybeUninit<MPI_Group> = MaybeUninit::uninit();
        // SAFETY: as above; `group` is only read once a call returned success
        // (having written it).
        let ok = unsafe {
            if info.inter {
                PMPI_Comm_remote_size(comm, &mut rsize);
                PMPI_Comm_remote_group(comm, group.as_mut_ptr())
            } else {
                PMPI_Comm_group(comm, group.as_mut_ptr())
            }
        };
        info.rsize = rsize.max(0) as u32;
        if ok == 0 && rsize > 0 {
            // SAFETY: the group call succeeded, so it wrote `group`.
            let mut group = unsafe { group.assume_init() };
            let ranks: Vec<i32> = (0..rsize).collect();
            world = vec![NONE_PEER; rsize as usize];
            // SAFETY: `ranks` and `world` hold `rsize` ranks each, the group's
            // size; both groups are live (the world's is kept for the run).
            let rc = unsafe {
                PMPI_Group_translate_ranks(
                    group,
                    rsize,
                    ranks.as_ptr(),
                    world_group(),
                    world.as_mut_ptr(),
                )
            };
            if rc != 0 {
                world.clear();
            }
            for w in world.iter_mut() {
                if *w < 0 {
                    *w = NONE_PEER;
                }
            }
            // SAFETY: frees the group made above, once.
            unsafe { PMPI_Group_free(&mut group) };
        }
        let entry = CommEntry {
            handle: comm.bits(),
            info,
            world: world.into_boxed_slice(),
            deg: None,
        };
        let slot = if self.entries.len() < COMM_SLOTS {
            self.entries.push(entry);
            self.entries.len() - 1
        } else {
            let v = self.next_victim % COMM_SLOTS;
            self.next_victim = self.next_victim.wrapping_add(1);
            if let Some(e) = self.entries.get_mut(v) {
                *e = entry;
            }
            v
        };
        info.slot = slot as u8;
        info
    }

    #[inline(always)]
    pub(crate) fn world_rank(&self, info: &CommInfo, r: i32) -> i32 {
        if r < 0 {
            return NONE_PEER;
        }
        match info.kind {
            CommKind::World => r,
            CommKind::SelfComm => WORLD_RANK.load(Relaxed) as i32,
            CommKind::Other => self
                .entries
                .get(info.slot as usize)
                .and_then(|e| e.world.get(r as usize).copied())
                .unwrap_or(NONE_PEER),
        }
    }

    /// Translation through what is already cached (no MPI call).
    pub(crate) fn translate_cached(&self, handle: usize, r: i32) -> i32 {
        if r < 0 || handle == 0 {
            return NONE_PEER;
        }
        if handle == consts::comm_world().bits() {
            return r;
        }
        if handle == consts::comm_self().bits() {
            return WORLD_RANK.load(Relaxed) as i32;
        }
        if self.epoch != COMM_EPOCH.load(Relaxed) {
            return NONE_PEER;
        }
        self.entries
            .iter()
            .find(|e| e.handle == handle)
            .and_then(|e| e.world.get(r as usize).copied())
            .unwrap_or(NONE_PEER)
    }

    pub(crate) fn degrees(&mut self, comm: MPI_Comm, info: &CommInfo) -> (u32, u32) {
        if info.kind != CommKind::Other {
            return (0, 0);
        }
        if let Some(d) = self.entries.get(info.slot as usize).and_then(|e| e.deg) {
            return d;
        }
        let (mut indeg, mut outdeg) = (0i32, 0i32);
        let mut topo = 0i32;
        // SAFETY: `comm` is the live communicator of the wrapped call; `topo`
        // a local.
        unsafe { PMPI_Topo_test(comm, &mut topo) };
        if topo == consts::dist_graph() {
            let mut weighted = 0;
            // SAFETY: `comm` has a distributed graph topology (just asked); the
            // out-pointers are locals.
            unsafe {
                PMPI_Dist_graph_neighbors_count(comm, &mut indeg, &mut outdeg, &mut weighted)
            };
        } else if topo == consts::graph() {
            // SAFETY: `comm` has a graph topology (just asked) and `info.rank` is
            // this process's rank in it; `indeg` is a local.
            unsafe { PMPI_Graph_neighbors_count(comm, info.rank, &mut indeg) };
            outdeg = indeg;
        } else if topo == consts::cart() {
            let mut nd = 0;
            // SAFETY: `comm` has a Cartesian topology (just asked); `nd` is a local.
            unsafe { PMPI_Cartdim_get(comm, &mut nd) };
            indeg = 2 * nd;
            outdeg = indeg;
        }
        let d = (indeg.max(0) as u32, outdeg.max(0) as u32);
        if let Some(e) = self.entries.get_mut(info.slot as usize) {
            e.deg = Some(d);
        }
        d
    }
}
