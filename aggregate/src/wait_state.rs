//! The wait-state rules: which wait state a call's overhead indicates
//! (`docs/method.md`, "Wait states").

use mpiover_common::completion::Requests;
use mpiover_common::functions::{catalogue, wait_state, EventClass, Function, Scope, WaitState};

/// Wait state that overhead in one aggregation key indicates.
/// `requests` is what one call of a completion completed (records since
/// completions carry it): a completion of requests of several kinds waits
/// for a late sender when any of them is a receive, for a late receiver when
/// they are sends of rendezvous size.
pub fn entry_wait_state(
    function: &str,
    bytes: u64,
    role: Option<&str>,
    completes: Option<&str>,
    requests: Option<Requests>,
    rendezvous_bytes: u64,
) -> Option<WaitState> {
    let f = catalogue::get(function)?;
    match f.class {
        EventClass::Send => wait_state(f.class, f.waits_for_receiver(bytes, rendezvous_bytes)),
        EventClass::CollectiveOneToN if role == Some("root") => None,
        EventClass::CollectiveNToOne if role == Some("nonroot") => None,
        EventClass::Completion => {
            let per_request = |r: &Requests| bytes / u64::from(r.n.max(1));
            let c = match (completes, requests) {
                (Some(c), Some(r)) if r.n > 1 => {
                    // Several requests of one kind: the message size decides.
                    return entry_wait_state(
                        function,
                        per_request(&r),
                        role,
                        Some(c),
                        None,
                        rendezvous_bytes,
                    );
                }
                (Some(c), _) => c,
                (None, Some(r)) if r.recv > 0 => return Some(WaitState::LateSender),
                (None, Some(r)) if r.send > 0 => {
                    return entry_wait_state(
                        "MPI_Send",
                        per_request(&r),
                        role,
                        None,
                        None,
                        rendezvous_bytes,
                    )
                }
                (None, _) => return None,
            };
            // A request waits as the blocking call it started would
            // (`MPI_Irecv`, `MPI_Recv_init` as `MPI_Recv`; `MPI_Iallreduce` as
            // `MPI_Allreduce`); `MPI_Start` names no operation.
            let posted = catalogue::get(c).filter(|p| p.class == EventClass::Post)?;
            entry_wait_state(posted.blocking?, bytes, role, None, None, rendezvous_bytes)
        }
        other => wait_state(other, false),
    }
}

/// Whether a call's peer is whom it waited for: blocking point-to-point
/// calls and completions (posts and polls do not wait).
pub fn waits_on_its_peer(function: &str) -> bool {
    catalogue::get(function).is_some_and(|f| match f.scope {
        Scope::PointToPoint => !matches!(f.class, EventClass::Post | EventClass::Poll),
        Scope::Requests => f.completion.is_some(),
        Scope::Collective => false,
    })
}

/// Whether a post's requests are receives.
pub fn is_receive_post(function: &str) -> bool {
    catalogue::get(function).is_some_and(Function::posts_receives)
}

/// Whether a wait state is a point-to-point one (whom it waited for is a
/// peer).
pub fn is_peer_wait(state: Option<WaitState>) -> bool {
    matches!(state, Some(WaitState::LateSender | WaitState::LateReceiver))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_states_follow_scalasca() {
        let w = |f, b, role, c| entry_wait_state(f, b, role, c, None, 65536).map(WaitState::as_str);
        assert_eq!(w("MPI_Recv", 8, None, None), Some("Late Sender"));
        assert_eq!(w("MPI_Send", 8, None, None), None);
        assert_eq!(w("MPI_Send", 1 << 20, None, None), Some("Late Receiver"));
        assert_eq!(w("MPI_Ssend", 8, None, None), Some("Late Receiver"));
        assert_eq!(w("MPI_Bsend", 1 << 20, None, None), None);
        assert_eq!(
            w("MPI_Wait", 8, None, Some("MPI_Irecv")),
            Some("Late Sender")
        );
        assert_eq!(
            w("MPI_Waitall", 1 << 20, None, Some("MPI_Isend")),
            Some("Late Receiver")
        );
        assert_eq!(w("MPI_Wait", 8, None, Some("MPI_Isend")), None);
        assert_eq!(
            w("MPI_Wait", 8, None, Some("MPI_Iallreduce")),
            Some("Wait at NxN")
        );
        assert_eq!(
            w("MPI_Wait", 8, None, Some("MPI_Ibarrier")),
            Some("Wait at Barrier")
        );
        assert_eq!(
            w("MPI_Wait", 8, Some("nonroot"), Some("MPI_Ibcast")),
            Some("Late Broadcast")
        );
        assert_eq!(w("MPI_Wait", 8, None, None), None);
        assert_eq!(w("MPI_Allreduce", 8, None, None), Some("Wait at NxN"));
        assert_eq!(
            w("MPI_Bcast", 8, Some("nonroot"), None),
            Some("Late Broadcast")
        );
        assert_eq!(w("MPI_Bcast", 8, Some("root"), None), None);
        assert_eq!(w("MPI_Reduce", 8, Some("root"), None), Some("Early Reduce"));
        assert_eq!(w("MPI_Reduce", 8, Some("nonroot"), None), None);
        assert_eq!(w("MPI_Isend", 8, None, None), None);
        assert_eq!(w("MPI_Foo", 8, None, None), None);
        assert_eq!(
            entry_wait_state("MPI_Send", 4096, None, None, None, 4096),
            Some(WaitState::LateReceiver)
        );
        // Completions of several kinds of request: receives mean a late
        // sender; sends alone, a late receiver only at rendezvous size.
        let req = |n, recv, send| Some(Requests { n, recv, send });
        let m = |bytes, r| {
            entry_wait_state("MPI_Waitall", bytes, None, None, r, 4096).map(WaitState::as_str)
        };
        assert_eq!(m(52 * 100, req(52, 26, 26)), Some("Late Sender"));
        assert_eq!(m(26 * 100, req(26, 0, 26)), None);
        assert_eq!(m(26 * 8192, req(26, 0, 26)), Some("Late Receiver"));
        assert_eq!(m(0, req(0, 0, 0)), None);
        // Many sends of one kind: the message size, not the sum, decides.
        assert_eq!(
            entry_wait_state(
                "MPI_Waitall",
                26 * 100,
                None,
                Some("MPI_Isend"),
                req(26, 0, 26),
                4096
            ),
            None
        );
    }
}
