//! Request and status arrays of multi-request calls, and the Fortran forms
//! of requests, statuses and indices.

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

use crate::handle::Handle;

use super::guard::Guard;
use super::state::ToCount;

impl Guard {
    /// Copies `n` request handles (they become `MPI_REQUEST_NULL` as they
    /// complete).
    ///
    /// # Safety
    /// `reqs` is null or points to at least `n` requests.
    pub unsafe fn snap(&mut self, n: i32, reqs: *const MPI_Request) {
        self.snap_with(n, !reqs.is_null(), |i| {
            // SAFETY: `i < n` and `reqs` holds `n` requests (the contract).
            // Read as volatile so that the copy stays a plain loop: the
            // compiler would vectorize it, with a set-up that costs more
            // than a few handles take to copy.
            unsafe { reqs.add(i).read_volatile().bits() }
        });
    }

    /// `n` Fortran request handles, as C bits.
    ///
    /// # Safety
    /// `reqs` is null or points to at least `n` Fortran requests.
    pub unsafe fn snap_f(&mut self, n: i32, reqs: *const crate::fort_conv::Fint) {
        self.snap_with(n, !reqs.is_null(), |i| {
            // SAFETY: `i < n` and `reqs` holds `n` Fortran requests (the
            // contract); the conversion is MPI's own.
            unsafe { crate::fort_conv::req_bits(reqs.add(i)) }
        });
    }

    /// The snapshot of `n` requests, the `i`-th read by `bits_of(i)`.
    fn snap_with(&mut self, n: i32, present: bool, bits_of: impl Fn(usize) -> usize) {
        let snap = &mut self.ts().snap;
        snap.clear();
        if !present || n <= 0 {
            return;
        }
        let n = n as usize;
        // Grown once to the largest count seen; then a plain copy (an
        // `extend` set up for long arrays costs more than it copies for
        // the usual one or two requests), written in place with the length
        // set once (a push per handle stores the length and checks the
        // capacity each time).
        if snap.capacity() < n {
            snap.reserve(n);
        }
        let n = n.min(snap.capacity());
        let p = snap.as_mut_ptr();
        // SAFETY: `i` is below `n`, so below the capacity.
        let put = |i: usize| unsafe { p.add(i).write(bits_of(i)) };
        // The usual one or two requests without a loop: the compiler
        // unrolls one, with a set-up that costs more than they take.
        match n {
            1 => put(0),
            2 => {
                put(0);
                put(1);
            }
            _ => (0..n).for_each(put),
        }
        // SAFETY: the first `n` elements, within the capacity, were
        // written just above.
        unsafe { snap.set_len(n) };
    }

    /// Fortran statuses for `n` requests: the caller's, or the tool's own
    /// when the caller passed `MPI_STATUSES_IGNORE`.
    pub fn fstatuses(
        &mut self,
        n: i32,
        st: *mut crate::fort_conv::Fint,
    ) -> *mut crate::fort_conv::Fint {
        if !crate::fort_conv::is_statuses_ignore(st) {
            return st;
        }
        let ts = self.ts();
        let len = n.max(1) as usize * crate::fort_conv::STATUS_INTS;
        if ts.fstatuses.len() < len {
            ts.fstatuses.resize(len, 0);
        }
        ts.fstatuses.as_mut_ptr()
    }

    /// The first `n` Fortran statuses as C statuses.
    ///
    /// # Safety
    /// `st` points to at least `n` Fortran statuses.
    pub unsafe fn fstatuses_c(
        &mut self,
        n: i32,
        st: *const crate::fort_conv::Fint,
    ) -> *mut MPI_Status {
        let ts = self.ts();
        let n = n.max(1) as usize;
        if ts.statuses.len() < n {
            // SAFETY: MPI_Status is plain integers, for which zero bytes are a
            // valid value.
            ts.statuses.resize(n, unsafe { std::mem::zeroed() });
        }
        if !st.is_null() {
            let out = ts.statuses.as_mut_ptr();
            for i in 0..n {
                // SAFETY: `st` holds at least `n` Fortran statuses of
                // STATUS_INTS integers each (this function's contract), and
                // `ts.statuses` at least `n` C statuses (resized above).
                unsafe { PMPI_Status_f2c(st.add(i * crate::fort_conv::STATUS_INTS), out.add(i)) };
            }
        }
        ts.statuses.as_mut_ptr()
    }

