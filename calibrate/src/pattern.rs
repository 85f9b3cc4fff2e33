//! The measured patterns: what each rank calls in one window, and which
//! entry (function, role) each timed call belongs to.
//!
//! Point-to-point patterns run on a pair as a ping-pong (SKaMPI's pattern):
//! in each window both ranks start together, one sends the ping and then
//! receives the pong, the other receives the ping and sends the pong; who
//! pings alternates from window to window. Every call of both ranks is timed
//! on its own, so the receive samples hold both the receive posted at the
//! same time as the send (one-way) and the receive of the reply, posted right
//! after the rank's own send (one-way plus the partner's turn-around): what a
//! clean ping-pong or halo exchange shows, and nothing a late sender adds.
//!
//! - `Send`: `MPI_Send` / `MPI_Recv` -> entries `MPI_Send`, `MPI_Recv`.
//! - `Ssend`: `MPI_Ssend` / `MPI_Recv` -> `MPI_Ssend` (these receives are not recorded).
//! - `Nonblocking`: `MPI_Isend` + `MPI_Wait` / `MPI_Irecv` + `MPI_Wait`, each of
//!   the calls timed -> `MPI_Isend`, `MPI_Wait` (role `MPI_Isend`),
//!   `MPI_Irecv`, `MPI_Wait` (role `MPI_Irecv`).
//! - `Sendrecv`: both ranks exchange with `MPI_Sendrecv` -> `MPI_Sendrecv`.
//!
//! - `Exchange`: a halo exchange of k neighbours on every rank of the run:
//!   every rank posts k `MPI_Irecv` and k `MPI_Isend` (one per neighbour,
//!   tag = neighbour number) and completes them with one `MPI_Waitall`, which
//!   is the timed call -> `MPI_Waitall` (role `exchange`, p = k). The
//!   completion of a halo exchange is looked up here
//!   (`mpiover_common::completion`).
//!
//! Collectives run on the sub-communicator of size p with root 0; rooted ones
//! (Bcast, Reduce, Gather(v), Scatter(v)) give a `root` and a `nonroot` entry.
//! Reductions use `MPI_UINT8_T` with `MPI_SUM`, so that every byte count of
//! the grid is exact.

use std::ffi::c_int;

use mpiover_common::functions::{table, Function, Scope};
use mpiover_mpisys as ffi;
use mpiover_mpisys::consts as c;

mod window;
pub use window::run_window;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Send,
    Ssend,
    Nonblocking,
    Sendrecv,
    Bcast,
    Reduce,
    Allreduce,
    Gather,
    Gatherv,
    Scatter,
    Scatterv,
    Allgather,
    Allgatherv,
    Alltoall,
    Alltoallv,
    /// Every peer's block as `MPI_BYTE` (the type arrays only name it p times).
    Alltoallw,
    Barrier,
    Scan,
    Exscan,
    ReduceScatter,
    ReduceScatterBlock,
    /// k neighbours: Irecv + Isend to each, one timed Waitall.
    Exchange,
}

/// One entry a pattern produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryDef {
    pub function: &'static str,
    pub role: Option<&'static str>,
}

const fn e(function: &'static str, role: Option<&'static str>) -> EntryDef {
    EntryDef { function, role }
}

pub const ALL: &[Kind] = &[
    Kind::Send,
    Kind::Ssend,
    Kind::Nonblocking,
    Kind::Sendrecv,
    Kind::Bcast,
    Kind::Reduce,
    Kind::Allreduce,
    Kind::Gather,
    Kind::Gatherv,
    Kind::Scatter,
    Kind::Scatterv,
    Kind::Allgather,
    Kind::Allgatherv,
    Kind::Alltoall,
    Kind::Alltoallv,
    Kind::Alltoallw,
    Kind::Barrier,
    Kind::Scan,
    Kind::Exscan,
    Kind::ReduceScatter,
    Kind::ReduceScatterBlock,
    Kind::Exchange,
];

