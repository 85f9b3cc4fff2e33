//! Posts and completions: a post enters the request map, a completion
//! finds what it completed and merges it into the event.

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::handle::Handle;
use crate::site_ref::SiteRef;

use super::call_key::KeyStats;
use super::comms::CommCache;
use super::event::{status_bytes, status_source, Ev, Posted};
use super::guard::Guard;

use super::requests::{ReqInfo, ReqMap, MASK, NRECV_1, NSEND_1, NULL_REQS};
use super::state::{NONE_FN, NONE_PEER};
use super::threads::ThreadState;

impl Guard {
    /// Remembers a request a posting call created (its event `ev`, of
    /// function `fid`; `to_null`: to or from `MPI_PROC_NULL`), posted at
    /// `site`. A
    /// non-persistent request to or from `MPI_PROC_NULL` is not remembered
    /// (its handle may be shared by all such posts): its handle goes into
    /// `null_reqs`, so that its completion is ignored. Inlined into the
    /// posting wrappers (with the map's insert): no call.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn post(
        &mut self,
        ev: &Ev,
        fid: u16,
        to_null: bool,
        comm: usize,
        req: usize,
        persistent: bool,
        kind: Posted,
        site: SiteRef,
    ) {
        let recv = kind == Posted::Recv;
        let counts = match kind {
            Posted::Recv => NRECV_1,
            Posted::Send => NSEND_1,
            Posted::Collective => 0,
        };
        if req == 0 || req == consts::request_null().bits() {
            return;
        }
        let ts = self.ts();
        let proc_null = to_null && !persistent;
        // A post to or from MPI_PROC_NULL, or any post once the thread has
        // seen one: none in most programs; in one with MPI_PROC_NULL peers
        // (a stencil's boundary) every post checks the few shared handles,
        // out of line so that the common path stays short.
        if (proc_null || ts.null_next != 0) && null_post(ts, req, proc_null) {
            return;
        }
        // The posting call's own event was recorded just before. Only a
        // persistent post gets here to or from MPI_PROC_NULL (`null_post`
        // took the others), so the flags of the others are constants,
        // written with the function as one word.
        // `usize::MAX` (none) becomes `u32::MAX`, still none.
        let agg = ts.last_event as u32;
        let null_peer = persistent && to_null;
        ts.reqs.insert_with(req, persistent, || ReqInfo {
            handle: req,
            comm,
            ra: site,
            init_ra: site,
            bytes: ev.key.bytes,
            p: ev.key.p,
            peer: ev.key.peer,
            fid,
            persistent,
            recv,
            counts,
            agg,
            active: false,
            cancel: false,
            proc_null: null_peer,
        });
    }

    /// `MPI_Request_free`: forget the request.
    pub fn forget(&mut self, req: usize) {
        let m = &mut self.ts().reqs;
        if let Some(i) = m.find(req) {
            m.remove_at(i);
        }
    }

    /// `MPI_Cancel`: its completion will check the status's cancelled flag.
    pub fn cancelling(&mut self, req: usize) {
        let m = &mut self.ts().reqs;
        if let Some(i) = m.find(req) {
            if let Some(s) = m.at_mut(i) {
                s.cancel = true;
            }
        }
    }

    /// `MPI_Start(all)`: the event gets the persistent request's bytes, peer
    /// and p, with `completes` = the `*_init` function and `post_site` = its
    /// site; the request's posting site becomes this call's, and it is active
    /// until completed. A request to or from `MPI_PROC_NULL` is started but
    /// not merged into the event.
    pub fn start(&mut self, ev: &mut Ev, req: usize, site: SiteRef) {
        let m = &mut self.ts().reqs;
        if let Some(i) = m.find(req) {
            if let Some(s) = m.at_mut(i) {
                // The event names the *_init call and its site; later
                // completions name this start as the posting site.
                let mut init = *s;
                init.ra = init.init_ra;
                s.ra = site;
                s.active = true;
                s.cancel = false;
                if !init.proc_null {
                    merge_done(ev, &init, init.bytes, init.peer);
                }
            }
        }
    }

    /// A completed request: merges what it was into the event and forgets
    /// it unless persistent. `st` is its status (may be null), `site` the
    /// completing call's. Ignored: `MPI_REQUEST_NULL`, an inactive
    /// persistent request (MPI completes both at once with an empty status),
    /// a request to or from `MPI_PROC_NULL`. A cancelled request moved
    /// nothing: 0 bytes, no peer. Inlined into the completing wrappers: a
    /// call per request, with its prologue and the event behind a pointer,
    /// cost about 40 instructions per completed request. A null request is
    /// not tested for here: the map never holds one (`post` refuses them),
    /// so it goes the way of any handle the map lacks (`unmatched`, which
    /// ignores it), and the usual request is spared the two compares.
    ///
    /// # Safety
    /// `st` is null or points to a status MPI filled.
    #[inline(always)]
    pub unsafe fn complete(
        &mut self,
        ev: &mut Ev,
        req: usize,
        st: *const MPI_Status,
        site: SiteRef,
    ) {
        let ts = self.ts();
        // The slots are checked for once, for both the find and the
        // removal (the map's own `find` and `remove_at` check each time).
        let Some(slots) = ts.reqs.slots.as_deref_mut() else {
            return unmatched(ts, ev, req);
        };
        let Some(i) = ReqMap::find_in(slots, req) else {
            return unmatched(ts, ev, req);
        };
        // Read in place, no copy of the whole 64-byte slot: the slot is
        // released only once the event has what it needs.
        let r = &slots[i & MASK];
        let (entries, done, comms) = (&ts.table.entries, &mut ts.done, &ts.comms);
        // One test for the usual request (neither persistent nor
        // cancelled). Only persistent requests can be inactive or to
        // MPI_PROC_NULL (the others never enter the map), and only they
        // stay. Every path inlines the merge: a call per request costs more
        // than the rest of its completion.
        if r.usual() {
            // SAFETY: as this function's (`st`).
            unsafe { merge_completed::<false>(ev, r, st, site, entries, done, comms) };
            ReqMap::remove_in(slots, &mut ts.reqs.len, i);
            return;
        }
        if !r.persistent {
            // Cancelled.
            // SAFETY: as this function's (`st`).
            unsafe { merge_completed::<true>(ev, r, st, site, entries, done, comms) };
            ReqMap::remove_in(slots, &mut ts.reqs.len, i);
            return;
        }
        if !r.active {
            return;
        }
        if !r.proc_null {
            // SAFETY: as this function's (`st`).
            unsafe { merge_completed::<true>(ev, r, st, site, entries, done, comms) };
        }
        let s = &mut slots[i & MASK];
        s.active = false;
        s.cancel = false;
    }
}

