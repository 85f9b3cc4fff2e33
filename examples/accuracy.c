/* Accuracy suite: waits of known size injected at known lines, and clean
 * sites, for checking what the report attributes to each line.
 *
 * Phases (ranks 0 and 1 exchange messages; every rank takes part in the
 * collectives; the other ranks of a larger job only wait in those):
 *   1. Late Sender: rank 1 sleeps sender_ms before every MPI_Send of 8 bytes,
 *      rank 0 waits in MPI_Recv (late rank 1).
 *   2. Late Receiver: rank 0 sleeps receiver_ms before every MPI_Recv of a
 *      1 MiB message (rendezvous), rank 1 waits in MPI_Send (late rank 0).
 *   3. Wait at NxN: the last rank sleeps allreduce_ms before every
 *      MPI_Allreduce, the others wait in it (late rank size-1).
 *   4. Wait at Barrier: rank 0 sleeps barrier_ms before every MPI_Barrier,
 *      the others wait in it (late rank 0).
 *   5. Clean: `clean` 8-byte ping-pongs between ranks 0 and 1, then `clean`
 *      MPI_Allreduce of 8 bytes on every rank, no delay.
 * Each phase runs `iterations` times. The delays differ per site (30, 20, 40
 * and 10 ms by default) so that a wait attributed to the wrong line shows.
 *
 * At the end, the late rank of each injecting site prints on stderr what it
 * actually slept there, summed over the iterations (sleeps overrun on a busy
 * machine):
 *   "accuracy: site accuracy-late-sender-recv rank 1 injected 150.412 ms"
 * The late receiver also prints how long its receives took: the sender waits
 * for the sleep and then for the transfer, and a 1 MiB receive right after a
 * sleep takes about 1 ms instead of 0.1 ms on a VM whose idle CPU has to
 * wake (up to 11 ms measured without the profiler):
 *   "accuracy: site accuracy-late-receiver-send rank 0 received 6.120 ms"
 * The site is the marker of the line where the others wait. stdout is one
 * deterministic line on rank 0.
 *
 * usage: accuracy [iterations=5] [clean=2000] [sender_ms=30] [receiver_ms=20]
 *                 [allreduce_ms=40] [barrier_ms=10] */
#include <mpi.h>
#include <string.h>
#include <sys/mman.h>

#include "common.h"

#define BIG (1 << 20) /* bytes: far above every eager limit */

static void report_site(const char *site, int rank, double seconds)
{
    fprintf(stderr, "accuracy: site %s rank %d injected %.3f ms\n", site, rank, seconds * 1e3);
}

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 5);
    int clean = arg_int(argc, argv, 2, 2000);
    int sender_ms = arg_int(argc, argv, 3, 30);
    int receiver_ms = arg_int(argc, argv, 4, 20);
    int allreduce_ms = arg_int(argc, argv, 5, 40);
    int barrier_ms = arg_int(argc, argv, 6, 10);
    int rank, size, i, last;
    long v = 0, sum = 0, in, out;
    double injected_sender = 0, injected_receiver = 0, received = 0, t0, injected_allreduce = 0, injected_barrier = 0;
    char *big;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "accuracy: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    last = size - 1;
    big = malloc(BIG);
    if (!big)
        MPI_Abort(MPI_COMM_WORLD, 1);
    memset(big, rank + 1, BIG);
    /* The clean phase should time communication alone. A host that reclaims
     * file pages on its own (a virtual machine's proactive page-out) can
     * drop this process's code pages between calls, and each refault from
     * disk takes 0.1-0.2 ms inside an MPI call of a microsecond: keep what is
     * mapped now resident. Best effort: without the privilege the call fails
     * and the run goes on as before. */
    (void)mlockall(MCL_CURRENT);

    /* 1. Late Sender. */
    for (i = 0; i < iters; i++) {
        if (rank == 0) {
            MPI_Recv(&v, 1, MPI_LONG, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: accuracy-late-sender-recv */
            sum += v;
        } else if (rank == 1) {
            v = i + 1;
            injected_sender += timed_sleep_ms(sender_ms);
            MPI_Send(&v, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD); /* MPIOVER-EXPECT: accuracy-late-sender-send */
        }
    }

    /* 2. Late Receiver. */
    for (i = 0; i < iters; i++) {
        if (rank == 0) {
            injected_receiver += timed_sleep_ms(receiver_ms);
            t0 = now_s();
            MPI_Recv(big, BIG, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: accuracy-late-receiver-recv */
            received += now_s() - t0;
            sum += big[i];
        } else if (rank == 1) {
            big[i] = (char)i;
            MPI_Send(big, BIG, MPI_BYTE, 0, 2, MPI_COMM_WORLD); /* MPIOVER-EXPECT: accuracy-late-receiver-send */
        }
    }

    /* 3. A late rank before MPI_Allreduce. */
    for (i = 0; i < iters; i++) {
        if (rank == last)
            injected_allreduce += timed_sleep_ms(allreduce_ms);
        in = rank + i;
        MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); /* MPIOVER-EXPECT: accuracy-late-allreduce */
        sum += out;
    }

    /* 4. A late rank before MPI_Barrier. */
    for (i = 0; i < iters; i++) {
        if (rank == 0)
            injected_barrier += timed_sleep_ms(barrier_ms);
        MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: accuracy-late-barrier */
    }

    /* 5. Clean: no delay anywhere. */
    for (i = 0; i < clean; i++) {
        if (rank == 0) {
            v = i;
            MPI_Send(&v, 1, MPI_LONG, 1, 5, MPI_COMM_WORLD); /* MPIOVER-EXPECT: accuracy-clean-send */
            MPI_Recv(&v, 1, MPI_LONG, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: accuracy-clean-recv */
        } else if (rank == 1) {
            MPI_Recv(&v, 1, MPI_LONG, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            v = (3 * v + 1) % 1000003;
            MPI_Send(&v, 1, MPI_LONG, 0, 5, MPI_COMM_WORLD);
        }
    }
    if (rank == 0)
        sum += v;
    for (i = 0; i < clean; i++) {
        in = rank + i;
        MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); /* MPIOVER-EXPECT: accuracy-clean-allreduce */
        sum += out % 7;
    }

    /* Reported only now: no rank writes to stderr between the phases. */
    if (rank == 1)
        report_site("accuracy-late-sender-recv", rank, injected_sender);
    if (rank == 0) {
        report_site("accuracy-late-receiver-send", rank, injected_receiver);
        fprintf(stderr, "accuracy: site accuracy-late-receiver-send rank %d received %.3f ms\n", rank, received * 1e3);
    }
    if (rank == last)
        report_site("accuracy-late-allreduce", rank, injected_allreduce);
    if (rank == 0)
        report_site("accuracy-late-barrier", rank, injected_barrier);

    MPI_Reduce(&sum, &out, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("accuracy: ranks %d iterations %d clean %d checksum %ld\n", size, iters, clean, out);
    free(big);
    MPI_Finalize();
    return 0;
}
