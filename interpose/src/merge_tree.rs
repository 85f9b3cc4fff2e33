//! The binomial tree the job log is merged up (`merge`) and the
//! sites are agreed on (`merge_sites`): ranks, and framed byte
//! transfers on the private communicator. Its own module so that both name
//! it and neither names the other.

use std::os::raw::c_int;

use mpiover_mpisys::consts;
use mpiover_mpisys::*;

const TAG: c_int = 0x6d70;
const HEAD: usize = 16;

pub(crate) use mpiover_aggregate::tree::{children, parent};

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
