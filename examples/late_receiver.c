/* Late Receiver: the even rank of each pair sends rendezvous-size messages
 * (default 1 MiB, far above Open MPI's 4 KiB shared-memory eager limit) with
 * MPI_Send; the odd rank sleeps before posting each MPI_Recv. A rendezvous
 * send cannot complete before the receive is posted, so the sender's MPI_Send
 * waits for the whole injected delay. Each receiving rank reports on stderr
 * the delay it actually injected: "late_receiver: rank 1 injected 200.4 ms".
 *
 * usage: late_receiver [iterations=10] [delay_ms=20] [bytes=1048576]
 * expected: on every even rank, the MPI_Send marked late-receiver-send is the
 * top site by time, with about iterations * delay_ms in it. */
#include <mpi.h>
#include <string.h>

#include "common.h"

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 10);
    int delay_ms = arg_int(argc, argv, 2, 20);
    int bytes = arg_int(argc, argv, 3, 1 << 20);
    int rank, size, i, j;
    unsigned char *buf;
    long sum = 0, total = 0;
    double injected = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "late_receiver: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    buf = malloc(bytes > 0 ? bytes : 1);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);

    for (j = 0; j < bytes; j++)
        buf[j] = (unsigned char)j;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank % 2 == 0 && rank + 1 < size) {
        for (i = 0; i < iters; i++) {
            if (bytes > 0)
                buf[0] = (unsigned char)i;
            MPI_Send(buf, bytes, MPI_BYTE, rank + 1, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: late-receiver-send */
        }
    } else if (rank % 2 == 1) {
        for (i = 0; i < iters; i++) {
            injected += timed_sleep_ms(delay_ms);
            MPI_Recv(buf, bytes, MPI_BYTE, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: late-receiver-recv */
            if (bytes > 0)
                sum += buf[0] + buf[bytes / 2];
        }
        report_injected("late_receiver", rank, injected);
    }
    MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("late_receiver: ranks %d iterations %d delay_ms %d bytes %d checksum %ld\n", size,
               iters, delay_ms, bytes, total);
    free(buf);
    MPI_Finalize();
    return 0;
}
