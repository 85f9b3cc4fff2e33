//! The profile key a record entry is looked up under: the per-rank block of
//! gathered totals, completions keyed by what they completed. The interposer
//! (online overhead) and the report (re-analysis) both go through here so
//! that they agree.

use super::catalogue::{get, Blocks, EventClass};

/// The bytes under which the profile is looked up for a record entry of
/// `function` on a communicator of size `p`: the interposer records the total
/// a rank moves, the calibration keys by the per-rank block (for the `v`
/// variants the mean block). Both the interposer (online overhead) and the
/// report (re-analysis) go through this one function so that they agree.
pub fn profile_bytes(function: &str, role: Option<&str>, p: u32, bytes: u64) -> u64 {
    // Posts record what they post; only the blocking collectives are keyed
    // by the block (their non-blocking posts have no profile entries).
    let blocks = get(function).filter(|f| f.class != EventClass::Post);
    let per_rank = match blocks.map(|f| f.blocks) {
        Some(Blocks::PerRank) => true,
        Some(Blocks::PerRankAtRoot) => role == Some("root"),
        Some(Blocks::Whole) | None => false,
    };
    if per_rank && p > 0 {
        bytes / p as u64
    } else {
        bytes
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
        Some(posted) if get(function).is_some_and(|f| f.completion.is_some()) => {
            let twin = get(posted).map_or(posted, |f| f.nonblocking());
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
