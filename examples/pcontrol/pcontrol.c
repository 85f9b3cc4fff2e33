/* MPI_Pcontrol as the profiler reads it: level 0 stops recording, 1
 * resumes, 2 forgets what was recorded so far. Four phases, each `iterations`
 * ring exchanges (MPI_Sendrecv of 8 bytes) and one MPI_Barrier:
 *   A  recorded, then forgotten by MPI_Pcontrol(2)   (pc-forgotten-*)
 *   B  recorded                                      (pc-visible-*)
 *   C  between MPI_Pcontrol(0) and MPI_Pcontrol(1)   (pc-hidden-*)
 *   D  recorded                                      (pc-again-*)
 * Phase C also posts a receive (pc-hidden-irecv) that is completed only in
 * phase D (pc-again-wait): the wait is recorded, but the post is not.
 * Expected per rank: MPI_Sendrecv and MPI_Barrier only at the visible and
 * again lines (2 x iterations and 2 calls), nothing at the forgotten and
 * hidden lines.
 *
 * usage: pcontrol [iterations=5] */
#include <mpi.h>

#include "../common.h"

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 5);
    int rank, size, i, next, prev;
    long v, in, acc = 0, total = 0;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    for (i = 0; i < iters; i++) {
        v = rank + i;
        MPI_Sendrecv(&v, 1, MPI_LONG, next, 0, &in, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: pc-forgotten-sendrecv */
        acc += in;
    }
    MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: pc-forgotten-barrier */
    MPI_Pcontrol(2);

    for (i = 0; i < iters; i++) {
        v = rank + 10 * i;
        MPI_Sendrecv(&v, 1, MPI_LONG, next, 1, &in, 1, MPI_LONG, prev, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: pc-visible-sendrecv */
        acc += in;
    }
    MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: pc-visible-barrier */

    MPI_Pcontrol(0);
    for (i = 0; i < iters; i++) {
        v = rank + 100 * i;
        MPI_Sendrecv(&v, 1, MPI_LONG, next, 2, &in, 1, MPI_LONG, prev, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: pc-hidden-sendrecv */
        acc += in;
    }
    MPI_Irecv(&in, 1, MPI_LONG, prev, 3, MPI_COMM_WORLD, &req); /* MPIOVER-EXPECT: pc-hidden-irecv */
    MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: pc-hidden-barrier */
    MPI_Pcontrol(1);

    v = rank;
    MPI_Send(&v, 1, MPI_LONG, next, 3, MPI_COMM_WORLD); /* MPIOVER-EXPECT: pc-again-send */
    MPI_Wait(&req, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: pc-again-wait */
    acc += in;
    for (i = 0; i < iters; i++) {
        v = rank + 1000 * i;
        MPI_Sendrecv(&v, 1, MPI_LONG, next, 4, &in, 1, MPI_LONG, prev, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: pc-again-sendrecv */
        acc += in;
    }
    MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: pc-again-barrier */

    MPI_Reduce(&acc, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pcontrol: ranks %d iterations %d checksum %ld\n", size, iters, total);
    MPI_Finalize();
    return 0;
}
