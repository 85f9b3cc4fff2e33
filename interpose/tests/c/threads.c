/* MPI_THREAD_MULTIPLE: 4 threads, each N Sendrecv on MPI_COMM_SELF and N
 * Allreduce on a duplicate of MPI_COMM_WORLD of its own. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>

#define N 500
static MPI_Comm comms[4];

static void *work(void *arg)
{
    int t = (int)(long)arg, a = t, b;
    for (int i = 0; i < N; i++) {
        MPI_Sendrecv(&a, 1, MPI_INT, 0, t, &b, 1, MPI_INT, 0, t, MPI_COMM_SELF, MPI_STATUS_IGNORE); /* LINE:sendrecv */
        MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, comms[t]); /* LINE:allreduce */
    }
    return NULL;
}

int main(int argc, char **argv)
{
    int provided, rank;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int t = 0; t < 4; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    pthread_t th[4];
    for (int t = 0; t < 4; t++) pthread_create(&th[t], NULL, work, (void *)(long)t);
    for (int t = 0; t < 4; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < 4; t++) MPI_Comm_free(&comms[t]);
    printf("rank %d provided %d\n", rank, provided == MPI_THREAD_MULTIPLE);
    MPI_Finalize();
    return 0;
}
