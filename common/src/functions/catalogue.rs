//! The catalogue: one typed record per MPI function that is an event.
//!
//! The table (its rows are in [`table`](super::table)) is the single place
//! where a function's nature and its parameters are written down; everything
//! that would match function names as strings asks it instead (the
//! interposer's build script generates the event wrappers from it, the
//! profile lookup, the calibration and the report classify through it). Names are the C names;
//! Fortran entry points and MPI-4 large-count (`_c`) calls report under the
//! C name of their base function.

// The types of a row are in `nature`, the rows in `table`, so that the rows
// and the look-ups over them do not import each other; the catalogue's
// users keep naming them here.
pub use super::nature::{
    Blocks, Completion, CompletionHow, Direction, EventClass, Function, Scope, SendMode,
};
pub use super::table::CATALOGUE;

/// The catalogue's record of `function` (C name), if it is an event.
pub fn get(function: &str) -> Option<&'static Function> {
    CATALOGUE.iter().find(|f| f.name == function)
}

/// Class of an event function, by its C name (`MPI_Recv`).
pub fn class_of(function: &str) -> Option<EventClass> {
    get(function).map(|f| f.class)
}

/// Functions that are not events but whose time the report sets apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lifecycle {
    /// `MPI_Init`, `MPI_Init_thread`: start-up, not the application's
    /// communication.
    StartUp,
    /// `MPI_Finalize`.
    ShutDown,
}

/// Whether `function` starts or ends MPI.
pub fn lifecycle(function: &str) -> Option<Lifecycle> {
    match function {
        "MPI_Init" | "MPI_Init_thread" => Some(Lifecycle::StartUp),
        "MPI_Finalize" => Some(Lifecycle::ShutDown),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_c_style() {
        let mut names: Vec<_> = CATALOGUE.iter().map(|f| f.name).collect();
        names.sort();
        let len = names.len();
        names.dedup();
        assert_eq!(names.len(), len);
        assert!(names.iter().all(|n| n.starts_with("MPI_")));
    }

    #[test]
    fn relatives_are_in_the_catalogue_and_consistent() {
        for f in CATALOGUE {
            if let Some(b) = f.blocking {
                let b = get(b).unwrap_or_else(|| panic!("{}: blocking {b} unknown", f.name));
                assert_eq!(f.class, EventClass::Post, "{}", f.name);
                assert_ne!(b.class, EventClass::Post, "{}", f.name);
                assert_eq!(
                    (b.scope, b.direction, b.mode, b.rooted, b.blocks),
                    (f.scope, f.direction, f.mode, f.rooted, f.blocks),
                    "{} and its blocking {}",
                    f.name,
                    b.name
                );
            }
            if let Some(n) = f.persistent_of {
                let n = get(n).unwrap_or_else(|| panic!("{}: twin {n} unknown", f.name));
                assert!(f.name.ends_with("_init") && n.persistent_of.is_none());
                assert_eq!(n.blocking, f.blocking);
            }
            assert_eq!(f.completion.is_some(), f.class == EventClass::Completion);
            assert_eq!(
                f.mode.is_some(),
                f.direction == Direction::Send,
                "{}",
                f.name
            );
        }
    }

    #[test]
    fn the_standards_naming_agrees_with_the_table() {
        // MPI_I<name> posts <name> for every non-blocking collective.
        for f in CATALOGUE.iter().filter(|f| f.posts_collective()) {
            let rest = &f.name["MPI_I".len()..];
            let expect = format!("MPI_{}{}", rest[..1].to_ascii_uppercase(), &rest[1..]);
            assert_eq!(f.blocking, Some(expect.as_str()));
        }
        assert!(get("MPI_Recv_init").is_some_and(Function::posts_receives));
        assert!(get("MPI_Imrecv").is_some_and(Function::posts_receives));
        assert!(!get("MPI_Isend").is_some_and(Function::posts_receives));
        assert_eq!(
            get("MPI_Ssend_init").map(Function::nonblocking),
            Some("MPI_Issend")
        );
    }

    #[test]
    fn roles_agree_with_the_nature() {
        for f in CATALOGUE {
            let r = &f.roles;
            assert_eq!(f.rooted, r.root.is_some(), "{}", f.name);
            assert_eq!(
                f.class == EventClass::Post && f.scope != Scope::Requests,
                r.request.is_some(),
                "{}",
                f.name
            );
            assert_eq!(
                f.scope == Scope::Requests,
                r.requests.is_some(),
                "{}",
                f.name
            );
            assert!(!r.recv_from_status || (r.status.is_some() && r.recv.is_some()));
        }
    }

    #[test]
    fn send_modes_decide_who_waits_for_the_receiver() {
        let w = |f: &str, bytes| get(f).is_some_and(|f| f.waits_for_receiver(bytes, 4096));
        assert!(w("MPI_Ssend", 0));
        assert!(!w("MPI_Bsend", 1 << 20));
        assert!(!w("MPI_Send", 4095) && w("MPI_Send", 4096));
        assert!(w("MPI_Irsend", 1 << 20));
        assert!(!w("MPI_Recv", 1 << 20));
    }
}
