/* Late Sender through non-blocking receives: the odd rank of each pair
 * sleeps before every MPI_Send; the even rank posts its receive early and
 * then waits for it, so the time goes to the MPI_Wait (Late Sender in a
 * completion), while the MPI_Irecv that posted the request is cheap. The
 * profiler must put the wait at the Wait line and record the Irecv line as
 * its posting site.
 *
 * Two phases of `iterations` messages (8 bytes) each:
 *   1. MPI_Irecv (nb-irecv) + MPI_Wait (nb-wait);
 *   2. a persistent receive: MPI_Recv_init (nb-recv-init) once, then
 *      MPI_Start (nb-start) + MPI_Wait (nb-wait-persistent) per message.
 * The sending rank reports on stderr what it actually slept in each phase:
 * "late_sender_nb: rank 1 injected 200.4 ms" and
 * "late_sender_nb/persistent: rank 1 injected 200.3 ms".
 *
 * usage: late_sender_nb [iterations=10] [delay_ms=20] */
#include <mpi.h>

#include "../common.h"

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 10);
    int delay_ms = arg_int(argc, argv, 2, 20);
    int rank, size, i;
    long sum = 0, total = 0, v;
    double injected = 0, injected_p = 0;
    MPI_Request req;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "late_sender_nb: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank % 2 == 0 && rank + 1 < size) {
        for (i = 0; i < iters; i++) {
            MPI_Irecv(&v, 1, MPI_LONG, rank + 1, 0, MPI_COMM_WORLD, &req); /* MPIOVER-EXPECT: nb-irecv */
            sum += i; /* work that overlaps the transfer */
            MPI_Wait(&req, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: nb-wait */
            sum += v;
        }
        MPI_Recv_init(&v, 1, MPI_LONG, rank + 1, 1, MPI_COMM_WORLD, &req); /* MPIOVER-EXPECT: nb-recv-init */
        for (i = 0; i < iters; i++) {
            MPI_Start(&req); /* MPIOVER-EXPECT: nb-start */
            MPI_Wait(&req, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: nb-wait-persistent */
            sum += v;
        }
        MPI_Request_free(&req);
    } else if (rank % 2 == 1) {
        for (i = 0; i < iters; i++) {
            v = 1000L * rank + i;
            injected += timed_sleep_ms(delay_ms);
            MPI_Send(&v, 1, MPI_LONG, rank - 1, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: nb-send */
        }
        for (i = 0; i < iters; i++) {
            v = 2000L * rank + i;
            injected_p += timed_sleep_ms(delay_ms);
            MPI_Send(&v, 1, MPI_LONG, rank - 1, 1, MPI_COMM_WORLD); /* MPIOVER-EXPECT: nb-send-persistent */
        }
        report_injected("late_sender_nb", rank, injected);
        report_injected("late_sender_nb/persistent", rank, injected_p);
    }
    MPI_Reduce(&sum, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("late_sender_nb: ranks %d iterations %d delay_ms %d checksum %ld\n", size, iters,
               delay_ms, total);
    MPI_Finalize();
    return 0;
}
