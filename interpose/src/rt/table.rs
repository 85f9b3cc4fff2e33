//! Per-thread aggregation: an open-addressing table of keys, each with its
//! statistics, capped: keys past the cap fold into one `other` entry. The
//! same table holds the MPI calls' keys ([`super::KeyStats`]) and the
//! regions between calls ([`super::RegionStats`]).

/// What a table entry keeps for its key.
pub trait Stats {
    type Key: Copy + Eq;
    fn key(&self) -> &Self::Key;
    /// The call site the key belongs to (the table's memo of recent keys is
    /// indexed by it).
    fn site_bits(k: &Self::Key) -> usize;
    fn hash(k: &Self::Key) -> u64;
    /// A new entry, nothing added yet (off the hot path: once per key).
    fn fresh(k: Self::Key) -> Self;
    fn add(&mut self, dt: u64);
    /// The key of the entry past-the-cap keys fold into.
    fn fold_key() -> Self::Key;
    /// An entry whose key no call has: what the memo's empty slots point
    /// to, so that a look-up compares keys without testing for none first.
    fn placeholder() -> Self;
}

/// Open-addressing table of keys (linear probing, no deletion), capped.
pub struct Table<S: Stats> {
    pub(crate) slots: Box<[u32]>,
    pub(crate) shift: u32,
    /// Allocated at `new` for every entry the table can hold (`cap` and the
    /// fold entry) and never grown past it, so that its elements never
    /// move: the memo keeps their addresses.
    pub entries: Vec<S>,
    pub(crate) cap: usize,
    /// The latest entry of each call site (by a few bits of its address):
    /// a loop that alternates between sites (post, post, complete) finds
    /// its key here without hashing it. Its address (into `entries`, or
    /// `placeholder` for none), and its index (`usize::MAX` for none): the
    /// hot path compares the key at the address and takes the index, with
    /// no bounds check nor multiply to find the entry.
    pub(crate) recent: [*mut S; RECENT],
    pub(crate) recent_idx: [usize; RECENT],
    /// What an empty memo slot points to (`Stats::placeholder`): on the
    /// heap, so that its address stays when the table moves, and held as
    /// the raw pointer the memo copies (freed by `Drop`).
    placeholder: *mut S,
    /// Index of the fold entry, once created.
    pub(crate) other: usize,
    pub folded_calls: u64,
    pub(crate) fold_bits: Vec<u64>,
}

pub(crate) const FOLD_BITS: usize = 1 << 16;
pub(crate) const RECENT: usize = 64;

/// The memo's slot of a site: its low bits. Call sites less than 64 bytes
/// apart (a loop's posts and completion) never share a slot, and Python
/// sites (indices in order of discovery) fill the slots in turn; sites
/// further apart share one as often as under any other six bits, and the
/// slot costs one instruction.
#[inline(always)]
pub(crate) fn recent_slot(ra: usize) -> usize {
    ra & (RECENT - 1)
}

impl<S: Stats> Table<S> {
    pub(crate) fn new(cap: usize) -> Table<S> {
        let cap = cap.clamp(1, 1 << 24);
        let nslots = (cap * 2).next_power_of_two().max(16);
        let placeholder = Box::into_raw(Box::new(S::placeholder()));
        Table {
            slots: vec![0u32; nslots].into_boxed_slice(),
            shift: 64 - nslots.trailing_zeros(),
            entries: Vec::with_capacity(cap + 1),
            cap,
            recent: [placeholder; RECENT],
            recent_idx: [usize::MAX; RECENT],
            placeholder,
            other: usize::MAX,
            folded_calls: 0,
            fold_bits: Vec::new(),
        }
    }

    /// Adds a call under `key`; returns the index of its entry, or
    /// `usize::MAX` when the key was folded into `other`.
    #[inline(always)]
    pub(crate) fn add(&mut self, key: &S::Key, dt: u64) -> usize {
        self.add_entry(key, dt).0
    }

