//! Finds the installed MPI, generates raw bindings for its `mpi.h` with bindgen
//! and, from the one table in `constants.rs`, a C shim for what the header
//! defines as macros and the Rust that reads it (`OUT_DIR/consts.rs`).
//!
//! The probe is ordered and reports every failure reason (rsmpi's
//! build-probe-mpi does the same): `MPICC` (a compiler wrapper), then
//! `MPI_PKG_CONFIG` (a pkg-config name), then `mpicc` on the PATH, then the
//! pkg-config names `ompi-c`, `mpich`, `mpi`.
//!
//! Dependents (the interposer's wrapper generator) get, through `links = "mpi"`:
//! `DEP_MPI_BINDINGS` (path of the generated bindings), `DEP_MPI_FLAVOR`
//! (`openmpi` or `mpich`), `DEP_MPI_INCLUDE` (include dirs, `:`-separated),
//! `DEP_MPI_LIBDIRS` and `DEP_MPI_MPICC`.

use std::env;
use std::path::PathBuf;
use std::process::Command;

mod constants;

#[derive(Debug, Default)]
struct Library {
    source: String,
    mpicc: Option<String>,
    include: Vec<PathBuf>,
    lib_dirs: Vec<PathBuf>,
    libs: Vec<String>,
}

fn parse_flags(source: String, mpicc: Option<String>, flags: &str) -> Library {
    let mut lib = Library {
        source,
        mpicc,
        ..Default::default()
    };
    // The wrapper's words as a shell would split them: an installation under
    // a path with spaces prints it quoted (`-I"/opt/my mpi/include"`).
    let words = shlex::split(flags).unwrap_or_else(|| {
        flags
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    });
    for tok in &words {
        if let Some(p) = tok.strip_prefix("-I") {
            lib.include.push(p.into());
        } else if let Some(p) = tok.strip_prefix("-L") {
            lib.lib_dirs.push(p.into());
        } else if let Some(l) = tok.strip_prefix("-l") {
            lib.libs.push(l.into());
        } else if let Some(rest) = tok.strip_prefix("-Wl,") {
            // -Wl,-rpath,/x or -Wl,-rpath -Wl,/x: keep directories as lib dirs.
            for part in rest.split(',') {
                if part.starts_with('/') {
                    lib.lib_dirs.push(part.into());
                }
            }
        }
    }
    lib
}

