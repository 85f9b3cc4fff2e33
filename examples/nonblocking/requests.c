/* Completion calls and the request map: what each completion records as the
 * request it completed (function, posting line, bytes, peer).
 *
 * Rank 0 (the receiver) posts, rank 1 (the sender) sends after a short
 * sleep, so the receives are still pending when rank 0 completes them. Each
 * phase runs `iterations` rounds:
 *
 *   1. MPI_Waitall over [Irecv from the late sender, MPI_REQUEST_NULL,
 *      Isend to MPI_PROC_NULL, Irecv from MPI_PROC_NULL, an inactive
 *      persistent receive]: only the Irecv moves data, so the Waitall must
 *      record it (its line, 8 bytes, peer 1). Open MPI returns one shared
 *      request for every post to or from MPI_PROC_NULL. Then a blocking
 *      MPI_Recv and MPI_Sendrecv from MPI_PROC_NULL (0 bytes, no peer).
 *   2. MPI_Testall polled until done over [Irecv, Isend to MPI_PROC_NULL].
 *   3. MPI_Test: exactly 1000 polls that cannot succeed (rank 1 sends only
 *      when told to), then polls until done.
 *   4. MPI_Waitany over 4 Irecvs (16 bytes each).
 *   5. MPI_Waitsome over 4 Irecvs (24 bytes each) and an MPI_REQUEST_NULL.
 *   6. MPI_Irecv that is never matched, MPI_Cancel, MPI_Wait: cancelled,
 *      nothing moved.
 *   7. (both ranks) MPI_Iallreduce of 4 doubles + MPI_Wait; MPI_Ineighbor_
 *      allgather and MPI_Ineighbor_alltoall (1 int per neighbour) on a
 *      periodic ring + MPI_Wait.
 *
 * stdout: a checksum (the same with and without the profiler). stderr:
 * "requests: testall polls N", "requests: test polls N" (polls after the
 * 1000), "requests: cancelled N".
 *
 * usage: requests [iterations=5] [delay_ms=5] */
#include <mpi.h>

#include "../common.h"

