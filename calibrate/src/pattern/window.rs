//! One window of a pattern: the calls each rank makes, each timed on its own.

use std::ffi::{c_int, c_void};

use mpiover_mpisys as ffi;
use mpiover_mpisys::consts as c;

use super::{exchange_peers, Bufs, Pattern};
use crate::mpi::Comm;

/// Run the calls of one window and write each slot's local duration.
/// `me` is the rank in `comm`, `w` the window number within the job.
///
/// # Safety
/// `b` was made by `Bufs::new` for `kind` and the size of `comm`: the calls
/// read and write its buffers, counts and displacements at the lengths those
/// imply, which nothing here can check.
#[inline(never)]
pub unsafe fn run_window(
    kind: Pattern,
    comm: Comm,
    me: i32,
    w: u64,
    b: &mut Bufs,
    out: &mut [f64],
) {
    let mut win = Window {
        sp: b.send.as_ptr() as *const c_void,
        rp: b.recv.as_mut_ptr() as *mut c_void,
        n: b.bytes,
        byte: c::byte(),
        u8t: c::uint8_t(),
        sum: c::op_sum(),
        st: c::status_ignore(),
        comm: comm.as_raw(),
        // The interposer's timer (two raw reads around the call, as in a
        // wrapper); its quick rate estimate is good to some 1e-5, far below
        // any call's spread.
        unit: mpiover_common::timer::unit_quick(),
        out,
    };
    match kind {
        Pattern::Send | Pattern::Ssend | Pattern::Nonblocking | Pattern::Sendrecv => {
            win.pair(kind, me, (w % 2) as i32)
        }
        Pattern::Exchange => win.exchange(me, b),
        // Listed, not `_`: a new pattern must say here which step runs it.
        Pattern::Bcast
        | Pattern::Reduce
        | Pattern::Allreduce
        | Pattern::Gather
        | Pattern::Gatherv
        | Pattern::Scatter
        | Pattern::Scatterv
        | Pattern::Allgather
        | Pattern::Allgatherv
        | Pattern::Alltoall
        | Pattern::Alltoallv
        | Pattern::Alltoallw
        | Pattern::Barrier
        | Pattern::Scan
        | Pattern::Exscan
        | Pattern::ReduceScatter
        | Pattern::ReduceScatterBlock => win.collective(kind, b),
    }
}

/// What every call of a window passes, and where its durations go. Made only
/// by [`run_window`], whose caller vouches for the buffers behind `sp`/`rp`.
struct Window<'a> {
    sp: *const c_void,
    rp: *mut c_void,
    n: c_int,
    byte: ffi::MPI_Datatype,
    u8t: ffi::MPI_Datatype,
    sum: ffi::MPI_Op,
    st: *mut ffi::MPI_Status,
    /// The raw handle of `run_window`'s communicator.
    comm: ffi::MPI_Comm,
    unit: f64,
    out: &'a mut [f64],
}

/// Times one MPI call into slot `$slot` of the window's durations.
macro_rules! timed {
    ($win:expr, $slot:expr, $call:expr) => {{
        let t0 = mpiover_common::timer::now();
        // SAFETY: the call's buffers are the window's `Bufs` (made for this
        // pattern and communicator size, `run_window`'s contract), its
        // handles the library's, its requests locals or `Bufs::reqs`, and it
        // completes (or its request is completed) before the window returns.
        unsafe { $call };
        let t1 = mpiover_common::timer::now();
        $win.out[$slot] = t1.wrapping_sub(t0) as f64 * $win.unit;
    }};
}

