/* A helper whose last act is an MPI call: at -O2 the compiler makes that
 * call a jump (a sibling call), so the MPI call returns straight to the
 * helper's caller and its return address is the caller's line, not the
 * helper's. The report flags such a site ("reached through a tail call in
 * share"); the helper that does more after its call is seen at its own
 * line. Run with any number of ranks: tail_call [iterations]. */
#include <mpi.h>

#include "common.h"

/* noipa: neither inlined nor specialized, so that the jump stays in share. */
__attribute__((noipa)) int share(int *v)
{
    return MPI_Bcast(v, 1, MPI_INT, 0, MPI_COMM_WORLD);
}

__attribute__((noipa)) int share_and_count(int *v)
{
    int rc = MPI_Bcast(v, 1, MPI_INT, 0, MPI_COMM_WORLD); /* MPIOVER-EXPECT: direct-bcast */
    *v += 1;
    return rc;
}

int main(int argc, char **argv)
{
    int iters = arg_int(argc, argv, 1, 10);
    int rank, i, v = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (i = 0; i < iters; i++) {
        v = rank == 0 ? i : 0;
        share(&v); /* MPIOVER-EXPECT: tail-caller */
        share_and_count(&v);
    }
    if (rank == 0)
        printf("tail_call: iterations %d last %d\n", iters, v);
    MPI_Finalize();
    return 0;
}
