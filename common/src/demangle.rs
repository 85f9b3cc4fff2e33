//! Function names as people write them: C++ (Itanium ABI, what GCC and Clang
//! emit on Linux) and Rust (legacy and v0) linkage names demangled. The
//! interposer demangles when it resolves a site; the report demangles again
//! what older records hold, so that every output shows `halo::Exchanger::send(int)`
//! rather than `_ZN4halo9Exchanger4sendEi`.

use std::borrow::Cow;

/// The demangled form of a linkage name, or the name itself when it is not a
/// mangled C++ or Rust name (C and Fortran names, names already demangled).
pub fn demangle(name: &str) -> Cow<'_, str> {
    if let Some(r) = rust(name) {
        return Cow::Owned(r);
    }
    if name.starts_with("_Z") {
        if let Ok(sym) = cpp_demangle::Symbol::new(name) {
            if let Ok(s) = sym.demangle() {
                return Cow::Owned(s);
            }
        }
    }
    Cow::Borrowed(name)
}

/// A Rust symbol: v0 (`_R...`) or legacy (`_ZN...17h<16 hex digits>E`, which
/// C++ demangling would show with its hash as a name component).
fn rust(name: &str) -> Option<String> {
    let legacy = name.starts_with("_ZN")
        && name.len() > 20
        && name.ends_with('E')
        && name[..name.len() - 1]
            .rsplit_once("17h")
            .is_some_and(|(_, h)| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if !(legacy || name.starts_with("_R")) {
        return None;
    }
    // `{:#}` leaves out the hash.
    rustc_demangle::try_demangle(name)
        .ok()
        .map(|d| format!("{d:#}"))
}

/// A demangled C++ name without its parameter list, qualifiers and (for
/// template instances) return type, for narrow columns:
/// `halo::Exchanger::send(int, double*) const` -> `halo::Exchanger::send`,
/// `double halo::sum<double>(double)` -> `halo::sum<double>`. Names without
/// a trailing parameter list are returned as they are.
pub fn without_parameters(name: &str) -> &str {
    let head = without_parameter_list(name);
    if head.len() == name.len() {
        return name;
    }
    // A return type is separated by the last space outside <...> and (...).
    let mut depth = 0i32;
    let mut cut = None;
    for (i, c) in head.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ' ' if depth == 0 && !head[..i].ends_with("operator") => cut = Some(i + 1),
            _ => {}
        }
    }
    match cut {
        Some(i) if i < head.len() => &head[i..],
        _ => head,
    }
}

fn without_parameter_list(name: &str) -> &str {
    let t = name.trim_end();
    let t = t
        .strip_suffix(" const")
        .or_else(|| t.strip_suffix(" volatile"))
        .unwrap_or(t)
        .trim_end_matches(['&', ' ']);
    if !t.ends_with(')') {
        return name;
    }
    // The '(' that opens the last, balanced parameter list.
    let mut depth = 0i32;
    for (i, c) in t.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let head = t[..i].trim_end();
                    // `(anonymous namespace)::f()` keeps its head.
                    return if head.is_empty() { name } else { head };
                }
            }
            _ => {}
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_names_are_demangled() {
        assert_eq!(
            demangle("_Z8CommSendR6DomainiiPMS_FRdiEiiibb"),
            "CommSend(Domain&, int, int, double& (Domain::**)(int), int, int, int, bool, bool)"
        );
        assert_eq!(
            demangle("_ZN4halo9Exchanger4sendEi"),
            "halo::Exchanger::send(int)"
        );
        assert_eq!(
            demangle("_ZNK4halo9Exchanger4sizeEv"),
            "halo::Exchanger::size() const"
        );
    }

    #[test]
    fn rust_names_are_demangled_without_their_hash() {
        assert_eq!(
            demangle("_ZN7mpiover4main17h0123456789abcdefE"),
            "mpiover::main"
        );
        assert_eq!(demangle("_RNvCs1234_7mycrate3foo"), "mycrate::foo");
    }

    #[test]
    fn other_names_are_left_alone() {
        for n in [
            "main",
            "send_block",
            "mpi_send_",
            "MAIN__",
            "_Z",
            "halo::f(int)",
            "",
        ] {
            assert_eq!(demangle(n), n);
        }
    }

    #[test]
    fn parameter_lists_are_dropped_for_narrow_columns() {
        assert_eq!(
            without_parameters("halo::Exchanger::send(int, double*) const"),
            "halo::Exchanger::send"
        );
        assert_eq!(
            without_parameters("CommSend(Domain&, int, double& (Domain::**)(int), bool)"),
            "CommSend"
        );
        assert_eq!(
            without_parameters("std::vector<int>::push_back(int&&)"),
            "std::vector<int>::push_back"
        );
        assert_eq!(without_parameters("main"), "main");
        assert_eq!(
            without_parameters("double halo::global_sum<double>(double, ompi_datatype_t*)"),
            "halo::global_sum<double>"
        );
        assert_eq!(
            without_parameters("std::map<int, long>::at(int const&)"),
            "std::map<int, long>::at"
        );
        assert_eq!(
            without_parameters("operator new(unsigned long)"),
            "operator new"
        );
        assert_eq!(
            without_parameters("(anonymous namespace)::f()"),
            "(anonymous namespace)::f"
        );
    }
}
