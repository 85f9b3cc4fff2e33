//! The constants `mpi.h` defines as macros, listed once. A macro has no
//! symbol that bindgen could bind (Open MPI's handles are casts of the
//! addresses of its globals, MPICH's casts of integers), so the build
//! generates from [`CONSTANTS`] both a C file that stores each macro's value
//! in a global of our own, compiled against the probed `mpi.h`, and the Rust
//! that declares those globals and reads them (`consts` in `src/lib.rs`).
//! Adding a constant is one line of the table.
//!
//! A macro whose value is an integer constant expression (every sentinel and
//! integer, and MPICH's handles, which are integers; not Open MPI's handles,
//! which are addresses of its globals) is also evaluated at build time: the
//! compiler front end bindgen drives reads it from a probe header
//! ([`probe_source`]), and the getter returns that value as an immediate, so
//! that the hot path compares an argument with it in one instruction instead
//! of loading a global's address and then the global. The shim asserts each
//! such value against the macro with the C compiler (`_Static_assert`): a
//! header the two read differently fails the build rather than the run.

use std::collections::BTreeMap;

/// What a constant is, which fixes its C and Rust types.
#[derive(Clone, Copy)]
pub enum Kind {
    Comm,
    Group,
    Datatype,
    Op,
    Request,
    Info,
    Errhandler,
    /// A buffer sentinel (`MPI_IN_PLACE`, `MPI_BOTTOM`).
    Buffer,
    /// A status sentinel (`MPI_STATUS_IGNORE`).
    Status,
    Int,
    /// An integer literal in every `mpi.h`, which bindgen binds as a
    /// constant: read as an immediate operand, with no global (the hot path
    /// compares arguments with these on every call, and a global is two
    /// loads).
    Literal,
}

impl Kind {
    /// The C declaration of the global `name` (`const` so that nothing,
    /// Rust or C, can write it).
    fn c_declaration(self, name: &str) -> String {
        match self {
            Kind::Buffer => format!("void *const {name}"),
            Kind::Status => format!("MPI_Status *const {name}"),
            Kind::Int | Kind::Literal => format!("const int {name}"),
            handle => format!("const MPI_{} {name}", handle.handle_type()),
        }
    }

    /// The Rust type, named through the crate's bindings.
    fn rust_type(self) -> String {
        match self {
            Kind::Buffer => "*mut ::core::ffi::c_void".to_string(),
            Kind::Status => "*mut crate::MPI_Status".to_string(),
            Kind::Int | Kind::Literal => "::core::ffi::c_int".to_string(),
            handle => format!("crate::MPI_{}", handle.handle_type()),
        }
    }

    fn handle_type(self) -> &'static str {
        match self {
            Kind::Comm => "Comm",
            Kind::Group => "Group",
            Kind::Datatype => "Datatype",
            Kind::Op => "Op",
            Kind::Request => "Request",
            Kind::Info => "Info",
            Kind::Errhandler => "Errhandler",
            Kind::Buffer | Kind::Status | Kind::Int | Kind::Literal => {
                unreachable!("not a handle")
            }
        }
    }
}

/// Getter name (`mpiover_mpisys::consts::NAME()`), macro, kind.
pub const CONSTANTS: &[(&str, &str, Kind)] = &[
    ("comm_world", "MPI_COMM_WORLD", Kind::Comm),
    ("comm_self", "MPI_COMM_SELF", Kind::Comm),
    ("comm_null", "MPI_COMM_NULL", Kind::Comm),
    ("group_null", "MPI_GROUP_NULL", Kind::Group),
    ("datatype_null", "MPI_DATATYPE_NULL", Kind::Datatype),
    ("byte", "MPI_BYTE", Kind::Datatype),
    ("char", "MPI_CHAR", Kind::Datatype),
    ("int", "MPI_INT", Kind::Datatype),
    ("double", "MPI_DOUBLE", Kind::Datatype),
    ("long_long", "MPI_LONG_LONG", Kind::Datatype),
    (
        "unsigned_long_long",
        "MPI_UNSIGNED_LONG_LONG",
        Kind::Datatype,
    ),
    ("uint8_t", "MPI_UINT8_T", Kind::Datatype),
    ("op_sum", "MPI_SUM", Kind::Op),
    ("op_max", "MPI_MAX", Kind::Op),
    ("op_min", "MPI_MIN", Kind::Op),
    ("op_lor", "MPI_LOR", Kind::Op),
    ("request_null", "MPI_REQUEST_NULL", Kind::Request),
    ("info_null", "MPI_INFO_NULL", Kind::Info),
    ("errors_return", "MPI_ERRORS_RETURN", Kind::Errhandler),
    ("in_place", "MPI_IN_PLACE", Kind::Buffer),
    ("bottom", "MPI_BOTTOM", Kind::Buffer),
    ("status_ignore", "MPI_STATUS_IGNORE", Kind::Status),
    ("statuses_ignore", "MPI_STATUSES_IGNORE", Kind::Status),
    ("any_source", "MPI_ANY_SOURCE", Kind::Literal),
    ("any_tag", "MPI_ANY_TAG", Kind::Int),
    ("proc_null", "MPI_PROC_NULL", Kind::Literal),
    ("root", "MPI_ROOT", Kind::Int),
    ("undefined", "MPI_UNDEFINED", Kind::Literal),
    ("success", "MPI_SUCCESS", Kind::Int),
    ("ident", "MPI_IDENT", Kind::Int),
    ("max_processor_name", "MPI_MAX_PROCESSOR_NAME", Kind::Int),
    (
        "max_library_version_string",
        "MPI_MAX_LIBRARY_VERSION_STRING",
        Kind::Int,
    ),
    ("thread_single", "MPI_THREAD_SINGLE", Kind::Int),
    ("thread_funneled", "MPI_THREAD_FUNNELED", Kind::Int),
    ("thread_serialized", "MPI_THREAD_SERIALIZED", Kind::Int),
    ("thread_multiple", "MPI_THREAD_MULTIPLE", Kind::Int),
    ("comm_type_shared", "MPI_COMM_TYPE_SHARED", Kind::Int),
    ("graph", "MPI_GRAPH", Kind::Int),
    ("cart", "MPI_CART", Kind::Int),
    ("dist_graph", "MPI_DIST_GRAPH", Kind::Int),
];

