//! Recording a call: a plain call's time, an event under its key.

use std::sync::atomic::Ordering::*;

use super::call_key::CallKey;
use super::event::Ev;
use super::guard::Guard;
use super::state::{ENABLED, STATE};
use super::threads::ThreadState;

impl Guard {
    /// Records a plain (non-event) call.
    #[inline(always)]
    pub fn plain(&mut self, fid: u16, dt: u64) {
        if let Some(f) = self.ts().funcs.get_mut(fid as usize) {
            tally!(f[0], f[1], dt);
        }
    }

    /// Records an event under its key (its site in `ev.key.ra`), the call
    /// of function `call_fid` (the event's own, or a large-count variant's),
    /// and the region that ended at its entry `t0` (the call returned at
    /// `t1`). `COMPLETES`: the wrapper completes requests, whose posting keys
    /// then learn where (decided when the wrapper is generated, so that the
    /// others skip the check).
    #[inline(always)]
    pub fn event<const COMPLETES: bool>(&mut self, ev: &Ev, call_fid: u16, t0: u64, t1: u64) {
        let dt = t1.wrapping_sub(t0);
        let ts = self.ts();
        ts.updating.store(true, Relaxed);
        // With the writer's barrier, either the writer sees `updating` set
        // and waits, or this thread sees recording disabled (`quiesce`).
        std::sync::atomic::compiler_fence(SeqCst);
        if STATE.load(Relaxed) & ENABLED == 0 {
            return disabled(ts, ev);
        }
        if let Some(f) = ts.funcs.get_mut(call_fid as usize) {
            tally!(f[0], f[1], dt);
        }
        let ra = ev.key.ra;
        ts.add_call(&ev.key, dt, t0, t1);
        if COMPLETES && !ts.done.is_empty() {
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

impl ThreadState {
    /// Adds a call of `dt` under `key` (entered at `t0`, returned at `t1`)
    /// and gives the region that ended at its entry its pass: the event's
    /// part that needs no wrapper (the tests drive it directly).
    #[inline(always)]
    pub(crate) fn add_call(&mut self, key: &CallKey, dt: u64, t0: u64, t1: u64) {
        // Read before the table is written (as the key may be in memory the
        // compiler cannot tell apart from it).
        let (ra, fid, prev) = (key.ra, key.fid, self.last_event);
        let (idx, e) = self.table.add_entry(key, dt);
        match e {
            Some(e) => {
                let hint = (e.region_from, e.region_in);
                self.last_event = idx;
                self.passes().next_region(prev, idx, hint, ra, fid, t0, t1);
            }
            None => {
                self.last_event = usize::MAX;
                self.passes().folded_region(prev, ra, fid, t0, t1);
            }
        }
    }
}

/// Recording was turned off after the wrapper entered: the event is not
/// recorded, nor is the Python site its call counted at (`Guard::site`).
#[cold]
#[inline(never)]
fn disabled(ts: &mut ThreadState, ev: &Ev) {
    if ev.key.ra.is_python() {
        ts.py_calls = ts.py_calls.wrapping_sub(1);
    }
    ts.done.clear();
    ts.updating.store(false, Release);
}
