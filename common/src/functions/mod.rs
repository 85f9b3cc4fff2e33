//! The MPI functions mpiover knows, typed: one catalogue that the interposer's
//! build script, the profile lookup, the calibration and the report all read.
//!
//! Every MPI function is counted and timed by the interposer, but only the
//! functions of [`CATALOGUE`] are *events*: calls whose duration can hold
//! overhead (`docs/method.md`, "What counts as overhead") and which get a
//! per-site entry with p, bytes and peer. Each entry says what kind of
//! communication the function is ([`Scope`], [`EventClass`]), which way its
//! data flows ([`Direction`]), its send mode ([`SendMode`], which decides
//! whether a send can wait for its receiver), how its recorded bytes relate to
//! the per-rank block the calibration keys by ([`Blocks`]), its blocking and
//! persistent relatives, and for completions how many requests they wait for
//! ([`Completion`]), and which of its parameters is what ([`Roles`]).
//! The wait-state names ([`WaitState`]) follow Scalasca so
//! that users recognise them.
//!
//! - [`catalogue`]: the lookups over the rows.
//! - [`nature`]: the record of a function (the types of a row).
//! - [`table`]: the rows, one per event function.
//! - [`roles`]: the parameters of a function by role, from which the
//!   interposer generates its wrapper.
//! - [`wait_state`](mod@wait_state): the wait states and the rule from class to state.
//! - [`keys`]: the profile key a record entry is looked up under.

pub mod catalogue;
pub mod keys;
pub mod nature;
pub mod roles;
pub mod table;
pub mod wait_state;

pub use catalogue::{
    class_of, get, lifecycle, Blocks, Completion, CompletionHow, Direction, EventClass, Function,
    Lifecycle, Scope, SendMode, CATALOGUE,
};
pub use keys::{profile_bytes, profile_key};
pub use roles::Roles;
pub use wait_state::{wait_state, WaitState};
