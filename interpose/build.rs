//! Generates libmpiover's wrappers from the installed `mpi.h`.
//!
//! 1. Parses the bindgen output of `mpiover-mpisys` (`DEP_MPI_BINDINGS`) with
//!    syn and collects every `MPI_X` that has a `PMPI_X` twin with the same
//!    signature (variadic ones excepted: `MPI_Pcontrol` lives in
//!    `src/pcontrol.c`).
//! 2. Checks the typed event spec (`spec.rs`) against those signatures: every
//!    role must name a parameter of the right kind of type, and the spec must
//!    cover exactly the event catalogue of `mpiover_common::functions::CATALOGUE`.
//!    Any mismatch fails the build.
//! 3. Writes `$OUT_DIR/names.rs` (function ids and names) and
//!    `$OUT_DIR/wrappers.rs` (one `#[no_mangle] extern "C"` wrapper per
//!    function, pretty-printed so it can be read).

#[path = "spec.rs"]
#[allow(dead_code)]
mod spec;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

use quote::ToTokens;
use spec::{At, Count, Dtype, Event, Len, Peer, Requests, Side};

thread_local! {
    /// Generating a Fortran wrapper (the few places where the code differs
    /// from the C one read this).
    static FORTRAN: Cell<bool> = const { Cell::new(false) };
    /// C parameters the event code of the function being generated uses.
    static USED: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
}

fn fortran() -> bool {
    FORTRAN.with(|f| f.get())
}

/// Name of the Fortran wrapper's argument in the position of C parameter `c`.
fn fname(f: &Func, c: &str) -> String {
    let i = f
        .args
        .iter()
        .position(|(a, _)| a == c)
        .unwrap_or_else(|| panic!("no parameter {c}"));
    format!("__f{i}")
}

struct Func {
    args: Vec<(String, String)>,
    ret: Option<String>,
    variadic: bool,
}

fn ty(t: &syn::Type) -> String {
    t.to_token_stream().to_string()
}

fn norm(t: &str) -> String {
    t.chars().filter(|c| !c.is_whitespace()).collect()
}

fn parse(path: &str) -> BTreeMap<String, Func> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("cannot parse {path}: {e}"));
    let mut out = BTreeMap::new();
    for item in file.items {
        let syn::Item::ForeignMod(m) = item else {
            continue;
        };
        for fi in m.items {
            let syn::ForeignItem::Fn(f) = fi else {
                continue;
            };
            let mut args = Vec::new();
            for a in &f.sig.inputs {
                if let syn::FnArg::Typed(pt) = a {
                    let name = pt.pat.to_token_stream().to_string();
                    args.push((name, ty(&pt.ty)));
                }
            }
            let ret = match &f.sig.output {
                syn::ReturnType::Default => None,
                syn::ReturnType::Type(_, t) => Some(ty(t)),
            };
            out.insert(
                f.sig.ident.to_string(),
                Func {
                    args,
                    ret,
                    variadic: f.sig.variadic.is_some(),
                },
            );
        }
    }
    out
}

/// Kinds of parameter a role may name.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Buf,
    Count,
    Counts,
    Dtype,
    Dtypes,
    Rank,
    Comm,
    Status,
    Flag,
    Request,
}

fn kind_ok(k: Kind, t: &str) -> bool {
    let t = norm(t);
    let ptr = t.starts_with('*');
    match k {
        Kind::Buf => ptr && t.ends_with("c_void"),
        Kind::Count => !ptr && (t.ends_with("c_int") || t.ends_with("MPI_Count")),
        Kind::Counts => ptr && (t.ends_with("c_int") || t.ends_with("MPI_Count")),
        Kind::Dtype => t == "MPI_Datatype",
        Kind::Dtypes => ptr && t.ends_with("MPI_Datatype"),
        Kind::Rank => t.ends_with("c_int") && !ptr,
        Kind::Comm => t == "MPI_Comm",
        Kind::Status => t.starts_with("*mut") && t.ends_with("MPI_Status"),
        Kind::Flag => t.starts_with("*mut") && t.ends_with("c_int"),
        Kind::Request => t.starts_with("*mut") && t.ends_with("MPI_Request"),
    }
}

/// Resolves a role's parameter name (alternatives separated by `|`) against
/// the signature; fails the build when it is missing or of the wrong kind.
fn param(fname: &str, f: &Func, names: &str, k: Kind) -> String {
    for n in names.split('|') {
        if let Some((a, t)) = f.args.iter().find(|(a, _)| a == n) {
            if !kind_ok(k, t) {
                panic!("spec error: {fname}: parameter `{a}` has type `{t}`, not a {k:?}");
            }
            USED.with(|u| u.borrow_mut().insert(a.clone()));
            return a.clone();
        }
    }
    let have: Vec<&str> = f.args.iter().map(|(a, _)| a.as_str()).collect();
    panic!("spec error: {fname}: no parameter `{names}` (role {k:?}); the header's signature has {have:?}");
}

fn len_expr(l: Len) -> &'static str {
    match l {
        Len::P => "__ci.rsize",
        Len::InDeg => "__deg.0",
        Len::OutDeg => "__deg.1",
    }
}

