//! The generated text parsed (a generator bug fails here, with the text
//! kept), every unsafe body made an explicit unsafe block with its SAFETY
//! comment, and printed readably.

use std::env;
use std::path::PathBuf;

pub(crate) fn pretty(src: &str, what: &str) -> String {
    match syn::parse_file(src) {
        Ok(mut f) => with_safety_comments(&prettyplease::unparse(explicit_unsafe(&mut f))),
        Err(e) => {
            let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join(format!("{what}.broken.rs"));
            let _ = std::fs::write(&out, src);
            panic!(
                "generated {what} does not parse ({e}); see {}",
                out.display()
            );
        }
    }
}

/// Why the body of a generated wrapper may do what it does unsafely.
pub(crate) const GENERATED_SAFETY: &str =
    "// SAFETY: the caller is the MPI program: its arguments are what the \
MPI standard defines for this function and are passed on unchanged to the PMPI twin; \
the wrapper reads them only where the standard says they are valid (counts, \
datatypes, statuses after success), and its own state is this thread's.";

/// Every generated `unsafe fn`'s body in an explicit `unsafe {}` block, so
/// that the crate can deny `unsafe_op_in_unsafe_fn`.
pub(crate) fn explicit_unsafe(f: &mut syn::File) -> &syn::File {
    for item in &mut f.items {
        if let syn::Item::Fn(func) = item {
            if func.sig.unsafety.is_some() {
                let stmts = &func.block.stmts;
                *func.block = syn::parse_quote!({ unsafe { #(#stmts)* } });
            }
        }
    }
    f
}

/// The SAFETY comment before each such block (comments are not tokens, so
/// they are added to the printed text).
pub(crate) fn with_safety_comments(code: &str) -> String {
    let mut out = String::with_capacity(code.len() + code.len() / 8);
    let mut prev_is_unsafe_fn = false;
    for line in code.lines() {
        if prev_is_unsafe_fn && line == "    unsafe {" {
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(indent);
            out.push_str(GENERATED_SAFETY);
            out.push('\n');
        }
        // A signature's last line (prettyplease may break it): at column 0,
        // opening the body.
        prev_is_unsafe_fn = !line.starts_with(char::is_whitespace) && line.ends_with('{');
        out.push_str(line);
        out.push('\n');
    }
    out
}
