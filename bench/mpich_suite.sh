#!/usr/bin/env bash
# MPICH's own MPI test suite (test/mpi) without and with the preload, under Open MPI
# and under MPICH: the interposer must not change what a program does, so every test
# must give the same result both ways. Exits 1 when a test's result differs
# reproducibly.
#
#   bench/mpich_suite.sh [TEST_MPI_DIR]        (or MPICH_TESTS=TEST_MPI_DIR)
#
# TEST_MPI_DIR is the directory test/mpi of MPICH's source, not downloaded here:
# - from a source release (https://www.mpich.org/downloads, mpich-VERSION.tar.gz,
#   directory mpich-VERSION/test/mpi; its configure is already generated), or
# - from a git checkout of MPICH at a release tag (v4.0.2 matches Debian 12's MPICH);
#   the script then does what MPICH's autogen.sh does for the test suite, in a copy
#   under WORK: the checkout's confdb/ into test/mpi/confdb and dtpools/confdb,
#   maint/version.m4, include/mtest_mpix.h from src/binding/mpix.txt, test/mpi's
#   autogen.sh (the f90 tests are made from the f77 ones), `autoreconf -if`. Only
#   test/mpi, confdb, maint/version.m4 and src/binding/mpix.txt are needed, e.g.
#     git -C MPICH_GIT archive v4.0.2 test/mpi confdb maint/version.m4 \
#         src/binding/mpix.txt | tar -x -C DIR        # then: DIR/test/mpi
#   This needs autoconf, automake and libtool (apt-get install autoconf automake
#   libtool).
#
# The runs and their comparison are bench/mpich_suite_run.py (one MPI at a time), the
# report over the MPIs bench/mpich_suite_report.py; this script prepares, builds and
# calls them.
#
# Per MPI the suite is configured once into WORK/build-MPI (options in configure_opts
# below: no spawn, I/O, C++, perf, FT, checkpoint or collective-algorithm tests;
# threads at MPI_THREAD_MULTIPLE; Fortran 77 and 90; Open MPI as a strict MPI, which
# leaves out MPICH's extensions and runs the tests MPICH expects to fail), then each
# directory of DIRS is built (`make -k -j JOBS`; a directory or program that does not
# build is reported and the rest goes on). Every test of the directories' testlist and
# testlist.dtp files (recursively, as MPICH's runtests reads them: name, ranks,
# arg=, env=, mpiexecarg=, timeLimit=, resultTest=, strict=, xfail=, mem=) is run
# without and then with LD_PRELOAD=libmpiover.so (MPIOVER_OUT, MPIOVER_QUIET=1), one
# run at a time, each under a time limit (the test's timeLimit, at most TIMEOUT s; the
# process tree is killed after it). A run passes as in runtests: exit status 0 and a
# line " No Errors" (resultTest=TestStatus, TestErrFatal: a non-zero exit status;
# TestStatusNoErrors: both). A test whose result differs between the two runs is run
# RERUNS more times each way; the difference is reproducible when every run without
# gives one result and every run with another, else transient. Tests failing or timing
# out both ways are listed apart, with the first lines of both outputs.
#
# Prints, per MPI and directory: tests run, pass both ways, fail both ways,
# differences (transient, reproducible), not built, skipped; the differing tests with
# the first lines of both outputs; the tests failing both ways; then, from the
# records (`warnings` of every rank-NNNNNN.json of each test's first run with the
# preload), the records written against the ranks started, those carrying a warning,
# and the warnings grouped by text with the tests that raised them. Runs' outputs and
# results stay in WORK/runs-MPI and WORK/results-MPI.json.
#
# Settings (environment):
#   MPIS="openmpi mpich"        MPIs to test (openmpi: mpicc/mpirun; mpich:
#                               mpicc.mpich/mpiexec.mpich)
#   DIRS="pt2pt coll ..."       directories of test/mpi (default below)
#   TIMEOUT=120                 seconds per run at most (tests' own timeLimit if lower)
#   MAXNP=16                    tests asking for more ranks are skipped (listed);
#                               up to MAXNP the ranks are oversubscribed
#   RERUNS=2                    extra runs each way of a test whose result differed
#   DTP=0                       1: also the testlist.dtp files (274 generated datatype
#                               tests in the default directories, most in rma and
#                               pt2pt; about 10 s each here: hours on 2 cores)
#   MATCH=regex                 only the tests whose "dir/name np args" matches
#   JOBS=2                      make -j
#   MPIOVER_LIB_OPENMPI=path, MPIOVER_LIB_MPICH=path
#                               existing libmpiover.so built for that MPI (default:
#                               built here, target/release resp. target/mpich/release
#                               with MPICC=mpicc.mpich)
#   WORK=dir                    build trees and outputs (default
#                               ~/.cache/mpiover-mpich-suite; outside the repository)
#   KEEP_RECORDS=1              keep every run's records under WORK/runs-MPI
#   REPORT_ONLY=1               no build or run: the report over WORK/results-MPI.json
#                               of MPIS (e.g. after running the MPIs one at a time;
#                               the file is rewritten after every test, so a pass
#                               that was cut short reports what it ran)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$root/scripts/env.sh"

