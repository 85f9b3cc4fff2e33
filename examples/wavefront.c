/* A small 2-D wavefront sweep with the structure of Sweep3D (the overhead paper §10):
 * the ranks form a px x py grid (MPI_Dims_create); for each of the four sweep
 * directions and each of `blocks` pipelined blocks, a rank receives its
 * inflow from the upstream neighbours in x and y, computes (sleeps
 * compute_ms, then a deterministic integer recurrence), and sends its outflow
 * downstream. ALL messages go through the two helpers send_block() and
 * recv_block(), as in Sweep3D's snd_real/rcv_real, so at MPIOVER_DEPTH=1
 * every point-to-point call is attributed to the two helper lines, and at
 * MPIOVER_DEPTH=2 to the four call lines in sweep().
 *
 * The helpers are noinline and do work after the MPI call (no tail call), so
 * that they keep their own frame under -O2, like Sweep3D's separately compiled
 * helpers.
 *
 * usage: wavefront [blocks=6] [compute_ms=1] [n=32] */
#include <mpi.h>
#include <string.h>

#include "common.h"

#define MOD 1000003UL

static long n_sent, n_received;

__attribute__((noinline)) static void send_block(const unsigned long *buf, int n, int dest,
                                                 int tag)
{
    int rc = MPI_Send(buf, n, MPI_UNSIGNED_LONG, dest, tag, MPI_COMM_WORLD); /* MPIOVER-EXPECT: wavefront-send-helper */
    if (rc != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 3);
    n_sent++;
}

__attribute__((noinline)) static void recv_block(unsigned long *buf, int n, int src, int tag)
{
    int rc = MPI_Recv(buf, n, MPI_UNSIGNED_LONG, src, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: wavefront-recv-helper */
    if (rc != MPI_SUCCESS)
        MPI_Abort(MPI_COMM_WORLD, 3);
    n_received++;
}

/* Rank at grid coordinates (x, y), or -1 outside the grid. */
static int rank_at(int x, int y, int px, int py)
{
    if (x < 0 || x >= px || y < 0 || y >= py)
        return -1;
    return y * px + x;
}

/* One sweep in direction (dx, dy) over `blocks` blocks of an n x n local
 * domain; returns this rank's contribution to the checksum. */
__attribute__((noinline)) static unsigned long sweep(int dir, int dx, int dy, int blocks,
                                                     int compute_ms, int n, int px, int py,
                                                     int x, int y)
{
    int up_x = rank_at(x - dx, y, px, py), down_x = rank_at(x + dx, y, px, py);
    int up_y = rank_at(x, y - dy, px, py), down_y = rank_at(x, y + dy, px, py);
    unsigned long *in_x = calloc(n, sizeof *in_x), *in_y = calloc(n, sizeof *in_y);
    unsigned long *out_x = calloc(n, sizeof *out_x), *out_y = calloc(n, sizeof *out_y);
    unsigned long *cell = calloc((size_t)n * n, sizeof *cell);
    unsigned long check = 0;
    int b, i, j;

    for (b = 0; b < blocks; b++) {
        int tag = dir * 1000 + b;
        if (up_x >= 0)
            recv_block(in_x, n, up_x, tag); /* MPIOVER-EXPECT: wavefront-recv-x */
        else
            for (j = 0; j < n; j++)
                in_x[j] = (unsigned long)(dir + b + j + 1);
        if (up_y >= 0)
            recv_block(in_y, n, up_y, tag); /* MPIOVER-EXPECT: wavefront-recv-y */
        else
            for (i = 0; i < n; i++)
                in_y[i] = (unsigned long)(2 * dir + b + i + 1);

        sleep_ms(compute_ms);
        /* cell (i, j) in sweep order: i along x, j along y */
        for (j = 0; j < n; j++) {
            for (i = 0; i < n; i++) {
                int ii = dx > 0 ? i : n - 1 - i, jj = dy > 0 ? j : n - 1 - j;
                unsigned long west = i == 0 ? in_x[jj] : cell[(size_t)jj * n + (dx > 0 ? ii - 1 : ii + 1)];
                unsigned long north = j == 0 ? in_y[ii] : cell[(size_t)(dy > 0 ? jj - 1 : jj + 1) * n + ii];
                unsigned long v = (west * 31 + north * 17 + (unsigned long)(ii ^ jj) + b) % MOD;
                cell[(size_t)jj * n + ii] = v;
                check += v;
            }
        }
        for (j = 0; j < n; j++)
            out_x[j] = cell[(size_t)j * n + (dx > 0 ? n - 1 : 0)];
        for (i = 0; i < n; i++)
            out_y[i] = cell[(size_t)(dy > 0 ? n - 1 : 0) * n + i];

        if (down_x >= 0)
            send_block(out_x, n, down_x, tag); /* MPIOVER-EXPECT: wavefront-send-x */
        if (down_y >= 0)
            send_block(out_y, n, down_y, tag); /* MPIOVER-EXPECT: wavefront-send-y */
    }
    free(in_x);
    free(in_y);
    free(out_x);
    free(out_y);
    free(cell);
    return check;
}

int main(int argc, char **argv)
{
    static const int dirs[4][2] = {{1, 1}, {-1, 1}, {1, -1}, {-1, -1}};
    int blocks = arg_int(argc, argv, 1, 6);
    int compute_ms = arg_int(argc, argv, 2, 1);
    int n = arg_int(argc, argv, 3, 32);
    int rank, size, d, dims[2] = {0, 0};
    unsigned long check = 0, total = 0;
    long counts[2], total_counts[2];

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (n < 1)
        n = 1;
    MPI_Dims_create(size, 2, dims);

    MPI_Barrier(MPI_COMM_WORLD);
    for (d = 0; d < 4; d++)
        check += sweep(d, dirs[d][0], dirs[d][1], blocks, compute_ms, n, dims[0], dims[1],
                       rank % dims[0], rank / dims[0]);

    counts[0] = n_sent;
    counts[1] = n_received;
    MPI_Reduce(&check, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(counts, total_counts, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("wavefront: grid %dx%d blocks %d n %d messages %ld/%ld checksum %lu\n", dims[0],
               dims[1], blocks, n, total_counts[0], total_counts[1], total);
    MPI_Finalize();
    return 0;
}