impl Kind {
    /// Whether the pattern runs on a pair (its function is point-to-point).
    pub fn p2p(self) -> bool {
        self.function().scope == Scope::PointToPoint
    }

    /// Whether the pattern gives a `root` and a `nonroot` entry.
    pub fn rooted(self) -> bool {
        self.function().rooted
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Send => "Send/Recv",
            Kind::Ssend => "Ssend",
            Kind::Nonblocking => "Isend/Irecv+Wait",
            Kind::Sendrecv => "Sendrecv",
            Kind::Exchange => "Irecv+Isend+Waitall exchange",
            k => k.function().name,
        }
    }

    /// The catalogue entry of the pattern's (first) timed function.
    pub fn function(self) -> &'static Function {
        match self {
            Kind::Send => &table::SEND,
            Kind::Ssend => &table::SSEND,
            Kind::Nonblocking => &table::ISEND,
            Kind::Sendrecv => &table::SENDRECV,
            Kind::Bcast => &table::BCAST,
            Kind::Reduce => &table::REDUCE,
            Kind::Allreduce => &table::ALLREDUCE,
            Kind::Gather => &table::GATHER,
            Kind::Gatherv => &table::GATHERV,
            Kind::Scatter => &table::SCATTER,
            Kind::Scatterv => &table::SCATTERV,
            Kind::Allgather => &table::ALLGATHER,
            Kind::Allgatherv => &table::ALLGATHERV,
            Kind::Alltoall => &table::ALLTOALL,
            Kind::Alltoallv => &table::ALLTOALLV,
            Kind::Alltoallw => &table::ALLTOALLW,
            Kind::Barrier => &table::BARRIER,
            Kind::Scan => &table::SCAN,
            Kind::Exscan => &table::EXSCAN,
            Kind::ReduceScatter => &table::REDUCE_SCATTER,
            Kind::ReduceScatterBlock => &table::REDUCE_SCATTER_BLOCK,
            Kind::Exchange => &table::WAITALL,
        }
    }

    /// The entries this pattern produces, in a fixed order.
    pub fn entries(self) -> Vec<EntryDef> {
        match self {
            Kind::Send => vec![e("MPI_Send", None), e("MPI_Recv", None)],
            Kind::Ssend => vec![e("MPI_Ssend", None)],
            Kind::Nonblocking => vec![
                e("MPI_Isend", None),
                e("MPI_Wait", Some("MPI_Isend")),
                e("MPI_Irecv", None),
                e("MPI_Wait", Some("MPI_Irecv")),
            ],
            Kind::Sendrecv => vec![e("MPI_Sendrecv", None)],
            Kind::Exchange => vec![e("MPI_Waitall", Some("exchange"))],
            k if k.rooted() => vec![
                e(k.function().name, Some("root")),
                e(k.function().name, Some("nonroot")),
            ],
            k => vec![e(k.function().name, None)],
        }
    }

    /// Timed calls per rank and window.
    pub fn slots(self) -> usize {
        match self {
            Kind::Nonblocking => 4,
            Kind::Send | Kind::Ssend => 2,
            _ => 1,
        }
    }

    /// Which entry (index into [`Kind::entries`]) the call in `slot` of rank
    /// `me` in window `w` belongs to; `None` when it is not recorded.
    pub fn entry_of(self, me: i32, slot: usize, w: u64) -> Option<usize> {
        // The ping's sender sends first (slot 0) and receives the pong
        // (slot 1); its partner receives first and sends the pong.
        let sends = (me == (w % 2) as i32) == (slot < self.slots() / 2);
        match self {
            Kind::Send => Some(if sends { 0 } else { 1 }),
            Kind::Ssend => sends.then_some(0),
            // Slots: post, wait, post, wait.
            Kind::Nonblocking => Some(if sends { slot % 2 } else { 2 + slot % 2 }),
            Kind::Sendrecv => Some(0),
            k if k.rooted() => Some(if me == 0 { 0 } else { 1 }),
            _ => Some(0),
        }
    }

    /// Whether a size of `bytes` per rank is possible with p ranks (counts are
    /// C ints). Barrier has only bytes = 0.
    /// For `Exchange`, p is the number of neighbours k.
    pub fn feasible(self, p: u32, bytes: u64) -> bool {
        if self == Kind::Barrier {
            return bytes == 0;
        }
        bytes > 0 && bytes.saturating_mul(p as u64) <= i32::MAX as u64
    }
}