/// The global that holds `macro_name`'s value: `MPI_X` -> `MPIOVER_X`.
fn global(macro_name: &str) -> String {
    let rest = macro_name
        .strip_prefix("MPI_")
        .unwrap_or_else(|| panic!("{macro_name} does not start with MPI_"));
    format!("MPIOVER_{rest}")
}

/// The name under which the probe header gives `macro_name`'s value.
fn probe_name(macro_name: &str) -> String {
    format!("{}_VALUE", global(macro_name))
}

/// The probe header bindgen reads: each macro converted to an integer in a
/// `const` variable, which bindgen binds as a Rust constant when the front
/// end can evaluate it (and as nothing it can use when it cannot: an
/// address, known only at load time).
pub fn probe_source() -> String {
    let mut s = String::from("#include <mpi.h>\n#include <stdint.h>\n\n");
    for &(_, name, _) in CONSTANTS.iter().filter(|c| !matches!(c.2, Kind::Literal)) {
        s += &format!(
            "static const intptr_t {} = (intptr_t)({name});\n",
            probe_name(name)
        );
    }
    s
}

/// The values bindgen found in the probe header's bindings (`text`), by
/// macro name: its `pub const MPIOVER_X_VALUE: isize = N;` lines.
pub fn probed_values(text: &str) -> BTreeMap<String, i64> {
    let mut values = BTreeMap::new();
    for &(_, name, _) in CONSTANTS.iter().filter(|c| !matches!(c.2, Kind::Literal)) {
        let head = format!("pub const {}:", probe_name(name));
        let value = text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix(&head)?;
            let v = rest.split_once('=')?.1.trim().strip_suffix(';')?.trim();
            v.parse::<i64>().ok()
        });
        if let Some(v) = value {
            values.insert(name.to_string(), v);
        }
    }
    values
}

/// The C file: one initialized global per constant. Both libraries' macros
/// are constant expressions (addresses or integers), valid initializers.
/// Each value found at build time (`values`) is asserted against its macro.
pub fn c_source(values: &BTreeMap<String, i64>) -> String {
    let mut s = String::from(
        "/* Generated by mpisys/build/constants.rs: the values of mpi.h's macros\n \
         * as globals that Rust can link against. */\n#include <mpi.h>\n#include <stdint.h>\n\n",
    );
    for &(_, name, kind) in CONSTANTS.iter().filter(|c| !matches!(c.2, Kind::Literal)) {
        s += &format!("{} = {name};\n", kind.c_declaration(&global(name)));
        if let Some(v) = values.get(name) {
            s += &format!(
                "_Static_assert((intptr_t)({name}) == (intptr_t){v}LL, \
                 \"{name}: the value the build found\");\n"
            );
        }
    }
    s
}

/// The Rust side: the globals' declarations and one safe getter each, which
/// returns the value found at build time (`values`) where there is one.
pub fn rust_source(values: &BTreeMap<String, i64>) -> String {
    let mut s = String::from(
        "// Generated by mpisys/build/constants.rs; included by `consts` in src/lib.rs.\n\n\
         extern \"C\" {\n",
    );
    for &(_, name, kind) in CONSTANTS.iter().filter(|c| !matches!(c.2, Kind::Literal)) {
        s += &format!("    static {}: {};\n", global(name), kind.rust_type());
    }
    s += "}\n";
    for &(getter, name, kind) in CONSTANTS {
        if let Kind::Literal = kind {
            s += &format!(
                "\n/// `{name}`.\n#[inline(always)]\npub const fn {getter}() -> {ty} {{\n    \
                 crate::{name} as {ty}\n}}\n",
                ty = kind.rust_type(),
            );
            continue;
        }
        if let Some(v) = values.get(name) {
            // Through isize: a pointer's value may be negative (MPICH's
            // MPI_IN_PLACE is (void *) -1), and a handle's an int.
            s += &format!(
                "\n/// `{name}` (its value in the probed mpi.h).\n#[inline(always)]\npub fn {getter}() -> {ty} {{\n    \
                 {v}_isize as {ty}\n}}\n",
                ty = kind.rust_type(),
            );
            continue;
        }
        s += &format!(
            "\n/// `{name}`.\n#[inline(always)]\npub fn {getter}() -> {ty} {{\n    \
             // SAFETY: the shim generated beside this file defines the global\n    \
             // as a `const` C object of this type, initialized from mpi.h's\n    \
             // macro before any code runs and never written: a read races\n    \
             // with nothing.\n    \
             unsafe {{ {global} }}\n}}\n",
            ty = kind.rust_type(),
            global = global(name),
        );
    }
    s
}
