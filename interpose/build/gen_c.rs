//! The C entry points: an event wrapper or a plain (counted) one per
//! function.

use std::collections::BTreeMap;

use mpiover_common::functions::Function;
use proc_macro2::TokenStream;
use quote::quote;

use crate::gen_event::{event_parts, record, Parts};
use crate::parse::Func;
use crate::spec::{self, Hook};
use crate::Gen;

/// `name` is the wrapped function; `e` its event spec, which for an MPI-4
/// large-count variant (`MPI_Send_c`) is its base function's (`MPI_Send`):
/// the event is then recorded as the base function and only the call count
/// goes to `name`.
pub(crate) fn gen_event(name: &str, f: &Func, e: &Function) -> String {
    let parts = event_parts(&mut Gen::default(), name, f, e);
    let Signature { args, ret, call } = signature(f);
    let (func, pfunc) = (ident(name), ident(&format!("P{name}")));
    let base_fid = ident(&format!("FID_{}", e.name));
    // A large-count variant counts its calls apart from its event.
    let call_fid = ident(&format!("FID_{name}"));
    let record = record(&parts, &base_fid, &call_fid);
    let Parts { pre, after, .. } = parts;
    quote! {
        #[no_mangle]
        pub unsafe extern "C" fn #func(#(#args),*) #ret {
            let Some(mut __g) = crate::rt::enter() else { return #pfunc(#(#call),*); };
            #pre
            let __t0 = __g.now();
            let __r = #pfunc(#(#call),*);
            let __t1 = __g.now();
            let __ra: usize = crate::caller!();
            // Found once: the event, the post and the completions name it.
            let __site = __g.site(__ra);
            #record
            #after
            __r
        }
    }
    .to_string()
}

/// The event spec of an MPI-4 large-count variant (`MPI_Recv_c`, MPICH 4):
/// its base function's, when the header has both. The parameter names are
/// the same; counts are `MPI_Count` and displacements `MPI_Aint`, which the
/// roles accept.
pub(crate) fn large_count_base<'a>(
    name: &str,
    events: &BTreeMap<&str, &'a Function>,
) -> Option<&'a Function> {
    events.get(name.strip_suffix("_c")?).copied()
}

pub(crate) fn gen_plain(name: &str, f: &Func) -> String {
    let mut before = TokenStream::new();
    let mut after_call = TokenStream::new();
    if let Some(h) = spec::hook(name) {
        let call = ident(h.call());
        match h {
            Hook::CommFreed | Hook::TypeFreed => {
                after_call.extend(quote! { crate::rt::#call(); });
            }
            Hook::ForgetRequest | Hook::CancelRequest => {
                let q = f
                    .args
                    .first()
                    .unwrap_or_else(|| panic!("{name} has no argument"));
                let q = ident(&q.0);
                before.extend(quote! { if !#q.is_null() { __g.#call((*#q).bits()); } });
            }
        }
    }
    let Signature { args, ret, call } = signature(f);
    let (func, pfunc) = (ident(name), ident(&format!("P{name}")));
    let fid = ident(&format!("FID_{name}"));
    quote! {
        #[no_mangle]
        pub unsafe extern "C" fn #func(#(#args),*) #ret {
            let Some(mut __g) = crate::rt::enter() else {
                let __r = #pfunc(#(#call),*);
                #after_call
                return __r;
            };
            #before
            let __t0 = __g.now();
            let __r = #pfunc(#(#call),*);
            let __t1 = __g.now();
            #after_call
            __g.plain(crate::names::#fid, __t1.wrapping_sub(__t0));
            __r
        }
    }
    .to_string()
}

/// A C function's parameters, return type and the call forwarding them.
struct Signature {
    args: Vec<TokenStream>,
    ret: Option<TokenStream>,
    call: Vec<TokenStream>,
}

fn signature(f: &Func) -> Signature {
    Signature {
        args: f
            .args
            .iter()
            .map(|(a, t)| tokens(&format!("{a}: {t}")))
            .collect(),
        ret: f.ret.as_ref().map(|r| {
            let r = tokens(r);
            quote! { -> #r }
        }),
        call: f.args.iter().map(|(a, _)| tokens(a)).collect(),
    }
}

/// Rust text of the event code (built from the spec's roles) as tokens.
pub(crate) fn tokens(code: &str) -> TokenStream {
    code.parse()
        .unwrap_or_else(|e| panic!("generator: not Rust tokens ({e}): {code}"))
}

/// An identifier (a function, parameter or id name from the header).
pub(crate) fn ident(name: &str) -> proc_macro2::Ident {
    proc_macro2::Ident::new(name, proc_macro2::Span::call_site())
}

// ---------------------------------------------------------------------------
// Fortran (Open MPI: mpif.h / `use mpi` and `use mpi_f08`)
// ---------------------------------------------------------------------------