    /// As `add`, with the key's entry (none when folded), so that the
    /// caller reads it without indexing the entries again.
    #[inline(always)]
    pub(crate) fn add_entry(&mut self, key: &S::Key, dt: u64) -> (usize, Option<&mut S>) {
        let r = recent_slot(S::site_bits(key));
        let last = self.recent[r];
        // SAFETY: a memo slot holds the placeholder's address or an entry's
        // (`remember`), and neither moves: the placeholder is on the heap and the
        // entries' buffer never grows past its first capacity (`entries`).
        // Only this thread touches its table, and no reference to an entry
        // is alive across this call (the returned one borrows `self`).
        let e = unsafe { &mut *last };
        // The placeholder's key differs from every call's, so a slot
        // without an entry misses here too.
        if e.key() != key {
            // The key by value: the hot path never needs it in memory.
            let idx = self.add_slow(*key, dt);
            self.remember(r, idx);
            return (idx, self.entries.get_mut(idx));
        }
        e.add(dt);
        (self.recent_idx[r], Some(e))
    }

    /// Memo slot `r` now names entry `idx` (none when folded).
    #[inline(never)]
    fn remember(&mut self, r: usize, idx: usize) {
        let r = r & (RECENT - 1);
        if idx < self.entries.len() {
            // In bounds, so within the buffer that never moves.
            self.recent[r] = self.entries.as_mut_ptr().wrapping_add(idx);
            self.recent_idx[r] = idx;
        } else {
            self.recent[r] = self.placeholder;
            self.recent_idx[r] = usize::MAX;
        }
    }

    #[inline(never)]
    pub(crate) fn add_slow(&mut self, key: S::Key, dt: u64) -> usize {
        let key = &key;
        let h = S::hash(key);
        let mask = self.slots.len() - 1;
        let mut i = (h >> self.shift) as usize;
        loop {
            let s = match self.slots.get(i & mask) {
                Some(&s) => s,
                None => return usize::MAX,
            };
            if s == 0 {
                break;
            }
            let idx = s as usize - 1;
            if let Some(e) = self.entries.get_mut(idx) {
                if e.key() == key {
                    e.add(dt);
                    return idx;
                }
            }
            i += 1;
        }
        // A new key. Within the capacity the entries were allocated with
        // (`cap`, and the fold entry): they never move.
        if self.entries.len() < self.cap {
            let idx = self.entries.len();
            self.entries.push(S::fresh(*key));
            if let Some(slot) = self.slots.get_mut(i & mask) {
                *slot = idx as u32 + 1;
            }
            if let Some(e) = self.entries.get_mut(idx) {
                e.add(dt);
            }
            return idx;
        }
        self.fold(h, dt);
        usize::MAX
    }

    #[cold]
    pub(crate) fn fold(&mut self, h: u64, dt: u64) {
        if self.other == usize::MAX {
            self.other = self.entries.len();
            self.entries.push(S::fresh(S::fold_key()));
        }
        if let Some(e) = self.entries.get_mut(self.other) {
            e.add(dt);
        }
        self.folded_calls += 1;
        if self.fold_bits.is_empty() {
            self.fold_bits = vec![0u64; FOLD_BITS / 64];
        }
        let b = (h as usize) & (FOLD_BITS - 1);
        if let Some(w) = self.fold_bits.get_mut(b / 64) {
            *w |= 1 << (b % 64);
        }
    }

    /// Estimated number of distinct folded keys (linear counting).
    pub fn folded_keys(&self) -> u64 {
        if self.fold_bits.is_empty() {
            return 0;
        }
        let set: u64 = self.fold_bits.iter().map(|w| w.count_ones() as u64).sum();
        let m = FOLD_BITS as f64;
        let zero = (FOLD_BITS as u64 - set).max(1) as f64;
        (m * (m / zero).ln()).round() as u64
    }

    pub(crate) fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = 0);
        self.entries.clear();
        self.recent = [self.placeholder; RECENT];
        self.recent_idx = [usize::MAX; RECENT];
        self.other = usize::MAX;
        self.folded_calls = 0;
        self.fold_bits.clear();
    }
}

impl<S: Stats> Drop for Table<S> {
    fn drop(&mut self) {
        // SAFETY: made by `Box::into_raw` in `new`, freed only here; the memo
        // that copies it goes with the table.
        drop(unsafe { Box::from_raw(self.placeholder) });
    }
}
