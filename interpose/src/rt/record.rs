//! Recording a call: a plain call's time, an event under its key.

use std::sync::atomic::Ordering::*;

use super::*;

impl Guard {
    /// Records a plain (non-event) call.
    #[inline(always)]
    pub fn plain(&mut self, fid: u16, dt: u64) {
        if let Some(f) = self.ts().funcs.get_mut(fid as usize) {
            tally!(f[0], f[1], dt);
        }
    }

    /// Records an event under its key, at the call's site `ra`, and the
    /// region that ended at its entry `t0` (the call returned at `t1`).
    #[inline(always)]
    pub fn event(&mut self, ra: SiteRef, ev: &Ev, t0: u64, t1: u64) {
        let dt = t1.wrapping_sub(t0);
        let ts = self.ts();
        ts.updating.store(true, Relaxed);
        // With the writer's barrier, either the writer sees `updating` set
        // and waits, or this thread sees recording disabled (`quiesce`).
        std::sync::atomic::compiler_fence(SeqCst);
        if STATE.load(Relaxed) & ENABLED == 0 {
            ts.updating.store(false, Release);
            return;
        }
        if let Some(f) = ts.funcs.get_mut(ev.call_fid as usize) {
            tally!(f[0], f[1], dt);
        }
        if ra.is_python() {
            ts.py_calls += 1;
        }
        let key = CallKey {
            ra,
            post_ra: ev.post_ra,
            bytes: ev.sent.max(ev.recvd),
            p: ev.p,
            peer: ev.peer,
            fid: ev.fid,
            completes: ev.completes,
            role: ev.role,
            nreq: ev.n_done,
            nrecv: ev.n_recv,
            nsend: ev.n_send,
        };
        let prev = ts.last_event;
        let (idx, e) = ts.table.add_entry(&key, dt);
        // No entry (a folded key): a hint that matches no region.
        let hint = e.map_or((u32::MAX, u32::MAX), |e| (e.region_from, e.region_in));
        ts.last_event = idx;
        ts.next_region(prev, idx, hint, ra, ev.fid, t0, t1);
        if !ts.done.is_empty() {
            // The posting keys of what this completion completed learn
            // where they were completed.
            let entries = &mut ts.table.entries;
            for (i, post_ra, fid) in ts.done.drain(..) {
                if let Some(e) = entries.get_mut(i) {
                    if e.key.ra == post_ra && e.key.fid == fid {
                        e.done_ra = ra;
                    }
                }
            }
        }
        ts.updating.store(false, Release);
    }
}
