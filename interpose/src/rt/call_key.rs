//! The MPI calls' key (call site, function, p, bytes, peer, ...) and what
//! is kept per key: counts, times, overhead against tmax, a histogram.

use crate::names::FN_NAMES;
use crate::site_ref::SiteRef;

use super::buckets::Buckets;
use super::state::{Role, FID_OTHER, NONE_FN, NONE_PEER};
use super::table::Stats;

/// The aggregation key. Laid out (`repr(C)`, no padding: the last word's
/// spare bytes are a field, always zero) as six whole words, so that the
/// hot path's compare (`eq`) is six word compares without branches, and an
/// event that keeps its key in memory (a completion's, updated per request)
/// compares each word with one load rather than packing its fields first.
#[repr(C, align(8))]
#[derive(Clone, Copy, Debug)]
pub struct CallKey {
    pub ra: SiteRef,
    pub post_ra: SiteRef,
    pub bytes: u64,
    pub p: u32,
    pub peer: i32,
    pub fid: u16,
    pub completes: u16,
    /// Completions: requests completed per call, and of them point-to-point
    /// receives and sends (saturating); 0 for other functions.
    pub nreq: u16,
    pub nrecv: u16,
    pub nsend: u16,
    pub role: Role,
    /// The last word's spare bytes: zero, so that every byte of the key is
    /// a field's (see `words`).
    pub spare: [u8; 5],
}

impl CallKey {
    /// The key of six words laid out as `words` reads them.
    #[inline(always)]
    pub(crate) fn from_words(w: [u64; 6]) -> CallKey {
        // The role's byte must be a `Role`: `words` of a key have one.
        debug_assert!((w[5] >> 16) as u8 <= Role::NonRoot as u8);
        // SAFETY: a key is 48 bytes with every byte a field's (asserted
        // below), all integers or `SiteRef`s (any value is valid) but the
        // role, whose byte the callers take from a `Role`.
        unsafe { std::mem::transmute::<[u64; 6], CallKey>(w) }
    }

    /// Adds a completed request's point-to-point `counts` (`ReqInfo::counts`:
    /// `NRECV_1` or `NSEND_1`, or 0) to `nrecv` and `nsend` with one add of
    /// the two as a 32-bit word. The caller keeps `nreq` below `u16::MAX`
    /// (saturated keys take `add_p2p_saturating`): `nrecv` and `nsend` count
    /// some of the `nreq` requests, so neither can carry into the next.
    #[inline(always)]
    pub(crate) fn add_p2p(&mut self, counts: u32) {
        let base = (self as *mut CallKey).cast::<u8>();
        // SAFETY: `nrecv` and `nsend` are adjacent `u16`s of `self`
        // (asserted below), reached through a pointer to the whole key;
        // plain integers, read and written unaligned.
        unsafe {
            let w = base.add(std::mem::offset_of!(CallKey, nrecv)).cast::<u32>();
            w.write_unaligned(w.read_unaligned().wrapping_add(counts));
        }
    }

    /// `add_p2p` for a key whose counts may be saturated.
    #[cold]
    #[inline(never)]
    pub(crate) fn add_p2p_saturating(&mut self, counts: u32) {
        self.nrecv = self.nrecv.saturating_add(counts as u16);
        self.nsend = self.nsend.saturating_add((counts >> 16) as u16);
    }
}

const _: () =
    assert!(std::mem::offset_of!(CallKey, nsend) == std::mem::offset_of!(CallKey, nrecv) + 2);

// Six words and no padding: `words` reads the key as `[u64; 6]`.
const _: () = assert!(std::mem::size_of::<CallKey>() == 48);
const _: () = assert!(std::mem::align_of::<CallKey>() == 8);

impl CallKey {
    /// The key's six words.
    #[inline(always)]
    fn words(&self) -> [u64; 6] {
        let spare = self.spare;
        [
            self.ra.bits() as u64,
            self.post_ra.bits() as u64,
            self.bytes,
            self.p as u64 | (self.peer as u32 as u64) << 32,
            self.fid as u64
                | (self.completes as u64) << 16
                | (self.nreq as u64) << 32
                | (self.nrecv as u64) << 48,
            self.nsend as u64
                | (self.role as u8 as u64) << 16
                | (spare[0] as u64) << 24
                | (spare[1] as u64) << 32
                | (spare[2] as u64) << 40
                | (spare[3] as u64) << 48
                | (spare[4] as u64) << 56,
        ]
    }
}

