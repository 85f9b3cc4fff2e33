! The Waitall and cancel cases of requests.c through the Fortran bindings,
! one source for two: built as requests_f77 (mpif.h) and, with -DUSE_F08, as
! requests_f08 (use mpi_f08). Needs 2 ranks; rank 0 receives.
!   1. MPI_Waitall over [Irecv from rank 1, MPI_REQUEST_NULL, Isend to
!      MPI_PROC_NULL, Irecv from MPI_PROC_NULL]: the Irecv's line, 8 bytes,
!      peer 1.
!   2. MPI_Irecv never matched, MPI_Cancel, MPI_Wait: 0 bytes, no peer.
!
! usage: mpirun -np 2 requests_<binding> [iterations=5]
#ifdef USE_F08
#define IERR
#define REQ_T type(MPI_Request)
#else
#define IERR , ierr
#define REQ_T integer
#endif
program requests_f
#ifdef USE_F08
  use mpi_f08
#endif
  implicit none
#ifndef USE_F08
  include 'mpif.h'
#endif
  integer :: rank, size, ierr, i, iters, v(2), z(2), zr(2), total
  character(len=16) :: arg
  REQ_T :: reqs(4), req

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  if (size /= 2) call MPI_Abort(MPI_COMM_WORLD, 2 IERR)
  iters = 5
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) iters
  end if
  z = 7
  total = 0

  do i = 1, iters
    if (rank == 0) then
      call MPI_Irecv(v, 2, MPI_INTEGER, 1, 10, MPI_COMM_WORLD, reqs(1) IERR) ! MPIOVER-EXPECT: rqf-irecv
      reqs(2) = MPI_REQUEST_NULL
      call MPI_Isend(z, 2, MPI_INTEGER, MPI_PROC_NULL, 10, MPI_COMM_WORLD, reqs(3) IERR) ! MPIOVER-EXPECT: rqf-isend-null
      call MPI_Irecv(zr, 2, MPI_INTEGER, MPI_PROC_NULL, 10, MPI_COMM_WORLD, reqs(4) IERR)
      call MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE, ierr) ! MPIOVER-EXPECT: rqf-waitall
      total = total + v(1)
    else
      v = i
      call MPI_Send(v, 2, MPI_INTEGER, 0, 10, MPI_COMM_WORLD, ierr)
    end if
  end do

  if (rank == 0) then
    do i = 1, iters
      call MPI_Irecv(v, 2, MPI_INTEGER, 1, 60, MPI_COMM_WORLD, req IERR) ! MPIOVER-EXPECT: rqf-irecv-cancel
      call MPI_Cancel(req, ierr)
      call MPI_Wait(req, MPI_STATUS_IGNORE, ierr) ! MPIOVER-EXPECT: rqf-wait-cancel
    end do
    print '(a,i0)', 'requests_f: checksum ', total
  end if
  call MPI_Finalize(ierr)
end program requests_f
