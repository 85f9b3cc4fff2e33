/* Ways for a rank to end (interpose/tests/record.rs): after some MPI calls,
 * argv[1] = abort | term | segv | nofinalize | exit3 | ok. Rank 0 does the
 * deed; the other ranks finish normally where that is possible.
 * nofinalize_stagger: no rank finalizes, rank r returns r * 150 ms after the
 * others (run with MPIOVER_DEBUG=slow-write: mpirun's SIGTERM, sent when rank
 * 0 exits, reaches the other ranks while they write their records). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static void helper_send(int *b, int to)
{
    MPI_Send(b, 3, MPI_INT, to, 1, MPI_COMM_WORLD); /* LINE:helper_send */
}

__attribute__((noinline)) static void helper_recv(int *b, int from)
{
    MPI_Recv(b, 3, MPI_INT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* LINE:helper_recv */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    int rank, size, b[3] = {1, 2, 3};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 5; i++) {
        if (rank == 0)
            helper_send(b, 1); /* LINE:call_send */
        else if (rank == 1)
            helper_recv(b, 0); /* LINE:call_recv */
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d before %s\n", rank, mode);
    fflush(stdout);
    if (rank == 0 || size == 1) {
        if (!strcmp(mode, "abort")) abort();
        if (!strcmp(mode, "term")) kill(getpid(), SIGTERM);
        if (!strcmp(mode, "segv")) raise(SIGSEGV);
    }
    if (!strcmp(mode, "nofinalize")) return 0;
    if (!strcmp(mode, "nofinalize_stagger")) {
        struct timespec t = {0, 150000000L * rank};
        while (nanosleep(&t, &t) != 0)
            ;
        return 0;
    }
    if (!strcmp(mode, "exit3")) {
        MPI_Finalize();
        return 3;
    }
    MPI_Finalize();
    return 0;
}
