//! The catalogue: one typed record per MPI function that is an event.
//!
//! The table is the single place where a function's nature is written down;
//! everything that used to match function names as strings asks it instead
//! (the interposer's build script checks its wrapper spec against it, the
//! profile lookup and the report classify through it). Names are the C names;
//! Fortran entry points and MPI-4 large-count (`_c`) calls report under the
//! C name of their base function.

use serde::{Deserialize, Serialize};

/// How a communication event behaves, which decides the wait state its
/// overhead indicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventClass {
    /// Blocking send (Send, Bsend, Rsend, Ssend): waits for the receiver.
    Send,
    /// Blocking receive (Recv, Mrecv): waits for the sender.
    Recv,
    /// Sendrecv(_replace): both at once.
    SendRecv,
    /// Blocking probe: waits for a message to arrive.
    Probe,
    /// Posting a non-blocking operation (Isend, Irecv, Ibcast, ...): cheap.
    Post,
    /// Completion (Wait*, Test*): where the time of a non-blocking call goes.
    Completion,
    /// Non-polling local call that can still take time (Iprobe, Improbe).
    Poll,
    /// Collective where everybody waits for everybody (Allreduce, Alltoall, ...).
    CollectiveNxN,
    /// Barrier.
    Barrier,
    /// One-to-all (Bcast, Scatter(v)): non-roots wait for a late root.
    CollectiveOneToN,
    /// All-to-one (Reduce, Gather(v)): the root waits for late others.
    CollectiveNToOne,
    /// Prefix reductions (Scan, Exscan): rank i waits for ranks < i.
    CollectiveScan,
}

/// Between whom a function communicates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// Two ranks: a message with a peer (sends, receives, probes, their posts).
    PointToPoint,
    /// Every rank of a communicator (blocking and non-blocking collectives).
    Collective,
    /// Acts on requests whatever they hold (`MPI_Start*`, `MPI_Wait*`, `MPI_Test*`).
    Requests,
}

/// Which way a point-to-point function's data flows, seen from the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    Send,
    Recv,
    /// `MPI_Sendrecv(_replace)`.
    Both,
    /// Collectives and request functions.
    None,
}

/// The send mode, which decides whether a send can wait for its receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SendMode {
    /// `MPI_Send`: eager below the implementation's limit, rendezvous above.
    Standard,
    /// `MPI_Bsend`: copied into the attached buffer, never waits.
    Buffered,
    /// `MPI_Rsend`: the receive is posted already; the protocol is the
    /// standard one's.
    Ready,
    /// `MPI_Ssend`: completes only when the receive has started.
    Synchronous,
}

/// How the `bytes` the interposer records (what the rank moves in all)
/// relate to the per-rank block the calibration keys by (the "message size"
/// of MPI benchmarks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Blocks {
    /// The recorded bytes are the message (point-to-point, reductions,
    /// broadcasts, neighbourhood collectives).
    Whole,
    /// p blocks on every rank (`Allgather`, `Alltoall`, `Reduce_scatter`, ...).
    PerRank,
    /// p blocks at the root, one elsewhere (`Gather`, `Scatter` and their `v`).
    PerRankAtRoot,
}

/// How many of its requests a completion waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompletionHow {
    /// `MPI_Wait`, `MPI_Test`.
    One,
    /// `MPI_Waitall`, `MPI_Testall`.
    All,
    /// `MPI_Waitany`, `MPI_Testany`.
    Any,
    /// `MPI_Waitsome`, `MPI_Testsome`.
    Some,
}

/// A completion: whether it blocks (`Wait*`) or polls (`Test*`), and how
/// many requests it completes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Completion {
    pub blocks: bool,
    pub how: CompletionHow,
}

/// One MPI function of the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Function {
    /// C name (`MPI_Recv`).
    pub name: &'static str,
    pub class: EventClass,
    pub scope: Scope,
    pub direction: Direction,
    /// For sends and their posts.
    pub mode: Option<SendMode>,
    /// Collectives with a root argument (and so a `root`/`nonroot` role).
    pub rooted: bool,
    pub blocks: Blocks,
    /// The blocking function a non-blocking or persistent one starts the
    /// operation of (`MPI_Isend`, `MPI_Send_init` -> `MPI_Send`;
    /// `MPI_Iallreduce` -> `MPI_Allreduce`).
    pub blocking: Option<&'static str>,
    /// The non-blocking function a persistent one is the twin of
    /// (`MPI_Send_init` -> `MPI_Isend`).
    pub persistent_of: Option<&'static str>,
    pub completion: Option<Completion>,
}