fn uses_deg(s: &Option<Side>) -> bool {
    matches!(
        s,
        Some(Side {
            count: Count::Blocks(_, Len::InDeg | Len::OutDeg)
                | Count::Sum(_, Len::InDeg | Len::OutDeg),
            ..
        })
    )
}

fn side_bytes(name: &str, f: &Func, s: &Side) -> String {
    match (s.count, s.dtype) {
        (Count::One(c), Dtype::One(d)) => {
            let (c, d) = (
                param(name, f, c, Kind::Count),
                param(name, f, d, Kind::Dtype),
            );
            format!("__g.bytes(crate::rt::cnt({c}), {d})")
        }
        (Count::Blocks(c, l), Dtype::One(d)) => {
            let (c, d) = (
                param(name, f, c, Kind::Count),
                param(name, f, d, Kind::Dtype),
            );
            format!(
                "__g.bytes(crate::rt::cnt({c}).saturating_mul({} as u64), {d})",
                len_expr(l)
            )
        }
        (Count::Sum(a, l), Dtype::One(d)) => {
            let (a, d) = (
                param(name, f, a, Kind::Counts),
                param(name, f, d, Kind::Dtype),
            );
            format!(
                "__g.bytes(crate::rt::sum_counts({a}, {}), {d})",
                len_expr(l)
            )
        }
        (Count::Sum(a, l), Dtype::PerBlock(t)) => {
            let (a, t) = (
                param(name, f, a, Kind::Counts),
                param(name, f, t, Kind::Dtypes),
            );
            if fortran() {
                // The Fortran datatype array, converted one by one.
                let ft = fname(f, &t);
                USED.with(|u| u.borrow_mut().remove(&t));
                format!("__g.wbytes_f({a}, {ft}, {})", len_expr(l))
            } else {
                format!("__g.wbytes({a}, {t}, {})", len_expr(l))
            }
        }
        (Count::Mine(a), Dtype::One(d)) => {
            let (a, d) = (
                param(name, f, a, Kind::Counts),
                param(name, f, d, Kind::Dtype),
            );
            format!("__g.bytes(crate::rt::nth_count({a}, __ci.rank, __ci.size), {d})")
        }
        (c, d) => panic!("spec error: {name}: count {c:?} cannot go with datatype {d:?}"),
    }
}

fn side_cond(name: &str, f: &Func, s: &Side, rooted: bool) -> String {
    let mut c = vec!["true".to_string()];
    if !s.buf.is_empty() {
        let b = param(name, f, s.buf, Kind::Buf);
        c.push(format!(
            "!crate::rt::in_place({b} as *const core::ffi::c_void)"
        ));
    }
    match (s.at, rooted) {
        (At::All, false) => {}
        // On an intercommunicator the root group only sends or only receives.
        (At::All, true) => c.push("(!__ci.inter || __role == crate::rt::Role::NonRoot)".into()),
        (_, false) => panic!("spec error: {name}: a side at root/non-root needs a root"),
        (At::Root, true) => c.push("__role == crate::rt::Role::Root".into()),
        (At::NonRoot, true) => c.push("__role == crate::rt::Role::NonRoot".into()),
    }
    if rooted {
        c.push("__active".into());
    }
    c.join(" && ")
}

/// The code of an event wrapper: before the call, after it (when it
/// succeeded), after recording (posts). In Fortran mode `views` holds the
/// conversions of the Fortran arguments the code reads into C values of the
/// C parameters' names, except the generic ones (`fortran_views` adds those).
struct Parts {
    pre: String,
    post: String,
    after: String,
    views: String,
    /// C parameters with a special view above.
    special: BTreeSet<String>,
}