impl Window<'_> {
    /// Ping-pong: the ping's sender (`sender`, alternating between windows)
    /// sends, then receives the pong; each call is timed on its own.
    fn pair(&mut self, kind: Pattern, me: i32, sender: i32) {
        let (sp, rp, n, byte, st, comm) = (self.sp, self.rp, self.n, self.byte, self.st, self.comm);
        let other = 1 - me;
        match kind {
            Pattern::Send => {
                if me == sender {
                    timed!(self, 0, ffi::PMPI_Send(sp, n, byte, other, 1, comm));
                    timed!(self, 1, ffi::PMPI_Recv(rp, n, byte, other, 1, comm, st));
                } else {
                    timed!(self, 0, ffi::PMPI_Recv(rp, n, byte, other, 1, comm, st));
                    timed!(self, 1, ffi::PMPI_Send(sp, n, byte, other, 1, comm));
                }
            }
            Pattern::Ssend => {
                if me == sender {
                    timed!(self, 0, ffi::PMPI_Ssend(sp, n, byte, other, 2, comm));
                    timed!(self, 1, ffi::PMPI_Recv(rp, n, byte, other, 2, comm, st));
                } else {
                    timed!(self, 0, ffi::PMPI_Recv(rp, n, byte, other, 2, comm, st));
                    timed!(self, 1, ffi::PMPI_Ssend(sp, n, byte, other, 2, comm));
                }
            }
            Pattern::Nonblocking => {
                let mut req: ffi::MPI_Request = c::request_null();
                if me == sender {
                    timed!(
                        self,
                        0,
                        ffi::PMPI_Isend(sp, n, byte, other, 3, comm, &mut req)
                    );
                    timed!(self, 1, ffi::PMPI_Wait(&mut req, st));
                    timed!(
                        self,
                        2,
                        ffi::PMPI_Irecv(rp, n, byte, other, 3, comm, &mut req)
                    );
                    timed!(self, 3, ffi::PMPI_Wait(&mut req, st));
                } else {
                    timed!(
                        self,
                        0,
                        ffi::PMPI_Irecv(rp, n, byte, other, 3, comm, &mut req)
                    );
                    timed!(self, 1, ffi::PMPI_Wait(&mut req, st));
                    timed!(
                        self,
                        2,
                        ffi::PMPI_Isend(sp, n, byte, other, 3, comm, &mut req)
                    );
                    timed!(self, 3, ffi::PMPI_Wait(&mut req, st));
                }
            }
            Pattern::Sendrecv => {
                timed!(
                    self,
                    0,
                    ffi::PMPI_Sendrecv(sp, n, byte, other, 4, rp, n, byte, other, 4, comm, st)
                )
            }
            _ => unreachable!("{kind:?} is not a point-to-point pattern"),
        }
    }

    /// A collective on the whole communicator, root 0.
    fn collective(&mut self, kind: Pattern, b: &Bufs) {
        let (sp, rp, n, byte, comm) = (self.sp, self.rp, self.n, self.byte, self.comm);
        let (u8t, sum) = (self.u8t, self.sum);
        let (counts, displs, types) = (b.counts.as_ptr(), b.displs.as_ptr(), b.types.as_ptr());
        match kind {
            Pattern::Bcast => timed!(self, 0, ffi::PMPI_Bcast(rp, n, byte, 0, comm)),
            Pattern::Reduce => timed!(self, 0, ffi::PMPI_Reduce(sp, rp, n, u8t, sum, 0, comm)),
            Pattern::Allreduce => timed!(self, 0, ffi::PMPI_Allreduce(sp, rp, n, u8t, sum, comm)),
            Pattern::Gather => timed!(self, 0, ffi::PMPI_Gather(sp, n, byte, rp, n, byte, 0, comm)),
            Pattern::Gatherv => timed!(
                self,
                0,
                ffi::PMPI_Gatherv(sp, n, byte, rp, counts, displs, byte, 0, comm)
            ),
            Pattern::Scatter => timed!(
                self,
                0,
                ffi::PMPI_Scatter(sp, n, byte, rp, n, byte, 0, comm)
            ),
            Pattern::Scatterv => timed!(
                self,
                0,
                ffi::PMPI_Scatterv(sp, counts, displs, byte, rp, n, byte, 0, comm)
            ),
            Pattern::Allgather => {
                timed!(self, 0, ffi::PMPI_Allgather(sp, n, byte, rp, n, byte, comm))
            }
            Pattern::Allgatherv => timed!(
                self,
                0,
                ffi::PMPI_Allgatherv(sp, n, byte, rp, counts, displs, byte, comm)
            ),
            Pattern::Alltoall => {
                timed!(self, 0, ffi::PMPI_Alltoall(sp, n, byte, rp, n, byte, comm))
            }
            Pattern::Alltoallv => timed!(
                self,
                0,
                ffi::PMPI_Alltoallv(sp, counts, displs, byte, rp, counts, displs, byte, comm)
            ),
            // Displacements of Alltoallw are in bytes: those of MPI_BYTE blocks.
            Pattern::Alltoallw => timed!(
                self,
                0,
                ffi::PMPI_Alltoallw(sp, counts, displs, types, rp, counts, displs, types, comm)
            ),
            Pattern::Barrier => timed!(self, 0, ffi::PMPI_Barrier(comm)),
            Pattern::Scan => timed!(self, 0, ffi::PMPI_Scan(sp, rp, n, u8t, sum, comm)),
            Pattern::Exscan => timed!(self, 0, ffi::PMPI_Exscan(sp, rp, n, u8t, sum, comm)),
            Pattern::ReduceScatter => timed!(
                self,
                0,
                ffi::PMPI_Reduce_scatter(sp, rp, counts, u8t, sum, comm)
            ),
            Pattern::ReduceScatterBlock => timed!(
                self,
                0,
                ffi::PMPI_Reduce_scatter_block(sp, rp, n, u8t, sum, comm)
            ),
            _ => unreachable!("{kind:?} is not a collective pattern"),
        }
    }

    /// The halo exchange: k receives and k sends posted untimed, then the
    /// one timed `MPI_Waitall` that completes them.
    fn exchange(&mut self, me: i32, b: &mut Bufs) {
        let (sp, rp, n, byte, comm) = (self.sp, self.rp, self.n, self.byte, self.comm);
        let k = b.k;
        let np = b.p;
        let len = n.max(0) as usize;
        for j in 1..=k {
            let (_, from) = exchange_peers(me, j, np);
            // SAFETY: the receive buffer holds k blocks of `len` bytes and
            // the request array 2k requests (`Bufs::new` for Exchange); both
            // stay untouched until the Waitall below completes them.
            unsafe {
                ffi::PMPI_Irecv(
                    rp.cast::<u8>().add((j - 1) * len).cast(),
                    n,
                    byte,
                    from,
                    j as c_int,
                    comm,
                    b.reqs.as_mut_ptr().add(j - 1),
                );
            }
        }
        for j in 1..=k {
            let (to, _) = exchange_peers(me, j, np);
            // SAFETY: as above, the send buffer holds k blocks.
            unsafe {
                ffi::PMPI_Isend(
                    sp.cast::<u8>().add((j - 1) * len).cast(),
                    n,
                    byte,
                    to,
                    j as c_int,
                    comm,
                    b.reqs.as_mut_ptr().add(k + j - 1),
                );
            }
        }
        let reqs = b.reqs.as_mut_ptr();
        timed!(
            self,
            0,
            ffi::PMPI_Waitall((2 * k) as c_int, reqs, c::statuses_ignore())
        )
    }
}
