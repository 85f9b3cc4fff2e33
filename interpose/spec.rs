//! The communication-event spec: ONE typed table from which `build.rs`
//! generates the event wrappers.
//!
//! Every event names its parameters by *role* (buffer, count, datatype, peer,
//! communicator, root, status, request, ...). `build.rs` checks each role
//! against the signature in the installed `mpi.h` (through the bindgen output)
//! and fails the build when a named parameter does not exist or has the wrong
//! kind of type, and when this table and the event catalogue of
//! `mpiover_common::functions::CATALOGUE` disagree. A parameter name may list
//! alternatives separated by `|` (Open MPI calls `MPI_Rsend`'s buffer `ibuf`,
//! MPICH `buf`); the first one the signature has is used.
//!
//! # What is recorded
//!
//! - `p`: size of the communicator (local group); 0 when the call has none
//!   (`Wait`, `Mrecv`) and no request map entry supplies one.
//! - `bytes`: count x `PMPI_Type_size_x` of the datatype, 64-bit, summed over
//!   the counts that apply to this rank. A call that both sends and receives
//!   records the larger of the two sides (so a symmetric `Sendrecv` or an
//!   `Allreduce` records the message size, an `Allgather` the gathered size).
//!   A side whose buffer is `MPI_IN_PLACE` is skipped (its count and datatype
//!   are ignored by MPI and may be garbage); the other side gives the bytes. A
//!   side that only applies at the root (the gathered buffer of `Gather`) or
//!   only off the root is counted only there. Blocking receives count what
//!   arrived (from the status), posted receives what was posted.
//! - `peer`: for point-to-point calls the destination (sends) or the source
//!   (receives, probes, `Sendrecv`), translated to a rank of
//!   `MPI_COMM_WORLD`; `MPI_ANY_SOURCE` is resolved from the status (the tool
//!   supplies its own when the caller passed `MPI_STATUS_IGNORE`);
//!   `MPI_PROC_NULL` gives no peer and 0 bytes.
//! - `role`: `root` / `nonroot` for rooted collectives.

/// How many elements a side moves.
#[derive(Clone, Copy, Debug)]
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
#[derive(Clone, Copy, Debug)]
pub enum Len {
    /// Size of the communicator's (remote, for an intercommunicator) group.
    P,
    /// Number of incoming neighbours of a topology communicator.
    InDeg,
    /// Number of outgoing neighbours.
    OutDeg,
}