fn event_parts(name: &str, f: &Func, e: &Event) -> Parts {
    let ft = fortran();
    let mut pre = String::new();
    let mut post = String::new();
    let mut after = String::new();
    let mut views = String::new();
    let mut special = BTreeSet::new();

    let status = e.status.map(|s| param(name, f, s, Kind::Status));
    if let Some(s) = &status {
        if ft {
            let fs = fname(f, s);
            writeln!(
                pre,
                "let mut __fst = crate::fort::FStatus::new(); let {fs} = __fst.or({fs});"
            )
            .unwrap();
            writeln!(
                views,
                "let mut __cst = crate::rt::StatusSlot::new(); let {s} = __cst.from_fortran({fs});"
            )
            .unwrap();
            special.insert(s.clone());
        } else {
            writeln!(
                pre,
                "let mut __st = crate::rt::StatusSlot::new(); let {s} = __st.or({s});"
            )
            .unwrap();
        }
    }
    let flag = e.flag.map(|s| param(name, f, s, Kind::Flag));
    match &flag {
        Some(fl) => writeln!(post, "let __ok = !{fl}.is_null() && *{fl} != 0;").unwrap(),
        None => writeln!(post, "let __ok = true;").unwrap(),
    }
    let comm = e.comm.map(|c| param(name, f, c, Kind::Comm));
    if let Some(c) = &comm {
        writeln!(post, "let __ci = __g.comm({c}); __ev.p = __ci.size;").unwrap();
        if uses_deg(&e.send) || uses_deg(&e.recv) {
            writeln!(post, "let __deg = __g.degrees({c}, &__ci);").unwrap();
        }
    } else if e.send.is_some() || e.recv.is_some() {
        // Mrecv / Imrecv: no communicator; a count-only side needs none.
        for s in [&e.send, &e.recv].into_iter().flatten() {
            if !matches!(s.count, Count::One(_)) {
                panic!("spec error: {name}: per-rank counts need a communicator");
            }
        }
    }
    let rooted = e.root.is_some();
    if let Some(r) = e.root {
        let r = param(name, f, r, Kind::Rank);
        writeln!(
            post,
            "let __role = __g.role(&__ci, {r}); __ev.role = __role; \
             let __active = !(__ci.inter && {r} == mpiover_mpisys::consts::proc_null());"
        )
        .unwrap();
    }
    if let Some(s) = &e.send {
        let cond = side_cond(name, f, s, rooted);
        let b = side_bytes(name, f, s);
        writeln!(post, "if {cond} {{ __ev.sent = {b}; }}").unwrap();
    }
    if let Some(s) = &e.recv {
        let cond = side_cond(name, f, s, rooted);
        let b = side_bytes(name, f, s);
        if e.recv_from_status {
            let st = status
                .as_ref()
                .unwrap_or_else(|| panic!("spec error: {name}: recv_from_status needs a status"));
            writeln!(
                post,
                "if {cond} {{ __ev.recvd = match crate::rt::status_bytes({st}) {{ Some(b) => b, None => {b} }}; }}"
            )
            .unwrap();
        } else {
            writeln!(post, "if {cond} {{ __ev.recvd = {b}; }}").unwrap();
        }
    }
    match e.peer {
        Peer::None => {}
        Peer::Dest(d) => {
            let d = param(name, f, d, Kind::Rank);
            let c = comm
                .as_ref()
                .unwrap_or_else(|| panic!("spec error: {name}: a peer needs a communicator"));
            let _ = c;
            writeln!(
                post,
                "__ev.peer = __g.world_rank(&__ci, {d}); \
                 if {d} == mpiover_mpisys::consts::proc_null() {{ __ev.sent = 0; __ev.proc_null = true; }}"
            )
            .unwrap();
        }
        Peer::Source(s) => {
            let s = param(name, f, s, Kind::Rank);
            if comm.is_none() {
                panic!("spec error: {name}: a peer needs a communicator");
            }
            let src = match &status {
                Some(st) => format!(
                    "if {s} == mpiover_mpisys::consts::any_source() {{ \
                       if __ok {{ crate::rt::status_source({st}) }} else {{ {s} }} }} else {{ {s} }}"
                ),
                None => s.clone(),
            };
            writeln!(
                post,
                "let __src = {src}; __ev.peer = __g.world_rank(&__ci, __src); \
                 if __src == mpiover_mpisys::consts::proc_null() {{ __ev.recvd = 0; __ev.proc_null = true; }}"
            )
            .unwrap();
        }
    }
    if let Some(rq) = e.requests {
        let st = status
            .clone()
            .unwrap_or_else(|| "core::ptr::null_mut()".into());
        match rq {
            Requests::One { request } => {
                let q = param(name, f, request, Kind::Request);
                snapshot_one(&mut pre, f, &q);
                writeln!(post, "if __ok {{ __g.complete(&mut __ev, __q, {st}); }}").unwrap();
            }
            Requests::Any {
                count,
                requests,
                index,
            } => {
                let (c, q) = (
                    param(name, f, count, Kind::Count),
                    param(name, f, requests, Kind::Request),
                );
                let i = param(name, f, index, Kind::Flag);
                snapshot_many(&mut pre, f, &c, &q);
                if ft {
                    // Fortran indices count from 1 (checked against which
                    // request became MPI_REQUEST_NULL).
                    writeln!(
                        views,
                        "let mut __fix = __g.findex({}, {}); let {i}: *mut core::ffi::c_int = &mut __fix;",
                        fname(f, &i),
                        fname(f, &q)
                    )
                    .unwrap();
                    special.insert(i.clone());
                }
                writeln!(
                    post,
                    "if __ok && !{i}.is_null() && *{i} != mpiover_mpisys::consts::undefined() {{ \
                       let __q = __g.snapped(*{i}); __g.complete(&mut __ev, __q, {st}); }}"
                )
                .unwrap();
            }
            Requests::All {
                count,
                requests,
                statuses,
            } => {
                let (c, q) = (
                    param(name, f, count, Kind::Count),
                    param(name, f, requests, Kind::Request),
                );
                let s = param(name, f, statuses, Kind::Status);
                snapshot_many(&mut pre, f, &c, &q);
                statuses_views(&mut pre, &mut views, &mut special, f, &c, &s);
                writeln!(
                    post,
                    "if __ok {{ for __k in 0..{c}.max(0) {{ let __q = __g.snapped(__k); \
                       __g.complete(&mut __ev, __q, {s}.add(__k as usize)); }} }}"
                )
                .unwrap();
            }
            Requests::Some {
                count,
                requests,
                outcount,
                indices,
                statuses,
            } => {
                let (c, q) = (
                    param(name, f, count, Kind::Count),
                    param(name, f, requests, Kind::Request),
                );
                let (o, ix) = (
                    param(name, f, outcount, Kind::Flag),
                    param(name, f, indices, Kind::Flag),
                );
                let s = param(name, f, statuses, Kind::Status);
                snapshot_many(&mut pre, f, &c, &q);
                statuses_views(&mut pre, &mut views, &mut special, f, &c, &s);
                if ft {
                    // Fortran indices count from 1.
                    writeln!(
                        views,
                        "let {ix} = __g.findices({}, crate::fort::int({}), {});",
                        fname(f, &ix),
                        fname(f, &o),
                        fname(f, &q)
                    )
                    .unwrap();
                    special.insert(ix.clone());
                }
                writeln!(
                    post,
                    "let __n = if {o}.is_null() {{ 0 }} else {{ *{o} }}; \
                     if __n != mpiover_mpisys::consts::undefined() && !{ix}.is_null() {{ \
                       for __k in 0..__n.max(0) {{ let __q = __g.snapped(*{ix}.add(__k as usize)); \
                         __g.complete(&mut __ev, __q, {s}.add(__k as usize)); }} }}"
                )
                .unwrap();
            }
            Requests::Start { request } => {
                let q = param(name, f, request, Kind::Request);
                snapshot_one(&mut pre, f, &q);
                writeln!(post, "__g.start(&mut __ev, __q, __ra);").unwrap();
            }
            Requests::StartAll { count, requests } => {
                let (c, q) = (
                    param(name, f, count, Kind::Count),
                    param(name, f, requests, Kind::Request),
                );
                snapshot_many(&mut pre, f, &c, &q);
                writeln!(
                    post,
                    "for __k in 0..{c}.max(0) {{ let __q = __g.snapped(__k); __g.start(&mut __ev, __q, __ra); }}"
                )
                .unwrap();
            }
        }
    }
    if let Some(rq) = e.request {
        let q = param(name, f, rq, Kind::Request);
        let cb = comm
            .as_ref()
            .map(|c| format!("{c}.bits()"))
            .unwrap_or_else(|| "0".into());
        // A point-to-point receive or send, or a non-blocking collective:
        // the completion's tmax is composed differently for each.
        let kind = if mpiover_common::completion::blocking_twin(e.name).is_some() {
            "Collective"
        } else if e.recv.is_some() && e.send.is_none() {
            "Recv"
        } else {
            "Send"
        };
        writeln!(
            after,
            "if __r == 0 && !{q}.is_null() {{ __g.post(&__ev, {cb}, (*{q}).bits(), {}, crate::rt::Posted::{kind}, __ra); }}",
            e.persistent
        )
        .unwrap();
    }
    Parts {
        pre,
        post,
        after,
        views,
        special,
    }
}

