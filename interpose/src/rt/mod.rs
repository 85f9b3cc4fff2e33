//! The hot path: the per-thread re-entry guard, per-thread aggregation, and the
//! communicator / datatype / request caches the generated wrappers use.
//!
//! Rules (bytehound's preload does the same): nothing here panics, does I/O or
//! formats; the only allocations are bounded (a thread's state once, a new
//! key's entry, a histogram growing to the range of durations seen, cache
//! entries), and a thread whose TLS is gone simply forwards.

/// Adds one call of `dt` to a (count, sum) pair: two scalar adds. Left to
/// itself the compiler pairs adjacent ones into a vector add whose operands
/// take more instructions to build than the adds (9 per wrapper, with the
/// four pairs a call updates); the fence (no instruction) keeps them apart.
/// Collapsed into the caller's lines, so that each step counts its own.
#[collapse_debuginfo(yes)]
macro_rules! tally {
    ($count:expr, $sum:expr, $dt:expr) => {{
        $count += 1;
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        $sum = $sum.wrapping_add($dt);
    }};
}

mod arguments;
mod arrays;
mod buckets;
mod call_key;
mod clock;
mod comms;
mod completion;
mod event;
mod guard;
mod quiesce;
mod record;
mod regions;
mod requests;
mod site;
mod state;
mod table;
#[cfg(test)]
mod tests;
mod threads;
mod type_sizes;

// What the generated wrappers, the hooks and the shutdown layer name as
// `crate::rt::...` (the modules below name each other's items directly).
pub use crate::handle::Handle;
// The wrappers and the shutdown layer name it as `rt::SiteRef`.
pub use crate::site_ref::SiteRef;
pub use call_key::{role_name, CallKey, KeyStats};
pub(crate) use clock::set_clock;
pub use comms::init_world;
pub use event::{
    nth_count, status_bytes, status_source, sum_counts, Ev, KeyFields, Posted, StatusSlot,
};
pub use guard::{busy, enter, is_busy, this_thread_state};
pub use quiesce::{barrier_all_threads, register_barrier};
pub use regions::{RegionKey, RegionStats};
pub use requests::REQ_CAPACITY;
pub use site::{add_binding, set_depth, site_of, unwound_site};
pub use state::{
    cnt, comm_freed, in_place, resume, type_freed, Role, DEPTH, ENABLED, FID_OTHER, MAX_KEYS,
    NONE_FN, NONE_PEER, RESET_STEP, SELF_HI, SELF_LO, STATE,
};
pub use table::Table;
pub use threads::{threads, ThreadState};
