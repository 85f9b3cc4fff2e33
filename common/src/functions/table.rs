//! The rows of the catalogue: one per event function, giving its nature and
//! the roles of its parameters together, so that adding a function means
//! adding one row here (the interposer's wrapper generator reads the roles,
//! everything else the nature).
//!
//! A non-blocking or persistent function is written as its blocking
//! relative `posted` (or that post made `persistent`): it inherits the
//! nature and the roles, which is what keeps the relatives consistent.

use super::nature::{
    Blocks, Completion, CompletionHow, Direction, EventClass, Function, Scope, SendMode,
};
use super::roles::{self, Len, Roles};

const fn ev(name: &'static str, class: EventClass, scope: Scope, roles: Roles) -> Function {
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
        roles,
    }
}

/// A blocking send.
const fn send(name: &'static str, mode: SendMode) -> Function {
    Function {
        direction: Direction::Send,
        mode: Some(mode),
        ..ev(name, EventClass::Send, Scope::PointToPoint, roles::send())
    }
}

const fn recv(name: &'static str, class: EventClass, roles: Roles) -> Function {
    Function {
        direction: Direction::Recv,
        ..ev(name, class, Scope::PointToPoint, roles)
    }
}

const fn sendrecv(name: &'static str, roles: Roles) -> Function {
    Function {
        direction: Direction::Both,
        ..ev(name, EventClass::SendRecv, Scope::PointToPoint, roles)
    }
}

const fn coll(name: &'static str, class: EventClass, blocks: Blocks, roles: Roles) -> Function {
    Function {
        blocks,
        ..ev(name, class, Scope::Collective, roles)
    }
}

const fn rooted(name: &'static str, class: EventClass, blocks: Blocks, roles: Roles) -> Function {
    Function {
        rooted: true,
        ..coll(name, class, blocks, roles.rooted())
    }
}

/// A completion. Its parameters follow from what it completes: the calls
/// that complete one request fill one status, the polling ones set a flag
/// (but `Testsome`, which reports through its count).
const fn completion(name: &'static str, blocks: bool, how: CompletionHow) -> Function {
    let (requests, status) = match how {
        CompletionHow::One => (roles::ONE, true),
        CompletionHow::All => (roles::ALL, false),
        CompletionHow::Any => (roles::ANY, true),
        CompletionHow::Some => (roles::SOME, false),
    };
    let flag = !blocks && !matches!(how, CompletionHow::Some);
    Function {
        completion: Some(Completion { blocks, how }),
        ..ev(
            name,
            EventClass::Completion,
            Scope::Requests,
            roles::completion(requests, status, flag),
        )
    }
}