/// Before the call: the request a completion or start touches, as C bits.
fn snapshot_one(pre: &mut String, f: &Func, q: &str) {
    if fortran() {
        writeln!(pre, "let __q = crate::fort::req_bits({});", fname(f, q)).unwrap();
        USED.with(|u| u.borrow_mut().remove(q));
    } else {
        writeln!(
            pre,
            "let __q = if {q}.is_null() {{ 0 }} else {{ (*{q}).bits() }};"
        )
        .unwrap();
    }
}

/// Before the call: the `c` requests of the array `q`, as C bits.
fn snapshot_many(pre: &mut String, f: &Func, c: &str, q: &str) {
    if fortran() {
        writeln!(
            pre,
            "__g.snap_f(crate::fort::int({}), {});",
            fname(f, c),
            fname(f, q)
        )
        .unwrap();
        USED.with(|u| u.borrow_mut().remove(q));
    } else {
        writeln!(pre, "__g.snap({c}, {q});").unwrap();
    }
}

/// The statuses of `c` requests: the caller's or the tool's own (for
/// `MPI_STATUSES_IGNORE`); in Fortran converted to C statuses after the call.
fn statuses_views(
    pre: &mut String,
    views: &mut String,
    special: &mut BTreeSet<String>,
    f: &Func,
    c: &str,
    s: &str,
) {
    if fortran() {
        let (fc, fs) = (fname(f, c), fname(f, s));
        writeln!(
            pre,
            "let {fs} = __g.fstatuses(crate::fort::int({fc}), {fs});"
        )
        .unwrap();
        writeln!(
            views,
            "let {s} = __g.fstatuses_c(crate::fort::int({fc}), {fs});"
        )
        .unwrap();
        special.insert(s.to_string());
    } else {
        writeln!(pre, "let {s} = __g.statuses({c}, {s});").unwrap();
    }
}

