//! Recording a call: a plain call's time, an event under its key.

use std::sync::atomic::Ordering::*;

use super::*;

impl Guard {
    /// Records a plain (non-event) call.
    #[inline(always)]
    pub fn plain(&mut self, fid: u16, dt: u64) {
        if let Some(f) = self.ts().funcs.get_mut(fid as usize) {
            f[0] += 1;
            f[1] = f[1].wrapping_add(dt);
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
            f[0] += 1;
            f[1] = f[1].wrapping_add(dt);
        }
        if ra.is_python() {
            ts.py_calls += 1;
        }
        let (completes, post_ra) = match ev.completes {
            MIXED_FN => (NONE_FN, SiteRef::NONE),
            c => (c, ev.post_ra),
        };
        let sat = |n: u32| n.min(u16::MAX as u32) as u16;
        let key = CallKey {
            ra,
            post_ra,
            bytes: ev.sent.max(ev.recvd),
            p: ev.p,
            peer: ev.peer,
            fid: ev.fid,
            completes,
            role: ev.role,
            nreq: sat(ev.n_done),
            nrecv: sat(ev.n_recv),
            nsend: sat(ev.n_send),
        };
        let prev = ts.last_event;
        let (idx, e) = ts.table.add_entry(&key, dt);
        let hint = e.map(|e| (e.region_from, e.region_in));
        ts.last_event = idx;
        let opened = ts.region_start.t;
        if opened != 0 {
            ts.region(prev, idx, hint, ra, ev.fid, t0.wrapping_sub(opened));
        }
        ts.region_start = RegionStart {
            site: ra,
            fid: ev.fid,
            t: t1,
        };
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

    // ---- requests ----------------------------------------------------------
}

impl ThreadState {
    /// Adds `dt` to the region from the call of entry `prev` (the region's
    /// start, `region_start`) to this call, of entry `idx` at `to`
    /// (`to_fid`); `hint` is that entry's (`region_from`, `region_in`).
    #[inline(always)]
    fn region(
        &mut self,
        prev: usize,
        idx: usize,
        hint: Option<(u32, u32)>,
        to: SiteRef,
        to_fid: u16,
        dt: u64,
    ) {
        if let Some((from, r)) = hint {
            if from == prev as u32 {
                if let Some(r) = self.regions.entries.get_mut(r as usize) {
                    r.add(dt);
                    return;
                }
            }
        }
        self.region_slow(prev, idx, to, to_fid, dt);
    }

    #[inline(never)]
    fn region_slow(&mut self, prev: usize, idx: usize, to: SiteRef, to_fid: u16, dt: u64) {
        let start = self.region_start;
        let key = RegionKey {
            from: start.site,
            to,
            from_fid: start.fid,
            to_fid,
        };
        let r = self.regions.add(&key, dt);
        // The hint needs both calls' entries (a folded key has none) and the
        // region's own (a folded region has none either).
        if r != usize::MAX && prev != usize::MAX {
            if let Some(e) = self.table.entries.get_mut(idx) {
                e.region_from = prev as u32;
                e.region_in = r as u32;
            }
        }
    }
}
