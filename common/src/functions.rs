//! The communication events mpiover attributes, and what a wait in each means.
//!
//! Every MPI function is counted and timed by the interposer, but only the
//! functions listed here are *events*: calls whose duration can hold overhead
//! (the overhead paper §10) and which get a per-site entry with p, bytes and peer. The
//! wait-state names follow Scalasca so that users recognise them.

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

/// Scalasca's name for the wait state that overhead in this class indicates.
/// `rendezvous` says whether a send was large enough to need the receiver.
pub fn wait_state(class: EventClass, rendezvous: bool) -> Option<&'static str> {
    match class {
        EventClass::Recv | EventClass::Probe => Some("Late Sender"),
        EventClass::Send if rendezvous => Some("Late Receiver"),
        EventClass::Send => None,
        EventClass::SendRecv => Some("Late Sender"),
        EventClass::CollectiveNxN => Some("Wait at NxN"),
        EventClass::Barrier => Some("Wait at Barrier"),
        EventClass::CollectiveOneToN => Some("Late Broadcast"),
        EventClass::CollectiveNToOne => Some("Early Reduce"),
        EventClass::CollectiveScan => Some("Early Scan"),
        EventClass::Post | EventClass::Completion | EventClass::Poll => None,
    }
}

/// The event catalogue: MPI function name and its class. Names are the C names;
/// Fortran entry points report under the same name.
pub const EVENTS: &[(&str, EventClass)] = &[
    ("MPI_Send", EventClass::Send),
    ("MPI_Bsend", EventClass::Send),
    ("MPI_Rsend", EventClass::Send),
    ("MPI_Ssend", EventClass::Send),
    ("MPI_Recv", EventClass::Recv),
    ("MPI_Mrecv", EventClass::Recv),
    ("MPI_Sendrecv", EventClass::SendRecv),
    ("MPI_Sendrecv_replace", EventClass::SendRecv),
    ("MPI_Probe", EventClass::Probe),
    ("MPI_Mprobe", EventClass::Probe),
    ("MPI_Iprobe", EventClass::Poll),
    ("MPI_Improbe", EventClass::Poll),
    ("MPI_Isend", EventClass::Post),
    ("MPI_Ibsend", EventClass::Post),
    ("MPI_Irsend", EventClass::Post),
    ("MPI_Issend", EventClass::Post),
    ("MPI_Irecv", EventClass::Post),
    ("MPI_Imrecv", EventClass::Post),
    ("MPI_Send_init", EventClass::Post),
    ("MPI_Bsend_init", EventClass::Post),
    ("MPI_Rsend_init", EventClass::Post),
    ("MPI_Ssend_init", EventClass::Post),
    ("MPI_Recv_init", EventClass::Post),
    ("MPI_Start", EventClass::Post),
    ("MPI_Startall", EventClass::Post),
    ("MPI_Wait", EventClass::Completion),
    ("MPI_Waitall", EventClass::Completion),
    ("MPI_Waitany", EventClass::Completion),
    ("MPI_Waitsome", EventClass::Completion),
    ("MPI_Test", EventClass::Completion),
    ("MPI_Testall", EventClass::Completion),
    ("MPI_Testany", EventClass::Completion),
    ("MPI_Testsome", EventClass::Completion),
    ("MPI_Barrier", EventClass::Barrier),
    ("MPI_Bcast", EventClass::CollectiveOneToN),
    ("MPI_Scatter", EventClass::CollectiveOneToN),
    ("MPI_Scatterv", EventClass::CollectiveOneToN),
    ("MPI_Reduce", EventClass::CollectiveNToOne),
    ("MPI_Gather", EventClass::CollectiveNToOne),
    ("MPI_Gatherv", EventClass::CollectiveNToOne),
    ("MPI_Allreduce", EventClass::CollectiveNxN),
    ("MPI_Allgather", EventClass::CollectiveNxN),
    ("MPI_Allgatherv", EventClass::CollectiveNxN),
    ("MPI_Alltoall", EventClass::CollectiveNxN),
    ("MPI_Alltoallv", EventClass::CollectiveNxN),
    ("MPI_Alltoallw", EventClass::CollectiveNxN),
    ("MPI_Reduce_scatter", EventClass::CollectiveNxN),
    ("MPI_Reduce_scatter_block", EventClass::CollectiveNxN),
    ("MPI_Neighbor_allgather", EventClass::CollectiveNxN),
    ("MPI_Neighbor_allgatherv", EventClass::CollectiveNxN),
    ("MPI_Neighbor_alltoall", EventClass::CollectiveNxN),
    ("MPI_Neighbor_alltoallv", EventClass::CollectiveNxN),
    ("MPI_Neighbor_alltoallw", EventClass::CollectiveNxN),
    ("MPI_Scan", EventClass::CollectiveScan),
    ("MPI_Exscan", EventClass::CollectiveScan),
    ("MPI_Ibarrier", EventClass::Post),
    ("MPI_Ibcast", EventClass::Post),
    ("MPI_Ireduce", EventClass::Post),
    ("MPI_Iallreduce", EventClass::Post),
    ("MPI_Igather", EventClass::Post),
    ("MPI_Igatherv", EventClass::Post),
    ("MPI_Iscatter", EventClass::Post),
    ("MPI_Iscatterv", EventClass::Post),
    ("MPI_Iallgather", EventClass::Post),
    ("MPI_Iallgatherv", EventClass::Post),
    ("MPI_Ialltoall", EventClass::Post),
    ("MPI_Ialltoallv", EventClass::Post),
    ("MPI_Ialltoallw", EventClass::Post),
    ("MPI_Ireduce_scatter", EventClass::Post),
    ("MPI_Ireduce_scatter_block", EventClass::Post),
    ("MPI_Iscan", EventClass::Post),
    ("MPI_Iexscan", EventClass::Post),
    ("MPI_Ineighbor_allgather", EventClass::Post),
    ("MPI_Ineighbor_allgatherv", EventClass::Post),
    ("MPI_Ineighbor_alltoall", EventClass::Post),
    ("MPI_Ineighbor_alltoallv", EventClass::Post),
    ("MPI_Ineighbor_alltoallw", EventClass::Post),
];

