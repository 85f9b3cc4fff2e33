/* Waits far above tmax and waits close to it, for checking which verdicts
 * hang on the calibration a run is judged against.
 *
 * Phases (ranks 0 and 1 exchange messages; every rank takes part in the
 * barriers):
 *   1. Late Sender: rank 1 spins wait_ms before each of `iterations` 8-byte
 *      MPI_Send, rank 0 waits in MPI_Recv (late rank 1): a wait thousands of
 *      times tmax, significant against any calibration of the machine. A
 *      spin, not a sleep: a send right after waking up takes the cold
 *      caches' tens of microseconds, a second wait near tmax.
 *   2. Near tmax: `near_calls` MPI_Barrier; before every `near_every`-th one
 *      rank 1 spins near_ns nanoseconds, so that rank 0 waits that long in
 *      it. The test picks near_ns from its calibrations so that those calls
 *      end a little above tmax: whether the site is significant then depends
 *      on where a calibration put tmax.
 *   3. Clean: `clean` 8-byte ping-pongs between ranks 0 and 1, no delay
 *      (what the run's latency level is read from).
 *
 * The start-up barrier, whose wait is the ranks' start-up skew (anything
 * from microseconds to milliseconds, as near tmax as chance puts it), is not
 * recorded (MPI_Pcontrol).
 *
 * The late rank prints on stderr how long it spun in phase 1:
 *   "near_tmax: rank 1 injected 200.012 ms"
 *
 * usage: near_tmax [iterations=10] [wait_ms=20] [near_ns=0] [near_calls=4000]
 *                  [near_every=10] [clean=0] */
#include <mpi.h>

#include "common.h"

/* Busy-waits `s` seconds (a sleep this short would take the scheduler's
 * wake-up latency instead); returns the time it took. */
static double spin_s(double s)
{
    double t0 = now_s(), t;
    do
        t = now_s();
    while (t < t0 + s);
    return t - t0;
}

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 10);
    int wait_ms = arg_int(argc, argv, 2, 20);
    int near_ns = arg_int(argc, argv, 3, 0);
    int near_calls = arg_int(argc, argv, 4, 4000);
    int near_every = arg_int(argc, argv, 5, 10);
    int clean = arg_int(argc, argv, 6, 0);
    int rank, size, i;
    long v = 0;
    double injected = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (near_every < 1)
        near_every = 1;

    MPI_Pcontrol(0);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(1);
    for (i = 0; i < iters && size > 1; i++) {
        if (rank == 1) {
            injected += spin_s(1e-3 * wait_ms);
            MPI_Send(&v, 1, MPI_LONG, 0, 1, MPI_COMM_WORLD);
        } else if (rank == 0) {
            MPI_Recv(&v, 1, MPI_LONG, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: near-tmax-wait */
        }
    }

    for (i = 0; i < near_calls; i++) {
        if (rank == 1 && i % near_every == 0)
            spin_s(1e-9 * near_ns);
        MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: near-tmax-barrier */
    }

    for (i = 0; i < clean && size > 1; i++) {
        if (rank == 0) {
            MPI_Send(&v, 1, MPI_LONG, 1, 2, MPI_COMM_WORLD); /* MPIOVER-EXPECT: near-tmax-clean-send */
            MPI_Recv(&v, 1, MPI_LONG, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: near-tmax-clean-recv */
        } else if (rank == 1) {
            MPI_Recv(&v, 1, MPI_LONG, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(&v, 1, MPI_LONG, 0, 3, MPI_COMM_WORLD);
        }
    }

    if (rank == 1 && iters > 0)
        report_injected("near_tmax", rank, injected);
    if (rank == 0)
        printf("near_tmax: done\n");
    MPI_Finalize();
    return 0;
}
