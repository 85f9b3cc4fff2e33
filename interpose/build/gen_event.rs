//! The event code of a wrapper: bytes, peer, role, requests and statuses
//! from the spec's roles (shared by the C and the Fortran wrappers), as
//! `quote!` templates over the header's parameter names.

use std::collections::BTreeSet;

use mpiover_common::functions::roles::{Count, Peer, Requests, Roles};
use mpiover_common::functions::Function;
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::gen_c::ident;
use crate::gen_sides::{arg, fname, side_bytes, side_cond, uses_deg};
use crate::parse::Func;
use crate::validate::{param, Kind};
use crate::Gen;

/// The code of an event wrapper: before the call, after it (when it
/// succeeded), after recording (posts). In Fortran mode `views` holds the
/// conversions of the Fortran arguments the code reads into C values of the
/// C parameters' names, except the generic ones (`fortran_views` adds those).
pub(crate) struct Parts {
    pub(crate) pre: TokenStream,
    /// After a successful call: the key's fields (`__key`: p, peer, bytes,
    /// role), from the arguments.
    pub(crate) post: TokenStream,
    /// After `post`: the requests the call completes or starts, merged
    /// into the event (`__ev`).
    pub(crate) complete: TokenStream,
    pub(crate) after: TokenStream,
    pub(crate) views: TokenStream,
    /// C parameters with a special view above.
    pub(crate) special: BTreeSet<String>,
    /// The wrapper completes requests (whose posting keys its event then
    /// tells where they were completed).
    pub(crate) completes: bool,
}

