//! Online overhead hook (issue 4). When a key is created the interposer asks
//! once for the tmax of (function, p, bytes, role); with `Some((tmax_s,
//! out_of_range))` every call of the key adds max(0, t - tmax) to the key's
//! overhead sum and the record gets `tmax_s` / `overhead_s`.
//!
//! Stub until the profile format (`mpiover_common::profile`) exists: the
//! profile named by `MPIOVER_PROFILE` will be loaded at `MPI_Init` (see
//! `init.rs`) and looked up here. Must not panic, do I/O or call MPI.

/// tmax in seconds and whether the lookup fell outside the measured range.
pub fn tmax(_function: &str, _p: u32, _bytes: u64, _role: Option<&str>) -> Option<(f64, bool)> {
    None
}
