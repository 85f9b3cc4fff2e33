//! Generates libmpiover's wrappers from the installed `mpi.h`.
//!
//! 1. Parses the bindgen output of `mpiover-mpisys` (`DEP_MPI_BINDINGS`) with
//!    syn and collects every `MPI_X` that has a `PMPI_X` twin with the same
//!    signature (variadic ones excepted: `MPI_Pcontrol` lives in
//!    `src/pcontrol.c`).
//! 2. Checks the typed event spec (`spec.rs`) against those signatures: every
//!    role must name a parameter of the right kind of type, and the spec must
//!    cover exactly the event catalogue of `mpiover_common::functions`.
//!    Any mismatch fails the build.
//! 3. Writes `$OUT_DIR/names.rs` (function ids and names) and
//!    `$OUT_DIR/wrappers.rs` (one `#[no_mangle] extern "C"` wrapper per
//!    function, pretty-printed so it can be read).

#[path = "spec.rs"]
#[allow(dead_code)]
mod spec;

use std::collections::{BTreeMap, BTreeSet};
use std::env;
use std::fmt::Write as _;
use std::path::PathBuf;

use quote::ToTokens;
use spec::{At, Count, Dtype, Event, Len, Peer, Requests, Side};

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
            format!("__g.wbytes({a}, {t}, {})", len_expr(l))
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
        (At::All, true) => c.push("(!__ci.inter || __role == crate::rt::ROLE_NONROOT)".into()),
        (_, false) => panic!("spec error: {name}: a side at root/non-root needs a root"),
        (At::Root, true) => c.push("__role == crate::rt::ROLE_ROOT".into()),
        (At::NonRoot, true) => c.push("__role == crate::rt::ROLE_NONROOT".into()),
    }
    if rooted {
        c.push("__active".into());
    }
    c.join(" && ")
}

fn gen_event(name: &str, f: &Func, e: &Event) -> String {
    let call: Vec<&str> = f.args.iter().map(|(a, _)| a.as_str()).collect();
    let call = call.join(", ");
    let pname = format!("P{name}");
    let mut pre = String::new();
    let mut post = String::new();
    let mut after = String::new();

    let status = e.status.map(|s| param(name, f, s, Kind::Status));
    if let Some(s) = &status {
        writeln!(
            pre,
            "let mut __st = crate::rt::StatusSlot::new(); let {s} = __st.or({s});"
        )
        .unwrap();
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
                 if {d} == mpiover_mpisys::consts::proc_null() {{ __ev.sent = 0; }}"
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
                 if __src == mpiover_mpisys::consts::proc_null() {{ __ev.recvd = 0; }}"
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
                writeln!(
                    pre,
                    "let __q = if {q}.is_null() {{ 0 }} else {{ (*{q}).bits() }};"
                )
                .unwrap();
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
                writeln!(pre, "__g.snap({c}, {q});").unwrap();
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
                writeln!(pre, "__g.snap({c}, {q}); let {s} = __g.statuses({c}, {s});").unwrap();
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
                writeln!(pre, "__g.snap({c}, {q}); let {s} = __g.statuses({c}, {s});").unwrap();
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
                writeln!(
                    pre,
                    "let __q = if {q}.is_null() {{ 0 }} else {{ (*{q}).bits() }};"
                )
                .unwrap();
                writeln!(post, "__g.start(&mut __ev, __q, __ra);").unwrap();
            }
            Requests::StartAll { count, requests } => {
                let (c, q) = (
                    param(name, f, count, Kind::Count),
                    param(name, f, requests, Kind::Request),
                );
                writeln!(pre, "__g.snap({c}, {q});").unwrap();
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
        let recv = e.recv.is_some() && e.send.is_none();
        writeln!(
            after,
            "if __r == 0 && !{q}.is_null() {{ __g.post(&__ev, {cb}, (*{q}).bits(), {}, {recv}, __ra); }}",
            e.persistent
        )
        .unwrap();
    }
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
         let mut __ev = crate::rt::Ev::new(crate::names::FID_{name});\n\
         if __r == 0 {{\n{post}}}\n\
         __g.event(__ra, &__ev, __t1.wrapping_sub(__t0));\n\
         {after}\
         __r\n}}\n",
        args = args.join(", ")
    )
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

fn pretty(src: &str, what: &str) -> String {
    match syn::parse_file(src) {
        Ok(f) => prettyplease::unparse(&f),
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
        if f.variadic {
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
    let catalogue: BTreeSet<&str> = mpiover_common::functions::EVENTS
        .iter()
        .map(|(n, _)| *n)
        .collect();
    let specced: BTreeSet<&str> = events.keys().copied().collect();
    let missing: Vec<_> = catalogue.difference(&specced).collect();
    let extra: Vec<_> = specced.difference(&catalogue).collect();
    if !missing.is_empty() || !extra.is_empty() {
        panic!("spec error: spec.rs and mpiover_common::functions::EVENTS disagree: not in spec {missing:?}, not in catalogue {extra:?}");
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

    // Ids: every wrapped function plus the variadic Pcontrol; `other` last.
    let mut names: Vec<&str> = wrap.clone();
    if !names.contains(&"MPI_Pcontrol") {
        names.push("MPI_Pcontrol");
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
        match events.get(name) {
            Some(e) => w.push_str(&gen_event(name, f, e)),
            None => w.push_str(&gen_plain(name, f)),
        }
        count += 1;
    }
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("names.rs"), pretty(&n, "names")).expect("write names.rs");
    std::fs::write(out.join("wrappers.rs"), pretty(&w, "wrappers")).expect("write wrappers.rs");
    println!("cargo:rustc-env=MPIOVER_WRAPPED={count}");

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