/// Look a function name up: `MPI_Send`, `Send`, `send`, `mpi_send`.
pub fn canonical_function(name: &str) -> Option<&'static str> {
    let low = name.trim().to_ascii_lowercase();
    let low = low.strip_prefix("mpi_").unwrap_or(&low);
    ALL.iter()
        .flat_map(|k| k.entries())
        .map(|d| d.function)
        .find(|f| f[4..].eq_ignore_ascii_case(low))
}

/// All function names the calibrator measures.
pub fn all_functions() -> Vec<&'static str> {
    let mut v: Vec<&'static str> = ALL
        .iter()
        .flat_map(|k| k.entries())
        .map(|d| d.function)
        .collect();
    v.dedup();
    let mut seen = std::collections::HashSet::new();
    v.retain(|f| seen.insert(*f));
    v
}

/// Buffers of one job.
pub struct Bufs {
    send: Vec<u8>,
    recv: Vec<u8>,
    counts: Vec<c_int>,
    displs: Vec<c_int>,
    /// `MPI_BYTE` once per peer (Alltoallw).
    types: Vec<ffi::MPI_Datatype>,
    bytes: c_int,
    p: c_int,
    /// `Exchange`: neighbours, and the 2k requests of a window.
    k: usize,
    reqs: Vec<ffi::MPI_Request>,
}

impl Bufs {
    /// `p` is the communicator's size; `k` the exchange's neighbours (other
    /// patterns ignore it).
    pub fn new(kind: Kind, p: u32, k: u32, bytes: u64) -> Bufs {
        let b = bytes as usize;
        let pp = p as usize;
        let kk = if kind == Kind::Exchange {
            k as usize
        } else {
            0
        };
        let (s, r) = match kind {
            Kind::Send | Kind::Ssend | Kind::Nonblocking | Kind::Sendrecv => (b, b),
            Kind::Bcast => (b, b),
            Kind::Reduce | Kind::Allreduce | Kind::Scan | Kind::Exscan => (b, b),
            Kind::Gather | Kind::Gatherv | Kind::Allgather | Kind::Allgatherv => (b, b * pp),
            Kind::Scatter | Kind::Scatterv => (b * pp, b),
            Kind::Alltoall | Kind::Alltoallv | Kind::Alltoallw => (b * pp, b * pp),
            Kind::Barrier => (0, 0),
            Kind::ReduceScatter | Kind::ReduceScatterBlock => (b * pp, b),
            Kind::Exchange => (b * kk, b * kk),
        };
        // Touch the memory now so that page faults do not land in a window.
        let send = vec![1u8; s.max(1)];
        let recv = vec![0u8; r.max(1)];
        Bufs {
            send,
            recv,
            counts: vec![bytes as c_int; pp],
            displs: (0..pp).map(|i| (i * b) as c_int).collect(),
            types: if kind == Kind::Alltoallw {
                vec![c::byte(); pp]
            } else {
                Vec::new()
            },
            bytes: bytes as c_int,
            p: p as c_int,
            k: kk,
            reqs: vec![c::request_null(); 2 * kk],
        }
    }
}