/* MPICH's MPI_STATUSES_IGNORE is a null array gcc warns about. */
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#define NANY 4

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 5);
    int delay_ms = arg_int(argc, argv, 2, 5);
    int rank, size, i, k, flag;
    long v = 0, z = 7, zr = 0, idle = 0, go = 1, any[NANY][2], some[NANY][3];
    long sum = 0, total = 0;
    long testall_polls = 0, test_polls = 0, cancelled = 0;
    MPI_Request r[5], req;
    MPI_Status st[5], s1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (rank == 0)
            fprintf(stderr, "requests: needs 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        /* 1. Waitall with null, MPI_PROC_NULL and inactive requests. */
        MPI_Recv_init(&idle, 1, MPI_LONG, 1, 99, MPI_COMM_WORLD, &r[4]); /* MPIOVER-EXPECT: rq-recv-init-idle */
        for (i = 0; i < iters; i++) {
            MPI_Irecv(&v, 1, MPI_LONG, 1, 10, MPI_COMM_WORLD, &r[0]); /* MPIOVER-EXPECT: rq-irecv-all */
            r[1] = MPI_REQUEST_NULL;
            MPI_Isend(&z, 1, MPI_LONG, MPI_PROC_NULL, 10, MPI_COMM_WORLD, &r[2]); /* MPIOVER-EXPECT: rq-isend-null */
            MPI_Irecv(&zr, 1, MPI_LONG, MPI_PROC_NULL, 10, MPI_COMM_WORLD, &r[3]); /* MPIOVER-EXPECT: rq-irecv-null */
            MPI_Waitall(5, r, MPI_STATUSES_IGNORE); /* MPIOVER-EXPECT: rq-waitall */
            sum += v;
            /* Blocking receives from MPI_PROC_NULL: nothing arrives. */
            MPI_Recv(&zr, 1, MPI_LONG, MPI_PROC_NULL, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rq-recv-null */
            MPI_Sendrecv(&z, 0, MPI_LONG, MPI_PROC_NULL, 12, &zr, 1, MPI_LONG, MPI_PROC_NULL, 12, MPI_COMM_WORLD, &s1); /* MPIOVER-EXPECT: rq-sendrecv-null */
        }
        MPI_Request_free(&r[4]);

        /* 2. Testall polling. */
        for (i = 0; i < iters; i++) {
            MPI_Irecv(&v, 1, MPI_LONG, 1, 20, MPI_COMM_WORLD, &r[0]); /* MPIOVER-EXPECT: rq-irecv-testall */
            MPI_Isend(&z, 1, MPI_LONG, MPI_PROC_NULL, 20, MPI_COMM_WORLD, &r[1]);
            flag = 0;
            while (!flag) {
                MPI_Testall(2, r, &flag, st); /* MPIOVER-EXPECT: rq-testall */
                testall_polls++;
            }
            sum += v;
        }

        /* 3. 1000 Tests that cannot succeed, then Tests until done. */
        for (i = 0; i < iters; i++) {
            MPI_Irecv(&v, 1, MPI_LONG, 1, 30, MPI_COMM_WORLD, &req); /* MPIOVER-EXPECT: rq-irecv-test */
            for (k = 0; k < 1000; k++) {
                MPI_Test(&req, &flag, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rq-test-poll */
                if (flag) {
                    fprintf(stderr, "requests: a test succeeded before the send\n");
                    MPI_Abort(MPI_COMM_WORLD, 3);
                }
            }
            MPI_Send(&go, 1, MPI_LONG, 1, 31, MPI_COMM_WORLD);
            flag = 0;
            while (!flag) {
                MPI_Test(&req, &flag, &s1); /* MPIOVER-EXPECT: rq-test-until */
                test_polls++;
            }
            sum += v;
        }

        /* 4. Waitany. */
        for (i = 0; i < iters; i++) {
            for (k = 0; k < NANY; k++)
                MPI_Irecv(any[k], 2, MPI_LONG, 1, 40 + k, MPI_COMM_WORLD, &r[k]); /* MPIOVER-EXPECT: rq-irecv-any */
            for (k = 0; k < NANY; k++) {
                int idx;
                MPI_Waitany(NANY, r, &idx, &s1); /* MPIOVER-EXPECT: rq-waitany */
                if (idx >= 0 && idx < NANY)
                    sum += any[idx][0];
            }
        }

        /* 5. Waitsome (with a null request in the array). */
        for (i = 0; i < iters; i++) {
            int done = 0, out, idx[NANY + 1];
            for (k = 0; k < NANY; k++)
                MPI_Irecv(some[k], 3, MPI_LONG, 1, 50 + k, MPI_COMM_WORLD, &r[k]); /* MPIOVER-EXPECT: rq-irecv-some */
            r[NANY] = MPI_REQUEST_NULL;
            while (done < NANY) {
                MPI_Waitsome(NANY + 1, r, &out, idx, st); /* MPIOVER-EXPECT: rq-waitsome */
                if (out == MPI_UNDEFINED)
                    break;
                for (k = 0; k < out; k++)
                    sum += some[idx[k]][0];
                done += out;
            }
        }

        /* 6. A receive that is never matched, cancelled. */
        for (i = 0; i < iters; i++) {
            MPI_Irecv(&v, 1, MPI_LONG, 1, 60, MPI_COMM_WORLD, &req); /* MPIOVER-EXPECT: rq-irecv-cancel */
            MPI_Cancel(&req);
            if (i % 2 == 0) {
                MPI_Wait(&req, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rq-wait-cancel */
                cancelled++;
            } else {
                MPI_Wait(&req, &s1); /* MPIOVER-EXPECT: rq-wait-cancel-status */
                MPI_Test_cancelled(&s1, &flag);
                cancelled += flag;
            }
        }
    } else {
        for (i = 0; i < iters; i++) {
            v = 100 + i;
            sleep_ms(delay_ms);
            MPI_Send(&v, 1, MPI_LONG, 0, 10, MPI_COMM_WORLD);
        }
        for (i = 0; i < iters; i++) {
            v = 200 + i;
            sleep_ms(delay_ms);
            MPI_Send(&v, 1, MPI_LONG, 0, 20, MPI_COMM_WORLD);
        }
        for (i = 0; i < iters; i++) {
            v = 300 + i;
            MPI_Recv(&go, 1, MPI_LONG, 0, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&v, 1, MPI_LONG, 0, 30, MPI_COMM_WORLD);
        }
        for (i = 0; i < iters; i++) {
            for (k = 0; k < NANY; k++) {
                any[k][0] = 400 + k;
                any[k][1] = 0;
                sleep_ms(delay_ms / 2);
                MPI_Send(any[k], 2, MPI_LONG, 0, 40 + (NANY - 1 - k), MPI_COMM_WORLD);
            }
        }
        for (i = 0; i < iters; i++) {
            for (k = 0; k < NANY; k++) {
                some[k][0] = 500 + k;
                some[k][1] = some[k][2] = 0;
                if (k % 2 == 0)
                    sleep_ms(delay_ms / 2);
                MPI_Send(some[k], 3, MPI_LONG, 0, 50 + k, MPI_COMM_WORLD);
            }
        }
    }

    /* 7. Non-blocking collectives. */
    {
        double a[4] = {1, 2, 3, 4}, b[4];
        int dims[1] = {2}, periods[1] = {1}, one = rank, got[2], out[2] = {rank, rank + 10}, in[2];
        MPI_Comm ring;
        for (i = 0; i < iters; i++) {
            MPI_Iallreduce(a, b, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req); /* MPIOVER-EXPECT: rq-iallreduce */
            MPI_Wait(&req, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rq-wait-iallreduce */
            sum += (long)b[3];
        }
        MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
        for (i = 0; i < iters; i++) {
            MPI_Ineighbor_allgather(&one, 1, MPI_INT, got, 1, MPI_INT, ring, &req); /* MPIOVER-EXPECT: rq-ineighbor-allgather */
            MPI_Wait(&req, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rq-wait-ineighbor-allgather */
            MPI_Ineighbor_alltoall(out, 1, MPI_INT, in, 1, MPI_INT, ring, &req); /* MPIOVER-EXPECT: rq-ineighbor-alltoall */
            MPI_Wait(&req, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rq-wait-ineighbor-alltoall */
            sum += got[0] + got[1] + in[0] + in[1];
        }
        MPI_Comm_free(&ring);
    }

    MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        fprintf(stderr, "requests: testall polls %ld\n", testall_polls);
        fprintf(stderr, "requests: test polls %ld\n", test_polls);
        fprintf(stderr, "requests: cancelled %ld\n", cancelled);
        printf("requests: iterations %d checksum %ld\n", iters, total);
    }
    MPI_Finalize();
    return 0;
}
