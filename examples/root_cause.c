/* Why the late rank was late: programs whose waits have a known cause in
 * the application's own code between two MPI calls.
 *
 * usage: root_cause MODE [iterations=10] [delay_ms=20] [base_ms=2]
 *
 * imbalance    every iteration calls compute_step(): MPI_Bcast, then every
 *              rank computes (sleeps) base_ms, the last rank delay_ms more,
 *              then MPI_Allreduce. The others wait at the Allreduce; the
 *              cause is the last rank's region from the Bcast (marked
 *              rc-bcast) to the Allreduce (rc-allreduce).
 * late_sender  after a barrier (rc-barrier), rank 1 produces a value for
 *              delay_ms and sends it to rank 0 (rc-send), which waits in
 *              MPI_Recv (rc-recv): the cause is rank 1's region from the
 *              barrier to its send.
 * chain        after a barrier, the last rank works delay_ms and sends to
 *              the one before it (rc-chain-send-last), which passes a value on
 *              (rc-chain-recv-mid, rc-chain-send-mid) down to rank 0
 *              (rc-chain-recv-first). Rank 0 waits for rank 1, which was late
 *              only because it waited for rank 2: the cause at rank 0's
 *              receive is the last rank's region, via the ranks between.
 * balanced     compute_step() with every rank computing base_ms: no cause.
 * wildcard     after a barrier (rc-any-barrier) every rank but 0 sends one
 *              value to rank 0 (rc-any-send), the last rank after working
 *              delay_ms; rank 0 receives them with MPI_ANY_SOURCE
 *              (rc-any-recv). The cause is the last rank's region from the
 *              barrier to its send.
 * phases       three waits one after the other in every iteration: rank 0
 *              works delay_ms before a barrier (rc-ph-barrier), rank 1
 *              delay_ms after it before sending to rank 0 (rc-ph-send,
 *              rc-ph-recv), the last rank 2 x delay_ms after the barrier
 *              before an MPI_Allreduce (rc-ph-allreduce), where the others
 *              wait delay_ms (rank 0 waited for rank 1 meanwhile). Each wait
 *              has its own cause; none is explained by another's (rank 0's
 *              lateness at the barrier is not why rank 1 was late to it).
 * tail         `iterations` late sends after a loop of 100 balanced ones
 *              (base_ms of work on both sides), all through one helper,
 *              send_value() (rc-tail-send): the loop's receive is
 *              rc-tail-loop-recv; after it, each iteration has a barrier
 *              (rc-tail-barrier), then rank 1 works delay_ms and sends, and
 *              rank 0 waits in rc-tail-recv. The cause of that wait is
 *              rank 1's region from the barrier to the helper's send, not
 *              the loop's passes through the same send.
 *
 * Each rank reports on stderr the time it actually slept
 * ("root_cause: rank 2 injected 220.5 ms"), and the tail mode also what it
 * slept before its late sends ("root_cause-late: rank 1 injected 90.2 ms"). */
#include <mpi.h>
#include <string.h>

#include "common.h"

static double injected, injected_late;

