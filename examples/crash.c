/* A run that dies. All ranks first exchange a few messages (rank 0 receives
 * from every other rank at the line marked crash-recv) and rank 0 prints its
 * result; then the last rank dies, while the others block in MPI_Recv from
 * it until mpirun tears the job down.
 *
 * usage: crash MODE [PIDFILE]
 *   abort      the last rank calls abort()                  (dies of SIGABRT)
 *   sigterm    the last rank raises SIGTERM itself          (dies of SIGTERM)
 *   sigint     the last rank raises SIGINT itself           (dies of SIGINT)
 *   sigbus     the last rank raises SIGBUS itself           (dies of SIGBUS)
 *   overflow   the last rank recurses without end           (dies of SIGSEGV,
 *              with no stack left for a signal handler)
 *   killfinal  the others go on to MPI_Finalize; the last rank waits 300 ms
 *              (the others are inside it by then) and kills itself with
 *              SIGKILL, which no handler sees
 *   exitfinal  the same, but the last rank returns from main without
 *              MPI_Finalize (exit status 0)
 *   wait PIDFILE  the last rank writes its pid to PIDFILE (written to
 *              PIDFILE.tmp, then renamed) and sleeps, so a test can send it,
 *              or mpirun, SIGTERM; after 60 s it gives up and ends normally.
 * With one rank, rank 0 is the last rank. */
#include <mpi.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

#define ROUNDS 3

/* Recursion the compiler cannot turn into a loop: each frame keeps a live
 * 1 KiB array and uses the callee's result. */
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Winfinite-recursion" /* it is the point */
#endif
static long deeper(long n)
{
    volatile char frame[1024];
    frame[n % sizeof frame] = (char)n;
    return deeper(n + 1) + frame[(n * 7) % sizeof frame];
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rank, size, i, src, go = 0;
    long v, sum = 0;

    if (strcmp(mode, "abort") != 0 && strcmp(mode, "sigterm") != 0 &&
        strcmp(mode, "sigint") != 0 && strcmp(mode, "sigbus") != 0 &&
        strcmp(mode, "overflow") != 0 && strcmp(mode, "killfinal") != 0 &&
        strcmp(mode, "exitfinal") != 0 && !(strcmp(mode, "wait") == 0 && argc > 2)) {
        fprintf(stderr, "usage: crash abort|sigterm|sigint|sigbus|overflow|killfinal|exitfinal|wait PIDFILE\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (i = 0; i < ROUNDS; i++) {
        if (rank == 0) {
            for (src = 1; src < size; src++) {
                MPI_Recv(&v, 1, MPI_LONG, src, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: crash-recv */
                sum += v;
            }
        } else {
            v = rank * 10 + i;
            MPI_Send(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: crash-send */
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("crash: ranks %d mode %s checksum %ld\n", size, mode, sum);
        fflush(stdout);
    }
    /* Only now may the last rank die: rank 0's output is out. */
    if (size > 1 && rank == 0)
        MPI_Send(&go, 1, MPI_INT, size - 1, 1, MPI_COMM_WORLD);
    if (size > 1 && rank == size - 1)
        MPI_Recv(&go, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    if (strcmp(mode, "killfinal") == 0 || strcmp(mode, "exitfinal") == 0) {
        /* The others are in MPI_Finalize while the last rank ends. */
        if (rank == size - 1) {
            sleep_ms(300);
            if (strcmp(mode, "killfinal") == 0)
                raise(SIGKILL);
            return 0;
        }
        MPI_Finalize();
        return 0;
    }
    if (rank == size - 1) {
        if (strcmp(mode, "abort") == 0) {
            abort();
        } else if (strcmp(mode, "sigterm") == 0) {
            raise(SIGTERM);
        } else if (strcmp(mode, "sigint") == 0) {
            raise(SIGINT);
        } else if (strcmp(mode, "sigbus") == 0) {
            raise(SIGBUS);
        } else if (strcmp(mode, "overflow") == 0) {
            v = deeper(0);
        } else {
            char tmp[4096];
            FILE *f;
            snprintf(tmp, sizeof tmp, "%s.tmp", argv[2]);
            f = fopen(tmp, "w");
            if (f) {
                fprintf(f, "%d\n", (int)getpid());
                fclose(f);
                rename(tmp, argv[2]);
            }
            for (i = 0; i < 600; i++)
                sleep_ms(100);
        }
        /* Only reached when no signal arrived in the wait mode. */
    } else {
        /* Never satisfied while the last rank dies: mpirun tears us down. */
        MPI_Recv(&v, 1, MPI_LONG, size - 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: crash-blocked-recv */
    }
    if (rank == size - 1 && size > 1)
        for (src = 0; src < size - 1; src++)
            MPI_Send(&v, 1, MPI_LONG, src, 2, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
