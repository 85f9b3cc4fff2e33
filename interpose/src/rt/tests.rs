//! Tests of the aggregation, caches and request map without MPI.

use mpiover_common::histogram::Histogram;

use crate::site_ref::SiteRef;

use super::call_key::{CallKey, KeyStats};
use super::regions::{RegionKey, RegionStart, RegionStats};
use super::requests::{ReqInfo, ReqMap};
use super::state::{Role, ENABLED, FID_OTHER, NONE_FN, PAUSES, PAUSE_STEP, TYPE_FREED_STEP};
use super::table::Table;
use super::threads::ThreadState;

fn key(ra: usize, bytes: u64) -> CallKey {
    CallKey {
        ra: SiteRef::native(ra),
        post_ra: SiteRef::NONE,
        bytes,
        p: 2,
        peer: 1,
        fid: 3,
        completes: NONE_FN,
        role: Role::None,
        nreq: 0,
        nrecv: 0,
        nsend: 0,
        spare: [0; 5],
    }
}

#[test]
fn table_aggregates_and_folds_past_the_cap() {
    let mut t: Table<KeyStats> = Table::new(4);
    for i in 0..100u64 {
        t.add(&key(0x1000 + (i % 6) as usize, 8), 100 + i);
    }
    // 4 keys fit; the other 2 fold.
    assert_eq!(t.entries.len(), 5);
    let other = t
        .entries
        .iter()
        .find(|e| e.key.fid == FID_OTHER)
        .expect("fold entry");
    assert_eq!(other.count(), t.folded_calls);
    assert_eq!(t.folded_calls, 100 - 4 * 17);
    assert_eq!(t.folded_keys(), 2);
    let total: u64 = t.entries.iter().map(|e| e.count()).sum();
    assert_eq!(total, 100);
    let e = &t.entries[0];
    assert_eq!((e.min, e.max, e.count()), (100, 196, 17));
}

#[test]
fn dense_histogram_matches_the_sparse_one() {
    let mut t: Table<KeyStats> = Table::new(8);
    let mut h = Histogram::default();
    let mut x = 12345u64;
    for _ in 0..5000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let v = x % 1_000_000 + (x >> 60);
        t.add(&key(1, 1), v);
        h.record(v);
    }
    let a = &t.entries[0];
    assert_eq!(a.hist.sparse(), h);
}

#[test]
fn request_map_insert_find_remove() {
    let mut m = ReqMap::new();
    let r = |h| ReqInfo {
        handle: h,
        ra: SiteRef::native(h * 2),
        init_ra: SiteRef::native(h * 2),
        ..ReqInfo::EMPTY
    };
    // Colliding and wrapping probe chains.
    let hs: Vec<usize> = (1..3000).map(|i| i * 4096 + 8).collect();
    for &h in &hs {
        m.insert(r(h));
    }
    for (n, &h) in hs.iter().enumerate() {
        if n % 3 == 0 {
            let i = m.find(h).expect("present");
            m.remove_at(i);
        }
    }
    for (n, &h) in hs.iter().enumerate() {
        let f = m.find(h);
        assert_eq!(f.is_some(), n % 3 != 0, "handle {h}");
        if let Some(i) = f {
            assert_eq!(m.at(i).expect("slot").ra, SiteRef::native(h * 2));
        }
    }
    assert_eq!(m.len, hs.len() - hs.len().div_ceil(3));
}

/// Regression: Open MPI returns one shared, already complete request for
/// small eager `MPI_Isend`s; a halo exchange posting several of them
/// before one `MPI_Waitall` had all but the last forgotten, and their
/// completions counted as unmatched.
#[test]
fn a_shared_request_handle_is_kept_once_per_post() {
    let mut m = ReqMap::new();
    let shared = 0x7000_1000;
    for peer in 0..5 {
        m.insert(ReqInfo {
            handle: shared,
            peer,
            ..ReqInfo::EMPTY
        });
    }
    m.insert(ReqInfo {
        handle: 0x9000,
        ..ReqInfo::EMPTY
    });
    let mut peers = Vec::new();
    for _ in 0..5 {
        let i = m.find(shared).expect("one slot per post");
        peers.push(m.at(i).expect("slot").peer);
        m.remove_at(i);
    }
    peers.sort_unstable();
    assert_eq!(peers, vec![0, 1, 2, 3, 4]);
    assert!(m.find(shared).is_none());
    assert!(m.find(0x9000).is_some());
    // A persistent request re-posted under the same handle replaces it.
    let p = ReqInfo {
        handle: 0xa000,
        persistent: true,
        ..ReqInfo::EMPTY
    };
    m.insert(p);
    m.insert(ReqInfo { peer: 7, ..p });
    let i = m.find(0xa000).expect("present");
    m.remove_at(i);
    assert!(m.find(0xa000).is_none());
}

