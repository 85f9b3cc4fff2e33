/* Imbalanced MPI_Alltoallw (Wait at NxN): every rank "computes" (sleeps)
 * base_ms per iteration, the last rank extra_ms more, then all exchange two
 * ints with every rank through MPI_Alltoallw (MPI_INT blocks, byte
 * displacements). The fast ranks wait in MPI_Alltoallw for the slow one.
 *
 * usage: alltoallw [iterations=8] [extra_ms=20] [base_ms=2]
 * expected: the MPI_Alltoallw marked alltoallw-exchange is the top site, its
 * overhead about what the fast ranks waited (each reports on stderr the time
 * it slept: "alltoallw: rank 1 injected 176.2 ms"), Wait at NxN, late rank:
 * the last. The received values are checked: the run fails if any is wrong. */
#include <mpi.h>
#include <stdlib.h>

#include "common.h"

#define PER_PEER 2

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 8);
    int extra_ms = arg_int(argc, argv, 2, 20);
    int base_ms = arg_int(argc, argv, 3, 2);
    int rank, size, i, p, k, bad = 0;
    int *send, *recv, *counts, *displs;
    MPI_Datatype *types;
    long acc = 0;
    double injected = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    send = malloc(sizeof(int) * PER_PEER * size);
    recv = malloc(sizeof(int) * PER_PEER * size);
    counts = malloc(sizeof(int) * size);
    displs = malloc(sizeof(int) * size);
    types = malloc(sizeof(MPI_Datatype) * size);
    for (p = 0; p < size; p++) {
        counts[p] = PER_PEER;
        displs[p] = (int)(p * PER_PEER * sizeof(int)); /* bytes, for Alltoallw */
        types[p] = MPI_INT;
    }

    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < iters; i++) {
        for (p = 0; p < size; p++)
            for (k = 0; k < PER_PEER; k++)
                send[p * PER_PEER + k] = rank * 1000 + p * 10 + k + i;
        injected += timed_sleep_ms(base_ms + (rank == size - 1 ? extra_ms : 0));
        MPI_Alltoallw(send, counts, displs, types, recv, counts, displs, types, MPI_COMM_WORLD); /* MPIOVER-EXPECT: alltoallw-exchange */
        for (p = 0; p < size; p++)
            for (k = 0; k < PER_PEER; k++) {
                int want = p * 1000 + rank * 10 + k + i;
                bad += recv[p * PER_PEER + k] != want;
                acc += recv[p * PER_PEER + k];
            }
    }
    report_injected("alltoallw", rank, injected);
    if (rank == 0)
        printf("alltoallw: ranks %d iterations %d extra_ms %d base_ms %d checksum %ld\n", size,
               iters, extra_ms, base_ms, acc);
    free(send);
    free(recv);
    free(counts);
    free(displs);
    free(types);
    MPI_Finalize();
    return bad ? 1 : 0;
}
