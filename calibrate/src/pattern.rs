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
pub enum Pattern {
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

pub const ALL: &[Pattern] = &[
    Pattern::Send,
    Pattern::Ssend,
    Pattern::Nonblocking,
    Pattern::Sendrecv,
    Pattern::Bcast,
    Pattern::Reduce,
    Pattern::Allreduce,
    Pattern::Gather,
    Pattern::Gatherv,
    Pattern::Scatter,
    Pattern::Scatterv,
    Pattern::Allgather,
    Pattern::Allgatherv,
    Pattern::Alltoall,
    Pattern::Alltoallv,
    Pattern::Alltoallw,
    Pattern::Barrier,
    Pattern::Scan,
    Pattern::Exscan,
    Pattern::ReduceScatter,
    Pattern::ReduceScatterBlock,
    Pattern::Exchange,
];

impl Pattern {
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
            Pattern::Send => "Send/Recv",
            Pattern::Ssend => "Ssend",
            Pattern::Nonblocking => "Isend/Irecv+Wait",
            Pattern::Sendrecv => "Sendrecv",
            Pattern::Exchange => "Irecv+Isend+Waitall exchange",
            k => k.function().name,
        }
    }

    /// The catalogue entry of the pattern's (first) timed function.
    pub fn function(self) -> &'static Function {
        match self {
            Pattern::Send => &table::SEND,
            Pattern::Ssend => &table::SSEND,
            Pattern::Nonblocking => &table::ISEND,
            Pattern::Sendrecv => &table::SENDRECV,
            Pattern::Bcast => &table::BCAST,
            Pattern::Reduce => &table::REDUCE,
            Pattern::Allreduce => &table::ALLREDUCE,
            Pattern::Gather => &table::GATHER,
            Pattern::Gatherv => &table::GATHERV,
            Pattern::Scatter => &table::SCATTER,
            Pattern::Scatterv => &table::SCATTERV,
            Pattern::Allgather => &table::ALLGATHER,
            Pattern::Allgatherv => &table::ALLGATHERV,
            Pattern::Alltoall => &table::ALLTOALL,
            Pattern::Alltoallv => &table::ALLTOALLV,
            Pattern::Alltoallw => &table::ALLTOALLW,
            Pattern::Barrier => &table::BARRIER,
            Pattern::Scan => &table::SCAN,
            Pattern::Exscan => &table::EXSCAN,
            Pattern::ReduceScatter => &table::REDUCE_SCATTER,
            Pattern::ReduceScatterBlock => &table::REDUCE_SCATTER_BLOCK,
            Pattern::Exchange => &table::WAITALL,
        }
    }

    /// The entries this pattern produces, in a fixed order.
    pub fn entries(self) -> Vec<EntryDef> {
        match self {
            Pattern::Send => vec![e("MPI_Send", None), e("MPI_Recv", None)],
            Pattern::Ssend => vec![e("MPI_Ssend", None)],
            Pattern::Nonblocking => vec![
                e("MPI_Isend", None),
                e("MPI_Wait", Some("MPI_Isend")),
                e("MPI_Irecv", None),
                e("MPI_Wait", Some("MPI_Irecv")),
            ],
            Pattern::Sendrecv => vec![e("MPI_Sendrecv", None)],
            Pattern::Exchange => vec![e("MPI_Waitall", Some("exchange"))],
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
            Pattern::Nonblocking => 4,
            Pattern::Send | Pattern::Ssend => 2,
            _ => 1,
        }
    }

    /// Which entry (index into [`Pattern::entries`]) the call in `slot` of rank
    /// `me` in window `w` belongs to; `None` when it is not recorded.
    pub fn entry_of(self, me: i32, slot: usize, w: u64) -> Option<usize> {
        // The ping's sender sends first (slot 0) and receives the pong
        // (slot 1); its partner receives first and sends the pong.
        let sends = (me == (w % 2) as i32) == (slot < self.slots() / 2);
        match self {
            Pattern::Send => Some(if sends { 0 } else { 1 }),
            Pattern::Ssend => sends.then_some(0),
            // Slots: post, wait, post, wait.
            Pattern::Nonblocking => Some(if sends { slot % 2 } else { 2 + slot % 2 }),
            Pattern::Sendrecv => Some(0),
            k if k.rooted() => Some(if me == 0 { 0 } else { 1 }),
            _ => Some(0),
        }
    }

    /// Whether a size of `bytes` per rank is possible with p ranks (counts are
    /// C ints). Barrier has only bytes = 0.
    /// For `Exchange`, p is the number of neighbours k.
    pub fn feasible(self, p: u32, bytes: u64) -> bool {
        if self == Pattern::Barrier {
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
    pub fn new(kind: Pattern, p: u32, k: u32, bytes: u64) -> Bufs {
        let b = bytes as usize;
        let pp = p as usize;
        let kk = if kind == Pattern::Exchange {
            k as usize
        } else {
            0
        };
        let (s, r) = match kind {
            Pattern::Send | Pattern::Ssend | Pattern::Nonblocking | Pattern::Sendrecv => (b, b),
            Pattern::Bcast => (b, b),
            Pattern::Reduce | Pattern::Allreduce | Pattern::Scan | Pattern::Exscan => (b, b),
            Pattern::Gather | Pattern::Gatherv | Pattern::Allgather | Pattern::Allgatherv => {
                (b, b * pp)
            }
            Pattern::Scatter | Pattern::Scatterv => (b * pp, b),
            Pattern::Alltoall | Pattern::Alltoallv | Pattern::Alltoallw => (b * pp, b * pp),
            Pattern::Barrier => (0, 0),
            Pattern::ReduceScatter | Pattern::ReduceScatterBlock => (b * pp, b),
            Pattern::Exchange => (b * kk, b * kk),
        };
        // Touch the memory now so that page faults do not land in a window.
        let send = vec![1u8; s.max(1)];
        let recv = vec![0u8; r.max(1)];
        Bufs {
            send,
            recv,
            counts: vec![bytes as c_int; pp],
            displs: (0..pp).map(|i| (i * b) as c_int).collect(),
            types: if kind == Pattern::Alltoallw {
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
        assert_eq!(Pattern::Send.entry_of(0, 0, 0), Some(0));
        assert_eq!(Pattern::Send.entry_of(0, 1, 0), Some(1));
        assert_eq!(Pattern::Send.entry_of(1, 0, 0), Some(1));
        assert_eq!(Pattern::Send.entry_of(1, 1, 0), Some(0));
        assert_eq!(Pattern::Send.entry_of(1, 0, 1), Some(0));
        assert_eq!(Pattern::Ssend.entry_of(1, 0, 0), None);
        assert_eq!(Pattern::Ssend.entry_of(1, 1, 0), Some(0));
        // Nonblocking slots: post, wait, post, wait.
        assert_eq!(Pattern::Nonblocking.entry_of(0, 0, 0), Some(0));
        assert_eq!(Pattern::Nonblocking.entry_of(0, 1, 0), Some(1));
        assert_eq!(Pattern::Nonblocking.entry_of(0, 2, 0), Some(2));
        assert_eq!(Pattern::Nonblocking.entry_of(0, 3, 0), Some(3));
        assert_eq!(Pattern::Nonblocking.entry_of(1, 1, 0), Some(3));
        assert_eq!(Pattern::Nonblocking.entry_of(1, 3, 0), Some(1));
        assert_eq!(Pattern::Bcast.entry_of(0, 0, 5), Some(0));
        assert_eq!(Pattern::Bcast.entry_of(2, 0, 5), Some(1));
        assert_eq!(Pattern::Exchange.entry_of(3, 0, 1), Some(0));
        assert!(!Pattern::Barrier.feasible(2, 1));
        assert!(Pattern::Barrier.feasible(2, 0));
    }
}