/// Class of an event function, by its C name (`MPI_Recv`).
pub fn class_of(function: &str) -> Option<EventClass> {
    EVENTS.iter().find(|(n, _)| *n == function).map(|(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_c_style() {
        let mut names: Vec<_> = EVENTS.iter().map(|(n, _)| *n).collect();
        names.sort();
        let len = names.len();
        names.dedup();
        assert_eq!(names.len(), len);
        assert!(names.iter().all(|n| n.starts_with("MPI_")));
    }

    #[test]
    fn scalasca_names() {
        assert_eq!(
            wait_state(class_of("MPI_Recv").unwrap(), false),
            Some("Late Sender")
        );
        assert_eq!(
            wait_state(class_of("MPI_Ssend").unwrap(), true),
            Some("Late Receiver")
        );
        assert_eq!(
            wait_state(class_of("MPI_Allreduce").unwrap(), false),
            Some("Wait at NxN")
        );
        assert_eq!(
            wait_state(class_of("MPI_Bcast").unwrap(), false),
            Some("Late Broadcast")
        );
        assert_eq!(
            wait_state(class_of("MPI_Reduce").unwrap(), false),
            Some("Early Reduce")
        );
    }
}

/// Functions whose recorded `bytes` (what this rank sends or receives in all,
/// see `interpose/spec.rs`) is p blocks, while the profile is keyed by the
/// per-rank block (the "message size" of MPI benchmarks, see
/// `profile.rs`). `Some(true)`: only at the root; `Some(false)`: everywhere.
fn p_blocks_in_record(function: &str) -> Option<bool> {
    match function {
        "MPI_Allgather"
        | "MPI_Allgatherv"
        | "MPI_Alltoall"
        | "MPI_Alltoallv"
        | "MPI_Alltoallw"
        | "MPI_Reduce_scatter"
        | "MPI_Reduce_scatter_block" => Some(false),
        "MPI_Gather" | "MPI_Gatherv" | "MPI_Scatter" | "MPI_Scatterv" => Some(true),
        _ => None,
    }
}

/// The bytes under which the profile is looked up for a record entry of
/// `function` on a communicator of size `p`: the interposer records the total
/// a rank moves, the calibration keys by the per-rank block (for the `v`
/// variants the mean block). Both the interposer (online overhead) and the
/// report (re-analysis) go through this one function so that they agree.
pub fn profile_bytes(function: &str, role: Option<&str>, p: u32, bytes: u64) -> u64 {
    match p_blocks_in_record(function) {
        Some(root_only) if p > 0 && (!root_only || role == Some("root")) => bytes / p as u64,
        _ => bytes,
    }
}

#[cfg(test)]
mod profile_bytes_tests {
    use super::profile_bytes;

    #[test]
    fn gathered_totals_become_blocks() {
        assert_eq!(profile_bytes("MPI_Allgather", None, 4, 4096), 1024);
        assert_eq!(profile_bytes("MPI_Alltoall", None, 8, 8 * 100), 100);
        assert_eq!(profile_bytes("MPI_Gather", Some("root"), 4, 400), 100);
        assert_eq!(profile_bytes("MPI_Gather", Some("nonroot"), 4, 100), 100);
        assert_eq!(profile_bytes("MPI_Scatter", Some("root"), 2, 200), 100);
    }

    #[test]
    fn messages_and_reductions_are_unchanged() {
        assert_eq!(profile_bytes("MPI_Recv", None, 2, 8), 8);
        assert_eq!(profile_bytes("MPI_Allreduce", None, 4, 8), 8);
        assert_eq!(profile_bytes("MPI_Bcast", Some("root"), 4, 8), 8);
    }
}

/// The profile key `(function, role, bytes)` under which a record entry is
/// looked up: completions (`MPI_Wait*`, `MPI_Test*`) of requests of one kind
/// are looked up as `MPI_Wait` with role = the completed request's function
/// (a persistent `*_init` counts as its non-blocking twin); everything else
/// under its own name and role. Bytes go through [`profile_bytes`]. The
/// interposer (online overhead) and the report (re-analysis) both use this.
pub fn profile_key<'a>(
    function: &'a str,
    role: Option<&'a str>,
    completes: Option<&'a str>,
    p: u32,
    bytes: u64,
) -> (&'a str, Option<&'a str>, u64) {
    match completes {
        Some(posted) if function.starts_with("MPI_Wait") || function.starts_with("MPI_Test") => {
            let twin = match posted {
                "MPI_Send_init" => "MPI_Isend",
                "MPI_Bsend_init" => "MPI_Ibsend",
                "MPI_Rsend_init" => "MPI_Irsend",
                "MPI_Ssend_init" => "MPI_Issend",
                "MPI_Recv_init" => "MPI_Irecv",
                other => other,
            };
            ("MPI_Wait", Some(twin), profile_bytes(twin, None, p, bytes))
        }
        _ => (function, role, profile_bytes(function, role, p, bytes)),
    }
}

#[cfg(test)]
mod profile_key_tests {
    use super::profile_key;

    #[test]
    fn completions_are_keyed_by_the_completed_request() {
        assert_eq!(
            profile_key("MPI_Waitall", None, Some("MPI_Recv_init"), 2, 8),
            ("MPI_Wait", Some("MPI_Irecv"), 8)
        );
        assert_eq!(
            profile_key("MPI_Recv", None, None, 2, 8),
            ("MPI_Recv", None, 8)
        );
        assert_eq!(
            profile_key("MPI_Gather", Some("root"), None, 4, 400),
            ("MPI_Gather", Some("root"), 100)
        );
    }
}
