/* Instructions that libmpiover adds per MPI call, counted by valgrind's
 * callgrind rather than timed: the count does not move with the machine's
 * load or its latency level, so a change of the hot path shows even on a
 * busy or unsteady machine. See bench/wrapper_instructions.sh.
 *
 *   wrapper_instructions TEST N WRAPPED
 *
 * runs N iterations of TEST through the MPI_ entry points (WRAPPED = 1: the
 * wrapper when libmpiover.so is preloaded) or the PMPI_ ones (0: never
 * wrapped), on MPI_COMM_SELF:
 *   iprobe     MPI_Iprobe that finds nothing                  (1 call)
 *   allreduce  1-int MPI_Allreduce                            (1 call)
 *   sendrecv   1-int MPI_Sendrecv to itself                   (1 call)
 *   requests   MPI_Irecv + MPI_Isend + MPI_Waitall of the two (3 calls)
 *   test       MPI_Test of a receive nobody sends to          (1 call) */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const char *t = argc > 1 ? argv[1] : "iprobe";
    int n = argc > 2 ? atoi(argv[2]) : 1000, w = argc > 3 ? atoi(argv[3]) : 1;
    int a = 1, b = 0, flag = 0;
    MPI_Request r[2], pending;
    MPI_Comm c = MPI_COMM_SELF;
    MPI_Irecv(&b, 1, MPI_INT, 0, 79, c, &pending);
    for (int i = 0; i < n; i++) {
        if (!strcmp(t, "iprobe")) {
            if (w) MPI_Iprobe(0, 77, c, &flag, MPI_STATUS_IGNORE);
            else PMPI_Iprobe(0, 77, c, &flag, MPI_STATUS_IGNORE);
        } else if (!strcmp(t, "allreduce")) {
            if (w) MPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, c);
            else PMPI_Allreduce(&a, &b, 1, MPI_INT, MPI_SUM, c);
        } else if (!strcmp(t, "sendrecv")) {
            if (w) MPI_Sendrecv(&a, 1, MPI_INT, 0, 5, &b, 1, MPI_INT, 0, 5, c, MPI_STATUS_IGNORE);
            else PMPI_Sendrecv(&a, 1, MPI_INT, 0, 5, &b, 1, MPI_INT, 0, 5, c, MPI_STATUS_IGNORE);
        } else if (!strcmp(t, "requests")) {
            if (w) {
                MPI_Irecv(&b, 1, MPI_INT, 0, 6, c, &r[0]);
                MPI_Isend(&a, 1, MPI_INT, 0, 6, c, &r[1]);
                MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
            } else {
                PMPI_Irecv(&b, 1, MPI_INT, 0, 6, c, &r[0]);
                PMPI_Isend(&a, 1, MPI_INT, 0, 6, c, &r[1]);
                PMPI_Waitall(2, r, MPI_STATUSES_IGNORE);
            }
        } else {
            if (w) MPI_Test(&pending, &flag, MPI_STATUS_IGNORE);
            else PMPI_Test(&pending, &flag, MPI_STATUS_IGNORE);
        }
    }
    MPI_Cancel(&pending);
    MPI_Wait(&pending, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
