//! Generates libmpiover's wrappers from the installed `mpi.h`.
//!
//! 1. Parses the bindgen output of `mpiover-mpisys` (`DEP_MPI_BINDINGS`) with
//!    syn and collects every `MPI_X` that has a `PMPI_X` twin with the same
//!    signature (variadic ones excepted: `MPI_Pcontrol` lives in
//!    `src/pcontrol.c`).
//! 2. Checks the events of `mpiover_common::functions::CATALOGUE` against
//!    those signatures: every event must be wrappable and every parameter
//!    role must name a parameter of the right kind of type. Any mismatch
//!    fails the build. `spec.rs` lists the functions whose wrappers are not
//!    generated or not plain.
//! 3. Writes `$OUT_DIR/names.rs` (function ids and names) and
//!    `$OUT_DIR/wrappers.rs` (one `#[no_mangle] extern "C"` wrapper per
//!    function, pretty-printed so it can be read).

mod fortran_abi;
mod gen_c;
mod gen_event;
mod gen_fortran;
mod gen_sides;
mod parse;
mod pretty;
mod validate;

#[path = "../spec.rs"]
mod spec;

use std::collections::BTreeSet;
use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

use mpiover_common::functions::CATALOGUE;

use gen_c::{gen_event, gen_plain, large_count_base};
use gen_fortran::gen_fortran;
use parse::parse;
use pretty::pretty;
use validate::{check_spec, wrappable};

/// What the event code of one wrapper is generated for, and what it used:
/// passed down the generator (`gen_event`), each wrapper its own.
#[derive(Default)]
pub(crate) struct Gen {
    /// A Fortran wrapper (the few places where the code differs from the C
    /// one read this).
    pub(crate) fortran: bool,
    /// The C parameters the event code uses, as roles resolve them
    /// (`param`): a Fortran wrapper converts just these.
    pub(crate) used: BTreeSet<String>,
}

fn main() {
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-changed=spec.rs");
    println!("cargo:rerun-if-changed=src/pcontrol.c");
    println!("cargo:rerun-if-changed=src/tls.c");
    println!("cargo:rustc-check-cfg=cfg(mpi_flavor, values(\"openmpi\", \"mpich\", \"unknown\"))");
    println!("cargo:rustc-check-cfg=cfg(mpi_handles_are_pointers)");
    println!("cargo:rustc-check-cfg=cfg(mpiover_fp)");
    println!("cargo:rustc-check-cfg=cfg(mpi_sessions)");

    let bindings = env::var("DEP_MPI_BINDINGS")
        .expect("DEP_MPI_BINDINGS not set (mpiover-mpisys links = \"mpi\")");
    println!("cargo:rerun-if-changed={bindings}");
    let flavor = env::var("DEP_MPI_FLAVOR").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-cfg=mpi_flavor=\"{flavor}\"");
    println!("cargo:rustc-env=MPIOVER_BUILT_FOR={flavor}");

    // The return address is read through the frame pointer only when frame
    // pointers are really forced (.cargo/config.toml); else unwinding.
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags
        .split('\x1f')
        .collect::<Vec<_>>()
        .join(" ")
        .contains("force-frame-pointers=yes")
    {
        println!("cargo:rustc-cfg=mpiover_fp");
    } else {
        println!(
            "cargo:warning=frame pointers not forced: call sites will be found by unwinding (slow)"
        );
    }

    let funcs = parse(&bindings);
    if funcs.is_empty() {
        panic!("no functions in {bindings}");
    }
    let handle_is_ptr = std::fs::read_to_string(&bindings)
        .map(|t| t.contains("pub type MPI_Comm = *mut"))
        .unwrap_or(false);
    if handle_is_ptr {
        println!("cargo:rustc-cfg=mpi_handles_are_pointers");
    }

    // MPI-4 sessions (MPICH 4; not Open MPI 4.1): `MPI_Session_init` is
    // hand-written (src/hooks.rs) where the header declares it.
    if funcs.contains_key("PMPI_Session_init") {
        println!("cargo:rustc-cfg=mpi_sessions");
    }
    let wrap = wrappable(&funcs);
    let events = check_spec(&wrap, &bindings);

    // Fortran entry points (Open MPI), generated first: they may add names.
    let (fcode, fnames, fcount) = gen_fortran(&funcs, &events, &flavor);

    // Ids: every wrapped function plus the variadic Pcontrol and the
    // Fortran-only functions; `other` last.
    let mut names: Vec<&str> = wrap.clone();
    if !names.contains(&"MPI_Pcontrol") {
        names.push("MPI_Pcontrol");
    }
    for f in &fnames {
        if !names.contains(&f.as_str()) {
            names.push(f.as_str());
        }
    }
    names.sort();
    let mut n = String::new();
    writeln!(
        n,
        "/// Names of the wrapped functions, indexed by function id."
    )
    .unwrap();
    writeln!(n, "pub static FN_NAMES: [&str; {}] = [", names.len() + 1).unwrap();
    for name in &names {
        writeln!(n, "    {name:?},").unwrap();
    }
    writeln!(n, "    \"other\",\n];").unwrap();
    writeln!(n, "/// Number of wrapped functions (`other` is id NFUNCS).").unwrap();
    writeln!(n, "pub const NFUNCS: usize = {};", names.len()).unwrap();
    for (i, name) in names.iter().enumerate() {
        writeln!(n, "pub const FID_{name}: u16 = {i};").unwrap();
    }
    writeln!(n, "/// Ids of the communication events.").unwrap();
    let ev_ids: Vec<String> = CATALOGUE
        .iter()
        .map(|e| format!("FID_{}", e.name))
        .collect();
    writeln!(
        n,
        "pub const EVENT_IDS: [u16; {}] = [{}];",
        ev_ids.len(),
        ev_ids.join(", ")
    )
    .unwrap();

    let mut w = String::new();
    w.push_str("use mpiover_mpisys::*;\nuse crate::rt::Handle as _;\n");
    let mut count = 0;
    for name in &wrap {
        if spec::c_hand_written(name) {
            continue;
        }
        let f = &funcs[*name];
        match events
            .get(name)
            .copied()
            .or_else(|| large_count_base(name, &events))
        {
            Some(e) => w.push_str(&gen_event(name, f, e)),
            None => w.push_str(&gen_plain(name, f)),
        }
        count += 1;
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("names.rs"), pretty(&n, "names")).expect("write names.rs");
    std::fs::write(out.join("wrappers.rs"), pretty(&w, "wrappers")).expect("write wrappers.rs");
    std::fs::write(out.join("fortran.rs"), pretty(&fcode, "fortran")).expect("write fortran.rs");
    println!("cargo:rustc-env=MPIOVER_WRAPPED={count}");
    println!("cargo:rustc-env=MPIOVER_FORTRAN_WRAPPED={fcount}");

    // MPI_Pcontrol is variadic, and the hot path's thread-local pair needs
    // a TLS model Rust cannot choose: a few lines of C.
    let mut cc = cc::Build::new();
    cc.file("src/pcontrol.c");
    // The hot path's thread-local pair, in the initial-exec model.
    cc.file("src/tls.c");
    for d in env::var("DEP_MPI_INCLUDE")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
    {
        cc.include(d);
    }
    cc.compile("mpiover_pcontrol");
}
