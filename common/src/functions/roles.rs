//! The parameter roles of an event function: which of its C parameters is
//! the buffer, the count, the datatype, the peer, the communicator, the root,
//! the status, the request, ... The interposer's build script generates each
//! event wrapper from its function's [`Roles`] and checks every role against
//! the signature in the installed `mpi.h`: the build fails when a named
//! parameter does not exist or has the wrong kind of type. A parameter name
//! may list alternatives separated by `|` (Open MPI calls `MPI_Mrecv`'s
//! datatype `type`, which bindgen names `type_`, MPICH `datatype`); the first
//! one the signature has is used.
//!
//! # What the wrappers record from the roles
//!
//! - `p`: size of the communicator (local group); 0 when the call has none
//!   (`Wait`, `Mrecv`) and no request map entry supplies one.
//! - `bytes`: count x `PMPI_Type_size_x` of the datatype, 64-bit, summed over
//!   the counts that apply to this rank. A call that both sends and receives
//!   records the larger of the two sides (so a symmetric `Sendrecv` or an
//!   `Allreduce` records the message size, an `Allgather` the gathered size).
//!   A collective's side whose buffer is `MPI_IN_PLACE` is skipped (its count
//!   and datatype are ignored by MPI and may be garbage); the other side gives
//!   the bytes (a point-to-point buffer cannot be `MPI_IN_PLACE`). A
//!   side that only applies at the root (the gathered buffer of `Gather`) or
//!   only off the root is counted only there. Blocking receives count what
//!   arrived (from the status), posted receives what was posted.
//! - `peer`: for point-to-point calls the destination (sends) or the source
//!   (receives, probes, `Sendrecv`), translated to a rank of
//!   `MPI_COMM_WORLD`; `MPI_ANY_SOURCE` is resolved from the status (the tool
//!   supplies its own when the caller passed `MPI_STATUS_IGNORE`);
//!   `MPI_PROC_NULL` gives no peer and 0 bytes.
//! - `role`: `root` / `nonroot` for rooted collectives.
//!
//! The constructors below are the signature shapes the standard repeats
//! (every `Allgather`-like call has the same parameter names); the catalogue
//! builds its rows from them.

/// How many elements a side moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Count {
    /// A scalar count: `count` elements.
    One(&'static str),
    /// `count` elements per block, one block per member of `len`.
    Blocks(&'static str, Len),
    /// Sum of `counts[i]` for `i < len` (v-collectives).
    Sum(&'static str, Len),
    /// `counts[my rank]` (what this rank gets in `Reduce_scatter`).
    Mine(&'static str),
}

/// Length of a per-rank array.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Len {
    /// Size of the communicator's (remote, for an intercommunicator) group.
    P,
    /// Number of incoming neighbours of a topology communicator.
    InDeg,
    /// Number of outgoing neighbours.
    OutDeg,
}

/// Datatype of a side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    One(&'static str),
    /// One datatype per block (`Alltoallw`): `types[i]`, sized each.
    PerBlock(&'static str),
}

/// Where a side applies in a rooted collective.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum At {
    All,
    Root,
    NonRoot,
}

/// What one direction of a call moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    /// The buffer (checked against `MPI_IN_PLACE`), or "" for none.
    pub buf: &'static str,
    pub count: Count,
    pub dtype: Dtype,
    pub at: At,
}

