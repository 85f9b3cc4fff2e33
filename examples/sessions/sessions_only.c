/* An MPI-4 program that never calls MPI_Init: it opens a session, makes a
 * communicator of the world process set, sums the ranks with MPI_Allreduce
 * and prints the sum on every rank.
 *
 * usage: sessions_only */
#include <mpi.h>
#include <stdio.h>

int main(void)
{
    MPI_Session s;
    MPI_Group world;
    MPI_Comm comm;
    int rank, size, sum = -1;

    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s);
    MPI_Group_from_session_pset(s, "mpi://WORLD", &world);
    MPI_Comm_create_from_group(world, "org.mpiover.sessions_only", MPI_INFO_NULL,
                               MPI_ERRORS_RETURN, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    printf("rank %d of %d: sum of ranks %d\n", rank, size, sum);
    MPI_Comm_free(&comm);
    MPI_Group_free(&world);
    MPI_Session_finalize(&s);
    return 0;
}