impl Function {
    /// Whether a call of this function with `bytes` waits for its receiver:
    /// synchronous sends always, buffered never, standard and ready sends from
    /// the rendezvous limit on. Receives, collectives and posts: false.
    pub fn waits_for_receiver(&self, bytes: u64, rendezvous_bytes: u64) -> bool {
        match self.mode {
            Some(SendMode::Synchronous) => true,
            Some(SendMode::Buffered) => false,
            Some(SendMode::Standard | SendMode::Ready) => bytes >= rendezvous_bytes,
            None => false,
        }
    }

    /// Whether its requests are receives (a post whose data flows in).
    pub fn posts_receives(&self) -> bool {
        self.class == EventClass::Post && self.direction == Direction::Recv
    }

    /// Whether it posts a non-blocking or persistent collective.
    pub fn posts_collective(&self) -> bool {
        self.class == EventClass::Post && self.scope == Scope::Collective
    }

    /// The non-blocking function whose requests this one's are: itself, or
    /// its non-blocking twin for a persistent post.
    pub fn nonblocking(&self) -> &'static str {
        self.persistent_of.unwrap_or(self.name)
    }
}

const fn ev(name: &'static str, class: EventClass, scope: Scope) -> Function {
    Function {
        name,
        class,
        scope,
        direction: Direction::None,
        mode: None,
        rooted: false,
        blocks: Blocks::Whole,
        blocking: None,
        persistent_of: None,
        completion: None,
    }
}

const fn send(name: &'static str, class: EventClass, mode: SendMode) -> Function {
    Function {
        direction: Direction::Send,
        mode: Some(mode),
        ..ev(name, class, Scope::PointToPoint)
    }
}

const fn recv(name: &'static str, class: EventClass) -> Function {
    Function {
        direction: Direction::Recv,
        ..ev(name, class, Scope::PointToPoint)
    }
}

const fn coll(name: &'static str, class: EventClass, blocks: Blocks) -> Function {
    Function {
        blocks,
        ..ev(name, class, Scope::Collective)
    }
}

const fn rooted(name: &'static str, class: EventClass, blocks: Blocks) -> Function {
    Function {
        rooted: true,
        ..coll(name, class, blocks)
    }
}

const fn completion(name: &'static str, blocks: bool, how: CompletionHow) -> Function {
    Function {
        completion: Some(Completion { blocks, how }),
        ..ev(name, EventClass::Completion, Scope::Requests)
    }
}

impl Function {
    /// This function posted without blocking: class `Post`, `blocking` set.
    const fn posted(self, name: &'static str) -> Function {
        Function {
            name,
            class: EventClass::Post,
            blocking: Some(self.name),
            ..self
        }
    }

    /// The persistent twin of a non-blocking post.
    const fn persistent(self, name: &'static str) -> Function {
        Function {
            name,
            persistent_of: Some(self.name),
            ..self
        }
    }
}

use Blocks::{PerRank, PerRankAtRoot, Whole};
use EventClass as C;

const SEND: Function = send("MPI_Send", C::Send, SendMode::Standard);
const BSEND: Function = send("MPI_Bsend", C::Send, SendMode::Buffered);
const RSEND: Function = send("MPI_Rsend", C::Send, SendMode::Ready);
const SSEND: Function = send("MPI_Ssend", C::Send, SendMode::Synchronous);
const RECV: Function = recv("MPI_Recv", C::Recv);
const MRECV: Function = recv("MPI_Mrecv", C::Recv);
const ISEND: Function = SEND.posted("MPI_Isend");
const IBSEND: Function = BSEND.posted("MPI_Ibsend");
const IRSEND: Function = RSEND.posted("MPI_Irsend");
const ISSEND: Function = SSEND.posted("MPI_Issend");
const IRECV: Function = RECV.posted("MPI_Irecv");

