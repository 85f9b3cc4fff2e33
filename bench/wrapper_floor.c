/* The floor of any timing wrapper, for bench/wrapper_cost.sh: each MPI
 * function the benchmark calls, wrapped with two reads of the clock
 * libmpiover uses (the TSC on x86-64, else CLOCK_MONOTONIC) around its
 * PMPI_ twin, the difference summed into one per-process counter. No key,
 * no site, no thread state: what is left of a profiler's per-call cost once
 * everything but the timing is taken away. Built as a preload library. */
#include <mpi.h>
#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t ticks(void) { return __rdtsc(); }
#else
static inline uint64_t ticks(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* Read by nobody; kept so that the timing is not optimized away. */
volatile uint64_t wrapper_floor_ticks, wrapper_floor_calls;

#define TIMED(call)                                      \
    uint64_t t0 = ticks();                               \
    int r = call;                                        \
    wrapper_floor_ticks = wrapper_floor_ticks + (ticks() - t0); \
    wrapper_floor_calls = wrapper_floor_calls + 1;       \
    return r

int MPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    TIMED(PMPI_Iprobe(source, tag, comm, flag, status));
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype type, MPI_Op op,
                  MPI_Comm comm)
{
    TIMED(PMPI_Allreduce(sendbuf, recvbuf, count, type, op, comm));
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                 void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                 MPI_Comm comm, MPI_Status *status)
{
    TIMED(PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                        source, recvtag, comm, status));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    TIMED(PMPI_Irecv(buf, count, type, source, tag, comm, request));
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    TIMED(PMPI_Isend(buf, count, type, dest, tag, comm, request));
}

int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    TIMED(PMPI_Waitall(count, requests, statuses));
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    TIMED(PMPI_Test(request, flag, status));
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    TIMED(PMPI_Send(buf, count, type, dest, tag, comm));
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
             MPI_Status *status)
{
    TIMED(PMPI_Recv(buf, count, type, source, tag, comm, status));
}