    /// A completed request's Fortran index (from 1) as a C index (from 0).
    /// MPICH 4.0's `use mpi_f08` returns indices from 0 (pmodels/mpich#6270),
    /// so the index is checked against the request that became
    /// `MPI_REQUEST_NULL`: `v - 1` if that one did, else `v` if that one did,
    /// else `v - 1` (a persistent request stays).
    ///
    /// # Safety
    /// `ix` is null or points to an index; `reqs` to the snapped requests.
    pub unsafe fn findex(
        &mut self,
        ix: *const crate::fort_conv::Fint,
        reqs: *const crate::fort_conv::Fint,
    ) -> core::ffi::c_int {
        // SAFETY: `ix` is null or points to an index (this function's contract).
        let v = unsafe { crate::fort_conv::int(ix) };
        if v == consts::undefined() {
            return v;
        }
        let snap = &self.ts().snap;
        let freed = |k: i32| {
            if k < 0 || k as usize >= snap.len() || snap[k as usize] == 0 || reqs.is_null() {
                return false;
            }
            // SAFETY: `reqs` holds the snapped requests (this function's
            // contract), as many as `snap`, and `k` is below that.
            unsafe { crate::fort_conv::req_bits(reqs.add(k as usize)) == 0 }
        };
        if freed(v - 1) {
            v - 1
        } else if freed(v) {
            v
        } else if v >= 1 {
            v - 1
        } else {
            consts::undefined()
        }
    }

    /// `n` Fortran indices (from 1) as C indices (from 0), see `findex`.
    ///
    /// # Safety
    /// `ix` is null or points to at least `n` indices; `reqs` to the
    /// snapped requests.
    pub unsafe fn findices(
        &mut self,
        ix: *const crate::fort_conv::Fint,
        n: i32,
        reqs: *const crate::fort_conv::Fint,
    ) -> *mut core::ffi::c_int {
        // Fill the thread's reusable buffer directly (taken out while
        // `findex` borrows self): no allocation per call once it has grown.
        let mut buf = core::mem::take(&mut self.ts().findices);
        buf.clear();
        if !ix.is_null() && n > 0 && n != consts::undefined() {
            for i in 0..n as usize {
                // SAFETY: `ix` holds at least `n` indices and `reqs` the snapped
                // requests (this function's contract).
                buf.push(unsafe { self.findex(ix.add(i), reqs) });
            }
        }
        if buf.is_empty() {
            buf.push(0);
        }
        let ts = self.ts();
        ts.findices = buf;
        ts.findices.as_mut_ptr()
    }

    /// `wbytes` with Fortran datatypes.
    ///
    /// # Safety
    /// Both arrays are null or hold at least `n` elements.
    pub unsafe fn wbytes_f<T: ToCount>(
        &mut self,
        counts: *const T,
        types: *const crate::fort_conv::Fint,
        n: u32,
    ) -> u64 {
        if types.is_null() {
            return 0;
        }
        // SAFETY: as `wbytes`: both arrays hold `n` elements (the contract).
        unsafe { self.counts_times_sizes(counts, n, |i| crate::fort_conv::datatype(types.add(i))) }
    }

    #[inline]
    pub fn snapped(&mut self, i: i32) -> usize {
        if i < 0 {
            return 0;
        }
        self.ts().snap.get(i as usize).copied().unwrap_or(0)
    }

    /// Statuses for `n` requests: the caller's, or the tool's own when the
    /// caller passed `MPI_STATUSES_IGNORE`.
    pub fn statuses(&mut self, n: i32, statuses: *mut MPI_Status) -> *mut MPI_Status {
        if statuses != consts::statuses_ignore() && !statuses.is_null() {
            return statuses;
        }
        let ts = self.ts();
        let n = n.max(1) as usize;
        if ts.statuses.len() < n {
            // SAFETY: MPI_Status is plain old data.
            ts.statuses.resize(n, unsafe { std::mem::zeroed() });
        }
        ts.statuses.as_mut_ptr()
    }
}
