/* Exercises every kind of event wrapper (completions, persistent requests,
 * matched probes, v/w collectives, topology and intercommunicator
 * collectives, in-place variants) with 2..4 ranks; prints a checksum that
 * must be the same with and without libmpiover.so. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, size, i;
    long sum = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int sb[64], rb[64 * 8], cnt[8], dsp[8];
    for (i = 0; i < 64; i++) sb[i] = rank * 100 + i;

    /* Waitany / Waitsome / Testall / Testany / Test. */
    MPI_Request rq[4];
    MPI_Status st[4];
    int idx, out, flag, ids[4];
    MPI_Irecv(rb, 8, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &rq[0]); /* LINE:irecv_any */
    MPI_Isend(sb, 8, MPI_INT, right, 1, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitany(2, rq, &idx, MPI_STATUS_IGNORE); /* LINE:waitany */
    MPI_Waitsome(2, rq, &out, ids, st); /* LINE:waitsome */
    if (out != MPI_UNDEFINED && out < 1) MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    sum += rb[0];
    MPI_Irecv(rb, 8, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(sb, 8, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[1]);
    do { MPI_Testall(2, rq, &flag, st); } while (!flag); /* LINE:testall */
    MPI_Irecv(rb, 8, MPI_INT, left, 3, MPI_COMM_WORLD, &rq[0]);
    MPI_Issend(sb, 8, MPI_INT, right, 3, MPI_COMM_WORLD, &rq[1]);
    int done = 0;
    while (done < 2) {
        MPI_Testany(2, rq, &idx, &flag, MPI_STATUS_IGNORE); /* LINE:testany */
        if (flag && idx != MPI_UNDEFINED) done++;
        if (flag && idx == MPI_UNDEFINED) break;
    }
    MPI_Irecv(rb, 8, MPI_INT, left, 4, MPI_COMM_WORLD, &rq[0]);
    MPI_Send(sb, 8, MPI_INT, right, 4, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE); /* LINE:test */
    MPI_Irecv(rb, 8, MPI_INT, left, 5, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(sb, 8, MPI_INT, right, 5, MPI_COMM_WORLD, &rq[1]);
    do { MPI_Testsome(2, rq, &out, ids, MPI_STATUSES_IGNORE); } while (out != MPI_UNDEFINED); /* LINE:testsome */

    /* Persistent requests. */
    MPI_Send_init(sb, 4, MPI_INT, right, 6, MPI_COMM_WORLD, &rq[0]);
    MPI_Recv_init(rb, 4, MPI_INT, left, 6, MPI_COMM_WORLD, &rq[1]);
    for (i = 0; i < 3; i++) {
        MPI_Startall(2, rq); /* LINE:startall */
        MPI_Waitall(2, rq, st); /* LINE:pwaitall */
        MPI_Start(&rq[1]); /* LINE:start */
        MPI_Start(&rq[0]);
        MPI_Wait(&rq[1], &st[0]); /* LINE:pwait */
        MPI_Wait(&rq[0], &st[0]);
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    sum += rb[1];

    /* Probes, matched probes, Sendrecv_replace. */
    MPI_Message msg;
    MPI_Send(sb, 3, MPI_INT, right, 7, MPI_COMM_WORLD);
    MPI_Probe(MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &st[0]); /* LINE:probe */
    MPI_Recv(rb, 3, MPI_INT, st[0].MPI_SOURCE, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(sb, 5, MPI_INT, right, 8, MPI_COMM_WORLD);
    MPI_Mprobe(MPI_ANY_SOURCE, 8, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
    MPI_Mrecv(rb, 5, MPI_INT, &msg, MPI_STATUS_IGNORE); /* LINE:mrecv */
    MPI_Send(sb, 6, MPI_INT, right, 9, MPI_COMM_WORLD);
    flag = 0;
    while (!flag) MPI_Improbe(left, 9, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE);
    MPI_Imrecv(rb, 6, MPI_INT, &msg, &rq[0]);
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE); /* LINE:imrecv_wait */
    MPI_Sendrecv_replace(sb, 2, MPI_INT, right, 10, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* LINE:replace */
    sum += sb[0] + rb[2];
    MPI_Send(sb, 1, MPI_INT, MPI_PROC_NULL, 11, MPI_COMM_WORLD); /* LINE:procnull */

    /* v and w collectives, in-place variants. */
    for (i = 0; i < size; i++) { cnt[i] = i + 1; dsp[i] = 8 * i; }
    MPI_Scatterv(sb, cnt, dsp, MPI_INT, rb, rank + 1, MPI_INT, 0, MPI_COMM_WORLD); /* LINE:scatterv */
    MPI_Gatherv(sb, rank + 1, MPI_INT, rb, cnt, dsp, MPI_INT, 0, MPI_COMM_WORLD); /* LINE:gatherv */
    int rcnt[8];
    for (i = 0; i < size; i++) rcnt[i] = rank + 1;
    MPI_Alltoallv(sb, cnt, dsp, MPI_INT, rb, rcnt, dsp, MPI_INT, MPI_COMM_WORLD); /* LINE:alltoallv */
    MPI_Datatype ty[8];
    int wd[8];
    for (i = 0; i < size; i++) { ty[i] = MPI_INT; wd[i] = 32 * i; cnt[i] = 2; }
    MPI_Alltoallw(sb, cnt, wd, ty, rb, cnt, wd, ty, MPI_COMM_WORLD); /* LINE:alltoallw */
    for (i = 0; i < size; i++) cnt[i] = 2;
    MPI_Reduce_scatter(sb, rb, cnt, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* LINE:reduce_scatter */
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, 3, MPI_INT, MPI_COMM_WORLD); /* LINE:allgather_inplace */
    if (rank == 0)
        MPI_Gather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rb, 2, MPI_INT, 0, MPI_COMM_WORLD); /* LINE:gather_inplace */
    else
        MPI_Gather(sb, 2, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD);
    MPI_Reduce(rank ? sb : MPI_IN_PLACE, rb, 4, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Scan(sb, rb, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Exscan(sb, rb, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    sum += rb[0];

    /* Non-blocking collective. */
    MPI_Ibcast(sb, 7, MPI_INT, 0, MPI_COMM_WORLD, &rq[0]); /* LINE:ibcast */
    MPI_Wait(&rq[0], MPI_STATUS_IGNORE); /* LINE:ibcast_wait */

    /* Cartesian ring: neighbour collectives. */
    MPI_Comm cart;
    int dims[1] = {size}, per[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, per, 0, &cart);
    MPI_Neighbor_alltoall(sb, 3, MPI_INT, rb, 3, MPI_INT, cart); /* LINE:neighbor */
    MPI_Comm_free(&cart);

    /* Intercommunicator: even and odd ranks. */
    if (size >= 2) {
        MPI_Comm half, inter;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
        MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 12, &inter);
        int hr;
        MPI_Comm_rank(half, &hr);
        int root = rank % 2 == 0 ? (hr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        MPI_Bcast(sb, 5, MPI_INT, root, inter); /* LINE:interbcast */
        if (rank == 0)
            MPI_Send(sb, 1, MPI_INT, 0, 13, inter); /* LINE:intersend */
        else if (rank == 1)
            MPI_Recv(rb, 1, MPI_INT, MPI_ANY_SOURCE, 13, inter, MPI_STATUS_IGNORE); /* LINE:interrecv */
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
    sum += sb[4];

    long total;
    MPI_Allreduce(&sum, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("checksum %ld\n", total);
    MPI_Finalize();
    return 0;
}
