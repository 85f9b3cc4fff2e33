/* MPI-4 large-count calls (MPI_Send_c, MPI_Recv_c, ...: MPI_Count counts).
 * MPICH 4 has them, and mpi4py built against it uses them for every message;
 * Open MPI 4.1 has none, so there the same program uses the int versions.
 * Rank 1 sends late (a Late Sender at large-count-recv), then all ranks
 * reduce, then ranks 0 and 1 exchange through Irecv_c/Isend_c + Wait.
 *
 * usage: large_count [iterations=5] [delay_ms=20]   (2+ ranks; 0 and 1 talk)
 * Rank 1 prints on stderr what it slept: "large_count: rank 1 injected ... ms".
 * Rank 0 prints "large_count: mpi4 <0|1> ... checksum ...". */
#include <mpi.h>
#include <string.h>

#include "common.h"

#define N 1000

#if MPI_VERSION >= 4
#define LC 1
typedef MPI_Count count_t;
#define SEND MPI_Send_c
#define RECV MPI_Recv_c
#define ALLREDUCE MPI_Allreduce_c
#define ISEND MPI_Isend_c
#define IRECV MPI_Irecv_c
#else
#define LC 0
typedef int count_t;
#define SEND MPI_Send
#define RECV MPI_Recv
#define ALLREDUCE MPI_Allreduce
#define ISEND MPI_Isend
#define IRECV MPI_Irecv
#endif

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 5;
    int delay_ms = argc > 2 ? atoi(argv[2]) : 20;
    int rank, size, i, k;
    double buf[N], injected = 0.0, sum = 0.0;
    int ints[100], red[100];
    count_t n = N;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        fprintf(stderr, "large_count: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (i = 0; i < iters; i++) {
        if (rank == 0) {
            RECV(buf, n, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: large-count-recv */
            for (k = 0; k < N; k++)
                sum += buf[k];
        } else if (rank == 1) {
            for (k = 0; k < N; k++)
                buf[k] = i + k;
            injected += timed_sleep_ms(delay_ms);
            SEND(buf, n, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: large-count-send */
        }
    }
    for (k = 0; k < 100; k++)
        ints[k] = rank + k;
    ALLREDUCE(ints, red, (count_t)100, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* MPIOVER-EXPECT: large-count-allreduce */
    if (rank < 2) {
        int other = 1 - rank;
        memset(buf, 0, sizeof buf);
        if (rank == 0)
            IRECV(buf, n, MPI_DOUBLE, other, 1, MPI_COMM_WORLD, &req); /* MPIOVER-EXPECT: large-count-irecv */
        else
            ISEND(buf, n, MPI_DOUBLE, other, 1, MPI_COMM_WORLD, &req); /* MPIOVER-EXPECT: large-count-isend */
        MPI_Wait(&req, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: large-count-wait */
    }
    if (rank == 1)
        fprintf(stderr, "large_count: rank 1 injected %.3f ms\n", injected * 1e3);
    if (rank == 0)
        printf("large_count: mpi4 %d ranks %d iterations %d checksum %.0f %d\n", LC, size, iters,
               sum, red[99]);
    MPI_Finalize();
    return 0;
}
