/* What a program finds in an uninitialized local of main: the same with
 * and without a preloaded tool, as long as the tool does its load-time work
 * off the program's stack.
 *
 * Why it is here: the region of the stack that main's frame occupies is
 * where the dynamic loader ran the libraries' constructors. A program that
 * reads a local before writing it (a bug, but a common one) sees what they
 * left. Like MPICH's test pt2pt/rqstatus, this program reads the MPI_ERROR
 * field of a status that Open MPI's MPI_Request_get_status(MPI_REQUEST_NULL, ...) leaves as
 * it was (the standard lets single-request calls leave it): it passed
 * without the tool and failed under it while the tool's constructor ran on
 * the program's stack. Values are not printed (they may hold addresses, which
 * move from run to run); rank 0 prints whether the fields of such a status
 * read as an empty status's.
 *
 * Usage: stack_residue (run with 1 or more ranks; rank 0 prints) */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, flag = 0;
    MPI_Status status; /* as the MPICH test has it: never written by the program */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Request_get_status(MPI_REQUEST_NULL, &flag, &status);
    if (rank == 0)
        printf("stack_residue: %d ranks; request null: flag %d, source %s, tag %s, error field %s\n",
               size, flag, status.MPI_SOURCE == MPI_ANY_SOURCE ? "any" : "other",
               status.MPI_TAG == MPI_ANY_TAG ? "any" : "other",
               status.MPI_ERROR == MPI_SUCCESS ? "success" : "other");
    MPI_Finalize();
    return 0;
}
