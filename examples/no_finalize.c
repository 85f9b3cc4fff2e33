/* A program that never calls MPI_Finalize: it exchanges messages in a ring
 * (an MPI_Sendrecv marked no-finalize-sendrecv), waits in a barrier, prints
 * its result and returns from main. Open MPI then reports the missing
 * finalize and mpirun exits non-zero; the profiler must still leave one
 * record per rank (written at process exit).
 *
 * usage: no_finalize [iterations=5] */
#include <mpi.h>

#include "common.h"

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 5);
    int rank, size, i;
    long v, in, acc = 0, total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (i = 0; i < iters; i++) {
        v = rank * 10 + i;
        MPI_Sendrecv(&v, 1, MPI_LONG, (rank + 1) % size, 0, &in, 1, MPI_LONG, (rank + size - 1) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: no-finalize-sendrecv */
        acc += in;
    }
    MPI_Reduce(&acc, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("no_finalize: ranks %d iterations %d checksum %ld\n", size, iters, total);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return 0; /* no MPI_Finalize, on purpose */
}