impl PartialEq for CallKey {
    /// Every field equal, as a derived `eq`, computed without a branch per
    /// field (a key is compared on every recorded call).
    #[inline(always)]
    fn eq(&self, o: &CallKey) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use core::arch::x86_64::*;
            let (a, b) = (
                self as *const CallKey as *const __m128i,
                o as *const CallKey as *const __m128i,
            );
            // SAFETY: both keys are 48 bytes (three 16-byte loads, unaligned
            // ones) with every byte a field's (no padding, asserted above);
            // SSE2 is part of x86_64.
            unsafe {
                let e0 = _mm_cmpeq_epi8(_mm_loadu_si128(a), _mm_loadu_si128(b));
                let e1 = _mm_cmpeq_epi8(_mm_loadu_si128(a.add(1)), _mm_loadu_si128(b.add(1)));
                let e2 = _mm_cmpeq_epi8(_mm_loadu_si128(a.add(2)), _mm_loadu_si128(b.add(2)));
                _mm_movemask_epi8(_mm_and_si128(_mm_and_si128(e0, e1), e2)) == 0xffff
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let (a, b) = (self.words(), o.words());
            a.iter().zip(b.iter()).fold(0, |d, (x, y)| d | (x ^ y)) == 0
        }
    }
}

/// Hashes what `eq` compares (the writer's maps; the table has its own
/// `hash`).
impl std::hash::Hash for CallKey {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.words().hash(h)
    }
}

impl Eq for CallKey {}

impl CallKey {
    /// What a completion key completed per call; `None` for other
    /// functions (not on the hot path: once per new key and at the end).
    pub fn requests(&self, function: &str) -> Option<mpiover_common::completion::Requests> {
        mpiover_common::completion::is_completion(function).then_some(
            mpiover_common::completion::Requests {
                n: self.nreq as u32,
                recv: self.nrecv as u32,
                send: self.nsend as u32,
            },
        )
    }

    #[inline(always)]
    pub(crate) fn hash(&self) -> u64 {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = (self.ra.bits() as u64).wrapping_mul(K);
        h = (h.rotate_left(5) ^ self.bytes).wrapping_mul(K);
        h = (h.rotate_left(5) ^ (((self.p as u64) << 32) | self.peer as u32 as u64))
            .wrapping_mul(K);
        h = (h.rotate_left(5)
            ^ (self.fid as u64 | ((self.completes as u64) << 16) | ((self.role as u64) << 32)))
            .wrapping_mul(K);
        h = (h.rotate_left(5) ^ self.post_ra.bits() as u64).wrapping_mul(K);
        h = (h.rotate_left(5)
            ^ (self.nreq as u64 | ((self.nrecv as u64) << 16) | ((self.nsend as u64) << 32)))
            .wrapping_mul(K);
        h
    }
}

/// `KeyStats::region_from` of a key without a region hint: no entry's
/// index (a table holds at most 2^24 keys) and not a folded call's
/// (`usize::MAX` as `u32`), so that no previous call matches it.
pub(crate) const NO_REGION: u32 = u32::MAX - 1;

/// One key's statistics, durations in raw timer units. Its count and sum
/// are its histogram's (`count`, `sum`): every call is added to a bucket,
/// so a count and sum of their own were two adds per call to say the same.
pub struct KeyStats {
    pub key: CallKey,
    pub min: u64,
    pub max: u64,
    /// Sum of max(0, t - tmax) (raw units), when `tmax` is known.
    pub over: u64,
    /// tmax in raw units, `u64::MAX` when there is none.
    pub tmax: u64,
    pub tmax_s: Option<mpiover_common::profile::Lookup>,
    /// The rule tmax was composed by (`mpiover_common::completion`), or why
    /// there is none, when a profile is in use.
    pub tmax_composed: Option<&'static str>,
    pub tmax_missing: Option<&'static str>,
    /// Posts: the site of the completion that completed this key's
    /// requests (0: none seen yet; the latest one wins).
    pub done_ra: SiteRef,
    /// The region that ended at this key's call last: the entry of the key
    /// whose call opened it (`region_from`, `NO_REGION` when none) and the
    /// region's entry (`region_in`, the address of a `RegionStats` in the
    /// thread's region table, whose entries never move; null when none;
    /// untyped here, as this module is below the regions'). A region's ends
    /// are the site and function of two keys, so when the previous call's
    /// entry is `region_from` again the region is at `region_in`, found
    /// with one compare. Both tables are only ever cleared together
    /// (`ThreadState::reset`), so the address outlives the hint.
    pub region_from: u32,
    pub region_in: *mut (),
    pub hist: Buckets,
}

