/* MPI_Pcontrol is C-variadic, which stable Rust cannot define. The exported
 * MPI_Pcontrol is a naked Rust function (src/hooks.rs) that jumps here with
 * the caller's registers untouched (a cdylib exports only Rust symbols).
 * This forwards the level to the Rust side (0 = stop recording, 1 = resume,
 * 2 = reset) and then to the library's own PMPI_Pcontrol. */
#include <mpi.h>

extern int mpiover_pcontrol(int level);

int mpiover_c_pcontrol(const int level, ...)
{
    mpiover_pcontrol(level);
    return PMPI_Pcontrol(level);
}
