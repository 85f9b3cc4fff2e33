/* Wrapper cost of libmpiover: nanoseconds per call through the MPI_ entry
 * point (the wrapper when libmpiover.so is preloaded) and through the PMPI_
 * entry point (never wrapped), in the same run, alternating batches; the
 * medians over the repetitions and their difference are printed.
 *
 *   wrapper_cost local     (1 rank)  Iprobe polling, Allreduce and Sendrecv on MPI_COMM_SELF;
 *                                     Irecv + Isend + Waitall on MPI_COMM_SELF (the request
 *                                     map: two posts, two completions; per call = / 3);
 *                                     MPI_Test polling of a receive that never completes
 *   wrapper_cost pair      (2 ranks) 0-byte ping-pong, 1-int Allreduce on MPI_COMM_WORLD
 *
 * Output, one line per test on rank 0:
 *   <test> <ns/call via MPI_> <ns/call via PMPI_> <added ns/call>
 * Without the preload both columns are the same library code (MPI_X is a weak
 * alias of PMPI_X), which is what the second column measures in either case.
 * For the ping-pong a "call" is one message (half a round trip: one Send on
 * one rank and one Recv on the other). See bench/wrapper_cost.sh. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

typedef void (*batch_fn)(int wrapped, int n);

static int rank, size;

static void iprobe(int wrapped, int n)
{
    int flag;
    MPI_Status st;
    if (wrapped)
        for (int i = 0; i < n; i++) MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_SELF, &flag, &st);
    else
        for (int i = 0; i < n; i++) PMPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_SELF, &flag, &st);
}

static void allreduce_self(int wrapped, int n)
{
    int a = 1, b;
    if (wrapped)
        for (int i = 0; i < n; i++) MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
    else
        for (int i = 0; i < n; i++) PMPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
}

static void sendrecv_self(int wrapped, int n)
{
    int a = 1, b;
    if (wrapped)
        for (int i = 0; i < n; i++)
            MPI_Sendrecv(&a, 1, MPI_INT, 0, 5, &b, 1, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE);
    else
        for (int i = 0; i < n; i++)
            PMPI_Sendrecv(&a, 1, MPI_INT, 0, 5, &b, 1, MPI_INT, 0, 5, MPI_COMM_SELF, MPI_STATUS_IGNORE);
}

static void requests_self(int wrapped, int n)
{
    int a = 1, b;
    MPI_Request r[2];
    if (wrapped)
        for (int i = 0; i < n; i++) {
            MPI_Irecv(&b, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &r[0]);
            MPI_Isend(&a, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &r[1]);
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        }
    else
        for (int i = 0; i < n; i++) {
            PMPI_Irecv(&b, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &r[0]);
            PMPI_Isend(&a, 1, MPI_INT, 0, 6, MPI_COMM_SELF, &r[1]);
            PMPI_Waitall(2, r, MPI_STATUSES_IGNORE);
        }
}

/* A receive nobody sends to, polled (posted through MPI_, so that the
 * request map holds it). */
static MPI_Request pending;
static int pending_buf;

static void test_poll(int wrapped, int n)
{
    int flag;
    if (wrapped)
        for (int i = 0; i < n; i++) MPI_Test(&pending, &flag, MPI_STATUS_IGNORE);
    else
        for (int i = 0; i < n; i++) PMPI_Test(&pending, &flag, MPI_STATUS_IGNORE);
}