impl KeyStats {
    pub(crate) fn new(key: CallKey) -> KeyStats {
        let resolved = if key.fid == FID_OTHER {
            None
        } else {
            let completes = if key.completes != NONE_FN {
                FN_NAMES.get(key.completes as usize).copied()
            } else {
                None
            };
            let function = FN_NAMES.get(key.fid as usize).copied().unwrap_or("?");
            crate::overhead::tmax(&mpiover_common::completion::KeyRef {
                function,
                p: key.p,
                bytes: key.bytes,
                role: role_name(key.role),
                completes,
                requests: key.requests(function),
            })
        };
        let (tmax_s, tmax_composed, tmax_missing) = match resolved {
            Some(Ok(r)) => (Some(r.lookup), r.composed, None),
            Some(Err(m)) => (None, None, Some(m.0)),
            None => (None, None, None),
        };
        let tmax = match tmax_s {
            Some(l) if l.tmax_s.is_finite() && l.tmax_s >= 0.0 => {
                let t = l.tmax_s;
                let u = crate::timer::unit_quick();
                if u > 0.0 {
                    (t / u) as u64
                } else {
                    u64::MAX
                }
            }
            _ => u64::MAX,
        };
        KeyStats {
            key,
            min: u64::MAX,
            max: 0,
            over: 0,
            tmax,
            tmax_s,
            tmax_composed,
            tmax_missing,
            done_ra: SiteRef::NONE,
            region_from: NO_REGION,
            region_in: std::ptr::null_mut(),
            hist: Buckets::default(),
        }
    }

    /// Calls added (its buckets' counts; off the hot path).
    pub fn count(&self) -> u64 {
        self.hist.v.iter().map(|b| b[0]).sum()
    }

    /// Their total time, raw units (its buckets' sums, wrapping as each
    /// bucket's does).
    pub fn sum(&self) -> u64 {
        self.hist.v.iter().fold(0u64, |s, b| s.wrapping_add(b[1]))
    }

    #[inline(always)]
    pub(crate) fn add(&mut self, dt: u64) {
        // Branches rather than `min`/`max`: once a key has a few calls they
        // seldom move, and a taken-never store costs nothing, where the
        // select always loads, compares, selects and stores (one
        // instruction more each).
        if dt < self.min {
            self.min = dt;
        }
        if dt > self.max {
            self.max = dt;
        }
        // Without a profile `tmax` is `u64::MAX`, which no duration
        // exceeds: one compare serves both the missing profile and a call
        // within its tmax.
        if dt > self.tmax {
            self.over = self.over.wrapping_add(dt - self.tmax);
        }
        self.hist.add(dt);
    }

    pub fn reset(&mut self) {
        self.min = u64::MAX;
        self.max = 0;
        self.over = 0;
        self.hist.clear();
    }
}

pub fn role_name(r: Role) -> Option<&'static str> {
    r.name()
}

impl Stats for KeyStats {
    type Key = CallKey;
    #[inline(always)]
    fn key(&self) -> &CallKey {
        &self.key
    }
    #[inline(always)]
    fn site_bits(k: &CallKey) -> usize {
        k.ra.bits()
    }
    #[inline(always)]
    fn hash(k: &CallKey) -> u64 {
        k.hash()
    }
    fn fresh(k: CallKey) -> KeyStats {
        KeyStats::new(k)
    }
    #[inline(always)]
    fn add(&mut self, dt: u64) {
        KeyStats::add(self, dt)
    }
    fn placeholder() -> KeyStats {
        // A spare byte set: no call's key has one (they are always zero).
        let mut key = Self::fold_key();
        key.spare[0] = 1;
        KeyStats::new(key)
    }
    fn fold_key() -> CallKey {
        CallKey {
            ra: SiteRef::NONE,
            post_ra: SiteRef::NONE,
            bytes: 0,
            p: 0,
            peer: NONE_PEER,
            fid: FID_OTHER,
            completes: NONE_FN,
            role: Role::None,
            nreq: 0,
            nrecv: 0,
            nsend: 0,
            spare: [0; 5],
        }
    }
}