/// `name` is the wrapped function; `e` its event spec, which for an MPI-4
/// large-count variant (`MPI_Send_c`) is its base function's (`MPI_Send`):
/// the event is then recorded as the base function and only the call count
/// goes to `name`.
fn gen_event(name: &str, f: &Func, e: &Event) -> String {
    let call: Vec<&str> = f.args.iter().map(|(a, _)| a.as_str()).collect();
    let call = call.join(", ");
    let pname = format!("P{name}");
    let Parts {
        pre, post, after, ..
    } = event_parts(name, f, e);
    let args: Vec<String> = f.args.iter().map(|(a, t)| format!("{a}: {t}")).collect();
    let ret = f
        .ret
        .as_ref()
        .map(|r| format!(" -> {r}"))
        .unwrap_or_default();
    format!(
        "#[no_mangle]\npub unsafe extern \"C\" fn {name}({args}){ret} {{\n\
         let Some(mut __g) = crate::rt::enter() else {{ return {pname}({call}); }};\n\
         {pre}\
         let __t0 = crate::timer::now();\n\
         let __r = {pname}({call});\n\
         let __t1 = crate::timer::now();\n\
         let __ra: usize = crate::caller!();\n\
         let mut __ev = crate::rt::Ev::new(crate::names::FID_{base});\n\
         {call_fid}\
         if __r == 0 {{\n{post}}}\n\
         __g.event(__ra, &__ev, __t1.wrapping_sub(__t0));\n\
         {after}\
         __r\n}}\n",
        args = args.join(", "),
        base = e.name,
        // Only a large-count variant counts its calls apart from its event.
        call_fid = if e.name == name {
            String::new()
        } else {
            format!("__ev.call_fid = crate::names::FID_{name};\n")
        }
    )
}

/// The event spec of an MPI-4 large-count variant (`MPI_Recv_c`, MPICH 4):
/// its base function's, when the header has both. The parameter names are
/// the same; counts are `MPI_Count` and displacements `MPI_Aint`, which the
/// roles accept.
fn large_count_base<'a>(name: &str, events: &BTreeMap<&str, &'a Event>) -> Option<&'a Event> {
    events.get(name.strip_suffix("_c")?).copied()
}

fn gen_plain(name: &str, f: &Func) -> String {
    let call: Vec<&str> = f.args.iter().map(|(a, _)| a.as_str()).collect();
    let call = call.join(", ");
    let pname = format!("P{name}");
    let mut before = String::new();
    let mut after_call = String::new();
    if spec::FREES_COMM.contains(&name) {
        after_call.push_str("crate::rt::comm_freed();");
    }
    if spec::FREES_TYPE.contains(&name) {
        after_call.push_str("crate::rt::type_freed();");
    }
    if name == "MPI_Request_free" {
        let q = &f.args.first().expect("MPI_Request_free has an argument").0;
        before.push_str(&format!(
            "if !{q}.is_null() {{ __g.forget((*{q}).bits()); }}"
        ));
    }
    if name == "MPI_Cancel" {
        let q = &f.args.first().expect("MPI_Cancel has an argument").0;
        before.push_str(&format!(
            "if !{q}.is_null() {{ __g.cancelling((*{q}).bits()); }}"
        ));
    }
    let args: Vec<String> = f.args.iter().map(|(a, t)| format!("{a}: {t}")).collect();
    let ret = f
        .ret
        .as_ref()
        .map(|r| format!(" -> {r}"))
        .unwrap_or_default();
    format!(
        "#[no_mangle]\npub unsafe extern \"C\" fn {name}({args}){ret} {{\n\
         let Some(mut __g) = crate::rt::enter() else {{ let __r = {pname}({call}); {after_call} return __r; }};\n\
         {before}\
         let __t0 = crate::timer::now();\n\
         let __r = {pname}({call});\n\
         let __t1 = crate::timer::now();\n\
         {after_call}\
         __g.plain(crate::names::FID_{name}, __t1.wrapping_sub(__t0));\n\
         __r\n}}\n",
        args = args.join(", ")
    )
}

// ---------------------------------------------------------------------------
// Fortran (Open MPI: mpif.h / `use mpi` and `use mpi_f08`)
// ---------------------------------------------------------------------------

