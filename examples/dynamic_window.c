/* Many small blocks from MPI_Alloc_mem, each attached to a dynamic window,
 * with passive-target traffic between the allocations: a linked-list
 * structure as RMA benchmarks build it.
 *
 * Why it is here: a tool that changes where the program's allocations land
 * can make MPI refuse an attach. Open MPI's osc/rdma keeps one region per
 * run of pages attached and allows osc_rdma_max_attach (64 by default)
 * regions, so blocks that share pages without the tool but spread over more
 * pages with it make MPI_Win_attach fail. Each rank stops at the first
 * failed attach (a later attach after a failure can hang in Open MPI 4.1)
 * and rank 0 prints, for every rank, how many blocks it attached: the same
 * line with and without the tool. The number of pages the blocks span goes
 * to stderr, for reading only (it varies a little from run to run).
 *
 * Usage: dynamic_window [blocks=400] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define BLOCK 24
#define MAX_BLOCKS 4096

int main(int argc, char **argv)
{
    int rank, size;
    int blocks = argc > 1 ? atoi(argv[1]) : 400;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (blocks < 1 || blocks > MAX_BLOCKS)
        blocks = 400;

    MPI_Win win;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    static long *mine[MAX_BLOCKS];
    static uintptr_t pages[MAX_BLOCKS];
    int attached = 0, npages = 0;
    long zero = 0, seen;
    int target = (rank + 1) % size;
    /* The traffic goes to the target's first block: in a dynamic window a
     * displacement is the address, as MPI_Get_address gives it. */
    MPI_Aint first = 0, *firsts = malloc(sizeof(MPI_Aint) * (size_t)size);
    for (int i = 0; i < blocks; i++) {
        long *b;
        if (MPI_Alloc_mem(BLOCK, MPI_INFO_NULL, &b) != MPI_SUCCESS)
            break;
        mine[i] = b;
        b[0] = rank;
        uintptr_t page = (uintptr_t)b / 4096;
        int known = 0;
        for (int k = 0; k < npages && !known; k++)
            known = pages[k] == page;
        if (!known)
            pages[npages++] = page;
        if (MPI_Win_attach(win, b, BLOCK) != MPI_SUCCESS) {
            MPI_Free_mem(b);
            break;
        }
        attached++;
        if (i == 0) {
            MPI_Get_address(b, &first);
            MPI_Allgather(&first, 1, MPI_AINT, firsts, 1, MPI_AINT, MPI_COMM_WORLD);
        }
        /* Traffic between the allocations, as a list benchmark has. */
        MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
        MPI_Fetch_and_op(&zero, &seen, MPI_LONG, target, firsts[target], MPI_NO_OP, win);
        MPI_Win_unlock(target, win);
    }
    fprintf(stderr, "dynamic_window: rank %d: %d blocks of %d bytes on %d pages\n", rank, attached,
            BLOCK, npages);

    int *all = rank == 0 ? malloc(sizeof(int) * (size_t)size) : NULL;
    MPI_Gather(&attached, 1, MPI_INT, all, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("dynamic_window: %d ranks asked for %d blocks; attached:", size, blocks);
        for (int r = 0; r < size; r++)
            printf(" %d", all[r]);
        printf("\n");
        free(all);
    }
    free(firsts);
    for (int i = 0; i < attached; i++)
        MPI_Win_detach(win, mine[i]);
    MPI_Win_free(&win);
    for (int i = 0; i < attached; i++)
        MPI_Free_mem(mine[i]);
    MPI_Finalize();
    return 0;
}
