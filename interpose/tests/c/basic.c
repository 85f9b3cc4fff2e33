/* Known calls for the interposer's own checks (interpose/tests/record.rs):
 * each MPI call sits on a line tagged LINE:<name> so the test can find it. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank, size, i;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int buf[1000];
    for (i = 0; i < 1000; i++) buf[i] = i;

    /* 10 sends of 100 ints from 0 to 1. */
    for (i = 0; i < 10; i++) {
        if (rank == 0)
            MPI_Send(buf, 100, MPI_INT, 1, 7, MPI_COMM_WORLD); /* LINE:send */
        else if (rank == 1)
            MPI_Recv(buf, 100, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* LINE:recv */
    }

    /* A vector type: 10 blocks of 3 ints, stride 5 -> 120 bytes. */
    MPI_Datatype vec;
    MPI_Type_vector(10, 3, 5, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    if (rank == 0)
        MPI_Ssend(buf, 1, vec, 1, 8, MPI_COMM_WORLD); /* LINE:vsend */
    else if (rank == 1) {
        MPI_Status st;
        MPI_Recv(buf, 1, vec, 0, 8, MPI_COMM_WORLD, &st); /* LINE:vrecv */
        int n;
        MPI_Get_count(&st, vec, &n);
        printf("vrecv count %d source %d\n", n, st.MPI_SOURCE);
    }
    MPI_Type_free(&vec);

    /* In-place allreduce of 16 doubles -> 128 bytes. */
    double d[16];
    for (i = 0; i < 16; i++) d[i] = rank + i;
    MPI_Allreduce(MPI_IN_PLACE, d, 16, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); /* LINE:allreduce */
    printf("rank %d allreduce %g\n", rank, d[3]);

    /* A reversed sub-communicator: peer must come out as a world rank. */
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    int rrank;
    MPI_Comm_rank(rev, &rrank);
    if (size >= 2) {
        if (rank == 0)
            MPI_Send(buf, 4, MPI_INT, size - 2, 9, rev); /* LINE:subsend */
        else if (rank == 1)
            MPI_Recv(buf, 4, MPI_INT, size - 1, 9, rev, MPI_STATUS_IGNORE); /* LINE:subrecv */
    }
    MPI_Comm_free(&rev);

    /* Non-blocking: rank 1 posts an ANY_SOURCE Irecv, rank 0 an Isend. */
    MPI_Request rq[2];
    int nrq = 0;
    if (rank == 0) {
        MPI_Isend(buf, 50, MPI_INT, 1, 10, MPI_COMM_WORLD, &rq[nrq++]); /* LINE:isend */
    } else if (rank == 1) {
        MPI_Irecv(buf, 50, MPI_INT, MPI_ANY_SOURCE, 10, MPI_COMM_WORLD, &rq[nrq++]); /* LINE:irecv */
    }
    MPI_Waitall(nrq, rq, MPI_STATUSES_IGNORE); /* LINE:waitall */

    /* Rooted: gather 2 ints from everybody at root 0. */
    int g[2] = {rank, rank}, all[2 * 64];
    MPI_Gather(g, 2, MPI_INT, all, 2, MPI_INT, 0, MPI_COMM_WORLD); /* LINE:gather */
    MPI_Bcast(all, 2 * size, MPI_INT, 0, MPI_COMM_WORLD); /* LINE:bcast */

    /* Polling on COMM_SELF. */
    int flag;
    for (i = 0; i < 1000; i++)
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE); /* LINE:iprobe */

    /* A region excluded with MPI_Pcontrol(0). */
    MPI_Pcontrol(0);
    MPI_Barrier(MPI_COMM_WORLD); /* LINE:hidden */
    MPI_Pcontrol(1);
    MPI_Barrier(MPI_COMM_WORLD); /* LINE:barrier */

    printf("rank %d done %d\n", rank, all[2 * (size - 1)]);
    MPI_Finalize();
    return 0;
}
