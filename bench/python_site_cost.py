"""Time per MPI call made from Python through mpi4py, for
bench/python_site_cost.sh: one rank, calls on MPI_COMM_SELF that never wait
(a failed Iprobe poll, a 1-int Allreduce), REPS repetitions of 21 batches of
BATCH calls each; per repetition the fastest batch (noise only ever adds
time), printed as ns/call, median over repetitions.

usage: python3 python_site_cost.py [REPS=11] [BATCH=2000]
prints: "iprobe NS" and "allreduce NS"
"""
import sys
import time

from mpi4py import MPI


def fastest(call, batch):
    best = None
    for _ in range(21):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            call()
        dt = time.perf_counter_ns() - t0
        best = dt if best is None else min(best, dt)
    return best / batch


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    comm = MPI.COMM_SELF
    sbuf = bytearray(4)
    rbuf = bytearray(4)
    spec_s = [sbuf, MPI.INT]
    spec_r = [rbuf, MPI.INT]

    def iprobe():
        comm.Iprobe(source=0, tag=77)

    def allreduce():
        comm.Allreduce(spec_s, spec_r, op=MPI.SUM)

    for name, call in (("iprobe", iprobe), ("allreduce", allreduce)):
        call()
        v = sorted(fastest(call, batch) for _ in range(reps))
        print(f"{name} {v[len(v) // 2]:.2f}")


if __name__ == "__main__":
    main()
