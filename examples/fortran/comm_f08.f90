! wave_comm for wavefront.f90, use mpi_f08 flavour: every MPI call of the
! sweep. The helpers pass ierror; the other calls leave it out.
module wave_comm
  use, intrinsic :: iso_c_binding, only: c_int
  use mpi_f08
  implicit none
  integer(8) :: n_sent = 0, n_received = 0
  interface
    integer(c_int) function usleep(us) bind(C, name='usleep')
      import :: c_int
      integer(c_int), value :: us
    end function usleep
  end interface
contains
  subroutine send_block(buf, n, dest, tag)
    integer, intent(in) :: n, dest, tag
    integer(8), intent(in) :: buf(n)
    integer :: ierr
    call MPI_Send(buf, n, MPI_INTEGER8, dest, tag, MPI_COMM_WORLD, ierr) ! MPIOVER-EXPECT: f08-send-helper
    if (ierr /= MPI_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 3)
    n_sent = n_sent + 1
  end subroutine send_block

  subroutine recv_block(buf, n, src, tag)
    integer, intent(in) :: n, src, tag
    integer(8), intent(out) :: buf(n)
    integer :: ierr
    call MPI_Recv(buf, n, MPI_INTEGER8, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr) ! MPIOVER-EXPECT: f08-recv-helper
    if (ierr /= MPI_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 3)
    n_received = n_received + 1
  end subroutine recv_block

  subroutine compute_delay(ms)
    integer, intent(in) :: ms
    integer(c_int) :: rc
    if (ms > 0) rc = usleep(int(1000 * ms, c_int))
  end subroutine compute_delay

  subroutine wave_start(rank, size, dims)
    integer, intent(out) :: rank, size, dims(2)
    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    dims = 0
    call MPI_Dims_create(size, 2, dims)
    call MPI_Barrier(MPI_COMM_WORLD)
  end subroutine wave_start

  subroutine wave_end(check, rank, dims, blocks, n)
    integer(8), intent(in) :: check
    integer, intent(in) :: rank, dims(2), blocks, n
    integer(8) :: vals(3), totals(3)
    vals = [check, n_sent, n_received]
    call MPI_Reduce(vals, totals, 3, MPI_INTEGER8, MPI_SUM, 0, MPI_COMM_WORLD)
    if (rank == 0) write (*, '(a,i0,a,i0,a,i0,a,i0,a,i0,a,i0,a,i0)') 'wavefront: grid ', &
      dims(1), 'x', dims(2), ' blocks ', blocks, ' n ', n, ' messages ', totals(2), '/', &
      totals(3), ' checksum ', totals(1)
    call MPI_Finalize()
  end subroutine wave_end
end module wave_comm