fn probe_mpicc(cmd: &str) -> Result<Library, String> {
    // Open MPI spells it -showme, MPICH -show; both accept -show.
    let out = Command::new(cmd)
        .arg("-show")
        .output()
        .map_err(|e| format!("`{cmd} -show` could not run: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "`{cmd} -show` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    // Drop the compiler itself (first word).
    let flags = text
        .split_once(char::is_whitespace)
        .map(|x| x.1)
        .unwrap_or("");
    let lib = parse_flags(format!("{cmd} -show"), Some(cmd.to_string()), flags);
    if lib.libs.is_empty() {
        return Err(format!("`{cmd} -show` names no library: {}", text.trim()));
    }
    Ok(lib)
}

/// pkg-config through the crate that parses its output (quoting, `-I` and
/// `-L` spellings, `PKG_CONFIG_PATH`); it prints no cargo metadata of its
/// own: `main` emits the link lines of whichever probe won.
fn probe_pkg_config(name: &str) -> Result<Library, String> {
    let found = pkg_config::Config::new()
        .cargo_metadata(false)
        .env_metadata(false)
        .probe(name)
        .map_err(|e| format!("pkg-config {name}: {}", e.to_string().trim()))?;
    Ok(Library {
        source: format!("pkg-config {name}"),
        mpicc: None,
        include: found.include_paths,
        lib_dirs: found.link_paths,
        libs: found.libs,
    })
}

fn probe() -> Result<Library, Vec<String>> {
    let mut errors = Vec::new();
    let mut attempts: Vec<Box<dyn Fn() -> Result<Library, String>>> = Vec::new();
    if let Ok(cc) = env::var("MPICC") {
        attempts.push(Box::new(move || probe_mpicc(&cc)));
    }
    if let Ok(pc) = env::var("MPI_PKG_CONFIG") {
        attempts.push(Box::new(move || probe_pkg_config(&pc)));
    }
    attempts.push(Box::new(|| probe_mpicc("mpicc")));
    for name in ["ompi-c", "mpich", "mpi"] {
        attempts.push(Box::new(move || probe_pkg_config(name)));
    }
    for attempt in attempts {
        match attempt() {
            Ok(lib) => return Ok(lib),
            Err(e) => errors.push(e),
        }
    }
    Err(errors)
}

fn main() {
    println!("cargo:rerun-if-env-changed=MPICC");
    println!("cargo:rerun-if-env-changed=MPI_PKG_CONFIG");
    println!("cargo:rerun-if-changed=build");

    let lib = match probe() {
        Ok(lib) => lib,
        Err(errors) => {
            eprintln!("mpiover-mpisys: no MPI library found. Tried, in order:");
            for e in &errors {
                eprintln!("  - {e}");
            }
            eprintln!(
                "Install one (Debian: apt-get install libopenmpi-dev openmpi-bin) or set MPICC."
            );
            panic!("no MPI library found: {}", errors.join("; "));
        }
    };

    let header = lib
        .include
        .iter()
        .map(|d| d.join("mpi.h"))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("mpi.h not found in {:?} (from {})", lib.include, lib.source));
    let header_text = std::fs::read_to_string(&header).unwrap_or_default();
    let flavor = if header_text.contains("OPEN_MPI") || header_text.contains("OMPI_") {
        "openmpi"
    } else if header_text.contains("MPICH") {
        "mpich"
    } else {
        "unknown"
    };

    for d in &lib.lib_dirs {
        println!("cargo:rustc-link-search=native={}", d.display());
    }
    for l in &lib.libs {
        println!("cargo:rustc-link-lib={l}");
    }

    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    let mut builder = bindgen::Builder::default()
        .header(header.to_string_lossy())
        .allowlist_function("P?MPIX?_.*")
        .allowlist_type("MPIX?_.*")
        .allowlist_var("MPIX?_.*")
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false);
    for d in &lib.include {
        builder = builder.clang_arg(format!("-I{}", d.display()));
    }
    let bindings = builder.generate().expect("bindgen failed on mpi.h");
    let bindings_path = out.join("bindings.rs");
    bindings
        .write_to_file(&bindings_path)
        .expect("cannot write bindings");

    // The macros' values where they are integer constant expressions, read
    // by the same front end from a probe header (see constants.rs).
    let probe_path = out.join("probe.h");
    std::fs::write(&probe_path, constants::probe_source()).expect("cannot write probe.h");
    let mut probe = bindgen::Builder::default()
        .header(probe_path.to_string_lossy())
        .allowlist_var("MPIOVER_.*_VALUE")
        .layout_tests(false)
        .generate_comments(false);
    for d in &lib.include {
        probe = probe.clang_arg(format!("-I{}", d.display()));
    }
    let values = constants::probed_values(
        &probe
            .generate()
            .expect("bindgen failed on the constants' probe header")
            .to_string(),
    );

    let shim_path = out.join("shim.c");
    std::fs::write(&shim_path, constants::c_source(&values)).expect("cannot write shim.c");
    std::fs::write(out.join("consts.rs"), constants::rust_source(&values))
        .expect("cannot write consts.rs");
    let mut build = cc::Build::new();
    build.file(&shim_path).warnings(false);
    for d in &lib.include {
        build.include(d);
    }
    build.compile("mpiover_mpisys_shim");

    let join = |v: &[PathBuf]| {
        v.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(":")
    };
    println!("cargo:bindings={}", bindings_path.display());
    println!("cargo:flavor={flavor}");
    println!("cargo:include={}", join(&lib.include));
    println!("cargo:libdirs={}", join(&lib.lib_dirs));
    println!("cargo:mpicc={}", lib.mpicc.clone().unwrap_or_default());
    println!("cargo:rustc-check-cfg=cfg(mpi_flavor, values(\"openmpi\", \"mpich\", \"unknown\"))");
    println!("cargo:rustc-cfg=mpi_flavor=\"{flavor}\"");
    println!("cargo:rustc-env=MPIOVER_MPI_FLAVOR={flavor}");
    println!("cargo:rustc-env=MPIOVER_MPI_PROBE={}", lib.source);
}
