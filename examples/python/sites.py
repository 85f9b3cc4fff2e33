"""Python sites through mpi4py: the odd rank of each pair sends three
messages per iteration from three lines, one late (after an injected sleep)
and two at once; the even rank receives each at its own line. Every send and
receive sits in a small helper called from its own line of `exchange`, so
that the sites are the helpers' lines with MPIOVER_DEPTH=1 and the lines of
`exchange` that called them with MPIOVER_DEPTH=2. The receive of the late
message holds the injected delay; the two others wait for nothing. The
sending rank reports on stderr what it actually slept:
"sites.py: rank 1 injected 200.4 ms".

An MPI_Reduce_scatter without receive counts makes mpi4py call
MPI_Allgather with the GIL held (every other call here is made with the
GIL released): both are sited at its line.

The final broadcast goes through mpi4py's own Python module
mpi4py.util.pkl5, whose frames are skipped: its site is the line that
called it.

With "threads" as third argument, each rank also runs a second Python
thread that does the same exchange on a duplicate communicator: its sites
are the same lines (MPI_THREAD_MULTIPLE, which mpi4py asks for).

usage: mpirun -np 2 python3 sites.py [iterations=10] [delay_ms=20] [threads]
"""
import sys
import threading
import time

from mpi4py import MPI
from mpi4py.util import pkl5


def recv_late(comm, buf, src):
    comm.Recv([buf, MPI.BYTE], source=src, tag=1)  # MPIOVER-EXPECT: py-recv-late


def recv_a(comm, buf, src):
    comm.Recv([buf, MPI.BYTE], source=src, tag=2)  # MPIOVER-EXPECT: py-recv-a


def recv_b(comm, buf, src):
    comm.Recv([buf, MPI.BYTE], source=src, tag=3)  # MPIOVER-EXPECT: py-recv-b


def send_late(comm, data, dest, delay_s):
    time.sleep(delay_s)
    comm.Send([data, MPI.BYTE], dest=dest, tag=1)  # MPIOVER-EXPECT: py-send-late


def send_a(comm, data, dest):
    comm.Send([data, MPI.BYTE], dest=dest, tag=2)  # MPIOVER-EXPECT: py-send-a


def send_b(comm, data, dest):
    comm.Send([data, MPI.BYTE], dest=dest, tag=3)  # MPIOVER-EXPECT: py-send-b


def exchange(comm, iters, delay_s):
    """Returns (checksum, seconds slept)."""
    rank, size = comm.Get_rank(), comm.Get_size()
    buf = bytearray(8)
    total = 0
    slept = 0.0
    if rank % 2 == 0 and rank + 1 < size:
        for _ in range(iters):
            recv_late(comm, buf, rank + 1)  # MPIOVER-EXPECT: py-call-recv-late
            total += int.from_bytes(buf, "little")
            recv_a(comm, buf, rank + 1)  # MPIOVER-EXPECT: py-call-recv-a
            total += int.from_bytes(buf, "little")
            recv_b(comm, buf, rank + 1)  # MPIOVER-EXPECT: py-call-recv-b
            total += int.from_bytes(buf, "little")
    elif rank % 2 == 1:
        for i in range(iters):
            data = (1000 * rank + i).to_bytes(8, "little")
            t0 = time.monotonic()
            send_late(comm, data, rank - 1, delay_s)  # MPIOVER-EXPECT: py-call-send-late
            slept += time.monotonic() - t0
            send_a(comm, data, rank - 1)  # MPIOVER-EXPECT: py-call-send-a
            send_b(comm, data, rank - 1)  # MPIOVER-EXPECT: py-call-send-b
    return total, slept


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    delay_ms = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    threads = len(sys.argv) > 3 and sys.argv[3] == "threads"
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if size < 2:
        sys.stderr.write("sites.py: needs at least 2 ranks\n")
        comm.Abort(1)
    results = {}
    worker = None
    if threads:
        other = comm.Dup()

        def run():
            results["thread"] = exchange(other, iters, delay_ms / 1000.0)

        worker = threading.Thread(target=run)
        worker.start()
    comm.Barrier()
    total, slept = exchange(comm, iters, delay_ms / 1000.0)
    if worker is not None:
        worker.join()
        t, s = results["thread"]
        total += t
        slept += s
        other.Free()
    if rank % 2 == 1:
        sys.stderr.write(f"sites.py: rank {rank} injected {slept * 1e3:.3f} ms\n")
    total = comm.allreduce(total, op=MPI.SUM)
    # Reduce_scatter without receive counts: mpi4py gathers them with an
    # MPI_Allgather made while it holds the GIL (the Reduce_scatter itself
    # releases it); both are sited at this line.
    comm.Reduce_scatter([bytearray(4 * size), MPI.INT], [bytearray(4), MPI.INT], op=MPI.SUM)  # MPIOVER-EXPECT: py-gil-held
    # Through mpi4py's own Python code (mpi4py/util/pkl5.py): its frames are
    # skipped, the site is this line.
    total = pkl5.Intracomm(comm).bcast(total, root=0)  # MPIOVER-EXPECT: py-pkl5
    if rank == 0:
        print(f"sites.py: ranks {size} iterations {iters} delay_ms {delay_ms} checksum {total}")


if __name__ == "__main__":
    main()
