//! The Fortran wrappers: a body per function and its five entry points.

use std::collections::BTreeMap;

use mpiover_common::functions::Function;
use proc_macro2::TokenStream;
use quote::quote;

use crate::fortran_abi::{fortran_from_c, FFunc};
use crate::gen_c::{ident, tokens};
use crate::gen_event::{event_parts, record, Parts};
use crate::parse::{norm, Func};
use crate::spec::{self, Hook};
use crate::Gen;

/// The Fortran wrapper body of one function, shared by its five entry
/// points (four mpif.h manglings and the f08 name), which pass the return
/// address and the library function to forward to.
pub(crate) fn gen_fortran_body(ff: &FFunc, c: Option<&Func>, event: Option<&Function>) -> String {
    let name = &ff.mixed;
    let (fargs, ftys, fcall) = fortran_args(ff);
    let (fargs, ftys, fcall) = (tokens(&fargs), tokens(&ftys), tokens(&fcall));
    let ret = ff.ret.as_ref().map(|r| {
        let r = tokens(r);
        quote! { -> #r }
    });
    let fb = ident(&format!("fb_{name}"));
    let signature = quote! {
        #[inline(never)]
        pub unsafe fn #fb(__ra: usize, __fwd: usize, #fargs) #ret
    };
    let forward = quote! {
        let __fp: unsafe extern "C" fn(#ftys) #ret = core::mem::transmute(__fwd);
    };
    // The number of leading pointer arguments: the C parameters plus ierr.
    let nptr = ff.ptr.iter().take_while(|p| **p).count();
    let ierr = if ff.ret.is_none() && nptr > 0 && ff.mixed != "MPI_Pcontrol" {
        tokens(&format!("crate::fort::ierr(__f{})", nptr - 1))
    } else {
        quote! { 0 }
    };
    let fid = ident(&format!("FID_{name}"));

    if let (Some(c), Some(e)) = (c, event) {
        // Positional: the C parameters, then ierr, then hidden lengths.
        if nptr == c.args.len() + 1 && ff.ret.is_none() {
            let mut g = Gen {
                fortran: true,
                ..Gen::default()
            };
            let parts = event_parts(&mut g, name, c, e);
            let used = g.used;
            let mut views = parts.views.clone();
            for (i, (a, t)) in c.args.iter().enumerate() {
                if !used.contains(a) || parts.special.contains(a) {
                    continue;
                }
                let (a, fa) = (ident(a), ident(&format!("__f{i}")));
                let t = norm(t);
                views.extend(if t.ends_with("c_void") {
                    quote! { let #a = crate::fort::buf(#fa as *const core::ffi::c_void); }
                } else if t == "::std::os::raw::c_int"
                    || t == "c_int"
                    || t.ends_with("::c_int") && !t.starts_with('*')
                {
                    quote! { let #a: core::ffi::c_int = crate::fort::int(#fa); }
                } else if t.ends_with("MPI_Count") && !t.starts_with('*') {
                    quote! { let #a: MPI_Count = crate::fort::int(#fa) as MPI_Count; }
                } else if t.starts_with('*') && t.ends_with("c_int") {
                    quote! { let #a = #fa as *mut core::ffi::c_int; }
                } else if t == "MPI_Datatype" {
                    quote! { let #a = crate::fort::datatype(#fa); }
                } else if t == "MPI_Comm" {
                    quote! { let #a = crate::fort::comm(#fa); }
                } else if t.starts_with("*mut") && t.ends_with("MPI_Request") {
                    let v = ident(&format!("__v_{a}"));
                    quote! { let mut #v = crate::fort::request(#fa); let #a: *mut MPI_Request = &mut #v; }
                } else {
                    panic!("Fortran {name}: no view for C parameter {a}: {t}");
                });
            }
            let record = record(&parts, &fid, &fid);
            let Parts { pre, after, .. } = parts;
            return quote! {
                #signature {
                    #forward
                    let Some(mut __g) = crate::rt::enter() else { return __fp(#fcall); };
                    #pre
                    let __t0 = __g.now();
                    __fp(#fcall);
                    let __t1 = __g.now();
                    let __r: core::ffi::c_int = #ierr;
                    #views
                    let __site = __g.site(__ra);
                    #record
                    #after
                }
            }
            .to_string();
        }
        println!(
            "cargo:warning=Fortran {name}: arguments do not line up with C's; counted, not an event"
        );
    }

    let mut before = String::new();
    let mut after_call = String::new();
    if let Some(h) = spec::hook(name) {
        let call = h.call();
        match h {
            Hook::CommFreed | Hook::TypeFreed => {
                after_call.push_str(&format!("crate::rt::{call}();"));
            }
            Hook::ForgetRequest | Hook::CancelRequest => {
                before.push_str(&format!("__g.{call}(crate::fort::req_bits(__f0));"));
            }
        }
    }
    let (before, after_call) = (tokens(&before), tokens(&after_call));
    quote! {
        #signature {
            #forward
            let Some(mut __g) = crate::rt::enter() else {
                let __r = __fp(#fcall);
                #after_call
                return __r;
            };
            #before
            let __t0 = __g.now();
            let __r = __fp(#fcall);
            let __t1 = __g.now();
            #after_call
            __g.plain(crate::names::#fid, __t1.wrapping_sub(__t0));
            __r
        }
    }
    .to_string()
}

/// The exported entry points of one Fortran function, forwarding to the
/// library's `pmpi_*` twin (found with `dlsym(RTLD_NEXT)` on first use).
/// (parameters, their types, the call's arguments) of a Fortran entry point:
/// the prototype's, plus one more word passed through untouched, in case the
/// library's entry point takes one more argument than the prototype says
/// (MPICH's `use mpi_f08` `MPI_Pcontrol` has an optional `ierror`). A word
/// the callee does not take is ignored by it (the caller cleans up).
pub(crate) fn fortran_args(ff: &FFunc) -> (String, String, String) {
    let n = ff.args.len();
    let mut fargs: Vec<String> = (0..n).map(|i| format!("__f{i}: {}", ff.args[i])).collect();
    fargs.push("__fx: usize".into());
    let mut tys = ff.args.clone();
    tys.push("usize".into());
    let mut fcall: Vec<String> = (0..n).map(|i| format!("__f{i}")).collect();
    fcall.push("__fx".into());
    (fargs.join(", "), tys.join(", "), fcall.join(", "))
}

pub(crate) fn gen_fortran_entries(ff: &FFunc, hand: bool, f77: bool) -> String {
    let name = &ff.mixed;
    let (fargs, _, fcall) = fortran_args(ff);
    let (fargs, fcall) = (tokens(&fargs), tokens(&fcall));
    let ret = ff.ret.as_ref().map(|r| {
        let r = tokens(r);
        quote! { -> #r }
    });
    let body = tokens(&if hand {
        format!("crate::fort::fb_{name}")
    } else {
        format!("fb_{name}")
    });
    let entry = |sym: &str, slot: &proc_macro2::Ident, target: &str| {
        let sym = ident(sym);
        let target = tokens(&format!("c\"{target}\""));
        quote! {
            #[no_mangle]
            pub unsafe extern "C" fn #sym(#fargs) #ret {
                let __ra: usize = crate::caller!();
                #body(__ra, crate::fort::fwd(&#slot, #target), #fcall)
            }
        }
    };
    let slot = |s: &proc_macro2::Ident| {
        quote! {
            static #s: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);
        }
    };
    let lower = &ff.lower;
    let mut out = TokenStream::new();
    if f77 {
        // The forwarding target is named by the canonical entry point
        // (`mpi_send_`); `fort::fwd` finds its profiling twin.
        let s77 = ident(&format!("FWD77_{name}"));
        let t77 = format!("{lower}_");
        out.extend(slot(&s77));
        for sym in [
            lower.clone(),
            format!("{lower}_"),
            format!("{lower}__"),
            ff.upper.clone(),
        ] {
            out.extend(entry(&sym, &s77, &t77));
        }
    }
    // `use mpi_f08` (Open MPI: mpi_send_f08_ in libmpi_usempif08). MPI_Wtime
    // and MPI_Wtick are C functions there.
    if !matches!(name.as_str(), "MPI_Wtime" | "MPI_Wtick") {
        let s08 = ident(&format!("FWD08_{name}"));
        let f08 = format!("{lower}_f08_");
        out.extend(slot(&s08));
        out.extend(entry(&f08, &s08, &f08));
    }
    out.to_string()
}

/// Generates `$OUT_DIR/fortran.rs`; returns the Fortran functions (C names)
/// that need a function id.
pub(crate) fn gen_fortran(
    funcs: &BTreeMap<String, Func>,
    events: &BTreeMap<&str, &Function>,
    flavor: &str,
) -> (String, Vec<String>, usize) {
    let mut code = String::from(
        "#[allow(unused_imports)]\nuse mpiover_mpisys::*;\n#[allow(unused_imports)]\nuse crate::rt::Handle as _;\n",
    );
    // Open MPI: every Fortran entry point calls PMPI_* directly, all need
    // wrappers. MPICH: mpif.h / `use mpi` and the `_f08ts_` entry points
    // (choice buffers) call the C MPI_* functions, which the C wrappers see
    // (the binding library's frames are skipped to find the .f90 line);
    // only the other `use mpi_f08` entry points (`mpi_wait_f08_`, ...) call
    // PMPI_* and need wrappers.
    let f77 = match flavor {
        "openmpi" => true,
        "mpich" => false,
        _ => return (code, Vec::new(), 0),
    };
    let mut names = Vec::new();
    let mut count = 0;
    for ff in fortran_from_c(funcs) {
        let hand = spec::fortran_hand_written(&ff.mixed);
        if !hand {
            let c = funcs.get(&ff.mixed);
            let e = events.get(ff.mixed.as_str()).copied();
            code.push_str(&gen_fortran_body(&ff, c, e));
        }
        code.push_str(&gen_fortran_entries(&ff, hand, f77));
        names.push(ff.mixed.clone());
        count += 1;
    }
    (code, names, count)
}
