/* What a program can ask MPI about its own state, printed one fact per line,
 * so that a run with and without the profiler can be compared line by line:
 * the thread level granted and queried, which thread is the main one,
 * MPI_Initialized / MPI_Finalized around init and finalize, MPI_COMM_WORLD's
 * error handler and predefined attributes, MPI_Pcontrol's return value, and
 * how often the program's own attribute callbacks ran (a copy callback on
 * MPI_COMM_WORLD runs only when someone duplicates it; a delete callback on
 * MPI_COMM_SELF runs once, inside MPI_Finalize).
 *
 * usage: thread_level init|single|funneled|serialized|multiple [DIR]
 *   init: MPI_Init; the others: MPI_Init_thread with that level required.
 * Every rank prints its lines prefixed with its rank, on stdout or, with DIR,
 * into DIR/facts-<rank>.txt (MPICH's launcher can cut lines of different
 * ranks into each other on a shared stdout). */
#include <mpi.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int copies, deletes;

/* One line, written at once: the launchers forward each rank's output as it
 * comes, and a line written in pieces can be cut by another rank's. */
static void say(int rank, const char *fmt, ...)
{
    char line[256];
    int n = snprintf(line, sizeof line, "rank %d: ", rank);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    puts(line);
    fflush(stdout);
}

static int count_copy(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)key, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm c, int key, void *val, void *extra)
{
    (void)c, (void)key, (void)val, (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static void *ask_from_thread(void *out)
{
    MPI_Is_thread_main((int *)out);
    return NULL;
}

static int level_of(const char *name)
{
    if (!strcmp(name, "single"))
        return MPI_THREAD_SINGLE;
    if (!strcmp(name, "funneled"))
        return MPI_THREAD_FUNNELED;
    if (!strcmp(name, "serialized"))
        return MPI_THREAD_SERIALIZED;
    if (!strcmp(name, "multiple"))
        return MPI_THREAD_MULTIPLE;
    return -1;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "init";
    int required = level_of(how), provided = -1, rc, flag, rank, claimed, main_flag, *val;
    int before_init, before_fin, after_fin, other_main = -1, world_key, self_key;
    MPI_Errhandler eh;

    MPI_Initialized(&before_init);
    if (required < 0)
        rc = MPI_Init(&argc, &argv);
    else
        rc = MPI_Init_thread(&argc, &argv, required, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 2) {
        char path[4096];
        snprintf(path, sizeof path, "%s/facts-%d.txt", argv[2], rank);
        if (!freopen(path, "w", stdout))
            return 2;
    }
#define SAY(...) say(rank, __VA_ARGS__)
    SAY("init %s rc %d provided %d", how, rc, provided);
    SAY("initialized before init %d", before_init);
    MPI_Initialized(&flag);
    SAY("initialized after init %d", flag);
    MPI_Query_thread(&claimed);
    SAY("query_thread %d", claimed);
    if (provided >= 0)
        SAY("query_thread equals provided %d", claimed == provided);
    MPI_Is_thread_main(&main_flag);
    SAY("is_thread_main (main thread) %d", main_flag);
    if (claimed >= MPI_THREAD_FUNNELED) {
        pthread_t t;
        pthread_create(&t, NULL, ask_from_thread, &other_main);
        pthread_join(t, NULL);
        SAY("is_thread_main (other thread) %d", other_main);
    }

    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh);
    SAY("world errhandler is errors_are_fatal %d", eh == MPI_ERRORS_ARE_FATAL);
    if (eh != MPI_ERRHANDLER_NULL)
        MPI_Errhandler_free(&eh);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &val, &flag);
    SAY("tag_ub set %d value %d", flag, flag ? *val : 0);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &val, &flag);
    SAY("wtime_is_global set %d value %d", flag, flag ? *val : 0);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &val, &flag);
    SAY("appnum set %d value %d", flag, flag ? *val : 0);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &val, &flag);
    SAY("universe_size set %d", flag);

    MPI_Comm_create_keyval(count_copy, count_delete, &world_key, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, world_key, &copies);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &self_key, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, self_key, &deletes);

    rc = MPI_Pcontrol(1);
    SAY("pcontrol rc %d", rc);
    {
        long x = rank + 1, sum = 0;
        MPI_Allreduce(&x, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        SAY("allreduce %ld", sum);
    }
    MPI_Finalized(&before_fin);
    SAY("finalized before finalize %d", before_fin);
    rc = MPI_Finalize();
    MPI_Finalized(&after_fin);
    SAY("finalize rc %d finalized after %d", rc, after_fin);
    SAY("world copy callbacks %d self delete callbacks %d", copies, deletes);
    return 0;
}
