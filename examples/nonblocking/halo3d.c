/* A 3-D halo exchange as production stencil codes (LULESH and its kin) write
 * it: the ranks form a non-periodic Cartesian grid (2 x 2 x 2 at 8 ranks), and
 * every iteration each rank exchanges faces, edges and corners with up to 26
 * neighbours through MPI_Irecv and MPI_Isend into a fixed array of 2 x 26
 * requests, then completes them all with one MPI_Waitall. Directions without a
 * neighbour (the grid's boundary) post nothing: their slots stay
 * MPI_REQUEST_NULL, which MPI_Waitall skips.
 *
 * One rank (`late`, default 3) sleeps `delay_ms` before posting its exchange
 * in every iteration, so each of its neighbours waits about that long in its
 * MPI_Waitall (Late Sender: the late rank's messages arrive late). With
 * delay_ms = 0 the exchange is clean. Message sizes: a face 512 bytes, an
 * edge 64, a corner 8 (all eager).
 *
 * The late rank reports on stderr what it actually slept:
 * "halo3d: rank 3 injected 400.2 ms".
 *
 * Every rank computes `compute_ms` (sleeps) after each exchange, as a
 * stencil code computes on the halo it received.
 *
 * usage: halo3d [iterations=20] [delay_ms=20] [late=3] [compute_ms=0] */
#include <mpi.h>
#include <string.h>

#include "../common.h"

#define DIRS 26
#define FACE 64 /* doubles */
#define EDGE 8
#define CORNER 1

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 20);
    int delay_ms = arg_int(argc, argv, 2, 20);
    int late = arg_int(argc, argv, 3, 3);
    int compute_ms = arg_int(argc, argv, 4, 0);
    int rank, size, dims[3] = {0, 0, 0}, periods[3] = {0, 0, 0}, me[3];
    int peer[DIRS], count[DIRS], n = 0, i, d, it;
    double sendbuf[DIRS][FACE], recvbuf[DIRS][FACE], injected = 0, sum = 0, total = 0;
    MPI_Request req[2 * DIRS];
    MPI_Status st[2 * DIRS];
    MPI_Comm grid;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 3, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &grid);
    MPI_Comm_rank(grid, &rank);
    MPI_Cart_coords(grid, rank, 3, me);

    /* The 26 directions: how many coordinates change says face (1), edge (2)
     * or corner (3); a direction off the grid has no neighbour. */
    for (int dx = -1; dx <= 1; dx++)
        for (int dy = -1; dy <= 1; dy++)
            for (int dz = -1; dz <= 1; dz++) {
                int c[3] = {me[0] + dx, me[1] + dy, me[2] + dz};
                int moved = (dx != 0) + (dy != 0) + (dz != 0);
                if (moved == 0)
                    continue;
                count[n] = moved == 1 ? FACE : moved == 2 ? EDGE : CORNER;
                peer[n] = MPI_PROC_NULL;
                if (c[0] >= 0 && c[0] < dims[0] && c[1] >= 0 && c[1] < dims[1] && c[2] >= 0 &&
                    c[2] < dims[2])
                    MPI_Cart_rank(grid, c, &peer[n]);
                n++;
            }
    for (d = 0; d < DIRS; d++)
        for (i = 0; i < FACE; i++)
            sendbuf[d][i] = rank + 0.001 * d + 1e-6 * i;

    MPI_Barrier(grid);
    for (it = 0; it < iters; it++) {
        if (rank == late)
            injected += timed_sleep_ms(delay_ms);
        /* Direction d's message goes to peer[d] with tag d; the matching
         * message from that neighbour comes in the opposite direction,
         * DIRS - 1 - d, so it carries tag DIRS - 1 - d. */
        for (d = 0; d < DIRS; d++) {
            req[d] = MPI_REQUEST_NULL;
            req[DIRS + d] = MPI_REQUEST_NULL;
        }
        for (d = 0; d < DIRS; d++)
            if (peer[d] != MPI_PROC_NULL)
                MPI_Irecv(recvbuf[d], count[d], MPI_DOUBLE, peer[d], DIRS - 1 - d, grid, &req[d]); /* MPIOVER-EXPECT: halo-irecv */
        for (d = 0; d < DIRS; d++)
            if (peer[d] != MPI_PROC_NULL)
                MPI_Isend(sendbuf[d], count[d], MPI_DOUBLE, peer[d], d, grid, &req[DIRS + d]); /* MPIOVER-EXPECT: halo-isend */
        MPI_Waitall(2 * DIRS, req, st); /* MPIOVER-EXPECT: halo-waitall */
        for (d = 0; d < DIRS; d++)
            if (peer[d] != MPI_PROC_NULL)
                sum += recvbuf[d][0];
        sleep_ms(compute_ms);
    }
    if (rank == late && delay_ms > 0)
        report_injected("halo3d", rank, injected);

    MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, grid);
    if (rank == 0)
        printf("halo3d: ranks %d grid %dx%dx%d iterations %d delay_ms %d late %d checksum %.6f\n",
               size, dims[0], dims[1], dims[2], iters, delay_ms, late, total);
    MPI_Comm_free(&grid);
    MPI_Finalize();
    return 0;
}
