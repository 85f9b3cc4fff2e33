//! `libmpiover.so` defines every function of the installed
//! `mpi.h` that has a `PMPI_` twin. The wrappers are generated at build time;
//! a header function the generator skipped (an unexpected signature, say)
//! would only print a cargo warning, so the exported symbols are checked here
//! against the header itself, preprocessed by the flavour's `mpicc`.

use std::collections::BTreeSet;
use std::process::Command;

use crate::harness::*;

/// Names `N` declared in the preprocessed header both as `MPI_N(` and `PMPI_N(`.
fn header_functions() -> BTreeSet<String> {
    let mpicc = if mpi_flavor() == "mpich" {
        "mpicc.mpich"
    } else {
        "mpicc"
    };
    let dir = scratch("every_header_function_is_wrapped");
    let src = dir.join("h.c");
    std::fs::write(&src, "#include <mpi.h>\n").expect("write h.c");
    let out = Command::new(mpicc)
        .arg("-E")
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running {mpicc} -E: {e}"));
    assert!(out.status.success(), "{mpicc} -E failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut mpi = BTreeSet::new();
    let mut pmpi = BTreeSet::new();
    // Identifiers directly followed by `(` (after optional spaces): a
    // declaration or a function-pointer typedef; typedefs never start with
    // MPI_/PMPI_ and a following `(`, so both sets hold functions.
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let at_word_start =
            i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if at_word_start && (text[i..].starts_with("MPI_") || text[i..].starts_with("PMPI_")) {
            let end = text[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .map_or(text.len(), |n| i + n);
            let word = &text[i..end];
            if text[end..].trim_start().starts_with('(') {
                if let Some(n) = word.strip_prefix("PMPI_") {
                    pmpi.insert(n.to_string());
                } else if let Some(n) = word.strip_prefix("MPI_") {
                    mpi.insert(n.to_string());
                }
            }
            i = end;
        } else {
            i += 1;
        }
    }
    mpi.intersection(&pmpi).cloned().collect()
}

/// The MPI C library the interposer is linked against (`libmpi.so.40`,
/// `libmpich.so.12`), from `ldd`.
fn linked_mpi_library() -> String {
    let out = Command::new("ldd")
        .arg(lib())
        .output()
        .expect("running ldd");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("=>").nth(1))
        .filter_map(|r| r.split_whitespace().next())
        .find(|p| p.contains("/libmpi.so") || p.contains("/libmpich.so"))
        .unwrap_or_else(|| panic!("{} is not linked to libmpi or libmpich", lib().display()))
        .to_string()
}

fn exported() -> BTreeSet<String> {
    defined_symbols(&lib().to_string_lossy())
}

fn defined_symbols(path: &str) -> BTreeSet<String> {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(path)
        .output()
        .expect("running nm");
    assert!(out.status.success(), "nm -D {path} failed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_header_function_is_wrapped() {
    let header = header_functions();
    // Open MPI 4.1 declares about 400 with a PMPI twin, MPICH 4.0 about 600;
    // far fewer means the header scan itself went wrong.
    assert!(
        header.len() > 300,
        "only {} MPI_/PMPI_ pairs found in mpi.h",
        header.len()
    );
    // MPICH's header also declares the Fortran-08 status conversions
    // (`MPI_Status_c2f08`, ...), which live in libmpichfort or nowhere: a
    // wrapper could not bind its PMPI twin in a C program, so only what the C
    // library defines is required.
    let libmpi = linked_mpi_library();
    let in_lib = defined_symbols(&libmpi);
    let (header, elsewhere): (BTreeSet<String>, BTreeSet<String>) = header
        .into_iter()
        .partition(|n| in_lib.contains(&format!("PMPI_{n}")));
    assert!(
        elsewhere.len() < 10,
        "{} header functions have no PMPI_ symbol in {libmpi}: {elsewhere:?}",
        elsewhere.len()
    );
    if !elsewhere.is_empty() {
        eprintln!("not in {libmpi}, so not required: {elsewhere:?}");
    }
    let syms = exported();
    let missing: Vec<&String> = header
        .iter()
        .filter(|n| !syms.contains(&format!("MPI_{n}")))
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} functions of mpi.h are not defined by {}: {:?}",
        missing.len(),
        header.len(),
        lib().display(),
        missing
    );
}