TESTS=${1:-${MPICH_TESTS:-}}
[ -n "$TESTS" ] && [ -d "$TESTS" ] || {
    echo "mpich_suite: give MPICH's test/mpi directory as argument or MPICH_TESTS (see the header)" >&2
    exit 2
}
TESTS=$(cd "$TESTS" && pwd)
MPIS=${MPIS:-openmpi mpich}
DIRS=${DIRS:-pt2pt coll comm group datatype init attr info errhan topo rma threads f90}
TIMEOUT=${TIMEOUT:-120}
MAXNP=${MAXNP:-16}
RERUNS=${RERUNS:-2}
DTP=${DTP:-0}
MATCH=${MATCH:-}
JOBS=${JOBS:-2}
WORK=${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/mpiover-mpich-suite}
PYTHON=${PYTHON:-python3}
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
case "$WORK/" in "$root"/*)
    echo "mpich_suite: WORK=$WORK is inside the repository; choose a directory outside it" >&2
    exit 2 ;;
esac

# --- the test suite's sources, configure generated -------------------------------------
if [ -x "$TESTS/configure" ] && [ -f "$TESTS/include/mtest_mpix.h" ]; then
    SRC=$TESTS
else
    top=$(cd "$TESTS/../.." && pwd)
    for f in confdb/aclocal_cc.m4 maint/version.m4 src/binding/mpix.txt; do
        [ -f "$top/$f" ] || {
            echo "mpich_suite: $TESTS has no configure and $top/$f is missing (see the header)" >&2
            exit 2
        }
    done
    SRC=$WORK/src
    if [ "$(cat "$SRC/.mpiover-prepared" 2>/dev/null)" != "$TESTS" ]; then
        echo "preparing $TESTS (MPICH's autogen steps for test/mpi) in $SRC"
        rm -rf "$SRC"
        cp -a "$TESTS" "$SRC"
        rm -rf "$SRC/confdb" "$SRC/dtpools/confdb"
        cp -a "$top/confdb" "$SRC/confdb"
        cp -a "$top/confdb" "$SRC/dtpools/confdb"
        cp -p "$top/maint/version.m4" "$SRC/version.m4"
        {
            echo "#ifndef MTEST_MPIX_H_INCLUDED"
            echo "#define MTEST_MPIX_H_INCLUDED"
            sed -n 's/^\(MPI_\([A-Za-z0-9_]*\)\).*/#define \1 MPIX_\2/p' "$top/src/binding/mpix.txt"
            echo "#endif"
        } >"$SRC/include/mtest_mpix.h"
        (cd "$SRC" && ./autogen.sh && autoreconf -if) >"$WORK/autogen.log" 2>&1 || {
            echo "mpich_suite: autogen failed, see $WORK/autogen.log" >&2
            exit 2
        }
        echo "$TESTS" >"$SRC/.mpiover-prepared"
    fi
fi

# --- per MPI: compilers, launcher, configure options, library ----------------------------
common_opts=(--enable-threads=multiple --enable-fortran=f77,f90 --disable-cxx
             --disable-spawn --disable-romio --disable-perftest --disable-ft-tests
             --disable-checkpointing --disable-collalgo-tests
             FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch)