pub(crate) fn event_parts(g: &mut Gen, name: &str, f: &Func, e: &Function) -> Parts {
    let r = &e.roles;
    let mut p = Parts {
        pre: TokenStream::new(),
        post: TokenStream::new(),
        complete: TokenStream::new(),
        after: TokenStream::new(),
        views: TokenStream::new(),
        special: BTreeSet::new(),
        completes: matches!(
            r.requests,
            Some(
                Requests::One { .. }
                    | Requests::Any { .. }
                    | Requests::All { .. }
                    | Requests::Some { .. }
            )
        ),
    };
    let status = r.status.map(|s| param(g, name, f, s, Kind::Status));
    if let Some(s) = &status {
        let si = ident(s);
        if g.fortran {
            let fs = fname(f, s);
            p.pre.extend(quote! {
                let mut __fst = crate::fort::FStatus::new(); let #fs = __fst.or(#fs);
            });
            p.views.extend(quote! {
                let mut __cst = crate::rt::StatusSlot::new(); let #si = __cst.from_fortran(#fs);
            });
            p.special.insert(s.clone());
        } else {
            p.pre.extend(match status_needed(g, name, f, r) {
                None => quote! {
                    let mut __st = crate::rt::StatusSlot::new(); let #si = __st.or(#si);
                },
                Some(need) => quote! {
                    let mut __st = crate::rt::StatusSlot::new();
                    let #si = if #need { __st.or(#si) } else { #si };
                },
            });
        }
    }
    p.post
        .extend(match r.flag.map(|s| arg(g, name, f, s, Kind::Flag)) {
            Some(fl) => quote! { let __ok = !#fl.is_null() && *#fl != 0; },
            None => quote! { let __ok = true; },
        });
    let comm = r.comm.map(|c| arg(g, name, f, c, Kind::Comm));
    // The bytes each side moved, kept apart until the key takes the larger.
    for (side, b) in [(&r.send, quote! { __sent }), (&r.recv, quote! { __recvd })] {
        if side.is_some() {
            p.post.extend(quote! { let mut #b: u64 = 0; });
        }
    }
    let status_ident = status.as_deref().map(ident);
    // The peer's rank in the communicator (`__rk`), translated to a world
    // rank by the communicator's look-up itself.
    let rank = peer_rank(g, name, f, r, comm.is_some(), status_ident.as_ref());
    if let Some(c) = &comm {
        match &rank {
            Some(rk) => p.post.extend(quote! {
                let __rk = #rk;
                let (__ci, __wr) = __g.comm_peer(#c, __rk);
                __key.p = __ci.size;
            }),
            None => p
                .post
                .extend(quote! { let __ci = __g.comm(#c); __key.p = __ci.size; }),
        }
        if uses_deg(&r.send) || uses_deg(&r.recv) {
            p.post
                .extend(quote! { let __deg = __g.degrees(#c, &__ci); });
        }
    } else if r.send.is_some() || r.recv.is_some() {
        // Mrecv / Imrecv: no communicator; a count-only side needs none.
        for s in [&r.send, &r.recv].into_iter().flatten() {
            if !matches!(s.count, Count::One(_)) {
                panic!("spec error: {name}: per-rank counts need a communicator");
            }
        }
    }
    let rooted = r.root.is_some();
    if let Some(root) = r.root {
        let root = arg(g, name, f, root, Kind::Rank);
        p.post.extend(quote! {
            let __role = __g.role(&__ci, #root); __key.role = __role;
            let __active = !(__ci.inter && #root == mpiover_mpisys::consts::proc_null());
        });
    }
    sides(g, name, f, r, rooted, status_ident.as_ref(), &mut p.post);
    // A posting call to or from MPI_PROC_NULL: said to the post in a local
    // of its own (other wrappers have no use for it).
    let posts = r.request.is_some();
    if posts {
        p.pre.extend(quote! { let mut __pn = false; });
    }
    if rank.is_some() {
        // A call to or from MPI_PROC_NULL moves nothing that way. A receive
        // whose bytes come from the status needs no test: the standard has
        // a receive from MPI_PROC_NULL return a count of 0 in its status.
        let zero = match r.peer {
            Peer::Dest(_) if r.send.is_some() => quote! { __sent = 0; },
            Peer::Source(_) if r.recv.is_some() && !r.recv_from_status => {
                quote! { __recvd = 0; }
            }
            _ => quote! {},
        };
        let pn = if posts {
            quote! { __pn = true; }
        } else {
            quote! {}
        };
        p.post.extend(quote! { __key.peer = __wr; });
        if !zero.is_empty() || !pn.is_empty() {
            p.post.extend(quote! {
                if __rk == mpiover_mpisys::consts::proc_null() { #zero #pn }
            });
        }
    }
    p.post.extend(match (r.send.is_some(), r.recv.is_some()) {
        (true, true) => quote! { __key.bytes = __sent.max(__recvd); },
        (true, false) => quote! { __key.bytes = __sent; },
        (false, true) => quote! { __key.bytes = __recvd; },
        (false, false) => quote! {},
    });
    if let Some(rq) = r.requests {
        requests(g, name, f, rq, status.as_deref(), &mut p);
    }
    if let Some(rq) = r.request {
        let q = arg(g, name, f, rq, Kind::Request);
        let cb = match &comm {
            Some(c) => quote! { #c.bits() },
            None => quote! { 0 },
        };
        // A point-to-point receive or send, or a non-blocking collective:
        // the completion's tmax is composed differently for each.
        let kind = ident(if e.posts_collective() {
            "Collective"
        } else if r.recv.is_some() && r.send.is_none() {
            "Recv"
        } else {
            "Send"
        });
        let persistent = e.persistent_of.is_some();
        // The event's function as a constant (the event's own copy is in
        // memory by then).
        let fid = ident(&format!("FID_{}", e.name));
        p.after.extend(quote! {
            if __r == 0 && !#q.is_null() {
                __g.post(
                    &__ev, crate::names::#fid, __pn, #cb, (*#q).bits(), #persistent,
                    crate::rt::Posted::#kind, __site,
                );
            }
        });
    }
    p
}

/// The wrapper's lines from the call's return to the event's record (C and
/// Fortran alike). `fid` is the event's function, `call_fid` the called
/// one's. The key's fields the arguments give are written through `__key`:
/// in a wrapper that neither posts nor completes requests, locals from
/// which the event is then built at once, so that each word of its key is
/// stored once rather than set to its default first (2-3 instructions per
/// call); in the others the event's own key, which the requests' code then
/// reads and merges into (built the same way, the posting wrappers measured
/// 7 instructions more per call, from the values kept across the record).
pub(crate) fn record(p: &Parts, fid: &Ident, call_fid: &Ident) -> TokenStream {
    let (post, complete, completes) = (&p.post, &p.complete, p.completes);
    if complete.is_empty() && p.after.is_empty() {
        return quote! {
            #[allow(unused_mut)]
            let mut __key = crate::rt::KeyFields::NONE;
            if __r == 0 {
                #post
            }
            let __ev = crate::rt::Ev::with(crate::names::#fid, __site, __key);
            __g.event::<#completes>(&__ev, crate::names::#call_fid, __t0, __t1);
        };
    }
    quote! {
        #[allow(unused_mut)]
        let mut __ev = crate::rt::Ev::new(crate::names::#fid, __site);
        if __r == 0 {
            #[allow(unused_variables)]
            let __key = &mut __ev.key;
            #post
            #complete
        }
        __g.event::<#completes>(&__ev, crate::names::#call_fid, __t0, __t1);
    }
}

/// After the call: the bytes sent and received.
fn sides(
    g: &mut Gen,
    name: &str,
    f: &Func,
    r: &Roles,
    rooted: bool,
    status: Option<&Ident>,
    post: &mut TokenStream,
) {
    if let (Some(s), Some(v), false) = (&r.send, &r.recv, r.recv_from_status) {
        let (sc, sb) = (side_cond(g, name, f, s, rooted), side_bytes(g, name, f, s));
        let (vc, vb) = (side_cond(g, name, f, v, rooted), side_bytes(g, name, f, v));
        if sb.to_string() == vb.to_string() {
            // Both sides of the same count and datatype (`MPI_Allreduce`):
            // their bytes found once, when either side counts (as often as
            // the datatype would be looked up side by side: never for
            // neither).
            post.extend(quote! {
                let __sc = #sc;
                let __vc = #vc;
                if __sc || __vc {
                    let __b = #sb;
                    if __sc { __sent = __b; }
                    if __vc { __recvd = __b; }
                }
            });
            return;
        }
    }
    if let Some(s) = &r.send {
        let (cond, b) = (side_cond(g, name, f, s, rooted), side_bytes(g, name, f, s));
        post.extend(quote! { if #cond { __sent = #b; } });
    }
    if let Some(s) = &r.recv {
        let (cond, b) = (side_cond(g, name, f, s, rooted), side_bytes(g, name, f, s));
        if r.recv_from_status {
            let st = status
                .unwrap_or_else(|| panic!("spec error: {name}: recv_from_status needs a status"));
            post.extend(quote! {
                if #cond {
                    __recvd = match crate::rt::status_bytes(#st) { Some(b) => b, None => #b };
                }
            });
        } else {
            post.extend(quote! { if #cond { __recvd = #b; } });
        }
    }
}

/// When a C wrapper reads the call's status (`None`: always, the caller's
/// or, for `MPI_STATUS_IGNORE`, one of its own): a completion and a call
/// that takes the bytes received from it always; a probe only for the
/// source of an `MPI_ANY_SOURCE` one, so that a probe of a given source
/// (the usual poll) sets up no status of its own (5 instructions).
///
/// `MPI_Sendrecv` keeps its status although, when it sends at least as many
/// of the same datatype as it may receive, the key (the larger side's
/// bytes) does not need the bytes received: deciding that before the call
/// measured 7 instructions more per call than the status costs, from the
/// arguments the test keeps across the call.
fn status_needed(g: &mut Gen, name: &str, f: &Func, r: &Roles) -> Option<TokenStream> {
    if r.requests.is_some() || r.recv_from_status {
        return None;
    }
    match r.peer {
        Peer::Source(s) => {
            let s = arg(g, name, f, s, Kind::Rank);
            Some(quote! { #s == mpiover_mpisys::consts::any_source() })
        }
        _ => None,
    }
}

/// After the call: the peer's rank in the communicator (an `MPI_ANY_SOURCE`
/// receive's from its status), when the function has one.
fn peer_rank(
    g: &mut Gen,
    name: &str,
    f: &Func,
    r: &Roles,
    has_comm: bool,
    status: Option<&Ident>,
) -> Option<TokenStream> {
    match r.peer {
        Peer::None => None,
        Peer::Dest(d) => {
            let d = arg(g, name, f, d, Kind::Rank);
            if !has_comm {
                panic!("spec error: {name}: a peer needs a communicator");
            }
            Some(quote! { #d })
        }
        Peer::Source(s) => {
            let s = arg(g, name, f, s, Kind::Rank);
            if !has_comm {
                panic!("spec error: {name}: a peer needs a communicator");
            }
            Some(match status {
                Some(st) => quote! {
                    if #s == mpiover_mpisys::consts::any_source() {
                        if __ok { crate::rt::status_source(#st) } else { #s }
                    } else { #s }
                },
                None => quote! { #s },
            })
        }
    }
}

/// The requests a completion or start touches: snapshot before the call,
/// completion or start of each after it.
fn requests(g: &mut Gen, name: &str, f: &Func, rq: Requests, status: Option<&str>, p: &mut Parts) {
    let st = match status {
        Some(s) => {
            let s = ident(s);
            quote! { #s }
        }
        None => quote! { core::ptr::null_mut() },
    };
    let undefined = quote! { mpiover_mpisys::consts::undefined() };
    match rq {
        Requests::One { request } => {
            let q = param(g, name, f, request, Kind::Request);
            snapshot_one(g, &mut p.pre, f, &q);
            p.complete
                .extend(quote! { if __ok { __g.complete(&mut __ev, __q, #st, __site); } });
        }
        Requests::Any {
            count,
            requests,
            index,
        } => {
            let (c, q) = (
                param(g, name, f, count, Kind::Count),
                param(g, name, f, requests, Kind::Request),
            );
            let i = param(g, name, f, index, Kind::Flag);
            snapshot_many(g, &mut p.pre, f, &c, &q);
            let ii = ident(&i);
            if g.fortran {
                // Fortran indices count from 1 (checked against which
                // request became MPI_REQUEST_NULL).
                let (fi, fq) = (fname(f, &i), fname(f, &q));
                p.views.extend(quote! {
                    let mut __fix = __g.findex(#fi, #fq); let #ii: *mut core::ffi::c_int = &mut __fix;
                });
                p.special.insert(i.clone());
            }
            p.complete.extend(quote! {
                if __ok && !#ii.is_null() && *#ii != #undefined {
                    let __q = __g.snapped(*#ii); __g.complete(&mut __ev, __q, #st, __site);
                }
            });
        }
        Requests::All {
            count,
            requests,
            statuses,
        } => {
            let (c, q) = (
                param(g, name, f, count, Kind::Count),
                param(g, name, f, requests, Kind::Request),
            );
            let s = param(g, name, f, statuses, Kind::Status);
            snapshot_many(g, &mut p.pre, f, &c, &q);
            statuses_views(g, p, f, &c, &s);
            let (c, s) = (ident(&c), ident(&s));
            p.complete.extend(quote! {
                if __ok {
                    for __k in 0..#c.max(0) {
                        let __q = __g.snapped(__k);
                        __g.complete(&mut __ev, __q, #s.add(__k as usize), __site);
                    }
                }
            });
        }
        Requests::Some {
            count,
            requests,
            outcount,
            indices,
            statuses,
        } => {
            let (c, q) = (
                param(g, name, f, count, Kind::Count),
                param(g, name, f, requests, Kind::Request),
            );
            let (o, ix) = (
                param(g, name, f, outcount, Kind::Flag),
                param(g, name, f, indices, Kind::Flag),
            );
            let s = param(g, name, f, statuses, Kind::Status);
            snapshot_many(g, &mut p.pre, f, &c, &q);
            statuses_views(g, p, f, &c, &s);
            let ixi = ident(&ix);
            if g.fortran {
                // Fortran indices count from 1.
                let (fix, fo, fq) = (fname(f, &ix), fname(f, &o), fname(f, &q));
                p.views.extend(quote! {
                    let #ixi = __g.findices(#fix, crate::fort::int(#fo), #fq);
                });
                p.special.insert(ix.clone());
            }
            let (o, s) = (ident(&o), ident(&s));
            p.complete.extend(quote! {
                let __n = if #o.is_null() { 0 } else { *#o };
                if __n != #undefined && !#ixi.is_null() {
                    for __k in 0..__n.max(0) {
                        let __q = __g.snapped(*#ixi.add(__k as usize));
                        __g.complete(&mut __ev, __q, #s.add(__k as usize), __site);
                    }
                }
            });
        }
        Requests::Start { request } => {
            let q = param(g, name, f, request, Kind::Request);
            snapshot_one(g, &mut p.pre, f, &q);
            p.complete
                .extend(quote! { __g.start(&mut __ev, __q, __site); });
        }
        Requests::StartAll { count, requests } => {
            let (c, q) = (
                param(g, name, f, count, Kind::Count),
                param(g, name, f, requests, Kind::Request),
            );
            snapshot_many(g, &mut p.pre, f, &c, &q);
            let c = ident(&c);
            p.complete.extend(quote! {
                for __k in 0..#c.max(0) { let __q = __g.snapped(__k); __g.start(&mut __ev, __q, __site); }
            });
        }
    }
}

/// Before the call: the request a completion or start touches, as C bits.
pub(crate) fn snapshot_one(g: &mut Gen, pre: &mut TokenStream, f: &Func, q: &str) {
    if g.fortran {
        let fq = fname(f, q);
        pre.extend(quote! { let __q = crate::fort::req_bits(#fq); });
        g.used.remove(q);
    } else {
        let q = ident(q);
        pre.extend(quote! { let __q = if #q.is_null() { 0 } else { (*#q).bits() }; });
    }
}

/// Before the call: the `c` requests of the array `q`, as C bits.
pub(crate) fn snapshot_many(g: &mut Gen, pre: &mut TokenStream, f: &Func, c: &str, q: &str) {
    if g.fortran {
        let (fc, fq) = (fname(f, c), fname(f, q));
        pre.extend(quote! { __g.snap_f(crate::fort::int(#fc), #fq); });
        g.used.remove(q);
    } else {
        let (c, q) = (ident(c), ident(q));
        pre.extend(quote! { __g.snap(#c, #q); });
    }
}

/// The statuses of `c` requests: the caller's or the tool's own (for
/// `MPI_STATUSES_IGNORE`); in Fortran converted to C statuses after the call.
pub(crate) fn statuses_views(g: &mut Gen, p: &mut Parts, f: &Func, c: &str, s: &str) {
    if g.fortran {
        let (fc, fs, si) = (fname(f, c), fname(f, s), ident(s));
        p.pre
            .extend(quote! { let #fs = __g.fstatuses(crate::fort::int(#fc), #fs); });
        p.views
            .extend(quote! { let #si = __g.fstatuses_c(crate::fort::int(#fc), #fs); });
        p.special.insert(s.to_string());
    } else {
        let (c, s) = (ident(c), ident(s));
        p.pre.extend(quote! { let #s = __g.statuses(#c, #s); });
    }
}
