/* Imbalanced collective (Wait at NxN): every rank "computes" (sleeps)
 * base_ms per iteration, the last rank extra_ms more, then all call
 * MPI_Allreduce. The fast ranks wait in MPI_Allreduce for the slow one.
 *
 * usage: imbalanced_allreduce [iterations=10] [extra_ms=20] [base_ms=2]
 * expected: on every rank but the last, the MPI_Allreduce marked
 * imbalanced-allreduce is the top site, with about iterations * extra_ms in
 * it; on the last rank that site holds almost nothing. Every rank reports on
 * stderr the time it actually slept ("imbalanced_allreduce: rank 2 injected
 * 220.5 ms"): a fast rank waits for the difference to the slow one. */
#include <mpi.h>

#include "common.h"

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 10);
    int extra_ms = arg_int(argc, argv, 2, 20);
    int base_ms = arg_int(argc, argv, 3, 2);
    int rank, size, i;
    long acc = 0;
    double injected = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < iters; i++) {
        long v = (long)rank * 100 + i, r = 0;
        injected += timed_sleep_ms(base_ms + (rank == size - 1 ? extra_ms : 0));
        MPI_Allreduce(&v, &r, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); /* MPIOVER-EXPECT: imbalanced-allreduce */
        acc += r;
    }
    report_injected("imbalanced_allreduce", rank, injected);
    if (rank == 0)
        printf("imbalanced_allreduce: ranks %d iterations %d extra_ms %d base_ms %d checksum %ld\n",
               size, iters, extra_ms, base_ms, acc);
    MPI_Finalize();
    return 0;
}