const BARRIER: Function = coll("MPI_Barrier", C::Barrier, Whole);
const BCAST: Function = rooted("MPI_Bcast", C::CollectiveOneToN, Whole);
const SCATTER: Function = rooted("MPI_Scatter", C::CollectiveOneToN, PerRankAtRoot);
const SCATTERV: Function = rooted("MPI_Scatterv", C::CollectiveOneToN, PerRankAtRoot);
const REDUCE: Function = rooted("MPI_Reduce", C::CollectiveNToOne, Whole);
const GATHER: Function = rooted("MPI_Gather", C::CollectiveNToOne, PerRankAtRoot);
const GATHERV: Function = rooted("MPI_Gatherv", C::CollectiveNToOne, PerRankAtRoot);
const ALLREDUCE: Function = coll("MPI_Allreduce", C::CollectiveNxN, Whole);
const ALLGATHER: Function = coll("MPI_Allgather", C::CollectiveNxN, PerRank);
const ALLGATHERV: Function = coll("MPI_Allgatherv", C::CollectiveNxN, PerRank);
const ALLTOALL: Function = coll("MPI_Alltoall", C::CollectiveNxN, PerRank);
const ALLTOALLV: Function = coll("MPI_Alltoallv", C::CollectiveNxN, PerRank);
const ALLTOALLW: Function = coll("MPI_Alltoallw", C::CollectiveNxN, PerRank);
const REDUCE_SCATTER: Function = coll("MPI_Reduce_scatter", C::CollectiveNxN, PerRank);
const REDUCE_SCATTER_BLOCK: Function = coll("MPI_Reduce_scatter_block", C::CollectiveNxN, PerRank);
const NEIGHBOR_ALLGATHER: Function = coll("MPI_Neighbor_allgather", C::CollectiveNxN, Whole);
const NEIGHBOR_ALLGATHERV: Function = coll("MPI_Neighbor_allgatherv", C::CollectiveNxN, Whole);
const NEIGHBOR_ALLTOALL: Function = coll("MPI_Neighbor_alltoall", C::CollectiveNxN, Whole);
const NEIGHBOR_ALLTOALLV: Function = coll("MPI_Neighbor_alltoallv", C::CollectiveNxN, Whole);
const NEIGHBOR_ALLTOALLW: Function = coll("MPI_Neighbor_alltoallw", C::CollectiveNxN, Whole);
const SCAN: Function = coll("MPI_Scan", C::CollectiveScan, Whole);
const EXSCAN: Function = coll("MPI_Exscan", C::CollectiveScan, Whole);

/// Every event function. The order is the one reports list functions in
/// where they have no other order: point-to-point, completions, collectives.
pub const CATALOGUE: &[Function] = &[
    SEND,
    BSEND,
    RSEND,
    SSEND,
    RECV,
    MRECV,
    Function {
        direction: Direction::Both,
        ..ev("MPI_Sendrecv", C::SendRecv, Scope::PointToPoint)
    },
    Function {
        direction: Direction::Both,
        ..ev("MPI_Sendrecv_replace", C::SendRecv, Scope::PointToPoint)
    },
    recv("MPI_Probe", C::Probe),
    recv("MPI_Mprobe", C::Probe),
    recv("MPI_Iprobe", C::Poll),
    recv("MPI_Improbe", C::Poll),
    ISEND,
    IBSEND,
    IRSEND,
    ISSEND,
    IRECV,
    MRECV.posted("MPI_Imrecv"),
    ISEND.persistent("MPI_Send_init"),
    IBSEND.persistent("MPI_Bsend_init"),
    IRSEND.persistent("MPI_Rsend_init"),
    ISSEND.persistent("MPI_Ssend_init"),
    IRECV.persistent("MPI_Recv_init"),
    ev("MPI_Start", C::Post, Scope::Requests),
    ev("MPI_Startall", C::Post, Scope::Requests),
    completion("MPI_Wait", true, CompletionHow::One),
    completion("MPI_Waitall", true, CompletionHow::All),
    completion("MPI_Waitany", true, CompletionHow::Any),
    completion("MPI_Waitsome", true, CompletionHow::Some),
    completion("MPI_Test", false, CompletionHow::One),
    completion("MPI_Testall", false, CompletionHow::All),
    completion("MPI_Testany", false, CompletionHow::Any),
    completion("MPI_Testsome", false, CompletionHow::Some),
    BARRIER,
    BCAST,
    SCATTER,
    SCATTERV,
    REDUCE,
    GATHER,
    GATHERV,
    ALLREDUCE,
    ALLGATHER,
    ALLGATHERV,
    ALLTOALL,
    ALLTOALLV,
    ALLTOALLW,
    REDUCE_SCATTER,
    REDUCE_SCATTER_BLOCK,
    NEIGHBOR_ALLGATHER,
    NEIGHBOR_ALLGATHERV,
    NEIGHBOR_ALLTOALL,
    NEIGHBOR_ALLTOALLV,
    NEIGHBOR_ALLTOALLW,
    SCAN,
    EXSCAN,
    BARRIER.posted("MPI_Ibarrier"),
    BCAST.posted("MPI_Ibcast"),
    REDUCE.posted("MPI_Ireduce"),
    ALLREDUCE.posted("MPI_Iallreduce"),
    GATHER.posted("MPI_Igather"),
    GATHERV.posted("MPI_Igatherv"),
    SCATTER.posted("MPI_Iscatter"),
    SCATTERV.posted("MPI_Iscatterv"),
    ALLGATHER.posted("MPI_Iallgather"),
    ALLGATHERV.posted("MPI_Iallgatherv"),
    ALLTOALL.posted("MPI_Ialltoall"),
    ALLTOALLV.posted("MPI_Ialltoallv"),
    ALLTOALLW.posted("MPI_Ialltoallw"),
    REDUCE_SCATTER.posted("MPI_Ireduce_scatter"),
    REDUCE_SCATTER_BLOCK.posted("MPI_Ireduce_scatter_block"),
    SCAN.posted("MPI_Iscan"),
    EXSCAN.posted("MPI_Iexscan"),
    NEIGHBOR_ALLGATHER.posted("MPI_Ineighbor_allgather"),
    NEIGHBOR_ALLGATHERV.posted("MPI_Ineighbor_allgatherv"),
    NEIGHBOR_ALLTOALL.posted("MPI_Ineighbor_alltoall"),
    NEIGHBOR_ALLTOALLV.posted("MPI_Ineighbor_alltoallv"),
    NEIGHBOR_ALLTOALLW.posted("MPI_Ineighbor_alltoallw"),
];