/// Merges completed request `r` (status `st`, completed at `site`) into the
/// event: what it moved (nothing if cancelled), and its posting key to learn
/// `site` (`done`, of the thread's table `entries`). `comms` translates the
/// source of a receive posted with `MPI_ANY_SOURCE`. `CANCEL`: the request
/// may have been cancelled (else its flag is known to be clear).
///
/// # Safety
/// `st` is null or points to a status MPI filled.
#[inline(always)]
unsafe fn merge_completed<const CANCEL: bool>(
    ev: &mut Ev,
    r: &ReqInfo,
    st: *const MPI_Status,
    site: SiteRef,
    entries: &[KeyStats],
    done: &mut Vec<(usize, SiteRef, u16)>,
    comms: &CommCache,
) {
    // The posting key learns this site in the event, unless it already
    // names it (a loop that completes the same posts at the same site:
    // every call after the first), when the event would write what is
    // there. No entry at that index (a folded key): the event would write
    // nowhere either.
    if entries
        .get(r.agg as usize)
        .is_some_and(|e| e.done_ra != site)
    {
        done.push((r.agg as usize, r.init_ra, r.fid));
    }
    let mut cancelled = false;
    if CANCEL && r.cancel && !st.is_null() {
        let mut flag: core::ffi::c_int = 0;
        // SAFETY: `st` is non-null, so a status MPI filled (this
        // function's contract); `flag` is a live local.
        cancelled = unsafe { PMPI_Test_cancelled(st, &mut flag) } == 0 && flag != 0;
    }
    if cancelled {
        return merge_done(ev, r, 0, NONE_PEER);
    }
    let (mut bytes, mut peer) = (r.bytes, r.peer);
    if r.recv && !st.is_null() {
        // SAFETY: `st` is non-null, so a status MPI filled (as above).
        if let Some(b) = unsafe { status_bytes(st) } {
            bytes = b;
        }
        if peer == NONE_PEER {
            // Posted with MPI_ANY_SOURCE: the status says who, as a rank
            // of the posting communicator (translated without calling MPI:
            // the communicator may be gone by now).
            // SAFETY: as above.
            let source = unsafe { status_source(st) };
            peer = comms.translate_cached(r.comm, source);
        }
    }
    merge_done(ev, r, bytes, peer);
}