static long compute_step(int rank, int size, int i, int delay_ms, int base_ms)
{
    long root = i, v, r = 0;
    MPI_Bcast(&root, 1, MPI_LONG, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-bcast */
    injected += timed_sleep_ms(base_ms + (rank == size - 1 ? delay_ms : 0));
    v = (long)rank * 100 + root;
    MPI_Allreduce(&v, &r, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-allreduce */
    return r;
}

static long produce(int i, int delay_ms)
{
    injected += timed_sleep_ms(delay_ms);
    return 1000L + i;
}

static long late_sender(int rank, int i, int delay_ms)
{
    long v = 0;
    MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-barrier */
    if (rank == 1) {
        v = produce(i, delay_ms);
        MPI_Send(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-send */
    } else if (rank == 0) {
        MPI_Recv(&v, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rc-recv */
    }
    return v;
}

static long chain(int rank, int size, int i, int delay_ms)
{
    long v = 0;
    MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-chain-barrier */
    if (rank == size - 1) {
        v = produce(i, delay_ms);
        MPI_Send(&v, 1, MPI_LONG, rank - 1, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-chain-send-last */
    } else if (rank > 0) {
        MPI_Recv(&v, 1, MPI_LONG, rank + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rc-chain-recv-mid */
        v += 1;
        MPI_Send(&v, 1, MPI_LONG, rank - 1, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-chain-send-mid */
    } else {
        MPI_Recv(&v, 1, MPI_LONG, rank + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rc-chain-recv-first */
    }
    return v;
}

static long wildcard(int rank, int size, int i, int delay_ms)
{
    long v = rank, sum = 0;
    int k;
    MPI_Status st;
    MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-any-barrier */
    if (rank == 0) {
        for (k = 1; k < size; k++) {
            MPI_Recv(&v, 1, MPI_LONG, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &st); /* MPIOVER-EXPECT: rc-any-recv */
            sum += v * st.MPI_SOURCE;
        }
        return sum;
    }
    if (rank == size - 1)
        v = produce(i, delay_ms);
    MPI_Send(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-any-send */
    return 0;
}

static long phases(int rank, int size, int i, int delay_ms)
{
    long v = 0, in = rank + i, out = 0;
    if (rank == 0)
        injected += timed_sleep_ms(delay_ms);
    MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-ph-barrier */
    if (rank == 1) {
        v = produce(i, delay_ms);
        MPI_Send(&v, 1, MPI_LONG, 0, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-ph-send */
    } else if (rank == 0) {
        MPI_Recv(&v, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rc-ph-recv */
    }
    if (rank == size - 1)
        injected += timed_sleep_ms(2 * delay_ms);
    MPI_Allreduce(&in, &out, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-ph-allreduce */
    return v + out;
}

/* Not inlined, with work after the call (no tail call): every send of the
 * tail mode is made at this one line, as codes that wrap MPI in helpers do. */
__attribute__((noinline)) static void send_value(long v, int dest)
{
    static long sent;
    MPI_Send(&v, 1, MPI_LONG, dest, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-tail-send */
    sent++;
}

static long tail(int rank, int few, int delay_ms, int base_ms)
{
    long v = 0, sum = 0;
    int i;
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < 100; i++) {
        if (rank == 1) {
            injected += timed_sleep_ms(base_ms);
            send_value(i, 0);
        } else if (rank == 0) {
            MPI_Recv(&v, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rc-tail-loop-recv */
            injected += timed_sleep_ms(base_ms);
            sum += v;
        }
    }
    for (i = 0; i < few; i++) {
        MPI_Barrier(MPI_COMM_WORLD); /* MPIOVER-EXPECT: rc-tail-barrier */
        if (rank == 1) {
            double t = timed_sleep_ms(delay_ms);
            injected += t;
            injected_late += t;
            send_value(1000 + i, 0);
        } else if (rank == 0) {
            MPI_Recv(&v, 1, MPI_LONG, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: rc-tail-recv */
            sum += v;
        }
    }
    return sum;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "imbalance";
    int iters = arg_int(argc, argv, 2, 10);
    int delay_ms = arg_int(argc, argv, 3, 20);
    int base_ms = arg_int(argc, argv, 4, 2);
    int rank, size, i, rounds = iters;
    long acc = 0, total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 3 && (strcmp(mode, "chain") == 0 || strcmp(mode, "phases") == 0)) {
        if (rank == 0)
            fprintf(stderr, "root_cause: %s needs at least 3 ranks\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (strcmp(mode, "tail") == 0) {
        acc += tail(rank, iters, delay_ms, base_ms);
        rounds = 0;
        report_injected("root_cause-late", rank, injected_late);
    }
    for (i = 0; i < rounds; i++) {
        if (strcmp(mode, "imbalance") == 0)
            acc += compute_step(rank, size, i, delay_ms, base_ms);
        else if (strcmp(mode, "balanced") == 0)
            acc += compute_step(rank, size, i, 0, base_ms);
        else if (strcmp(mode, "late_sender") == 0)
            acc += late_sender(rank, i, delay_ms);
        else if (strcmp(mode, "chain") == 0)
            acc += chain(rank, size, i, delay_ms);
        else if (strcmp(mode, "wildcard") == 0)
            acc += wildcard(rank, size, i, delay_ms);
        else if (strcmp(mode, "phases") == 0)
            acc += phases(rank, size, i, delay_ms);
        else {
            if (rank == 0)
                fprintf(stderr, "root_cause: unknown mode %s\n", mode);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    report_injected("root_cause", rank, injected);
    MPI_Reduce(&acc, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("root_cause: mode %s ranks %d iterations %d delay_ms %d base_ms %d checksum %ld\n",
               mode, size, iters, delay_ms, base_ms, total);
    MPI_Finalize();
    return 0;
}
