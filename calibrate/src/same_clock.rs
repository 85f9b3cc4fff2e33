//! Whether a rank reads rank 0's clock: the same kernel (boot id) and the same
//! time namespace mean one CLOCK_MONOTONIC, so the clock model of
//! [`crate::clock`] has nothing to learn (its module docs say why learning it
//! anyway costs accuracy).
use crate::mpi::{self, Comm};

/// What names this process's CLOCK_MONOTONIC: the kernel's boot id and the
/// time namespace; empty when the boot id cannot be read (then no rank is
/// taken to share a clock).
fn clock_identity() -> String {
    let Ok(boot) = std::fs::read_to_string("/proc/sys/kernel/random/boot_id") else {
        return String::new();
    };
    // Kernels without time namespaces have no such link: one namespace for all.
    let ns = std::fs::read_link("/proc/self/ns/time")
        .map(|l| l.display().to_string())
        .unwrap_or_default();
    format!("{}/{ns}", boot.trim())
}

/// Whether this rank reads rank 0's clock: rank 0 broadcasts its clock's
/// identity (nothing when its clock is skewed for a test), every rank
/// compares its own (none unless `unskewed`). Collective over `world`.
pub fn shares_root_clock(unskewed: bool, world: Comm) -> bool {
    const WIDTH: usize = 128;
    let mine = if unskewed {
        clock_identity()
    } else {
        String::new()
    };
    let mut buf = [0u8; WIDTH];
    if mpi::rank(world) == 0 && mine.len() <= WIDTH {
        buf[..mine.len()].copy_from_slice(mine.as_bytes());
    }
    mpi::bcast_bytes(&mut buf, 0, world);
    let root = buf.split(|&b| b == 0).next().unwrap_or(&[]);
    !mine.is_empty() && root == mine.as_bytes()
}