static void pingpong(int wrapped, int n)
{
    char c = 0;
    int peer = 1 - rank;
    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            if (wrapped) {
                MPI_Send(&c, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                MPI_Recv(&c, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                PMPI_Send(&c, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
                PMPI_Recv(&c, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        } else {
            if (wrapped) {
                MPI_Recv(&c, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&c, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            } else {
                PMPI_Recv(&c, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                PMPI_Send(&c, 0, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            }
        }
    }
}

static void allreduce_pair(int wrapped, int n)
{
    int a = rank, b;
    if (wrapped)
        for (int i = 0; i < n; i++) MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else
        for (int i = 0; i < n; i++) PMPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

/* Target length of one batch, microseconds (WRAPPER_COST_BATCH_US; 0 keeps
 * each test's fixed count). */
static double batch_us = 500;

/* Alternating batches (the order flips every repetition); per-call times of
 * each batch; medians. `div` converts a batch iteration into calls.
 *
 * Every test's batch lasts about `batch_us`, whatever its call costs: `n`
 * is only the warm-up's size. A batch longer than the scheduler's time slice
 * (a few ms) is likely to be preempted on a loaded machine, and a preempted
 * batch's per-call time is off by the slice over the batch: with fixed
 * counts the tests with slow calls (a peer, requests: 10-30 ms batches) blew
 * up under load while the fast ones (1-2 ms) did not. */
static void run(const char *name, batch_fn f, int n, int reps, double div)
{
    double *w = malloc(reps * sizeof *w), *p = malloc(reps * sizeof *p);
    f(1, n / 10 + 1); /* warm-up: first contact, first key, caches */
    double t0 = now_ns();
    f(0, n / 10 + 1);
    double per = (now_ns() - t0) / (n / 10 + 1);
    if (batch_us > 0) {
        /* Every rank runs the same count: rank 0's. */
        int want = per > 0 ? (int)(batch_us * 1e3 / per) : n;
        n = want < 50 ? 50 : want > n ? n : want;
        PMPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    for (int r = 0; r < reps; r++) {
        for (int k = 0; k < 2; k++) {
            int wrapped = (r + k) % 2;
            PMPI_Barrier(MPI_COMM_WORLD);
            double t0 = now_ns();
            f(wrapped, n);
            double dt = (now_ns() - t0) / (n * div);
            if (wrapped) w[r] = dt; else p[r] = dt;
        }
    }
    /* Rank 0's view is what is printed (both ranks see the same rounds). */
    double mw = median(w, reps), mp = median(p, reps);
    if (rank == 0) printf("%-16s %10.1f %10.1f %10.1f\n", name, mw, mp, mw - mp);
    fflush(stdout);
    free(w);
    free(p);
}

/* The cost of one read of the interposer's clock (the TSC on x86-64; it
 * reads it twice per wrapped call, at entry and at exit): the floor of
 * what a wrapper adds, and it moves with the machine's level like the rest. */
static volatile unsigned long long clock_sink;

static double clock_read_ns(int reps)
{
    enum { N = 200000 };
    double *v = malloc(reps * sizeof *v);
    unsigned long long sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        for (int i = 0; i < N; i++) {
#if defined(__x86_64__)
            sink += __rdtsc();
#else
            sink += (unsigned long long)now_ns();
#endif
        }
        v[r] = (now_ns() - t0) / N;
    }
    clock_sink = sink; /* the reads must happen */
    double m = median(v, reps);
    free(v);
    return m;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "local";
    int reps = argc > 2 ? atoi(argv[2]) : 31;
    const char *b = getenv("WRAPPER_COST_BATCH_US");
    if (b)
        batch_us = atof(b);
    if (rank == 0) printf("%-16s %10s %10s %10s\n", "# test", "MPI_ns", "PMPI_ns", "added_ns");
    if (!strcmp(what, "local")) {
        if (rank == 0) printf("# clock_read_ns %.1f\n", clock_read_ns(reps));
        run("iprobe_self", iprobe, 20000, reps, 1);
        run("allreduce_self", allreduce_self, 20000, reps, 1);
        run("sendrecv_self", sendrecv_self, 20000, reps, 1);
        run("requests_self", requests_self, 10000, reps, 3);
        MPI_Irecv(&pending_buf, 1, MPI_INT, 0, 79, MPI_COMM_SELF, &pending);
        run("test_poll", test_poll, 20000, reps, 1);
        MPI_Cancel(&pending);
        MPI_Wait(&pending, MPI_STATUS_IGNORE);
    } else if (size >= 2) {
        run("pingpong_0B", pingpong, 5000, reps, 2);
        run("allreduce_1int", allreduce_pair, 5000, reps, 1);
    }
    MPI_Finalize();
    return 0;
}
