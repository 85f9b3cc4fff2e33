/* Clean ping-pong between ranks 0 and 1, no injected delay: 0-byte then
 * 8-byte messages. Other ranks only take part in the final reduction.
 *
 * usage: pingpong [iterations=1000] */
#include <mpi.h>

#include "common.h"

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 1000);
    int rank, size, i;
    unsigned long v = 0, total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong: needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank < 2) {
        int peer = 1 - rank;
        for (i = 0; i < iters; i++) {
            if (rank == 0) {
                MPI_Send(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: pingpong-send0 */
                MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: pingpong-recv0 */
            } else {
                MPI_Recv(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
            }
        }
        for (i = 0; i < iters; i++) {
            if (rank == 0) {
                v += i;
                MPI_Send(&v, 1, MPI_UNSIGNED_LONG, peer, 1, MPI_COMM_WORLD); /* MPIOVER-EXPECT: pingpong-send8 */
                MPI_Recv(&v, 1, MPI_UNSIGNED_LONG, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* MPIOVER-EXPECT: pingpong-recv8 */
            } else {
                MPI_Recv(&v, 1, MPI_UNSIGNED_LONG, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                v = (3 * v + 1) % 1000003;
                MPI_Send(&v, 1, MPI_UNSIGNED_LONG, peer, 1, MPI_COMM_WORLD);
            }
        }
    }
    if (rank != 0)
        v = 0;
    MPI_Reduce(&v, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("pingpong: ranks %d iterations %d checksum %lu\n", size, iters, total);
    MPI_Finalize();
    return 0;
}
