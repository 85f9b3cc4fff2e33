/* Helpers shared by the mpiover example programs (header-only, no MPI calls). */
#ifndef MPIOVER_EXAMPLES_COMMON_H
#define MPIOVER_EXAMPLES_COMMON_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Sleep exactly `ms` milliseconds from now (absolute deadline, so EINTR and
 * early wake-ups do not shorten the injected delay). */
static inline void sleep_ms(int ms)
{
    struct timespec t;
    if (ms <= 0)
        return;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec += 1;
        t.tv_nsec -= 1000000000L;
    }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR)
        ;
}

/* Monotonic time in seconds. */
static inline double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* sleep_ms(ms), returning the time actually slept in seconds (at least ms,
 * more when the machine is busy and the wake-up comes late). */
static inline double timed_sleep_ms(int ms)
{
    double t0 = now_s();
    sleep_ms(ms);
    return now_s() - t0;
}

/* Reports on stderr (stdout stays deterministic) the delay a rank actually
 * injected, which the tests compare with the profiler's times. */
static inline void report_injected(const char *prog, int rank, double seconds)
{
    fprintf(stderr, "%s: rank %d injected %.3f ms\n", prog, rank, seconds * 1e3);
}

/* argv[i] as a positive int, or `dflt` when absent; exits with 2 on garbage. */
static inline int arg_int(int argc, char **argv, int i, int dflt)
{
    char *end;
    long v;
    if (argc <= i)
        return dflt;
    v = strtol(argv[i], &end, 10);
    if (*end != '\0' || v < 0 || v > 1000000000L) {
        fprintf(stderr, "%s: bad argument '%s'\n", argv[0], argv[i]);
        exit(2);
    }
    return (int)v;
}

#endif
