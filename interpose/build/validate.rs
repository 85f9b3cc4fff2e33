//! What may be wrapped, and the catalogue's roles checked against the
//! header: every role names a parameter of the right kind of type.

use std::collections::BTreeMap;

use mpiover_common::functions::{Function, CATALOGUE};

use crate::parse::{norm, Func};
use crate::spec;
use crate::Gen;

/// Kinds of parameter a role may name.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    Buf,
    Count,
    Counts,
    Dtype,
    Dtypes,
    Rank,
    Comm,
    Status,
    Flag,
    Request,
}

pub(crate) fn kind_ok(k: Kind, t: &str) -> bool {
    let t = norm(t);
    let ptr = t.starts_with('*');
    match k {
        Kind::Buf => ptr && t.ends_with("c_void"),
        Kind::Count => !ptr && (t.ends_with("c_int") || t.ends_with("MPI_Count")),
        Kind::Counts => ptr && (t.ends_with("c_int") || t.ends_with("MPI_Count")),
        Kind::Dtype => t == "MPI_Datatype",
        Kind::Dtypes => ptr && t.ends_with("MPI_Datatype"),
        Kind::Rank => t.ends_with("c_int") && !ptr,
        Kind::Comm => t == "MPI_Comm",
        Kind::Status => t.starts_with("*mut") && t.ends_with("MPI_Status"),
        Kind::Flag => t.starts_with("*mut") && t.ends_with("c_int"),
        Kind::Request => t.starts_with("*mut") && t.ends_with("MPI_Request"),
    }
}

/// Resolves a role's parameter name (alternatives separated by `|`) against
/// the signature; fails the build when it is missing or of the wrong kind.
/// The parameter goes into `g.used`.
pub(crate) fn param(g: &mut Gen, fname: &str, f: &Func, names: &str, k: Kind) -> String {
    for n in names.split('|') {
        if let Some((a, t)) = f.args.iter().find(|(a, _)| a == n) {
            if !kind_ok(k, t) {
                panic!("spec error: {fname}: parameter `{a}` has type `{t}`, not a {k:?}");
            }
            g.used.insert(a.clone());
            return a.clone();
        }
    }
    let have: Vec<&str> = f.args.iter().map(|(a, _)| a.as_str()).collect();
    panic!("spec error: {fname}: no parameter `{names}` (role {k:?}); the header's signature has {have:?}");
}

/// Every `MPI_X` with a `PMPI_X` twin of the same signature (not variadic,
/// and in the C library).
pub(crate) fn wrappable(funcs: &BTreeMap<String, Func>) -> Vec<&str> {
    let mut wrap: Vec<&str> = Vec::new();
    for (name, f) in funcs {
        let Some(base) = name.strip_prefix("MPI_") else {
            continue;
        };
        let Some(pf) = funcs.get(&format!("PMPI_{base}")) else {
            continue;
        };
        if f.variadic || spec::NOT_IN_C_LIBRARY.contains(&name.as_str()) {
            continue;
        }
        let sig = |f: &Func| {
            (
                f.args.iter().map(|(_, t)| norm(t)).collect::<Vec<_>>(),
                f.ret.as_deref().map(norm),
            )
        };
        if sig(f) != sig(pf) {
            println!("cargo:warning={name} and P{name} differ in signature: not wrapped");
            continue;
        }
        wrap.push(name);
    }
    wrap
}

/// The catalogue against the header: every event has an MPI/PMPI pair and
/// is not hand-written (the roles are checked against the signatures as the
/// wrappers are generated). Any mismatch fails the build.
pub(crate) fn check_spec(
    wrap: &[&str],
    bindings: &str,
) -> BTreeMap<&'static str, &'static Function> {
    let events: BTreeMap<&str, &Function> = CATALOGUE.iter().map(|e| (e.name, e)).collect();
    if events.len() != CATALOGUE.len() {
        panic!("catalogue error: an event is listed twice");
    }
    for e in CATALOGUE {
        if !wrap.contains(&e.name) {
            panic!(
                "spec error: event {} has no MPI/PMPI pair in {bindings}",
                e.name
            );
        }
        if spec::c_hand_written(e.name) {
            panic!("spec error: event {} is also hand-written", e.name);
        }
    }
    events
}