fn region(from: usize, to: usize) -> RegionKey {
    RegionKey {
        from: SiteRef::native(from),
        to: SiteRef::native(to),
        from_fid: 1,
        to_fid: 2,
    }
}

#[test]
fn regions_aggregate_per_pair_of_calls_and_fold_past_the_cap() {
    let mut t: Table<RegionStats> = Table::new(2);
    for i in 0..30u64 {
        // Three pairs alternate; the same `to` with two `from`s are two regions.
        let k = match i % 3 {
            0 => region(0x10, 0x20),
            1 => region(0x30, 0x20),
            _ => region(0x20, 0x10),
        };
        t.add(&k, 1000 + i);
    }
    let a = t
        .entries
        .iter()
        .find(|e| e.key == region(0x10, 0x20))
        .expect("first pair");
    assert_eq!(a.count(), 10);
    assert_eq!(a.sum(), (0..10).map(|j| 1000 + 3 * j).sum::<u64>());
    assert_eq!(
        a.histogram().buckets.iter().map(|b| b.count()).sum::<u64>(),
        10
    );
    assert!(t.entries.iter().any(|e| e.key == region(0x30, 0x20)));
    let other = t
        .entries
        .iter()
        .find(|e| e.key.from_fid == FID_OTHER)
        .expect("fold entry");
    assert_eq!(
        (other.count(), t.folded_calls, t.folded_keys()),
        (10, 10, 1)
    );
}

/// A fresh thread state whose region started at t = 99: a test's own, never
/// freed.
fn state_in_a_region() -> &'static mut ThreadState {
    let ts = ThreadState::create();
    // SAFETY: a fresh state, leaked to the test that asked for it.
    let ts = unsafe { &mut *ts };
    ts.region_start = RegionStart {
        t: 99,
        folded_site: SiteRef::native(0x40),
        folded_fid: 3,
    };
    ts
}

#[test]
fn a_new_state_word_ends_the_threads_region() {
    let ts = state_in_a_region();
    // A pause and a resume (`MPI_Pcontrol(0)`, `(1)`): same reset epoch.
    let st = ts.seen | ENABLED;
    let resumed = (st & !PAUSES) | (st.wrapping_add(PAUSE_STEP) & PAUSES);
    ts.sync(resumed);
    assert_eq!(ts.region_start.t, 0);
    assert_eq!(ts.seen, resumed);
}

#[test]
fn a_freed_datatype_empties_the_size_cache_and_keeps_the_region() {
    let ts = state_in_a_region();
    ts.types.last = (0x1234, 8);
    ts.types.slots[5] = (0x1234, 8);
    let st = ts.seen.wrapping_add(TYPE_FREED_STEP);
    ts.sync(st);
    assert_eq!(ts.types.last.0, usize::MAX);
    assert!(ts.types.slots.iter().all(|s| s.0 == usize::MAX));
    // Only the low half of the word ends a region (a pause, a reset).
    assert_eq!(ts.region_start.t, 99);
    assert_eq!(ts.seen, st);
}

#[test]
fn region_octaves_keep_counts_and_sums_exact_and_each_pass_in_its_octave() {
    let mut t: Table<RegionStats> = Table::new(4);
    let k = region(0x10, 0x20);
    let durations = [0u64, 1, 2, 3, 1000, 1023, 1024, 5_000_000, u64::MAX / 2];
    for &d in &durations {
        t.add(&k, d);
    }
    let r = &t.entries[0];
    assert_eq!(r.count(), durations.len() as u64);
    assert_eq!(
        r.sum(),
        durations.iter().fold(0u64, |s, &d| s.wrapping_add(d))
    );
    let h = r.histogram();
    assert_eq!(
        h.buckets.iter().map(|b| b.1).sum::<u64>(),
        durations.len() as u64
    );
    // 1000 and 1023 share the octave [512, 1024); 1024 starts the next.
    let (lo, hi) = mpiover_common::histogram::bucket_bounds(
        mpiover_common::histogram::bucket_index(1011) as usize,
    );
    let b = h
        .buckets
        .iter()
        .find(|b| b.2 == 2023)
        .expect("the octave of 1000 and 1023");
    assert_eq!(b.1, 2);
    assert!(
        lo <= 1011 && 1011 < hi && b.0 as usize == mpiover_common::histogram::bucket_index(1011)
    );
    assert!(h.buckets.iter().any(|b| (b.1, b.2) == (1, 1024)));
}

