/* Byte counts and peers that a profiler easily gets wrong. Needs 4 ranks for
 * every case (with 2 or 3 ranks the sub-communicator cases are skipped).
 *
 * - vector datatype: rank 0 sends VEC_COUNT elements of a vector type
 *   (VEC_BLOCKS blocks of VEC_BLOCKLEN doubles, stride VEC_STRIDE) to rank 1,
 *   which receives them with the same type: 3 * 16 * 4 * 8 = 1536 bytes on
 *   both sides (the extent-based count would be 3 * 992 = 2976).
 * - MPI_IN_PLACE: MPI_Allreduce(MPI_IN_PLACE, buf, 1000, MPI_INT) on every
 *   rank, and MPI_Reduce with MPI_IN_PLACE on the root: 4000 bytes each.
 * - MPI_ANY_SOURCE: rank 0 receives one 8-int message (32 bytes) from every
 *   other rank with MPI_ANY_SOURCE, first with a status, then with
 *   MPI_STATUS_IGNORE: the peers must be the real senders 1..size-1.
 * - sub-communicator: MPI_Comm_split(color = rank % 2, key = -rank), so that
 *   the sub-communicator ranks are the reverse of the world order. In each
 *   sub-communicator of size >= 2, sub-rank 0 (world 2 and 3 with 4 ranks)
 *   sends 5 ints (20 bytes) to sub-rank 1 (world 0 and 1) with an explicit
 *   source, then 6 ints (24 bytes) received with MPI_ANY_SOURCE. The peers must
 *   be world ranks: world 2 <-> world 0 and world 3 <-> world 1.
 *
 * usage: datatypes */
#include <mpi.h>
#include <string.h>

#include "common.h"

#define VEC_COUNT 3
#define VEC_BLOCKS 16
#define VEC_BLOCKLEN 4
#define VEC_STRIDE 8
#define VEC_DOUBLES (VEC_COUNT * VEC_BLOCKS * VEC_STRIDE)
#define INPLACE_N 1000
#define ANY_N 8
#define SUB_N 5
#define SUB_ANY_N 6

int main(int argc, char **argv)
{
    int rank, size, i, src;
    long check_vec = 0, check_any = 0, check_sub = 0, check_inplace = 0;
    long local[3], totals[3];
    double vec[VEC_DOUBLES];
    int ibuf[INPLACE_N], any[ANY_N];
    MPI_Datatype vtype;
    MPI_Comm sub;
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "datatypes: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* 1. vector datatype */
    MPI_Type_vector(VEC_BLOCKS, VEC_BLOCKLEN, VEC_STRIDE, MPI_DOUBLE, &vtype);
    MPI_Type_commit(&vtype);
    for (i = 0; i < VEC_DOUBLES; i++)
        vec[i] = rank == 0 ? (double)i : -1.0;
    if (rank == 0) {
        MPI_Send(vec, VEC_COUNT, vtype, 1, 10, MPI_COMM_WORLD); /* MPIOVER-EXPECT: datatypes-vector-send */
    } else if (rank == 1) {
        MPI_Recv(vec, VEC_COUNT, vtype, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: datatypes-vector-recv */
        for (i = 0; i < VEC_DOUBLES; i++)
            if (vec[i] >= 0)
                check_vec += (long)vec[i];
    }
    MPI_Type_free(&vtype);

    /* 2. MPI_IN_PLACE */
    for (i = 0; i < INPLACE_N; i++)
        ibuf[i] = rank + i;
    MPI_Allreduce(MPI_IN_PLACE, ibuf, INPLACE_N, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* MPIOVER-EXPECT: datatypes-inplace-allreduce */
    if (rank == 0) {
        MPI_Reduce(MPI_IN_PLACE, ibuf, INPLACE_N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: datatypes-inplace-reduce-root */
        for (i = 0; i < INPLACE_N; i++)
            check_inplace += ibuf[i];
    } else {
        MPI_Reduce(ibuf, NULL, INPLACE_N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: datatypes-inplace-reduce-nonroot */
    }

    /* 3. MPI_ANY_SOURCE in MPI_COMM_WORLD */
    if (rank == 0) {
        for (src = 1; src < size; src++) {
            MPI_Recv(any, ANY_N, MPI_INT, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, &st); /* MPIOVER-EXPECT: datatypes-any-recv-status */
            check_any += any[0] * st.MPI_SOURCE;
        }
        for (src = 1; src < size; src++) {
            MPI_Recv(any, ANY_N, MPI_INT, MPI_ANY_SOURCE, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: datatypes-any-recv-ignore */
            check_any += any[ANY_N - 1];
        }
    } else {
        for (i = 0; i < ANY_N; i++)
            any[i] = rank * 10 + i;
        MPI_Send(any, ANY_N, MPI_INT, 0, 20, MPI_COMM_WORLD); /* MPIOVER-EXPECT: datatypes-any-send */
        MPI_Send(any, ANY_N, MPI_INT, 0, 21, MPI_COMM_WORLD);
    }

    /* 4. point-to-point on a sub-communicator with reversed rank order */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &sub);
    {
        int srank, ssize, buf[SUB_ANY_N];
        MPI_Comm_rank(sub, &srank);
        MPI_Comm_size(sub, &ssize);
        if (ssize >= 2 && srank == 0) {
            for (i = 0; i < SUB_ANY_N; i++)
                buf[i] = rank * 100 + i;
            MPI_Send(buf, SUB_N, MPI_INT, 1, 30, sub); /* MPIOVER-EXPECT: datatypes-subcomm-send */
            MPI_Send(buf, SUB_ANY_N, MPI_INT, 1, 31, sub); /* MPIOVER-EXPECT: datatypes-subcomm-send-any */
        } else if (ssize >= 2 && srank == 1) {
            MPI_Recv(buf, SUB_N, MPI_INT, 0, 30, sub, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: datatypes-subcomm-recv */
            for (i = 0; i < SUB_N; i++)
                check_sub += buf[i];
            MPI_Recv(buf, SUB_ANY_N, MPI_INT, MPI_ANY_SOURCE, 31, sub, &st); /* MPIOVER-EXPECT: datatypes-subcomm-recv-any */
            for (i = 0; i < SUB_ANY_N; i++)
                check_sub += buf[i] * (st.MPI_SOURCE + 1);
        }
    }
    MPI_Comm_free(&sub);

    local[0] = check_vec;
    local[1] = check_any + check_inplace;
    local[2] = check_sub;
    MPI_Reduce(local, totals, 3, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("datatypes: ranks %d vector %ld any+inplace %ld subcomm %ld\n", size, totals[0],
               totals[1], totals[2]);
    MPI_Finalize();
    return 0;
}