/// A Fortran entry point (`fortran_from_c`): `mpi_send(buf, count, ...,
/// ierror)` and its other spellings.
struct FFunc {
    /// The C name (`MPI_Send`): function id, event spec.
    mixed: String,
    /// `mpi_send`.
    lower: String,
    /// `MPI_SEND`.
    upper: String,
    /// Rust return type, if any.
    ret: Option<String>,
    /// Rust types of the arguments; hidden string lengths (passed by value)
    /// are `usize`, so that whatever the caller put there passes through.
    args: Vec<String>,
    /// Whether each argument is a pointer (every Fortran argument except the
    /// hidden lengths).
    ptr: Vec<bool>,
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
fn fortran_from_c(funcs: &BTreeMap<String, Func>) -> Vec<FFunc> {
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

/// The Fortran wrapper body of one function, shared by its five entry
/// points (four mpif.h manglings and the f08 name), which pass the return
/// address and the library function to forward to.
fn gen_fortran_body(ff: &FFunc, c: Option<&Func>, event: Option<&Event>) -> String {
    let name = &ff.mixed;
    let (fargs, ftys, fcall) = fortran_args(ff);
    let ret = ff
        .ret
        .as_ref()
        .map(|r| format!(" -> {r}"))
        .unwrap_or_default();
    let head = format!(
        "#[inline(never)]\npub unsafe fn fb_{name}(__ra: usize, __fwd: usize, {fargs}){ret} {{\n\
         let __fp: unsafe extern \"C\" fn({ftys}){ret} = core::mem::transmute(__fwd);\n"
    );
    // The number of leading pointer arguments: the C parameters plus ierr.
    let nptr = ff.ptr.iter().take_while(|p| **p).count();
    let ierr = if ff.ret.is_none() && nptr > 0 && ff.mixed != "MPI_Pcontrol" {
        format!("crate::fort::ierr(__f{})", nptr - 1)
    } else {
        "0".to_string()
    };
    let fid = format!("crate::names::FID_{name}");

    if let (Some(c), Some(e)) = (c, event) {
        // Positional: the C parameters, then ierr, then hidden lengths.
        if nptr == c.args.len() + 1 && ff.ret.is_none() {
            FORTRAN.with(|f| f.set(true));
            USED.with(|u| u.borrow_mut().clear());
            let parts = event_parts(name, c, e);
            FORTRAN.with(|f| f.set(false));
            let used: BTreeSet<String> = USED.with(|u| u.borrow().clone());
            let mut views = parts.views.clone();
            for (i, (a, t)) in c.args.iter().enumerate() {
                if !used.contains(a) || parts.special.contains(a) {
                    continue;
                }
                let fa = format!("__f{i}");
                let t = norm(t);
                let v = if t.ends_with("c_void") {
                    format!("let {a} = crate::fort::buf({fa} as *const core::ffi::c_void);")
                } else if t == "::std::os::raw::c_int"
                    || t == "c_int"
                    || t.ends_with("::c_int") && !t.starts_with('*')
                {
                    format!("let {a}: core::ffi::c_int = crate::fort::int({fa});")
                } else if t.ends_with("MPI_Count") && !t.starts_with('*') {
                    format!("let {a}: MPI_Count = crate::fort::int({fa}) as MPI_Count;")
                } else if t.starts_with('*') && t.ends_with("c_int") {
                    format!("let {a} = {fa} as *mut core::ffi::c_int;")
                } else if t == "MPI_Datatype" {
                    format!("let {a} = crate::fort::datatype({fa});")
                } else if t == "MPI_Comm" {
                    format!("let {a} = crate::fort::comm({fa});")
                } else if t.starts_with("*mut") && t.ends_with("MPI_Request") {
                    format!(
                        "let mut __v_{a} = crate::fort::request({fa}); let {a}: *mut MPI_Request = &mut __v_{a};"
                    )
                } else {
                    panic!("Fortran {name}: no view for C parameter {a}: {t}");
                };
                views.push_str(&v);
                views.push('\n');
            }
            return format!(
                "{head}\
                 let Some(mut __g) = crate::rt::enter() else {{ return __fp({fcall}); }};\n\
                 {pre}\
                 let __t0 = crate::timer::now();\n\
                 __fp({fcall});\n\
                 let __t1 = crate::timer::now();\n\
                 let __r: core::ffi::c_int = {ierr};\n\
                 {views}\
                 let mut __ev = crate::rt::Ev::new({fid});\n\
                 if __r == 0 {{\n{post}}}\n\
                 __g.event(__ra, &__ev, __t1.wrapping_sub(__t0));\n\
                 {after}\
                 }}\n",
                pre = parts.pre,
                post = parts.post,
                after = parts.after,
            );
        }
        println!(
            "cargo:warning=Fortran {name}: arguments do not line up with C's; counted, not an event"
        );
    }

    let mut before = String::new();
    let mut after_call = String::new();
    if spec::FREES_COMM.contains(&name.as_str()) {
        after_call.push_str("crate::rt::comm_freed();");
    }
    if spec::FREES_TYPE.contains(&name.as_str()) {
        after_call.push_str("crate::rt::type_freed();");
    }
    if name == "MPI_Request_free" {
        before.push_str("__g.forget(crate::fort::req_bits(__f0));");
    }
    if name == "MPI_Cancel" {
        before.push_str("__g.cancelling(crate::fort::req_bits(__f0));");
    }
    format!(
        "{head}\
         let Some(mut __g) = crate::rt::enter() else {{ let __r = __fp({fcall}); {after_call} return __r; }};\n\
         {before}\
         let __t0 = crate::timer::now();\n\
         let __r = __fp({fcall});\n\
         let __t1 = crate::timer::now();\n\
         {after_call}\
         __g.plain({fid}, __t1.wrapping_sub(__t0));\n\
         __r\n}}\n"
    )
}

/// The exported entry points of one Fortran function, forwarding to the
/// library's `pmpi_*` twin (found with `dlsym(RTLD_NEXT)` on first use).
/// (parameters, their types, the call's arguments) of a Fortran entry point:
/// the prototype's, plus one more word passed through untouched, in case the
/// library's entry point takes one more argument than the prototype says
/// (MPICH's `use mpi_f08` `MPI_Pcontrol` has an optional `ierror`). A word
/// the callee does not take is ignored by it (the caller cleans up).
fn fortran_args(ff: &FFunc) -> (String, String, String) {
    let n = ff.args.len();
    let mut fargs: Vec<String> = (0..n).map(|i| format!("__f{i}: {}", ff.args[i])).collect();
    fargs.push("__fx: usize".into());
    let mut tys = ff.args.clone();
    tys.push("usize".into());
    let mut fcall: Vec<String> = (0..n).map(|i| format!("__f{i}")).collect();
    fcall.push("__fx".into());
    (fargs.join(", "), tys.join(", "), fcall.join(", "))
}

fn gen_fortran_entries(ff: &FFunc, hand: bool, f77: bool) -> String {
    let name = &ff.mixed;
    let (fargs, _, fcall) = fortran_args(ff);
    let ret = ff
        .ret
        .as_ref()
        .map(|r| format!(" -> {r}"))
        .unwrap_or_default();
    let body = if hand {
        format!("crate::fort::fb_{name}")
    } else {
        format!("fb_{name}")
    };
    let lower = &ff.lower;
    let mut out = if f77 {
        format!(
            "static FWD77_{name}: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);\n"
        )
    } else {
        String::new()
    };
    let mut entry = |sym: &str, slot: &str, target: &str| {
        writeln!(
            out,
            "#[no_mangle]\npub unsafe extern \"C\" fn {sym}({fargs}){ret} {{\n\
             let __ra: usize = crate::caller!();\n\
             {body}(__ra, crate::fort::fwd(&{slot}, c\"{target}\"), {fcall})\n}}"
        )
        .unwrap();
    };
    // The forwarding target is named by the canonical entry point
    // (`mpi_send_`); `fort::fwd` finds its profiling twin.
    let t77 = format!("{lower}_");
    let s77 = format!("FWD77_{name}");
    if f77 {
        entry(lower, &s77, &t77);
        entry(&format!("{lower}_"), &s77, &t77);
        entry(&format!("{lower}__"), &s77, &t77);
        entry(&ff.upper, &s77, &t77);
    }
    // `use mpi_f08` (Open MPI: mpi_send_f08_ in libmpi_usempif08). MPI_Wtime
    // and MPI_Wtick are C functions there.
    if !matches!(name.as_str(), "MPI_Wtime" | "MPI_Wtick") {
        let s08 = format!("FWD08_{name}");
        writeln!(
            out,
            "static {s08}: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);"
        )
        .unwrap();
        let mut entry08 = |sym: &str, target: &str| {
            writeln!(
                out,
                "#[no_mangle]\npub unsafe extern \"C\" fn {sym}({fargs}){ret} {{\n\
                 let __ra: usize = crate::caller!();\n\
                 {body}(__ra, crate::fort::fwd(&{s08}, c\"{target}\"), {fcall})\n}}"
            )
            .unwrap();
        };
        entry08(&format!("{lower}_f08_"), &format!("{lower}_f08_"));
    }
    out
}

/// Fortran functions the hand-written code in `src/fort.rs` handles.
const FORTRAN_HAND_WRITTEN: &[&str] = &[
    "MPI_Init",
    "MPI_Init_thread",
    "MPI_Finalize",
    "MPI_Abort",
    "MPI_Pcontrol",
];

/// Generates `$OUT_DIR/fortran.rs`; returns the Fortran functions (C names)
/// that need a function id.
fn gen_fortran(
    funcs: &BTreeMap<String, Func>,
    events: &BTreeMap<&str, &Event>,
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
        let hand = FORTRAN_HAND_WRITTEN.contains(&ff.mixed.as_str());
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

fn pretty(src: &str, what: &str) -> String {
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
const GENERATED_SAFETY: &str =
    "// SAFETY: the caller is the MPI program: its arguments are what the \
MPI standard defines for this function and are passed on unchanged to the PMPI twin; \
the wrapper reads them only where the standard says they are valid (counts, \
datatypes, statuses after success), and its own state is this thread's.";

/// Every generated `unsafe fn`'s body in an explicit `unsafe {}` block, so
/// that the crate can deny `unsafe_op_in_unsafe_fn`.
fn explicit_unsafe(f: &mut syn::File) -> &syn::File {
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
fn with_safety_comments(code: &str) -> String {
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

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=spec.rs");
    println!("cargo:rerun-if-changed=src/pcontrol.c");
    println!("cargo:rustc-check-cfg=cfg(mpi_flavor, values(\"openmpi\", \"mpich\", \"unknown\"))");
    println!("cargo:rustc-check-cfg=cfg(mpi_handles_are_pointers)");
    println!("cargo:rustc-check-cfg=cfg(mpiover_fp)");

    let bindings = env::var("DEP_MPI_BINDINGS")
        .expect("DEP_MPI_BINDINGS not set (mpiover-mpisys links = \"mpi\")");
    println!("cargo:rerun-if-changed={bindings}");
    let flavor = env::var("DEP_MPI_FLAVOR").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-cfg=mpi_flavor=\"{flavor}\"");

    // The return address is read through the frame pointer only when frame
    // pointers are really forced (.cargo/config.toml); else unwinding.
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags
        .split('\x1f')
        .collect::<Vec<_>>()
        .join(" ")
        .contains("force-frame-pointers=yes")
    {
        println!("cargo:rustc-cfg=mpiover_fp");
    } else {
        println!(
            "cargo:warning=frame pointers not forced: call sites will be found by unwinding (slow)"
        );
    }

    let funcs = parse(&bindings);
    if funcs.is_empty() {
        panic!("no functions in {bindings}");
    }
    let handle_is_ptr = std::fs::read_to_string(&bindings)
        .map(|t| t.contains("pub type MPI_Comm = *mut"))
        .unwrap_or(false);
    if handle_is_ptr {
        println!("cargo:rustc-cfg=mpi_handles_are_pointers");
    }

    // Every MPI_X with a PMPI_X twin of the same signature.
    let mut wrap: Vec<&str> = Vec::new();
    for (name, f) in &funcs {
        let Some(base) = name.strip_prefix("MPI_") else {
            continue;
        };
        let Some(pf) = funcs.get(&format!("PMPI_{base}")) else {
            continue;
        };
        if f.variadic || spec::NOT_IN_C_LIBRARY.contains(&name.as_str()) {
            continue;
        }
        let sig = |f: &Func| {
            (
                f.args.iter().map(|(_, t)| norm(t)).collect::<Vec<_>>(),
                f.ret.as_deref().map(norm),
            )
        };
        if sig(f) != sig(pf) {
            println!("cargo:warning={name} and P{name} differ in signature: not wrapped");
            continue;
        }
        wrap.push(name);
    }

    // The spec against the header and the catalogue.
    let events: BTreeMap<&str, &Event> = spec::EVENTS.iter().map(|e| (e.name, e)).collect();
    if events.len() != spec::EVENTS.len() {
        panic!("spec error: an event is listed twice");
    }
    let catalogue: BTreeSet<&str> = mpiover_common::functions::CATALOGUE
        .iter()
        .map(|f| f.name)
        .collect();
    let specced: BTreeSet<&str> = events.keys().copied().collect();
    let missing: Vec<_> = catalogue.difference(&specced).collect();
    let extra: Vec<_> = specced.difference(&catalogue).collect();
    if !missing.is_empty() || !extra.is_empty() {
        panic!("spec error: spec.rs and mpiover_common::functions::CATALOGUE disagree: not in spec {missing:?}, not in catalogue {extra:?}");
    }
    for e in spec::EVENTS {
        if !wrap.contains(&e.name) {
            panic!(
                "spec error: event {} has no MPI/PMPI pair in {bindings}",
                e.name
            );
        }
        if spec::HAND_WRITTEN.contains(&e.name) {
            panic!("spec error: event {} is also hand-written", e.name);
        }
    }

    // Fortran entry points (Open MPI), generated first: they may add names.
    let (fcode, fnames, fcount) = gen_fortran(&funcs, &events, &flavor);

    // Ids: every wrapped function plus the variadic Pcontrol and the
    // Fortran-only functions; `other` last.
    let mut names: Vec<&str> = wrap.clone();
    if !names.contains(&"MPI_Pcontrol") {
        names.push("MPI_Pcontrol");
    }
    for f in &fnames {
        if !names.contains(&f.as_str()) {
            names.push(f.as_str());
        }
    }
    names.sort();
    let mut n = String::new();
    writeln!(
        n,
        "/// Names of the wrapped functions, indexed by function id."
    )
    .unwrap();
    writeln!(n, "pub static FN_NAMES: [&str; {}] = [", names.len() + 1).unwrap();
    for name in &names {
        writeln!(n, "    {name:?},").unwrap();
    }
    writeln!(n, "    \"other\",\n];").unwrap();
    writeln!(n, "/// Number of wrapped functions (`other` is id NFUNCS).").unwrap();
    writeln!(n, "pub const NFUNCS: usize = {};", names.len()).unwrap();
    for (i, name) in names.iter().enumerate() {
        writeln!(n, "pub const FID_{name}: u16 = {i};").unwrap();
    }
    writeln!(n, "/// Ids of the communication events.").unwrap();
    let ev_ids: Vec<String> = spec::EVENTS
        .iter()
        .map(|e| format!("FID_{}", e.name))
        .collect();
    writeln!(
        n,
        "pub const EVENT_IDS: [u16; {}] = [{}];",
        ev_ids.len(),
        ev_ids.join(", ")
    )
    .unwrap();

    let mut w = String::new();
    w.push_str("use mpiover_mpisys::*;\nuse crate::rt::Handle as _;\n");
    let mut count = 0;
    for name in &wrap {
        if spec::HAND_WRITTEN.contains(name) {
            continue;
        }
        let f = &funcs[*name];
        match events
            .get(name)
            .copied()
            .or_else(|| large_count_base(name, &events))
        {
            Some(e) => w.push_str(&gen_event(name, f, e)),
            None => w.push_str(&gen_plain(name, f)),
        }
        count += 1;
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("names.rs"), pretty(&n, "names")).expect("write names.rs");
    std::fs::write(out.join("wrappers.rs"), pretty(&w, "wrappers")).expect("write wrappers.rs");
    std::fs::write(out.join("fortran.rs"), pretty(&fcode, "fortran")).expect("write fortran.rs");
    println!("cargo:rustc-env=MPIOVER_WRAPPED={count}");
    println!("cargo:rustc-env=MPIOVER_FORTRAN_WRAPPED={fcount}");

    // MPI_Pcontrol is variadic: a few lines of C.
    let mut cc = cc::Build::new();
    cc.file("src/pcontrol.c");
    for d in env::var("DEP_MPI_INCLUDE")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
    {
        cc.include(d);
    }
    cc.compile("mpiover_pcontrol");
}
