//! The hot path: the per-thread re-entry guard, per-thread aggregation, and the
//! communicator / datatype / request caches the generated wrappers use.
//!
//! Rules (bytehound's preload does the same): nothing here panics, does I/O or
//! formats; the only allocations are bounded (a thread's state once, a new
//! key's entry, a histogram growing to the range of durations seen, cache
//! entries), and a thread whose TLS is gone simply forwards.

mod arrays;
mod comms;
mod completion;
mod event;
mod facts;
mod guard;
mod quiesce;
mod record;
mod requests;
mod site;
mod state;
mod table;
#[cfg(test)]
mod tests;
mod threads;
mod types;

pub use comms::*;
pub use event::*;
pub use guard::*;
pub use quiesce::*;
pub use requests::*;
pub use site::*;
pub use state::*;
pub use table::*;
pub use threads::*;
pub use types::*;
