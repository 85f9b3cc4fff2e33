//! The binomial tree the job log is merged up (`merge`) and the
//! sites are agreed on (`merge_sites`): ranks, and framed byte
//! transfers on the private communicator. Its own module so that both name
//! it and neither names the other.

use std::os::raw::c_int;

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

const TAG: c_int = 0x6d70;
const HEAD: usize = 16;

fn lowbit(r: usize) -> usize {
    r & r.wrapping_neg()
}

/// The children of `r` in the binomial tree of `p` ranks rooted at 0, with
/// the size of each one's subtree.
pub(crate) fn children(r: usize, p: usize) -> Vec<(usize, usize)> {
    let mut v = Vec::new();
    let mut d = 1;
    while (r == 0 || d < lowbit(r)) && r + d < p {
        let c = r + d;
        v.push((c, lowbit(c).min(p - c)));
        d <<= 1;
    }
    v
}

pub(crate) fn parent(r: usize) -> usize {
    r - lowbit(r)
}

/// One point-to-point transfer of bytes on the private communicator.
pub(crate) struct Comm(pub(crate) MPI_Comm);

/// A buffer's length as an MPI count.
fn count(buf: &[u8]) -> Result<c_int, String> {
    c_int::try_from(buf.len()).map_err(|_| "a frame over 2 GiB".to_string())
}

/// An MPI return code as a result.
fn done(rc: c_int, what: &str, peer: usize) -> Result<(), String> {
    (rc == 0)
        .then_some(())
        .ok_or(format!("{what} rank {peer} failed ({rc})"))
}

impl Comm {
    fn send(&self, buf: &[u8], to: usize) -> Result<(), String> {
        let (n, t, p) = (count(buf)?, consts::byte(), to as c_int);
        // SAFETY: `buf` holds `n` bytes; the communicator is our duplicate.
        let rc = unsafe { PMPI_Send(buf.as_ptr().cast(), n, t, p, TAG, self.0) };
        done(rc, "MPI_Send to", to)
    }

    fn recv(&self, buf: &mut [u8], from: usize) -> Result<(), String> {
        let (n, t, p, st) = (
            count(buf)?,
            consts::byte(),
            from as c_int,
            consts::status_ignore(),
        );
        // SAFETY: `buf` has room for `n` bytes; the status is ignored.
        let rc = unsafe { PMPI_Recv(buf.as_mut_ptr().cast(), n, t, p, TAG, self.0, st) };
        done(rc, "MPI_Recv from", from)
    }

    /// One frame from `from`: (rank, payload).
    pub(crate) fn recv_frame(&self, from: usize) -> Result<(u32, Vec<u8>), String> {
        let mut head = [0u8; HEAD];
        self.recv(&mut head, from)?;
        let rank = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let mut len = [0u8; 8];
        len.copy_from_slice(&head[8..16]);
        let mut payload = vec![0u8; u64::from_le_bytes(len) as usize];
        self.recv(&mut payload, from)?;
        Ok((rank, payload))
    }

    pub(crate) fn send_frame(&self, rank: u32, payload: &[u8], to: usize) -> Result<(), String> {
        let mut head = [0u8; HEAD];
        head[..4].copy_from_slice(&rank.to_le_bytes());
        head[8..].copy_from_slice(&(payload.len() as u64).to_le_bytes());
        self.send(&head, to)?;
        self.send(payload, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every rank but the root is in exactly one subtree of its parent, and
    /// the subtree sizes add up: the root receives P - 1 frames.
    #[test]
    fn the_binomial_tree_covers_every_rank_once() {
        for p in 1..=70 {
            let mut seen = vec![0; p];
            for r in 0..p {
                for (c, n) in children(r, p) {
                    assert_eq!(parent(c), r, "p {p}");
                    seen[c] += 1;
                    let below: usize = children(c, p).iter().map(|x| x.1).sum();
                    assert_eq!(n, 1 + below, "p {p} child {c}");
                }
            }
            assert!(seen[1..].iter().all(|&s| s == 1), "p {p}: {seen:?}");
            let at_root: usize = children(0, p).iter().map(|x| x.1).sum();
            assert_eq!(at_root, p - 1);
            let depth = (0..p).map(|mut r| {
                let mut d = 0;
                while r != 0 {
                    r = parent(r);
                    d += 1;
                }
                d
            });
            assert!(depth.max().unwrap_or(0) <= (p as f64).log2().ceil() as usize);
        }
    }
}
