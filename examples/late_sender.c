/* Late Sender: the odd rank of each pair sleeps before every MPI_Send, the
 * even rank is already blocked in MPI_Recv, so the receiver's MPI_Recv waits
 * for the whole injected delay. Each sending rank reports on stderr the
 * delay it actually injected (sleeps can overrun on a busy machine):
 * "late_sender: rank 1 injected 200.412 ms".
 *
 * usage: late_sender [iterations=10] [delay_ms=20]
 * expected: on every even rank, the MPI_Recv marked late-sender-recv is the
 * top site by time, with about iterations * delay_ms in it. */
#include <mpi.h>

#include "common.h"

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 10);
    int delay_ms = arg_int(argc, argv, 2, 20);
    int rank, size, i;
    long sum = 0, total = 0;
    double injected = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "late_sender: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank % 2 == 0 && rank + 1 < size) {
        for (i = 0; i < iters; i++) {
            long v;
            MPI_Recv(&v, 1, MPI_LONG, rank + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: late-sender-recv */
            sum += v;
        }
    } else if (rank % 2 == 1) {
        for (i = 0; i < iters; i++) {
            long v = 1000L * rank + i;
            injected += timed_sleep_ms(delay_ms);
            MPI_Send(&v, 1, MPI_LONG, rank - 1, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: late-sender-send */
        }
    }
    if (rank % 2 == 1)
        report_injected("late_sender", rank, injected);
    MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("late_sender: ranks %d iterations %d delay_ms %d checksum %ld\n", size, iters,
               delay_ms, total);
    MPI_Finalize();
    return 0;
}