impl Function {
    /// This function posted without blocking: class `Post`, `blocking` set.
    const fn posted(self, name: &'static str) -> Function {
        Function {
            name,
            class: EventClass::Post,
            blocking: Some(self.name),
            roles: self.roles.posted(),
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

use roles::{
    allgather, alltoall, alltoallv, alltoallw, bcast, gather, reduce_like, reduce_scatter,
    reduce_scatter_block, rooted_reduce, scatter,
};
use Blocks::{PerRank, PerRankAtRoot, Whole};
use EventClass as C;

// The blocking functions by name, for their posts below and for code that
// refers to a function by what it is (the calibrator's patterns).
pub const SEND: Function = send("MPI_Send", SendMode::Standard);
pub const BSEND: Function = send("MPI_Bsend", SendMode::Buffered);
pub const RSEND: Function = send("MPI_Rsend", SendMode::Ready);
pub const SSEND: Function = send("MPI_Ssend", SendMode::Synchronous);
pub const RECV: Function = recv("MPI_Recv", C::Recv, roles::recv());
pub const MRECV: Function = recv("MPI_Mrecv", C::Recv, roles::mrecv());
pub const SENDRECV: Function = sendrecv("MPI_Sendrecv", roles::sendrecv());
pub const ISEND: Function = SEND.posted("MPI_Isend");
pub const IBSEND: Function = BSEND.posted("MPI_Ibsend");
pub const IRSEND: Function = RSEND.posted("MPI_Irsend");
pub const ISSEND: Function = SSEND.posted("MPI_Issend");
pub const IRECV: Function = RECV.posted("MPI_Irecv");
pub const WAITALL: Function = completion("MPI_Waitall", true, CompletionHow::All);

pub const BARRIER: Function = coll("MPI_Barrier", C::Barrier, Whole, roles::comm_only());
pub const BCAST: Function = rooted("MPI_Bcast", C::CollectiveOneToN, Whole, bcast());
pub const SCATTER: Function = rooted(
    "MPI_Scatter",
    C::CollectiveOneToN,
    PerRankAtRoot,
    scatter(false),
);
pub const SCATTERV: Function = rooted(
    "MPI_Scatterv",
    C::CollectiveOneToN,
    PerRankAtRoot,
    scatter(true),
);
pub const REDUCE: Function = rooted("MPI_Reduce", C::CollectiveNToOne, Whole, rooted_reduce());
pub const GATHER: Function = rooted(
    "MPI_Gather",
    C::CollectiveNToOne,
    PerRankAtRoot,
    gather(false),
);
pub const GATHERV: Function = rooted(
    "MPI_Gatherv",
    C::CollectiveNToOne,
    PerRankAtRoot,
    gather(true),
);
pub const ALLREDUCE: Function = coll("MPI_Allreduce", C::CollectiveNxN, Whole, reduce_like());
pub const ALLGATHER: Function = coll(
    "MPI_Allgather",
    C::CollectiveNxN,
    PerRank,
    allgather(false, Len::P),
);
pub const ALLGATHERV: Function = coll(
    "MPI_Allgatherv",
    C::CollectiveNxN,
    PerRank,
    allgather(true, Len::P),
);
pub const ALLTOALL: Function = coll(
    "MPI_Alltoall",
    C::CollectiveNxN,
    PerRank,
    alltoall(Len::P, Len::P),
);
pub const ALLTOALLV: Function = coll(
    "MPI_Alltoallv",
    C::CollectiveNxN,
    PerRank,
    alltoallv(Len::P, Len::P),
);
pub const ALLTOALLW: Function = coll(
    "MPI_Alltoallw",
    C::CollectiveNxN,
    PerRank,
    alltoallw(Len::P, Len::P),
);
pub const REDUCE_SCATTER: Function = coll(
    "MPI_Reduce_scatter",
    C::CollectiveNxN,
    PerRank,
    reduce_scatter(),
);
pub const REDUCE_SCATTER_BLOCK: Function = coll(
    "MPI_Reduce_scatter_block",
    C::CollectiveNxN,
    PerRank,
    reduce_scatter_block(),
);
pub const NEIGHBOR_ALLGATHER: Function = coll(
    "MPI_Neighbor_allgather",
    C::CollectiveNxN,
    Whole,
    allgather(false, Len::InDeg),
);
pub const NEIGHBOR_ALLGATHERV: Function = coll(
    "MPI_Neighbor_allgatherv",
    C::CollectiveNxN,
    Whole,
    allgather(true, Len::InDeg),
);
pub const NEIGHBOR_ALLTOALL: Function = coll(
    "MPI_Neighbor_alltoall",
    C::CollectiveNxN,
    Whole,
    alltoall(Len::InDeg, Len::OutDeg),
);
pub const NEIGHBOR_ALLTOALLV: Function = coll(
    "MPI_Neighbor_alltoallv",
    C::CollectiveNxN,
    Whole,
    alltoallv(Len::InDeg, Len::OutDeg),
);
pub const NEIGHBOR_ALLTOALLW: Function = coll(
    "MPI_Neighbor_alltoallw",
    C::CollectiveNxN,
    Whole,
    alltoallw(Len::InDeg, Len::OutDeg),
);
pub const SCAN: Function = coll("MPI_Scan", C::CollectiveScan, Whole, reduce_like());
pub const EXSCAN: Function = coll("MPI_Exscan", C::CollectiveScan, Whole, reduce_like());

/// Every event function. The order is the one reports list functions in
/// where they have no other order: point-to-point, completions, collectives
/// (and the order of the interposer's event ids).
pub const CATALOGUE: &[Function] = &[
    SEND,
    BSEND,
    RSEND,
    SSEND,
    RECV,
    MRECV,
    SENDRECV,
    sendrecv("MPI_Sendrecv_replace", roles::sendrecv_replace()),
    recv("MPI_Probe", C::Probe, roles::probe(false)),
    recv("MPI_Mprobe", C::Probe, roles::probe(false)),
    recv("MPI_Iprobe", C::Poll, roles::probe(true)),
    recv("MPI_Improbe", C::Poll, roles::probe(true)),
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
    ev("MPI_Start", C::Post, Scope::Requests, roles::start()),
    ev("MPI_Startall", C::Post, Scope::Requests, roles::startall()),
    completion("MPI_Wait", true, CompletionHow::One),
    WAITALL,
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