/// The rank a point-to-point call talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Peer {
    None,
    Dest(&'static str),
    Source(&'static str),
}

/// Completion and start calls: which requests they touch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requests {
    /// `MPI_Wait`, `MPI_Test`: one request.
    One { request: &'static str },
    /// `MPI_Waitany`, `MPI_Testany`: `count` requests, `index` says which completed.
    Any {
        count: &'static str,
        requests: &'static str,
        index: &'static str,
    },
    /// `MPI_Waitall`, `MPI_Testall`: all `count` requests (when `flag`, if any, is set).
    All {
        count: &'static str,
        requests: &'static str,
        statuses: &'static str,
    },
    /// `MPI_Waitsome`, `MPI_Testsome`: `outcount` of them, listed in `indices`.
    Some {
        count: &'static str,
        requests: &'static str,
        outcount: &'static str,
        indices: &'static str,
        statuses: &'static str,
    },
    /// `MPI_Start`: a persistent request is (re)started.
    Start { request: &'static str },
    /// `MPI_Startall`.
    StartAll {
        count: &'static str,
        requests: &'static str,
    },
}

/// The parameters of an event function, by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Roles {
    pub comm: Option<&'static str>,
    /// Set for the rooted collectives (and only them).
    pub root: Option<&'static str>,
    pub peer: Peer,
    pub send: Option<Side>,
    pub recv: Option<Side>,
    /// A single status the call fills (replaced by the tool's own when the
    /// caller passes `MPI_STATUS_IGNORE`, so that the source can be read).
    pub status: Option<&'static str>,
    /// Output flag: the status (and completion) is valid only when set.
    pub flag: Option<&'static str>,
    /// The request a posting call creates.
    pub request: Option<&'static str>,
    /// Receive bytes come from the status (what arrived), not the posted count.
    pub recv_from_status: bool,
    /// Completion / start calls.
    pub requests: Option<Requests>,
}

/// No parameter has a role.
pub const NONE: Roles = Roles {
    comm: None,
    root: None,
    peer: Peer::None,
    send: None,
    recv: None,
    status: None,
    flag: None,
    request: None,
    recv_from_status: false,
    requests: None,
};

const C: Option<&str> = Some("comm");

const fn side(buf: &'static str, count: Count, dtype: &'static str) -> Side {
    Side {
        buf,
        count,
        dtype: Dtype::One(dtype),
        at: At::All,
    }
}

/// A side of a point-to-point call. Its buffer is not named: `MPI_IN_PLACE`
/// is not a valid buffer of a point-to-point call, so the wrapper does not
/// compare it (two compares less per call).
const fn p2p_side(count: Count, dtype: &'static str) -> Side {
    side("", count, dtype)
}

const fn at(s: Side, at: At) -> Side {
    Side { at, ..s }
}

impl Roles {
    /// The roles of the call that posts this one without blocking: the same
    /// parameters less the status (a post completes nothing, and a posted
    /// receive counts what was posted), plus the request it creates.
    pub const fn posted(self) -> Roles {
        Roles {
            status: None,
            recv_from_status: false,
            request: Some("request"),
            ..self
        }
    }

    /// These roles plus the root of a rooted collective.
    pub const fn rooted(self) -> Roles {
        Roles {
            root: Some("root"),
            ..self
        }
    }
}

// ---- point-to-point -------------------------------------------------------

/// A blocking send.
pub const fn send() -> Roles {
    Roles {
        comm: C,
        peer: Peer::Dest("dest"),
        send: Some(p2p_side(Count::One("count"), "datatype")),
        ..NONE
    }
}

/// `MPI_Recv`.
pub const fn recv() -> Roles {
    Roles {
        comm: C,
        peer: Peer::Source("source"),
        recv: Some(p2p_side(Count::One("count"), "datatype")),
        status: Some("status"),
        recv_from_status: true,
        ..NONE
    }
}

/// `MPI_Mrecv`: the message handle stands for communicator and source.
pub const fn mrecv() -> Roles {
    Roles {
        recv: Some(p2p_side(Count::One("count"), "type_|datatype")),
        status: Some("status"),
        recv_from_status: true,
        ..NONE
    }
}

/// `MPI_Sendrecv`.
pub const fn sendrecv() -> Roles {
    Roles {
        comm: C,
        peer: Peer::Source("source"),
        send: Some(p2p_side(Count::One("sendcount"), "sendtype")),
        recv: Some(p2p_side(Count::One("recvcount"), "recvtype")),
        status: Some("status"),
        recv_from_status: true,
        ..NONE
    }
}

/// `MPI_Sendrecv_replace`: one buffer both ways.
pub const fn sendrecv_replace() -> Roles {
    Roles {
        send: Some(p2p_side(Count::One("count"), "datatype")),
        recv: Some(p2p_side(Count::One("count"), "datatype")),
        ..sendrecv()
    }
}

/// A probe (no data moves: bytes 0); the polling ones have a flag.
pub const fn probe(polls: bool) -> Roles {
    Roles {
        comm: C,
        peer: Peer::Source("source"),
        status: Some("status"),
        flag: if polls { Some("flag") } else { None },
        ..NONE
    }
}

/// `MPI_Start`.
pub const fn start() -> Roles {
    Roles {
        requests: Some(Requests::Start { request: "request" }),
        ..NONE
    }
}

/// `MPI_Startall`.
pub const fn startall() -> Roles {
    Roles {
        requests: Some(Requests::StartAll {
            count: "count",
            requests: "array_of_requests",
        }),
        ..NONE
    }
}

/// A completion: `requests` are the requests it touches; the ones that
/// complete one request fill one status, the polling ones (but
/// `Testsome`, which reports through its count) set a flag.
pub const fn completion(requests: Requests, status: bool, flag: bool) -> Roles {
    Roles {
        requests: Some(requests),
        status: if status { Some("status") } else { None },
        flag: if flag { Some("flag") } else { None },
        ..NONE
    }
}

pub const ONE: Requests = Requests::One { request: "request" };
pub const ANY: Requests = Requests::Any {
    count: "count",
    requests: "array_of_requests",
    index: "index|indx",
};
pub const ALL: Requests = Requests::All {
    count: "count",
    requests: "array_of_requests",
    statuses: "array_of_statuses",
};
pub const SOME: Requests = Requests::Some {
    count: "incount",
    requests: "array_of_requests",
    outcount: "outcount",
    indices: "array_of_indices",
    statuses: "array_of_statuses",
};

// ---- collectives ----------------------------------------------------------

/// A communicator and nothing else (`Barrier`).
pub const fn comm_only() -> Roles {
    Roles { comm: C, ..NONE }
}

/// One buffer pair with one count and datatype (Allreduce, Scan, ...).
pub const fn reduce_like() -> Roles {
    Roles {
        comm: C,
        send: Some(side("sendbuf", Count::One("count"), "datatype")),
        recv: Some(side("recvbuf", Count::One("count"), "datatype")),
        ..NONE
    }
}

/// `Reduce`: the result only at the root.
pub const fn rooted_reduce() -> Roles {
    Roles {
        recv: Some(at(
            side("recvbuf", Count::One("count"), "datatype"),
            At::Root,
        )),
        ..reduce_like()
    }
}

/// `Bcast`: one buffer, sent by the root, received elsewhere.
pub const fn bcast() -> Roles {
    Roles {
        comm: C,
        send: Some(at(side("", Count::One("count"), "datatype"), At::Root)),
        recv: Some(at(side("", Count::One("count"), "datatype"), At::NonRoot)),
        ..NONE
    }
}

/// `Gather(v)`.
pub const fn gather(v: bool) -> Roles {
    let recv = if v {
        side("recvbuf", Count::Sum("recvcounts", Len::P), "recvtype")
    } else {
        side("recvbuf", Count::Blocks("recvcount", Len::P), "recvtype")
    };
    Roles {
        comm: C,
        send: Some(side("sendbuf", Count::One("sendcount"), "sendtype")),
        recv: Some(at(recv, At::Root)),
        ..NONE
    }
}

/// `Scatter(v)`.
pub const fn scatter(v: bool) -> Roles {
    let send = if v {
        side("sendbuf", Count::Sum("sendcounts", Len::P), "sendtype")
    } else {
        side("sendbuf", Count::Blocks("sendcount", Len::P), "sendtype")
    };
    Roles {
        comm: C,
        send: Some(at(send, At::Root)),
        recv: Some(side("recvbuf", Count::One("recvcount"), "recvtype")),
        ..NONE
    }
}

/// `Allgather(v)` and the neighbourhood ones (`len` = in-degree).
pub const fn allgather(v: bool, len: Len) -> Roles {
    let recv = if v {
        side("recvbuf", Count::Sum("recvcounts", len), "recvtype")
    } else {
        side("recvbuf", Count::Blocks("recvcount", len), "recvtype")
    };
    Roles {
        comm: C,
        send: Some(side("sendbuf", Count::One("sendcount"), "sendtype")),
        recv: Some(recv),
        ..NONE
    }
}

/// `Alltoall` and the neighbourhood one.
pub const fn alltoall(in_len: Len, out_len: Len) -> Roles {
    Roles {
        comm: C,
        send: Some(side(
            "sendbuf",
            Count::Blocks("sendcount", out_len),
            "sendtype",
        )),
        recv: Some(side(
            "recvbuf",
            Count::Blocks("recvcount", in_len),
            "recvtype",
        )),
        ..NONE
    }
}

/// `Alltoallv` and the neighbourhood one.
pub const fn alltoallv(in_len: Len, out_len: Len) -> Roles {
    Roles {
        comm: C,
        send: Some(side(
            "sendbuf",
            Count::Sum("sendcounts", out_len),
            "sendtype",
        )),
        recv: Some(side(
            "recvbuf",
            Count::Sum("recvcounts", in_len),
            "recvtype",
        )),
        ..NONE
    }
}

/// `Alltoallw` and the neighbourhood one: a datatype per block.
pub const fn alltoallw(in_len: Len, out_len: Len) -> Roles {
    Roles {
        comm: C,
        send: Some(Side {
            buf: "sendbuf",
            count: Count::Sum("sendcounts", out_len),
            dtype: Dtype::PerBlock("sendtypes"),
            at: At::All,
        }),
        recv: Some(Side {
            buf: "recvbuf",
            count: Count::Sum("recvcounts", in_len),
            dtype: Dtype::PerBlock("recvtypes"),
            at: At::All,
        }),
        ..NONE
    }
}

/// `Reduce_scatter`: this rank gets `recvcounts[rank]`.
pub const fn reduce_scatter() -> Roles {
    Roles {
        comm: C,
        send: Some(side(
            "sendbuf",
            Count::Sum("recvcounts", Len::P),
            "datatype",
        )),
        recv: Some(side("recvbuf", Count::Mine("recvcounts"), "datatype")),
        ..NONE
    }
}

/// `Reduce_scatter_block`.
pub const fn reduce_scatter_block() -> Roles {
    Roles {
        comm: C,
        send: Some(side(
            "sendbuf",
            Count::Blocks("recvcount", Len::P),
            "datatype",
        )),
        recv: Some(side("recvbuf", Count::One("recvcount"), "datatype")),
        ..NONE
    }
}
