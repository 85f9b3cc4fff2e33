//! The Fortran entry points derived from the C prototypes by the
//! standard's binding rules (`docs/fortran.md`).

use std::collections::BTreeMap;

use crate::parse::{norm, Func};

/// A Fortran entry point (`fortran_from_c`): `mpi_send(buf, count, ...,
/// ierror)` and its other spellings.
pub(crate) struct FFunc {
    /// The C name (`MPI_Send`): function id, event spec.
    pub(crate) mixed: String,
    /// `mpi_send`.
    pub(crate) lower: String,
    /// `MPI_SEND`.
    pub(crate) upper: String,
    /// Rust return type, if any.
    pub(crate) ret: Option<String>,
    /// Rust types of the arguments; hidden string lengths (passed by value)
    /// are `usize`, so that whatever the caller put there passes through.
    pub(crate) args: Vec<String>,
    /// Whether each argument is a pointer (every Fortran argument except the
    /// hidden lengths).
    pub(crate) ptr: Vec<bool>,
}

/// The Fortran entry points (`mpif.h` / `use mpi`, and the `use mpi_f08`
/// names built from them) of the C functions in `mpi.h`, by the mapping the
/// MPI standard defines for the Fortran bindings (`docs/fortran.md`):
///
/// - every C parameter becomes an argument passed by reference: integers and
///   handles as `MPI_Fint` (`INTEGER`), addresses, offsets and counts as
///   `MPI_Aint` / `MPI_Offset` / `MPI_Count` (`INTEGER(KIND=...)`), buffers,
///   strings and callbacks as addresses;
/// - a subroutine ends with `ierror` (an `MPI_Fint`); the functions
///   `MPI_Wtime`, `MPI_Wtick` (`DOUBLE PRECISION`), `MPI_Aint_add`,
///   `MPI_Aint_diff` (`INTEGER(KIND=MPI_ADDRESS_KIND)`) return their value and
///   have none, and neither has `MPI_Pcontrol(level)`;
/// - each string (C `char *`, or `char **` / `char ***` for arrays of
///   strings) adds one hidden length after the argument list, in order,
///   passed by value;
/// - `MPI_Init(ierror)` and `MPI_Init_thread(required, provided, ierror)` take
///   no `argc` / `argv`;
/// - no Fortran binding: the handle and status conversions (`*_c2f`, `*_f2c`,
///   `*_f082c`, ...), the tool interface (`MPI_T_*`), the large-count `*_c`
///   variants (`use mpi_f08` only, with interfaces of their own) and
///   implementation extensions (`MPIX_*`).
pub(crate) fn fortran_from_c(funcs: &BTreeMap<String, Func>) -> Vec<FFunc> {
    const NO_BINDING_SUFFIXES: &[&str] = &["_c2f", "_f2c", "_c2f08", "_f082c", "_f2f08", "_f082f"];
    // Functions of the standard that a C header may define as macros (Open
    // MPI's `mpi.h` does these two): their Fortran bindings are functions of
    // two `INTEGER(KIND=MPI_ADDRESS_KIND)`.
    let aint = || Func {
        args: vec![
            ("base".into(), "MPI_Aint".into()),
            ("disp".into(), "MPI_Aint".into()),
        ],
        ret: Some("MPI_Aint".into()),
        variadic: false,
    };
    let mut all: BTreeMap<String, Func> = BTreeMap::new();
    for m in ["MPI_Aint_add", "MPI_Aint_diff"] {
        if !funcs.contains_key(m) {
            all.insert(m.to_string(), aint());
        }
    }
    let funcs: BTreeMap<&String, &Func> = funcs.iter().chain(all.iter()).collect();
    let mut out = Vec::new();
    for (name, f) in funcs.iter().map(|(n, f)| (*n, *f)) {
        if !name.starts_with("MPI_")
            || name.starts_with("MPI_T_")
            || NO_BINDING_SUFFIXES.iter().any(|s| name.ends_with(s))
            || (name.ends_with("_c") && funcs.contains_key(&name[..name.len() - 2].to_string()))
        {
            continue;
        }
        let (ret, ierror) = match name.as_str() {
            "MPI_Wtime" | "MPI_Wtick" => (Some("f64".to_string()), false),
            "MPI_Aint_add" | "MPI_Aint_diff" => (Some("isize".to_string()), false),
            "MPI_Pcontrol" => (None, false),
            _ => (None, true),
        };
        let params: Vec<&(String, String)> = match name.as_str() {
            // argc and argv are C's alone.
            "MPI_Init" => Vec::new(),
            "MPI_Init_thread" => f.args.iter().skip(2).collect(),
            _ => f.args.iter().collect(),
        };
        let mut args = Vec::new();
        let mut strings = 0;
        for (_, t) in params {
            let t = norm(t);
            let string = t.contains("c_char");
            let address = string
                || t.contains("c_void")
                || t.contains("MPI_Aint")
                || t.contains("MPI_Offset")
                || t.contains("MPI_Count")
                || t.contains("_function")
                || t.contains("_fn")
                || t.starts_with("Option<");
            strings += usize::from(string);
            args.push(if address {
                "*mut core::ffi::c_void"
            } else {
                "*mut core::ffi::c_int"
            });
        }
        if ierror {
            args.push("*mut core::ffi::c_int");
        }
        let mut ptr = vec![true; args.len()];
        for _ in 0..strings {
            args.push("usize");
            ptr.push(false);
        }
        out.push(FFunc {
            mixed: name.clone(),
            lower: name.to_ascii_lowercase(),
            upper: name.to_ascii_uppercase(),
            ret,
            args: args.into_iter().map(String::from).collect(),
            ptr,
        });
    }
    out
}