/// A completion's counts: the receive and send counts added as one word
/// never carry into each other, and every count stops at `u16::MAX` (a call
/// that completed more requests than that).
#[test]
fn completion_counts_add_by_kind_and_saturate() {
    use super::completion::merge_done;
    use super::event::Ev;
    use super::requests::{NRECV_1, NSEND_1};
    let recv = ReqInfo {
        counts: NRECV_1,
        recv: true,
        ..ReqInfo::EMPTY
    };
    let send = ReqInfo {
        counts: NSEND_1,
        ..ReqInfo::EMPTY
    };
    let coll = ReqInfo::EMPTY;
    let mut ev = Ev::new(1, SiteRef::native(0x40));
    for r in [&recv, &recv, &send, &coll] {
        merge_done(&mut ev, r, 8, 1);
    }
    let k = ev.key;
    assert_eq!((k.nreq, k.nrecv, k.nsend), (4, 2, 1));
    assert_eq!((k.role, k.spare), (Role::None, [0; 5]));
    // Receives alone, past the limit: nreq and nrecv stop at the maximum,
    // nsend stays 0 (no carry out of nrecv).
    let mut ev = Ev::new(1, SiteRef::native(0x40));
    for _ in 0..70_000 {
        merge_done(&mut ev, &recv, 8, 1);
    }
    let k = ev.key;
    assert_eq!((k.nreq, k.nrecv, k.nsend), (u16::MAX, u16::MAX, 0));
    // Sends past the limit: nothing spills into the role.
    let mut ev = Ev::new(1, SiteRef::native(0x40));
    for _ in 0..70_000 {
        merge_done(&mut ev, &send, 8, 1);
    }
    let k = ev.key;
    assert_eq!((k.nreq, k.nrecv, k.nsend), (u16::MAX, 0, u16::MAX));
    assert_eq!((k.role, k.spare), (Role::None, [0; 5]));
}

/// The memo of recent sites keeps entries' addresses: every call must land
/// in its own key's entry however the sites share memo slots (200 sites on
/// 64 slots, sites 64 bytes apart sharing one), as the table fills to its
/// cap and folds, and after a reset.
#[test]
fn memo_finds_each_sites_entry_as_the_table_fills_and_after_a_reset() {
    let mut t: Table<KeyStats> = Table::new(150);
    for round in 0..2 {
        for i in 0..3000u64 {
            let site = 0x4000 + (i % 200) as usize * if i % 3 == 0 { 64 } else { 24 };
            t.add(&key(site, i % 200), 1 + i % 7);
        }
        let mut by_key: std::collections::HashMap<CallKey, u64> = Default::default();
        for i in 0..3000u64 {
            let site = 0x4000 + (i % 200) as usize * if i % 3 == 0 { 64 } else { 24 };
            *by_key.entry(key(site, i % 200)).or_default() += 1;
        }
        for e in t.entries.iter().filter(|e| e.key.fid != FID_OTHER) {
            assert_eq!(Some(&e.count()), by_key.get(&e.key), "round {round}");
        }
        let total: u64 = t.entries.iter().map(|e| e.count()).sum();
        assert_eq!(total, 3000, "round {round}");
        assert_eq!(
            t.entries.len(),
            151,
            "round {round}: the cap and the fold entry"
        );
        t.clear();
        assert!(t.entries.is_empty());
    }
}

/// The regions between calls, found through the keys' hints: a loop over
/// sites A, B and C whose third key folds (the table holds two) gives A -> B
/// and B -> C every pass, and C -> A (from a folded call, whose key has no
/// entry to take a hint from) every pass but the first, each with its own
/// time; no pass lands in another region.
#[test]
fn regions_through_hints_and_from_a_folded_call_get_every_pass() {
    let ts = state_in_a_region();
    ts.table = Table::new(2);
    ts.region_start.t = 0;
    let (a, b, c) = (0x1000, 0x2000, 0x3000);
    let mut t = 1_000;
    for _ in 0..10 {
        // Each call takes 5; the gaps before A, B and C are 7, 11 and 13.
        for (site, gap) in [(a, 7), (b, 11), (c, 13)] {
            t += gap;
            ts.add_call(&key(site, 8), 5, t, t + 5);
            t += 5;
        }
    }
    let pass = |from: usize, to: usize| {
        ts.regions
            .entries
            .iter()
            .find(|r| r.key.from == SiteRef::native(from) && r.key.to == SiteRef::native(to))
            .map(|r| (r.count(), r.sum()))
    };
    assert_eq!(pass(a, b), Some((10, 110)));
    assert_eq!(pass(b, c), Some((10, 130)));
    assert_eq!(pass(c, a), Some((9, 63)));
    let all: u64 = ts.regions.entries.iter().map(|r| r.count()).sum();
    assert_eq!(all, 29, "one pass per gap after the first call");
    assert_eq!(ts.table.folded_calls, 10);
}