/// The rank the `j`-th exchange message (from 1) of `me` goes to among `p`
/// ranks, and the rank its `j`-th message comes from: neighbours cycle over
/// the other ranks, never `me` itself (with fewer than k + 1 ranks a
/// neighbour gets several messages, kept apart by their tags).
pub fn exchange_peers(me: i32, j: usize, p: i32) -> (i32, i32) {
    let step = 1 + ((j - 1) % (p.max(2) as usize - 1)) as i32;
    ((me + step).rem_euclid(p), (me - step).rem_euclid(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the calibration measures is what the interposer records and the
    /// report looks up: every function an event of the catalogue, with the
    /// roles the catalogue gives it (rooted collectives `root`/`nonroot`).
    #[test]
    fn measured_functions_are_events_of_the_catalogue() {
        use mpiover_common::functions::get;
        for k in ALL {
            for d in k.entries() {
                let f = get(d.function)
                    .unwrap_or_else(|| panic!("{} is not in the catalogue", d.function));
                if let Some(role) = d.role {
                    let ok = match role {
                        "root" | "nonroot" => f.rooted,
                        _ => f.completion.is_some(),
                    };
                    assert!(ok, "{} measured with role {role}", d.function);
                }
            }
        }
    }

    #[test]
    fn exchange_messages_match_and_never_go_to_self() {
        for p in 2..=9i32 {
            for k in 1..=26usize {
                for me in 0..p {
                    for j in 1..=k {
                        let (to, from) = exchange_peers(me, j, p);
                        assert_ne!(to, me);
                        assert_ne!(from, me);
                        // What `me` sends with tag j, `to` expects with tag j from `me`.
                        assert_eq!(exchange_peers(to, j, p).1, me);
                    }
                }
            }
        }
    }

    #[test]
    fn names() {
        assert_eq!(canonical_function("send"), Some("MPI_Send"));
        assert_eq!(
            canonical_function("MPI_Reduce_scatter_block"),
            Some("MPI_Reduce_scatter_block")
        );
        assert_eq!(canonical_function("mpi_wait"), Some("MPI_Wait"));
        assert_eq!(canonical_function("MPI_Foo"), None);
        let all = all_functions();
        assert!(all.contains(&"MPI_Recv") && all.contains(&"MPI_Exscan"));
        // Every function is a catalogued event with the same C name.
        for f in all {
            assert!(mpiover_common::functions::class_of(f).is_some(), "{f}");
        }
    }

    #[test]
    fn roles() {
        // Window 0: rank 0 pings (Send, then Recv), rank 1 pongs.
        assert_eq!(Kind::Send.entry_of(0, 0, 0), Some(0));
        assert_eq!(Kind::Send.entry_of(0, 1, 0), Some(1));
        assert_eq!(Kind::Send.entry_of(1, 0, 0), Some(1));
        assert_eq!(Kind::Send.entry_of(1, 1, 0), Some(0));
        assert_eq!(Kind::Send.entry_of(1, 0, 1), Some(0));
        assert_eq!(Kind::Ssend.entry_of(1, 0, 0), None);
        assert_eq!(Kind::Ssend.entry_of(1, 1, 0), Some(0));
        // Nonblocking slots: post, wait, post, wait.
        assert_eq!(Kind::Nonblocking.entry_of(0, 0, 0), Some(0));
        assert_eq!(Kind::Nonblocking.entry_of(0, 1, 0), Some(1));
        assert_eq!(Kind::Nonblocking.entry_of(0, 2, 0), Some(2));
        assert_eq!(Kind::Nonblocking.entry_of(0, 3, 0), Some(3));
        assert_eq!(Kind::Nonblocking.entry_of(1, 1, 0), Some(3));
        assert_eq!(Kind::Nonblocking.entry_of(1, 3, 0), Some(1));
        assert_eq!(Kind::Bcast.entry_of(0, 0, 5), Some(0));
        assert_eq!(Kind::Bcast.entry_of(2, 0, 5), Some(1));
        assert_eq!(Kind::Exchange.entry_of(3, 0, 1), Some(0));
        assert!(!Kind::Barrier.feasible(2, 1));
        assert!(Kind::Barrier.feasible(2, 0));
    }
}
