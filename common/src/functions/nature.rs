//! What an event function is: the types of a row of the catalogue (its
//! class, scope, direction, send mode, blocks, completion and roles), apart
//! from the rows ([`table`](super::table)) and the look-ups over them
//! ([`catalogue`](super::catalogue)).

use serde::{Deserialize, Serialize};

use super::roles::Roles;

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
    /// Its parameters by role, from which the interposer's wrapper is
    /// generated.
    pub roles: Roles,
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