configure_opts() {
    case $1 in
        # Open MPI 4 hides the prototypes of the functions removed in MPI-3 (dtpools and
        # a few tests use them; libmpi still has them).
        openmpi) echo MPICC=mpicc MPICXX=mpicxx MPIF77=mpif77 MPIFC=mpif90 \
                      CPPFLAGS=-DOMPI_OMIT_MPI1_COMPAT_DECLS=0 --enable-strictmpi "${common_opts[@]}" ;;
        mpich) echo MPICC=mpicc.mpich MPICXX=mpicxx.mpich MPIF77=mpif77.mpich \
                    MPIFC=mpif90.mpich "${common_opts[@]}" ;;
    esac
}
library() {
    local mpi=$1 lib
    case $mpi in
        openmpi) lib=${MPIOVER_LIB_OPENMPI:-}
                 if [ -z "$lib" ]; then
                     (cd "$root" && cargo build --release -q -p mpiover-interpose >&2)
                     lib=$target/release/libmpiover.so
                 fi ;;
        mpich) lib=${MPIOVER_LIB_MPICH:-}
               if [ -z "$lib" ]; then
                   (cd "$root" && MPICC=mpicc.mpich CARGO_TARGET_DIR=$target/mpich \
                       cargo build --release -q -p mpiover-interpose >&2)
                   lib=$target/mpich/release/libmpiover.so
               fi ;;
    esac
    [ -f "$lib" ] || { echo "mpich_suite: $lib not found" >&2; exit 2; }
    readlink -f "$lib"
}

status=0
t_start=$(date +%s)
echo "MPICH test suite $(sed -n 's/^m4_define(\[MPICH_VERSION_m4\],\[\(.*\)\])dnl/\1/p' "$SRC/version.m4" 2>/dev/null) from $TESTS"
echo "MPIs: $MPIS; directories: $DIRS; timeout ${TIMEOUT} s; at most $MAXNP ranks; reruns $RERUNS; dtp $DTP${MATCH:+; tests matching $MATCH}"
echo "machine: $(nproc) cores, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg); work in $WORK"
for mpi in $MPIS; do
    [ "${REPORT_ONLY:-0}" != 1 ] || break
    case $mpi in openmpi|mpich) ;; *) echo "mpich_suite: unknown MPI $mpi (openmpi, mpich)" >&2; exit 2 ;; esac
    lib=$(library "$mpi")
    b=$WORK/build-$mpi
    opts=$(configure_opts "$mpi")
    echo
    echo "=== $mpi: $(case $mpi in openmpi) mpirun --version | head -1 ;; mpich) mpichversion 2>/dev/null | head -1 | tr -s '\t ' ' ' ;; esac); preload $lib"
    if [ "$(cat "$b/.mpiover-configure" 2>/dev/null)" != "$SRC $opts" ] || [ ! -f "$b/config.status" ]; then
        echo "configure: $opts"
        rm -rf "$b"
        mkdir -p "$b"
        # shellcheck disable=SC2086 # the options are words without blanks
        if ! (cd "$b" && "$SRC/configure" $opts) >"$b/configure.log" 2>&1; then
            echo "configure failed for $mpi (see $b/configure.log): not tested"
            tail -3 "$b/configure.log"
            status=2
            continue
        fi
        echo "$SRC $opts" >"$b/.mpiover-configure"
    fi
    built=""
    for d in $DIRS; do
        if [ ! -f "$b/$d/Makefile" ]; then
            echo "build $d: not configured for $mpi (no $d/Makefile), left out"
            continue
        fi
        t0=$(date +%s)
        if make -k -j"$JOBS" -C "$b/$d" >"$b/make-${d//\//_}.log" 2>&1; then
            echo "build $d: ok ($(( $(date +%s) - t0 )) s)"
        else
            echo "build $d: make failed ($(( $(date +%s) - t0 )) s; programs that did not build are listed as not built; $b/make-${d//\//_}.log):"
            grep -oE "undefined reference to \`[A-Za-z0-9_]+'|error: .*" "$b/make-${d//\//_}.log" \
                | sort | uniq -c | sort -rn | head -8 | sed 's/^ */    /' || true
        fi
        built="$built $d"
    done
    [ -n "$built" ] || continue
    MPI=$mpi LIB=$lib BUILD=$b SRC=$SRC DIRS_BUILT=$built TIMEOUT=$TIMEOUT MAXNP=$MAXNP \
        RERUNS=$RERUNS DTP=$DTP MATCH=$MATCH WORK=$WORK "$PYTHON" "$here/mpich_suite_run.py" || status=$?
done

# --- the report over the MPIs of this run --------------------------------------------------
echo
MPIS=$MPIS WORK=$WORK "$PYTHON" "$here/mpich_suite_report.py" || status=$?
echo
echo "total wall time $(( $(date +%s) - t_start )) s"
exit $status
