//! The wait-state rules: which wait state a call's overhead indicates
//! (`docs/method.md`, "Wait states").

use super::*;

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
) -> Option<&'static str> {
    let class = class_of(function)?;
    match class {
        EventClass::Send => wait_state(class, is_rendezvous(function, bytes, rendezvous_bytes))
            .map(WaitState::as_str),
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
                (None, Some(r)) if r.recv > 0 => return Some("Late Sender"),
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
            match c {
                "MPI_Irecv" | "MPI_Imrecv" | "MPI_Recv_init" => Some("Late Sender"),
                "MPI_Isend" | "MPI_Send_init" => {
                    entry_wait_state("MPI_Send", bytes, role, None, None, rendezvous_bytes)
                }
                "MPI_Irsend" | "MPI_Rsend_init" => {
                    entry_wait_state("MPI_Rsend", bytes, role, None, None, rendezvous_bytes)
                }
                "MPI_Issend" | "MPI_Ssend_init" => Some("Late Receiver"),
                "MPI_Ibsend" | "MPI_Bsend_init" => None,
                _ if c.starts_with("MPI_I") && class_of(c) == Some(EventClass::Post) => {
                    // A non-blocking collective: the wait state of its blocking twin.
                    let rest = &c[5..];
                    let blocking = format!("MPI_{}{}", rest[..1].to_ascii_uppercase(), &rest[1..]);
                    match class_of(&blocking) {
                        Some(EventClass::Send | EventClass::Recv | EventClass::Completion)
                        | None => None,
                        Some(_) => {
                            entry_wait_state(&blocking, bytes, role, None, None, rendezvous_bytes)
                        }
                    }
                }
                _ => None,
            }
        }
        other => wait_state(other, false).map(WaitState::as_str),
    }
}

/// Whether a blocking send of this size waits for its receiver.
pub fn is_rendezvous(function: &str, bytes: u64, rendezvous_bytes: u64) -> bool {
    match function {
        "MPI_Ssend" => true,
        "MPI_Bsend" => false,
        _ => bytes >= rendezvous_bytes,
    }
}

pub(crate) fn is_p2p(class: Option<EventClass>) -> bool {
    matches!(
        class,
        Some(
            EventClass::Send
                | EventClass::Recv
                | EventClass::SendRecv
                | EventClass::Probe
                | EventClass::Completion
        )
    )
}

/// Whether a post's requests are receives.
pub(crate) fn is_receive_post(function: &str) -> bool {
    matches!(function, "MPI_Irecv" | "MPI_Imrecv" | "MPI_Recv_init")
}