/// The catalogue's record of `function` (C name), if it is an event.
pub fn get(function: &str) -> Option<&'static Function> {
    CATALOGUE.iter().find(|f| f.name == function)
}

/// Class of an event function, by its C name (`MPI_Recv`).
pub fn class_of(function: &str) -> Option<EventClass> {
    get(function).map(|f| f.class)
}

/// Functions that are not events but whose time the report sets apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lifecycle {
    /// `MPI_Init`, `MPI_Init_thread`: start-up, not the application's
    /// communication.
    StartUp,
    /// `MPI_Finalize`.
    ShutDown,
}

/// Whether `function` starts or ends MPI.
pub fn lifecycle(function: &str) -> Option<Lifecycle> {
    match function {
        "MPI_Init" | "MPI_Init_thread" => Some(Lifecycle::StartUp),
        "MPI_Finalize" => Some(Lifecycle::ShutDown),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_c_style() {
        let mut names: Vec<_> = CATALOGUE.iter().map(|f| f.name).collect();
        names.sort();
        let len = names.len();
        names.dedup();
        assert_eq!(names.len(), len);
        assert!(names.iter().all(|n| n.starts_with("MPI_")));
    }

    #[test]
    fn relatives_are_in_the_catalogue_and_consistent() {
        for f in CATALOGUE {
            if let Some(b) = f.blocking {
                let b = get(b).unwrap_or_else(|| panic!("{}: blocking {b} unknown", f.name));
                assert_eq!(f.class, EventClass::Post, "{}", f.name);
                assert_ne!(b.class, EventClass::Post, "{}", f.name);
                assert_eq!(
                    (b.scope, b.direction, b.mode, b.rooted, b.blocks),
                    (f.scope, f.direction, f.mode, f.rooted, f.blocks),
                    "{} and its blocking {}",
                    f.name,
                    b.name
                );
            }
            if let Some(n) = f.persistent_of {
                let n = get(n).unwrap_or_else(|| panic!("{}: twin {n} unknown", f.name));
                assert!(f.name.ends_with("_init") && n.persistent_of.is_none());
                assert_eq!(n.blocking, f.blocking);
            }
            assert_eq!(f.completion.is_some(), f.class == EventClass::Completion);
            assert_eq!(
                f.mode.is_some(),
                f.direction == Direction::Send,
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn the_standards_naming_agrees_with_the_table() {
        // MPI_I<name> posts <name> for every non-blocking collective.
        for f in CATALOGUE.iter().filter(|f| f.posts_collective()) {
            let rest = &f.name["MPI_I".len()..];
            let expect = format!("MPI_{}{}", rest[..1].to_ascii_uppercase(), &rest[1..]);
            assert_eq!(f.blocking, Some(expect.as_str()));
        }
        assert!(get("MPI_Recv_init").is_some_and(Function::posts_receives));
        assert!(get("MPI_Imrecv").is_some_and(Function::posts_receives));
        assert!(!get("MPI_Isend").is_some_and(Function::posts_receives));
        assert_eq!(
            get("MPI_Ssend_init").map(Function::nonblocking),
            Some("MPI_Issend")
        );
    }

    #[test]
    fn send_modes_decide_who_waits_for_the_receiver() {
        let w = |f: &str, bytes| get(f).is_some_and(|f| f.waits_for_receiver(bytes, 4096));
        assert!(w("MPI_Ssend", 0));
        assert!(!w("MPI_Bsend", 1 << 20));
        assert!(!w("MPI_Send", 4095) && w("MPI_Send", 4096));
        assert!(w("MPI_Irsend", 1 << 20));
        assert!(!w("MPI_Recv", 1 << 20));
    }
}
