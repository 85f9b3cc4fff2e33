//! The event code of a wrapper: bytes, peer, role, requests and statuses
//! from the spec's roles (shared by the C and the Fortran wrappers).

use super::*;

/// Name of the Fortran wrapper's argument in the position of C parameter `c`.
pub(crate) fn fname(f: &Func, c: &str) -> String {
    let i = f
        .args
        .iter()
        .position(|(a, _)| a == c)
        .unwrap_or_else(|| panic!("no parameter {c}"));
    format!("__f{i}")
}

pub(crate) fn len_expr(l: Len) -> &'static str {
    match l {
        Len::P => "__ci.rsize",
        Len::InDeg => "__deg.0",
        Len::OutDeg => "__deg.1",
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

pub(crate) fn side_bytes(name: &str, f: &Func, s: &Side) -> String {
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

pub(crate) fn side_cond(name: &str, f: &Func, s: &Side, rooted: bool) -> String {
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
pub(crate) struct Parts {
    pub(crate) pre: String,
    pub(crate) post: String,
    pub(crate) after: String,
    pub(crate) views: String,
    /// C parameters with a special view above.
    pub(crate) special: BTreeSet<String>,
}

pub(crate) fn event_parts(name: &str, f: &Func, e: &Event) -> Parts {
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
pub(crate) fn snapshot_one(pre: &mut String, f: &Func, q: &str) {
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
pub(crate) fn snapshot_many(pre: &mut String, f: &Func, c: &str, q: &str) {
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
pub(crate) fn statuses_views(
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
