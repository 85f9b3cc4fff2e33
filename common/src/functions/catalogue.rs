//! The catalogue: one typed record per MPI function that is an event.
//!
//! The table (its rows are in [`table`](super::table)) is the single place
//! where a function's nature and its parameters are written down; everything
//! that would match function names as strings asks it instead (the
//! interposer's build script generates the event wrappers from it, the
//! profile lookup, the calibration and the report classify through it). Names are the C names;
//! Fortran entry points and MPI-4 large-count (`_c`) calls report under the
//! C name of their base function.

use serde::{Deserialize, Serialize};

use super::roles::Roles;
pub use super::table::CATALOGUE;

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
    fn roles_agree_with_the_nature() {
        for f in CATALOGUE {
            let r = &f.roles;
            assert_eq!(f.rooted, r.root.is_some(), "{}", f.name);
            assert_eq!(
                f.class == EventClass::Post && f.scope != Scope::Requests,
                r.request.is_some(),
                "{}",
                f.name
            );
            assert_eq!(
                f.scope == Scope::Requests,
                r.requests.is_some(),
                "{}",
                f.name
            );
            assert!(!r.recv_from_status || (r.status.is_some() && r.recv.is_some()));
        }
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
