"""Late Sender in Python, through mpi4py: the odd rank of each pair sleeps
before every Send, the even rank already waits in Recv, so the receiver's
Recv holds the whole injected delay. The sending rank reports on stderr what
it actually slept: "late_sender.py: rank 1 injected 200.4 ms".

The profiler sees the MPI calls mpi4py makes and attributes them to the
Python lines that made them (the Recv line holds the delay).

usage: mpirun -np 2 python3 late_sender.py [iterations=10] [delay_ms=20]
"""
import sys
import time

from mpi4py import MPI


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    delay_ms = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if size < 2:
        sys.stderr.write("late_sender.py: needs at least 2 ranks\n")
        comm.Abort(1)
    buf = bytearray(8)
    total = 0
    injected = 0.0
    comm.Barrier()
    if rank % 2 == 0 and rank + 1 < size:
        for _ in range(iters):
            comm.Recv([buf, MPI.BYTE], source=rank + 1, tag=0)  # MPIOVER-EXPECT: py-recv
            total += int.from_bytes(buf, "little")
    elif rank % 2 == 1:
        for i in range(iters):
            t0 = time.monotonic()
            time.sleep(delay_ms / 1000.0)
            injected += time.monotonic() - t0
            comm.Send([(1000 * rank + i).to_bytes(8, "little"), MPI.BYTE], dest=rank - 1, tag=0)  # MPIOVER-EXPECT: py-send
        sys.stderr.write(f"late_sender.py: rank {rank} injected {injected * 1e3:.3f} ms\n")
    total = comm.reduce(total, op=MPI.SUM, root=0)
    if rank == 0:
        print(f"late_sender.py: ranks {size} iterations {iters} delay_ms {delay_ms} checksum {total}")


if __name__ == "__main__":
    main()
