/* The record is written while other threads are still calling MPI: under
 * MPI_THREAD_MULTIPLE, `threads` threads call MPI_Iprobe on MPI_COMM_SELF in
 * a loop (busy-iprobe; nothing ever matches), and after `ms` milliseconds the
 * main thread ends the process without MPI_Finalize: `exit` returns from
 * main (the record is written at exit), `sigterm` raises SIGTERM (written by
 * the signal handler). The threads never stop on their own, so every write
 * races with them. Prints the calls each thread made before the end.
 *
 * usage: busy_exit exit|sigterm [threads=3] [ms=300] */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "../common.h"

#define MAXT 16

static volatile long calls[MAXT];

static void *spin(void *arg)
{
    int t = (int)(long)arg, flag;
    for (;;) {
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: busy-iprobe */
        calls[t]++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int nthreads = arg_int(argc, argv, 2, 3), ms = arg_int(argc, argv, 3, 300);
    int provided, rank, t;
    pthread_t th[MAXT];
    struct timespec ts;

    if (strcmp(mode, "exit") != 0 && strcmp(mode, "sigterm") != 0) {
        fprintf(stderr, "usage: busy_exit exit|sigterm [threads] [ms]\n");
        return 2;
    }
    if (nthreads < 1 || nthreads > MAXT)
        nthreads = 3;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "busy_exit: MPI_THREAD_MULTIPLE not provided\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Barrier(MPI_COMM_WORLD);
    for (t = 0; t < nthreads; t++)
        pthread_create(&th[t], NULL, spin, (void *)(long)t);
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
    for (t = 0; t < nthreads; t++)
        fprintf(stderr, "busy_exit: rank %d thread %d calls %ld\n", rank, t, calls[t]);
    if (strcmp(mode, "sigterm") == 0)
        raise(SIGTERM);
    exit(0); /* no MPI_Finalize, on purpose: the threads are still calling MPI */
}
