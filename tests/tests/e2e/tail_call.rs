//! A helper that ends in `return MPI_Bcast(...)`, compiled at -O2 into a
//! jump: the broadcast's return address is its caller's line. The site is
//! kept there (that is where the program waits) and says it was reached
//! through a tail call in the helper; a helper that does more after its
//! broadcast is seen at its own line, with no such note.

use crate::harness::*;

#[test]
fn tail_called_broadcast_is_flagged_at_the_callers_line() {
    let r = record("tail_call", NP, "tail_call", &["10"], calibrated_profile());
    let context = context(&r);
    let caller = marker("tail_call.c", "tail-caller");
    let s = site_at(&r.report, "tail_call.c", caller, "MPI_Bcast")
        .unwrap_or_else(|| panic!("no MPI_Bcast at tail_call.c:{caller}\n{context}"));
    assert_eq!(s["function"], "main", "{s:#}");
    let note = s["note"].as_str().unwrap_or("");
    assert!(
        note.starts_with("reached through a tail call in share:"),
        "{s:#}"
    );
    let direct = marker("tail_call.c", "direct-bcast");
    let s = site_at(&r.report, "tail_call.c", direct, "MPI_Bcast")
        .unwrap_or_else(|| panic!("no MPI_Bcast at tail_call.c:{direct}\n{context}"));
    assert_eq!(s["function"], "share_and_count", "{s:#}");
    assert!(s["note"].is_null(), "{s:#}");
}