/// A post to or from `MPI_PROC_NULL` (`proc_null`), or any post once the
/// thread has seen one: true when the post is not to be remembered.
#[inline(never)]
fn null_post(ts: &mut ThreadState, req: usize, proc_null: bool) -> bool {
    if proc_null {
        if !ts.null_reqs.contains(&req) {
            // The latest few distinct ones (an MPI that returned fresh
            // requests for them would reuse those for real posts, which
            // the map finds first).
            let k = ts.null_next % NULL_REQS;
            ts.null_next = k + 1;
            if let Some(s) = ts.null_reqs.get_mut(k) {
                *s = req;
            }
        }
        return true;
    }
    // A shared complete request (e.g. `MPI_Imrecv` of
    // `MPI_MESSAGE_NO_PROC`): not a request of its own.
    ts.null_reqs.contains(&req)
}

/// A completed request the map does not have: ignored if it is one of the
/// shared `MPI_PROC_NULL` ones, else counted (see `ThreadState::unmatched`).
#[cold]
#[inline(never)]
fn unmatched(ts: &mut ThreadState, ev: &mut Ev, req: usize) {
    // `MPI_REQUEST_NULL` (an array's finished entry) and handle 0 (the
    // map's empty slot) are never in the map: ignored, here rather than
    // before each look-up.
    if req == 0 || req == consts::request_null().bits() {
        return;
    }
    if ts.null_next != 0 && ts.null_reqs.contains(&req) {
        return;
    }
    ts.unmatched += 1;
    // Completed something unknown: the event names no posting call.
    ev.key.completes = NONE_FN;
    ev.key.post_ra = SiteRef::NONE;
    ev.key.nreq = ev.key.nreq.saturating_add(1);
}

#[inline(always)]
pub(crate) fn merge_done(ev: &mut Ev, r: &ReqInfo, bytes: u64, peer: i32) {
    let k = &mut ev.key;
    if k.nreq == 0 {
        k.completes = r.fid;
        k.post_ra = r.ra;
        k.peer = peer;
        k.p = r.p;
        k.bytes = bytes;
    } else {
        // Posted by different calls or sites: none named (and a later one
        // differs from `NONE_FN` too, so it stays none).
        if k.completes != r.fid || k.post_ra != r.ra {
            k.completes = NONE_FN;
            k.post_ra = SiteRef::NONE;
        }
        if k.peer != peer {
            k.peer = NONE_PEER;
        }
        if k.p != r.p {
            k.p = 0;
        }
        k.bytes = k.bytes.saturating_add(bytes);
    }
    // The counts as one add, unless saturated (a call that completed
    // 65,535 requests).
    if k.nreq < u16::MAX {
        k.nreq += 1;
        k.add_p2p(r.counts);
    } else {
        k.add_p2p_saturating(r.counts);
    }
}