/// The report side builds where no MPI is installed. It does
/// so only as long as neither it nor what it depends on pulls in the MPI
/// bindings (whose build script probes for an MPI library and fails without
/// one), so the dependency tree is checked.
#[test]
fn report_side_depends_on_no_mpi_crate() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .current_dir(workspace_root())
        .args([
            "tree",
            "--offline",
            "-p",
            "mpiover-report",
            "-e",
            "normal,build",
            "--prefix",
            "none",
        ])
        .output()
        .unwrap_or_else(|e| panic!("running {cargo} tree: {e}"));
    let tree = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && tree.contains("mpiover-common"),
        "cargo tree failed\n{tree}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mpi: Vec<&str> = tree
        .lines()
        .filter(|l| {
            l.starts_with("mpiover-mpisys")
                || l.starts_with("mpiover-interpose")
                || l.starts_with("mpi-sys")
                || l.starts_with("bindgen")
        })
        .collect();
    assert!(
        mpi.is_empty(),
        "mpiover-report depends on MPI crates: {mpi:?}"
    );
}

/// The Fortran entry points are derived from the C prototypes of the
/// installed `mpi.h` by the standard's rules (`docs/fortran.md`), not read
/// from any implementation's header. Where Open MPI's own list of its
/// Fortran entry points is installed (`prototypes_mpi.h`), this check
/// compares the two and lists the differences: every entry point Open MPI
/// declares is exported by `libmpiover.so`, except the functions MPI-3.0
/// removed from the C bindings (which Open MPI still exports for old
/// Fortran) and Fortran-only helpers; neither is communication.
#[test]
fn fortran_entry_points_cover_open_mpis_own_list() {
    if mpi_flavor() != "openmpi" {
        return; // MPICH builds export the use mpi_f08 names only.
    }
    let rel = "openmpi/ompi/mpi/fortran/mpif-h/prototypes_mpi.h";
    let installed = [
        "/usr/lib/x86_64-linux-gnu/openmpi/include",
        "/usr/lib/aarch64-linux-gnu/openmpi/include",
        "/usr/lib64/openmpi/include",
        "/usr/include/openmpi",
    ]
    .iter()
    .map(|d| std::path::Path::new(d).join(rel))
    .find(|p| p.is_file());
    let Some(installed) = installed else {
        assert!(
            std::env::var_os("CI").is_none(),
            "Open MPI's prototypes_mpi.h not found under CI (scripts/setup installs libopenmpi-dev)"
        );
        eprintln!("Open MPI's prototypes_mpi.h not installed: nothing to compare");
        return;
    };
    // `PN2(ret, MPI_Send, mpi_send, MPI_SEND, (...))`: the lower-case names.
    let theirs: BTreeSet<String> = std::fs::read_to_string(&installed)
        .expect("read Open MPI's prototypes")
        .lines()
        .filter_map(|l| l.trim().strip_prefix("PN2("))
        .filter_map(|l| l.split(',').nth(2).map(|n| n.trim().to_string()))
        .filter(|n| !n.ends_with("_fn"))
        .collect();
    assert!(
        theirs.len() > 350,
        "{} entry points in {}",
        theirs.len(),
        installed.display()
    );
    let ours: BTreeSet<String> = exported()
        .into_iter()
        .filter_map(|s| s.strip_suffix('_').map(str::to_string))
        .filter(|s| s.starts_with("mpi_") && !s.ends_with("_f08") && !s.ends_with('_'))
        .collect();
    let missing: Vec<&String> = theirs.difference(&ours).collect();
    let extra: Vec<&String> = ours.difference(&theirs).collect();
    eprintln!(
        "Fortran entry points: {} exported, {} in {}; not exported: {missing:?}; not in Open MPI's list: {extra:?}",
        ours.len(),
        theirs.len(),
        installed.display()
    );
    const NOT_WRAPPED: &[&str] = &[
        // Removed from the C bindings in MPI-3.0.
        "mpi_address",
        "mpi_errhandler_create",
        "mpi_errhandler_get",
        "mpi_errhandler_set",
        "mpi_type_extent",
        "mpi_type_hindexed",
        "mpi_type_hvector",
        "mpi_type_lb",
        "mpi_type_struct",
        "mpi_type_ub",
        // Fortran-only helpers (C pointers, register synchronization).
        "mpi_alloc_mem_cptr",
        "mpi_f_sync_reg",
        "mpi_win_allocate_cptr",
        "mpi_win_allocate_shared_cptr",
        "mpi_win_shared_query_cptr",
    ];
    let unexpected: Vec<&&String> = missing
        .iter()
        .filter(|m| !NOT_WRAPPED.contains(&m.as_str()))
        .collect();
    assert!(
        unexpected.is_empty(),
        "Fortran entry points of Open MPI that libmpiover.so does not export: {unexpected:?}"
    );
    for f in mpiover_common::functions::CATALOGUE
        .iter()
        .map(|e| e.name.to_ascii_lowercase())
    {
        if theirs.contains(&f) {
            assert!(ours.contains(&f), "no Fortran wrapper for the event {f}");
        }
    }
}
