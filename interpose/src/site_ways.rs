//! Which of the three things that make a call site more than the wrapper's
//! return address are on: Python sites (`py::ON`), a depth above 1
//! (`rt::DEPTH`), a Fortran binding library (`rt::ANY_BINDING`). Each is set
//! where its own flag is; the hot path (`rt::site`) tests this one byte
//! instead of the three (none is on in most runs). A module of its own so
//! that `py`, which sets one of them, need not import `rt`, which reads
//! `py`'s sites.

use std::sync::atomic::{AtomicU8, Ordering::Relaxed};

static SITE_WAYS: AtomicU8 = AtomicU8::new(0);
pub const WAY_PYTHON: u8 = 1;
pub const WAY_DEPTH: u8 = 2;
pub const WAY_BINDING: u8 = 4;

/// Turns one of the ways on or off (at init).
pub fn site_way(way: u8, on: bool) {
    if on {
        SITE_WAYS.fetch_or(way, Relaxed);
    } else {
        SITE_WAYS.fetch_and(!way, Relaxed);
    }
}

/// Whether any way is on (the hot path's one load).
#[inline(always)]
pub fn any() -> bool {
    SITE_WAYS.load(Relaxed) != 0
}