/// Datatype of a side.
#[derive(Clone, Copy, Debug)]
pub enum Dtype {
    One(&'static str),
    /// One datatype per block (`Alltoallw`): `types[i]`, sized each.
    PerBlock(&'static str),
}

/// Where a side applies in a rooted collective.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum At {
    All,
    Root,
    NonRoot,
}

#[derive(Clone, Copy, Debug)]
pub struct Side {
    /// The buffer (checked against `MPI_IN_PLACE`), or "" for none.
    pub buf: &'static str,
    pub count: Count,
    pub dtype: Dtype,
    pub at: At,
}

#[derive(Clone, Copy, Debug)]
pub enum Peer {
    None,
    Dest(&'static str),
    Source(&'static str),
}

/// Completion and start calls: which requests they touch.
#[derive(Clone, Copy, Debug)]
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

#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub name: &'static str,
    pub comm: Option<&'static str>,
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
    /// Whether that request is persistent (`*_init`).
    pub persistent: bool,
    /// Receive bytes come from the status (what arrived), not the posted count.
    pub recv_from_status: bool,
    /// Completion / start calls.
    pub requests: Option<Requests>,
}

const fn ev(name: &'static str) -> Event {
    Event {
        name,
        comm: None,
        root: None,
        peer: Peer::None,
        send: None,
        recv: None,
        status: None,
        flag: None,
        request: None,
        persistent: false,
        recv_from_status: false,
        requests: None,
    }
}

const fn side(buf: &'static str, count: Count, dtype: &'static str) -> Side {
    Side {
        buf,
        count,
        dtype: Dtype::One(dtype),
        at: At::All,
    }
}

const fn at(s: Side, at: At) -> Side {
    Side { at, ..s }
}

const C: Option<&str> = Some("comm");

// ---- point-to-point -------------------------------------------------------

const fn send(name: &'static str, buf: &'static str) -> Event {
    Event {
        comm: C,
        peer: Peer::Dest("dest"),
        send: Some(side(buf, Count::One("count"), "datatype")),
        ..ev(name)
    }
}

const fn isend(name: &'static str, persistent: bool) -> Event {
    Event {
        request: Some("request"),
        persistent,
        ..send(name, "buf")
    }
}

const fn irecv(name: &'static str, persistent: bool) -> Event {
    Event {
        comm: C,
        peer: Peer::Source("source"),
        recv: Some(side("buf", Count::One("count"), "datatype")),
        request: Some("request"),
        persistent,
        ..ev(name)
    }
}

// ---- collectives ----------------------------------------------------------

/// One buffer pair with one count and datatype (Allreduce, Scan, ...).
const fn reduce_like(name: &'static str) -> Event {
    Event {
        comm: C,
        send: Some(side("sendbuf", Count::One("count"), "datatype")),
        recv: Some(side("recvbuf", Count::One("count"), "datatype")),
        ..ev(name)
    }
}

const fn rooted_reduce(name: &'static str) -> Event {
    Event {
        root: Some("root"),
        recv: Some(at(
            side("recvbuf", Count::One("count"), "datatype"),
            At::Root,
        )),
        ..reduce_like(name)
    }
}

const fn bcast(name: &'static str) -> Event {
    Event {
        comm: C,
        root: Some("root"),
        send: Some(at(side("", Count::One("count"), "datatype"), At::Root)),
        recv: Some(at(side("", Count::One("count"), "datatype"), At::NonRoot)),
        ..ev(name)
    }
}

const fn gather(name: &'static str, v: bool) -> Event {
    let recv = if v {
        side("recvbuf", Count::Sum("recvcounts", Len::P), "recvtype")
    } else {
        side("recvbuf", Count::Blocks("recvcount", Len::P), "recvtype")
    };
    Event {
        comm: C,
        root: Some("root"),
        send: Some(side("sendbuf", Count::One("sendcount"), "sendtype")),
        recv: Some(at(recv, At::Root)),
        ..ev(name)
    }
}

const fn scatter(name: &'static str, v: bool) -> Event {
    let send = if v {
        side("sendbuf", Count::Sum("sendcounts", Len::P), "sendtype")
    } else {
        side("sendbuf", Count::Blocks("sendcount", Len::P), "sendtype")
    };
    Event {
        comm: C,
        root: Some("root"),
        send: Some(at(send, At::Root)),
        recv: Some(side("recvbuf", Count::One("recvcount"), "recvtype")),
        ..ev(name)
    }
}

const fn allgather(name: &'static str, v: bool, len: Len) -> Event {
    let recv = if v {
        side("recvbuf", Count::Sum("recvcounts", len), "recvtype")
    } else {
        side("recvbuf", Count::Blocks("recvcount", len), "recvtype")
    };
    Event {
        comm: C,
        send: Some(side("sendbuf", Count::One("sendcount"), "sendtype")),
        recv: Some(recv),
        ..ev(name)
    }
}

const fn alltoall(name: &'static str, in_len: Len, out_len: Len) -> Event {
    Event {
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
        ..ev(name)
    }
}

const fn alltoallv(name: &'static str, in_len: Len, out_len: Len) -> Event {
    Event {
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
        ..ev(name)
    }
}

const fn alltoallw(name: &'static str, in_len: Len, out_len: Len) -> Event {
    Event {
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
        ..ev(name)
    }
}

const fn reduce_scatter(name: &'static str) -> Event {
    Event {
        comm: C,
        send: Some(side(
            "sendbuf",
            Count::Sum("recvcounts", Len::P),
            "datatype",
        )),
        recv: Some(side("recvbuf", Count::Mine("recvcounts"), "datatype")),
        ..ev(name)
    }
}

const fn reduce_scatter_block(name: &'static str) -> Event {
    Event {
        comm: C,
        send: Some(side(
            "sendbuf",
            Count::Blocks("recvcount", Len::P),
            "datatype",
        )),
        recv: Some(side("recvbuf", Count::One("recvcount"), "datatype")),
        ..ev(name)
    }
}

/// The non-blocking twin of a blocking collective: same roles plus a request.
const fn post(name: &'static str, blocking: Event) -> Event {
    Event {
        name,
        request: Some("request"),
        ..blocking
    }
}

const fn completion(
    name: &'static str,
    requests: Requests,
    status: Option<&'static str>,
    flag: Option<&'static str>,
) -> Event {
    Event {
        requests: Some(requests),
        status,
        flag,
        ..ev(name)
    }
}

const ONE: Requests = Requests::One { request: "request" };
const ANY: Requests = Requests::Any {
    count: "count",
    requests: "array_of_requests",
    index: "index|indx",
};
const ALL: Requests = Requests::All {
    count: "count",
    requests: "array_of_requests",
    statuses: "array_of_statuses",
};
const SOME: Requests = Requests::Some {
    count: "incount",
    requests: "array_of_requests",
    outcount: "outcount",
    indices: "array_of_indices",
    statuses: "array_of_statuses",
};

pub const EVENTS: &[Event] = &[
    // Blocking point-to-point.
    send("MPI_Send", "buf"),
    send("MPI_Bsend", "buf"),
    send("MPI_Rsend", "ibuf|buf"),
    send("MPI_Ssend", "buf"),
    Event {
        comm: C,
        peer: Peer::Source("source"),
        recv: Some(side("buf", Count::One("count"), "datatype")),
        status: Some("status"),
        recv_from_status: true,
        ..ev("MPI_Recv")
    },
    Event {
        recv: Some(side("buf", Count::One("count"), "type_|datatype")),
        status: Some("status"),
        recv_from_status: true,
        ..ev("MPI_Mrecv")
    },
    Event {
        comm: C,
        peer: Peer::Source("source"),
        send: Some(side("sendbuf", Count::One("sendcount"), "sendtype")),
        recv: Some(side("recvbuf", Count::One("recvcount"), "recvtype")),
        status: Some("status"),
        recv_from_status: true,
        ..ev("MPI_Sendrecv")
    },
    Event {
        comm: C,
        peer: Peer::Source("source"),
        send: Some(side("buf", Count::One("count"), "datatype")),
        recv: Some(side("buf", Count::One("count"), "datatype")),
        status: Some("status"),
        recv_from_status: true,
        ..ev("MPI_Sendrecv_replace")
    },
    // Probes (no data moves: bytes 0).
    Event {
        comm: C,
        peer: Peer::Source("source"),
        status: Some("status"),
        ..ev("MPI_Probe")
    },
    Event {
        comm: C,
        peer: Peer::Source("source"),
        status: Some("status"),
        ..ev("MPI_Mprobe")
    },
    Event {
        comm: C,
        peer: Peer::Source("source"),
        status: Some("status"),
        flag: Some("flag"),
        ..ev("MPI_Iprobe")
    },
    Event {
        comm: C,
        peer: Peer::Source("source"),
        status: Some("status"),
        flag: Some("flag"),
        ..ev("MPI_Improbe")
    },
    // Posts.
    isend("MPI_Isend", false),
    isend("MPI_Ibsend", false),
    isend("MPI_Irsend", false),
    isend("MPI_Issend", false),
    irecv("MPI_Irecv", false),
    Event {
        recv: Some(side("buf", Count::One("count"), "type_|datatype")),
        request: Some("request"),
        ..ev("MPI_Imrecv")
    },
    isend("MPI_Send_init", true),
    isend("MPI_Bsend_init", true),
    isend("MPI_Rsend_init", true),
    isend("MPI_Ssend_init", true),
    irecv("MPI_Recv_init", true),
    Event {
        requests: Some(Requests::Start { request: "request" }),
        ..ev("MPI_Start")
    },
    Event {
        requests: Some(Requests::StartAll {
            count: "count",
            requests: "array_of_requests",
        }),
        ..ev("MPI_Startall")
    },
    // Completions.
    completion("MPI_Wait", ONE, Some("status"), None),
    completion("MPI_Waitall", ALL, None, None),
    completion("MPI_Waitany", ANY, Some("status"), None),
    completion("MPI_Waitsome", SOME, None, None),
    completion("MPI_Test", ONE, Some("status"), Some("flag")),
    completion("MPI_Testall", ALL, None, Some("flag")),
    completion("MPI_Testany", ANY, Some("status"), Some("flag")),
    completion("MPI_Testsome", SOME, None, None),
    // Blocking collectives.
    Event {
        comm: C,
        ..ev("MPI_Barrier")
    },
    bcast("MPI_Bcast"),
    scatter("MPI_Scatter", false),
    scatter("MPI_Scatterv", true),
    rooted_reduce("MPI_Reduce"),
    gather("MPI_Gather", false),
    gather("MPI_Gatherv", true),
    reduce_like("MPI_Allreduce"),
    allgather("MPI_Allgather", false, Len::P),
    allgather("MPI_Allgatherv", true, Len::P),
    alltoall("MPI_Alltoall", Len::P, Len::P),
    alltoallv("MPI_Alltoallv", Len::P, Len::P),
    alltoallw("MPI_Alltoallw", Len::P, Len::P),
    reduce_scatter("MPI_Reduce_scatter"),
    reduce_scatter_block("MPI_Reduce_scatter_block"),
    allgather("MPI_Neighbor_allgather", false, Len::InDeg),
    allgather("MPI_Neighbor_allgatherv", true, Len::InDeg),
    alltoall("MPI_Neighbor_alltoall", Len::InDeg, Len::OutDeg),
    alltoallv("MPI_Neighbor_alltoallv", Len::InDeg, Len::OutDeg),
    alltoallw("MPI_Neighbor_alltoallw", Len::InDeg, Len::OutDeg),
    reduce_like("MPI_Scan"),
    reduce_like("MPI_Exscan"),
    // Non-blocking collectives: recorded as posts.
    Event {
        comm: C,
        request: Some("request"),
        ..ev("MPI_Ibarrier")
    },
    post("MPI_Ibcast", bcast("")),
    post("MPI_Ireduce", rooted_reduce("")),
    post("MPI_Iallreduce", reduce_like("")),
    post("MPI_Igather", gather("", false)),
    post("MPI_Igatherv", gather("", true)),
    post("MPI_Iscatter", scatter("", false)),
    post("MPI_Iscatterv", scatter("", true)),
    post("MPI_Iallgather", allgather("", false, Len::P)),
    post("MPI_Iallgatherv", allgather("", true, Len::P)),
    post("MPI_Ialltoall", alltoall("", Len::P, Len::P)),
    post("MPI_Ialltoallv", alltoallv("", Len::P, Len::P)),
    post("MPI_Ialltoallw", alltoallw("", Len::P, Len::P)),
    post("MPI_Ireduce_scatter", reduce_scatter("")),
    post("MPI_Ireduce_scatter_block", reduce_scatter_block("")),
    post("MPI_Iscan", reduce_like("")),
    post("MPI_Iexscan", reduce_like("")),
    post("MPI_Ineighbor_allgather", allgather("", false, Len::InDeg)),
    post("MPI_Ineighbor_allgatherv", allgather("", true, Len::InDeg)),
    post(
        "MPI_Ineighbor_alltoall",
        alltoall("", Len::InDeg, Len::OutDeg),
    ),
    post(
        "MPI_Ineighbor_alltoallv",
        alltoallv("", Len::InDeg, Len::OutDeg),
    ),
    post(
        "MPI_Ineighbor_alltoallw",
        alltoallw("", Len::InDeg, Len::OutDeg),
    ),
];

/// Functions whose generated wrapper must tell the runtime that a handle
/// died (caches keyed by handle are invalidated before the call).
pub const FREES_COMM: &[&str] = &["MPI_Comm_free", "MPI_Comm_disconnect"];
pub const FREES_TYPE: &[&str] = &["MPI_Type_free"];
/// Functions wrapped by hand in `src/` (the generator skips them).
pub const HAND_WRITTEN: &[&str] = &[
    "MPI_Init",
    "MPI_Init_thread",
    "MPI_Finalize",
    "MPI_Abort",
    "MPI_Pcontrol",
    "MPI_Session_init",
];

/// Declared by some `mpi.h` (MPICH 4) but defined only in the Fortran
/// library: a C wrapper would leave `PMPI_X` unresolved in a C program.
pub const NOT_IN_C_LIBRARY: &[&str] = &[
    "MPI_Status_c2f08",
    "MPI_Status_f082c",
    "MPI_Status_f082f",
    "MPI_Status_f2f08",
];
