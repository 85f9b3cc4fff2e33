//! One side of a message as code: its bytes (count times datatype size, a
//! sum of counts, per-block datatypes) and the condition under which the
//! side exists (not in place, at the root or not), from the spec's roles.

use mpiover_common::functions::roles::{At, Count, Dtype, Len, Side};
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::gen_c::ident;
use crate::parse::Func;
use crate::validate::{param, Kind};
use crate::Gen;

/// Name of the Fortran wrapper's argument in the position of C parameter `c`.
pub(crate) fn fname(f: &Func, c: &str) -> Ident {
    let i = f
        .args
        .iter()
        .position(|(a, _)| a == c)
        .unwrap_or_else(|| panic!("no parameter {c}"));
    ident(&format!("__f{i}"))
}

/// The C parameter of role `k` named by the spec (see [`param`]), as an
/// identifier.
pub(crate) fn arg(g: &mut Gen, name: &str, f: &Func, names: &str, k: Kind) -> Ident {
    ident(&param(g, name, f, names, k))
}

fn len_expr(l: Len) -> TokenStream {
    match l {
        Len::P => quote! { __ci.rsize },
        Len::InDeg => quote! { __deg.0 },
        Len::OutDeg => quote! { __deg.1 },
    }
}

pub(crate) fn uses_deg(s: &Option<Side>) -> bool {
    matches!(
        s,
        Some(Side {
            count: Count::Blocks(_, Len::InDeg | Len::OutDeg)
                | Count::Sum(_, Len::InDeg | Len::OutDeg),
            ..
        })
    )
}

pub(crate) fn side_bytes(g: &mut Gen, name: &str, f: &Func, s: &Side) -> TokenStream {
    match (s.count, s.dtype) {
        (Count::One(c), Dtype::One(d)) => {
            let (c, d) = (
                arg(g, name, f, c, Kind::Count),
                arg(g, name, f, d, Kind::Dtype),
            );
            quote! { __g.bytes(crate::rt::cnt(#c), #d) }
        }
        (Count::Blocks(c, l), Dtype::One(d)) => {
            let (c, d) = (
                arg(g, name, f, c, Kind::Count),
                arg(g, name, f, d, Kind::Dtype),
            );
            let l = len_expr(l);
            quote! { __g.bytes(crate::rt::cnt(#c).saturating_mul(#l as u64), #d) }
        }
        (Count::Sum(a, l), Dtype::One(d)) => {
            let (a, d) = (
                arg(g, name, f, a, Kind::Counts),
                arg(g, name, f, d, Kind::Dtype),
            );
            let l = len_expr(l);
            quote! { __g.bytes(crate::rt::sum_counts(#a, #l), #d) }
        }
        (Count::Sum(a, l), Dtype::PerBlock(t)) => {
            let a = arg(g, name, f, a, Kind::Counts);
            let t = param(g, name, f, t, Kind::Dtypes);
            let l = len_expr(l);
            if g.fortran {
                // The Fortran datatype array, converted one by one.
                let ft = fname(f, &t);
                g.used.remove(&t);
                quote! { __g.wbytes_f(#a, #ft, #l) }
            } else {
                let t = ident(&t);
                quote! { __g.wbytes(#a, #t, #l) }
            }
        }
        (Count::Mine(a), Dtype::One(d)) => {
            let (a, d) = (
                arg(g, name, f, a, Kind::Counts),
                arg(g, name, f, d, Kind::Dtype),
            );
            quote! { __g.bytes(crate::rt::nth_count(#a, __ci.rank, __ci.size), #d) }
        }
        (c, d) => panic!("spec error: {name}: count {c:?} cannot go with datatype {d:?}"),
    }
}

pub(crate) fn side_cond(g: &mut Gen, name: &str, f: &Func, s: &Side, rooted: bool) -> TokenStream {
    let mut c = vec![quote! { true }];
    if !s.buf.is_empty() {
        let b = arg(g, name, f, s.buf, Kind::Buf);
        c.push(quote! { !crate::rt::in_place(#b as *const core::ffi::c_void) });
    }
    match (s.at, rooted) {
        (At::All, false) => {}
        // On an intercommunicator the root group only sends or only receives.
        (At::All, true) => c.push(quote! { (!__ci.inter || __role == crate::rt::Role::NonRoot) }),
        (_, false) => panic!("spec error: {name}: a side at root/non-root needs a root"),
        (At::Root, true) => c.push(quote! { __role == crate::rt::Role::Root }),
        (At::NonRoot, true) => c.push(quote! { __role == crate::rt::Role::NonRoot }),
    }
    if rooted {
        c.push(quote! { __active });
    }
    quote! { #(#c)&&* }
}
