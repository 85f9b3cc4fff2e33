! Fortran communication events with known bytes, peers and request links,
! one source for two bindings: built as events_f77 (mpif.h) and, with
! -DUSE_F08, as events_f08 (use mpi_f08, which leaves out ierror here and
! there). Needs 2 ranks; rank 0 sends, rank 1 receives. Every marked call is
! on one line; the end-to-end tests (tests/tests/e2e/fortran.rs) check what
! the profiler records at each marker.
!
! usage: mpirun -np 2 events_<binding>
#ifdef USE_F08
#define IERR
#define ST_T type(MPI_Status)
#define REQ_T type(MPI_Request)
#else
#define IERR , ierr
#define ST_T integer, dimension(MPI_STATUS_SIZE)
#define REQ_T integer
#endif
program events
#ifdef USE_F08
  use mpi_f08
#endif
  implicit none
#ifndef USE_F08
  include 'mpif.h'
#endif
  integer :: rank, size, ierr, i, idx, a(10), b(10), x(5), g(4)
  double precision :: d(10)
  REQ_T :: reqs(2), req
  ST_T :: st

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  if (size /= 2) call MPI_Abort(MPI_COMM_WORLD, 2 IERR)
  a = [(i, i = 1, 10)]
  b = 0

  ! Two 40-byte messages, posted with Isend / Irecv(ANY_SOURCE), completed
  ! with Waitall(MPI_STATUSES_IGNORE).
  if (rank == 0) then
    call MPI_Isend(a, 10, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, reqs(1) IERR) ! MPIOVER-EXPECT: ev-isend
    call MPI_Isend(a, 10, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, reqs(2) IERR) ! MPIOVER-EXPECT: ev-isend2
  else
    call MPI_Irecv(b, 10, MPI_INTEGER, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, reqs(1) IERR) ! MPIOVER-EXPECT: ev-irecv
    call MPI_Irecv(a, 10, MPI_INTEGER, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, reqs(2) IERR) ! MPIOVER-EXPECT: ev-irecv2
  end if
  call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE, ierr) ! MPIOVER-EXPECT: ev-waitall

  ! One 16-byte message: Irecv(ANY_SOURCE) + Wait(MPI_STATUS_IGNORE).
  if (rank == 0) then
    call MPI_Send(a, 4, MPI_INTEGER, 1, 3, MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: ev-send16
  else
    call MPI_Irecv(b, 4, MPI_INTEGER, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, req IERR) ! MPIOVER-EXPECT: ev-irecv16
  end if
  if (rank == 1) call MPI_Wait(req, MPI_STATUS_IGNORE, ierr) ! MPIOVER-EXPECT: ev-wait16

  ! Waitany over two receives of 8 and 12 bytes (Fortran indices count from 1).
  if (rank == 0) then
    call MPI_Send(a, 2, MPI_INTEGER, 1, 4, MPI_COMM_WORLD, ierr)
    call MPI_Send(a, 3, MPI_INTEGER, 1, 5, MPI_COMM_WORLD, ierr)
  else
    call MPI_Irecv(b, 2, MPI_INTEGER, 0, 4, MPI_COMM_WORLD, reqs(1) IERR) ! MPIOVER-EXPECT: ev-irecv-any1
    call MPI_Irecv(x, 3, MPI_INTEGER, 0, 5, MPI_COMM_WORLD, reqs(2) IERR) ! MPIOVER-EXPECT: ev-irecv-any2
    do i = 1, 2
      call MPI_Waitany(2, reqs, idx, st, ierr) ! MPIOVER-EXPECT: ev-waitany
    end do
  end if

  ! A blocking receive from MPI_ANY_SOURCE with MPI_STATUS_IGNORE: the peer
  ! and the 24 bytes that arrived (of 40 posted) are still known.
  if (rank == 0) then
    call MPI_Send(a, 6, MPI_INTEGER, 1, 6, MPI_COMM_WORLD, ierr)
  else
    call MPI_Recv(b, 10, MPI_INTEGER, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr) ! MPIOVER-EXPECT: ev-recv-any
  end if

  ! Collectives: 80-byte Bcast from 0, in-place 20-byte Allreduce, a Gather
  ! of 2 integers each (the root gathers 16 bytes).
  d = 1.5d0
  call MPI_Bcast(d, 10, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: ev-bcast
  x = rank
  call MPI_Allreduce(MPI_IN_PLACE, x, 5, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: ev-allreduce
  call MPI_Gather(a(1), 2, MPI_INTEGER, g, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: ev-gather
  ! In place at the root, with a send count MPI ignores there: the root's
  ! bytes are the gathered 16 whatever that count says, which they are only
  ! if the Fortran MPI_IN_PLACE is recognized. (Both Gathers pass a(1), by
  ! sequence association: mpif.h's MPI_IN_PLACE is a scalar, and gfortran
  ! rejects one procedure called with a scalar and an array.)
  if (rank == 0) then
    call MPI_Gather(MPI_IN_PLACE, 99999, MPI_INTEGER, g, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: ev-gather-ip
  else
    call MPI_Gather(a(1), 2, MPI_INTEGER, g, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: ev-gather-ip-nonroot
  end if

  ! A region the profiler must not see.
  call MPI_Pcontrol(0)
  call MPI_Barrier(MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: ev-hidden
  call MPI_Pcontrol(1)
  call MPI_Barrier(MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: ev-barrier

  if (rank == 0) write (*, '(a,i0,a,f0.1)') 'events: x ', sum(x), ' d ', sum(d)
  call MPI_Finalize(ierr)
end program events
