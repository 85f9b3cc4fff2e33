/* MPI_THREAD_MULTIPLE: several threads per rank communicate at the same
 * time. Thread t of a rank talks to thread t of the partner rank (rank ^ 1)
 * on its own duplicate of MPI_COMM_WORLD; per iteration it
 *   - exchanges (t + 1) * 8 bytes with MPI_Sendrecv (thr-sendrecv),
 *   - posts MPI_Irecv (thr-irecv) and MPI_Isend (thr-isend) of the same size
 *     and completes them with two MPI_Wait (thr-wait-recv, thr-wait-send),
 *   - joins an MPI_Allreduce of one long on its communicator (thr-allreduce).
 * So on every rank each marked line is called exactly threads * iterations
 * times, iterations times per thread with that thread's message size; the
 * profiler must count every call once and keep the threads' requests apart.
 *
 * usage: threads [iterations=200] [threads=4]   (an even number of ranks) */
#include <mpi.h>
#include <pthread.h>
#include <string.h>

#include "../common.h"

#define MAXT 16

static int iters, nthreads, rank, partner;
static MPI_Comm comms[MAXT];
static long sums[MAXT];
static pthread_barrier_t start;

static void *work(void *arg)
{
    int t = (int)(long)arg, i, n = t + 1;
    long out[MAXT], in[MAXT], acc = 0, one, all;
    MPI_Comm comm = comms[t];
    MPI_Request rr, sr;

    pthread_barrier_wait(&start);
    for (i = 0; i < iters; i++) {
        memset(out, 0, sizeof out);
        out[0] = rank * 1000L + t * 10 + i;
        MPI_Sendrecv(out, n, MPI_LONG, partner, t, in, n, MPI_LONG, partner, t, comm, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: thr-sendrecv */
        acc += in[0];
        MPI_Irecv(in, n, MPI_LONG, partner, 100 + t, comm, &rr); /* MPIOVER-EXPECT: thr-irecv */
        MPI_Isend(out, n, MPI_LONG, partner, 100 + t, comm, &sr); /* MPIOVER-EXPECT: thr-isend */
        MPI_Wait(&rr, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: thr-wait-recv */
        MPI_Wait(&sr, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: thr-wait-send */
        acc += in[0];
        one = 1;
        MPI_Allreduce(&one, &all, 1, MPI_LONG, MPI_SUM, comm); /* MPIOVER-EXPECT: thr-allreduce */
        acc += all;
    }
    sums[t] = acc;
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, size, t;
    long total = 0, grand = 0;
    pthread_t th[MAXT];

    iters = arg_int(argc, argv, 1, 200);
    nthreads = arg_int(argc, argv, 2, 4);
    if (nthreads < 1 || nthreads > MAXT) {
        fprintf(stderr, "threads: 1 to %d threads\n", MAXT);
        return 2;
    }
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided < MPI_THREAD_MULTIPLE || size % 2 != 0) {
        if (rank == 0)
            fprintf(stderr, "threads: needs MPI_THREAD_MULTIPLE (got %d) and an even number of ranks\n",
                    provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    partner = rank ^ 1;
    for (t = 0; t < nthreads; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_barrier_init(&start, NULL, (unsigned)nthreads);
    for (t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, work, (void *)(long)t);
    for (t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        total += sums[t];
    }
    pthread_barrier_destroy(&start);
    for (t = 0; t < nthreads; t++)
        MPI_Comm_free(&comms[t]);
    MPI_Reduce(&total, &grand, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("threads: ranks %d threads %d iterations %d checksum %ld\n", size, nthreads, iters,
               grand);
    MPI_Finalize();
    return 0;
}
