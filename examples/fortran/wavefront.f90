! A 2-D wavefront sweep with the structure of Sweep3D (the Fortran twin of
! ../wavefront.c): the ranks form a px x py grid (MPI_Dims_create); for each
! of the four sweep directions and each of `blocks` pipelined blocks a rank
! receives its inflow from the upstream neighbours in x and y, computes
! (sleeps compute_ms, then a deterministic integer recurrence) and sends its
! outflow downstream.
!
! This file makes no MPI call itself: ALL messages go through the two helpers
! send_block and recv_block of module wave_comm, as in Sweep3D's snd_real /
! rcv_real, and the rest of MPI through wave_start / wave_end. wave_comm comes
! in three flavours, one per Fortran binding: comm_f77.f90 (mpif.h),
! comm_mpi.f90 (use mpi), comm_f08.f90 (use mpi_f08); each is compiled
! separately, like Sweep3D's helpers, so the helpers keep their own frames.
! At MPIOVER_DEPTH=1 every point-to-point call is attributed to the two
! helper lines, at MPIOVER_DEPTH=2 to the four call lines below.
!
! usage: wavefront_<flavour> [blocks=6] [compute_ms=1] [n=32]
module wave_sweep
  use wave_comm
  implicit none
contains
  integer function rank_at(x, y, px, py)
    integer, intent(in) :: x, y, px, py
    if (x < 0 .or. x >= px .or. y < 0 .or. y >= py) then
      rank_at = -1
    else
      rank_at = y * px + x
    end if
  end function rank_at

  ! One sweep in direction (dx, dy) over `blocks` blocks of an n x n local
  ! domain; returns this rank's contribution to the checksum.
  integer(8) function sweep(dir, dx, dy, blocks, compute_ms, n, px, py, x, y)
    integer, intent(in) :: dir, dx, dy, blocks, compute_ms, n, px, py, x, y
    integer(8), parameter :: md = 1000003_8
    integer(8) :: in_x(n), in_y(n), out_x(n), out_y(n), cell(n, n)
    integer(8) :: west, north, v
    integer :: up_x, down_x, up_y, down_y, b, i, j, ii, jj, tag
    up_x = rank_at(x - dx, y, px, py)
    down_x = rank_at(x + dx, y, px, py)
    up_y = rank_at(x, y - dy, px, py)
    down_y = rank_at(x, y + dy, px, py)
    sweep = 0
    do b = 0, blocks - 1
      tag = dir * 1000 + b
      if (up_x >= 0) then
        call recv_block(in_x, n, up_x, tag) ! MPIOVER-EXPECT: fwave-recv-x
      else
        do j = 1, n
          in_x(j) = int(dir + b + j, 8)
        end do
      end if
      if (up_y >= 0) then
        call recv_block(in_y, n, up_y, tag) ! MPIOVER-EXPECT: fwave-recv-y
      else
        do i = 1, n
          in_y(i) = int(2 * dir + b + i, 8)
        end do
      end if
      call compute_delay(compute_ms)
      do j = 0, n - 1
        do i = 0, n - 1
          ii = i
          if (dx < 0) ii = n - 1 - i
          jj = j
          if (dy < 0) jj = n - 1 - j
          if (i == 0) then
            west = in_x(jj + 1)
          else if (dx > 0) then
            west = cell(ii, jj + 1)
          else
            west = cell(ii + 2, jj + 1)
          end if
          if (j == 0) then
            north = in_y(ii + 1)
          else if (dy > 0) then
            north = cell(ii + 1, jj)
          else
            north = cell(ii + 1, jj + 2)
          end if
          v = mod(west * 31 + north * 17 + int(ieor(ii, jj), 8) + b, md)
          cell(ii + 1, jj + 1) = v
          sweep = sweep + v
        end do
      end do
      do j = 1, n
        if (dx > 0) then
          out_x(j) = cell(n, j)
        else
          out_x(j) = cell(1, j)
        end if
      end do
      do i = 1, n
        if (dy > 0) then
          out_y(i) = cell(i, n)
        else
          out_y(i) = cell(i, 1)
        end if
      end do
      if (down_x >= 0) call send_block(out_x, n, down_x, tag) ! MPIOVER-EXPECT: fwave-send-x
      if (down_y >= 0) call send_block(out_y, n, down_y, tag) ! MPIOVER-EXPECT: fwave-send-y
    end do
  end function sweep

  integer function arg_int(i, dflt)
    integer, intent(in) :: i, dflt
    character(len=32) :: s
    integer :: st
    arg_int = dflt
    if (command_argument_count() >= i) then
      call get_command_argument(i, s)
      read (s, *, iostat=st) arg_int
      if (st /= 0 .or. arg_int < 0) then
        write (0, '(2a)') 'wavefront: bad argument ', trim(s)
        stop 2
      end if
    end if
  end function arg_int
end module wave_sweep

program wavefront
  use wave_sweep
  implicit none
  integer :: dirs(2, 4) = reshape([1, 1, -1, 1, 1, -1, -1, -1], [2, 4])
  integer :: blocks, compute_ms, n, rank, size, d, dims(2)
  integer(8) :: check

  blocks = arg_int(1, 6)
  compute_ms = arg_int(2, 1)
  n = max(arg_int(3, 32), 1)
  call wave_start(rank, size, dims)
  check = 0
  do d = 1, 4
    check = check + sweep(d - 1, dirs(1, d), dirs(2, d), blocks, compute_ms, n, dims(1), &
                          dims(2), mod(rank, dims(1)), rank / dims(1))
  end do
  call wave_end(check, rank, dims, blocks, n)
end program wavefront
