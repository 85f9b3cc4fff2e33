#!/usr/bin/env bash
# Instructions that libmpiover.so adds per MPI call, counted with valgrind's
# callgrind (bench/wrapper_instructions.c):
#
#   bench/wrapper_instructions.sh [N1] [N2]      (defaults 2000 and 12000)
#
# For each test the program runs four times under callgrind: N1 and N2
# iterations, through MPI_ (preloaded: the wrapper) and through PMPI_. The
# added instructions per call are the slope between N1 and N2 through MPI_
# minus the slope through PMPI_ (start-up, MPI_Init and the record written at
# MPI_Finalize cancel out), divided by the calls per iteration. Counts do not
# depend on the machine's load or latency level as nanoseconds do
# (bench/wrapper_cost.sh), but they are not exact either: the library's
# progress loops poll a number of times that depends on timing, so a figure
# moves by up to tens of instructions from run to run (most on the calls that
# poll: MPI_Sendrecv, MPI_Allreduce). Compare builds in alternate runs.
#
# The column `own` is exact instead (the same build gives the same figure
# within an instruction or two): the instructions executed in the tested
# wrappers themselves, with everything inlined into them, per call (slope
# N1 -> N2 through MPI_), leaving out what runs in the MPI library. That is
# the interposer's own work, the figure to compare two builds of the hot path
# by. `called` is what the wrappers' calls cost outside the MPI library (the
# loader's thread-local look-up, libc, an out-of-line helper of libmpiover),
# per call: not in `own`, printed so that code moved out of line shows.
#
# The second table splits `own` by step of the hot path: clock (the two
# clock reads), enter (the re-entry guard and the thread's state: the one
# thread-local access), site (return address -> call site), key (the key's
# compare, its table look-up and its counts), hist (the histogram's bucket),
# regions, requests (the request map: posts, completions), args (what the
# event reads of its arguments: communicator, datatype size, status, MPI's
# constants) and the rest (the wrapper's own lines, the event's fields and
# key, the per-function counts). The split is made from callgrind's per-instruction counts
# (--dump-instr=yes) and the library's line tables: each instruction's chain
# of inlined functions (addr2line -i) names the source file of the step it
# belongs to (bench/wrapper_steps.py). Nothing is compiled differently for
# it: a step is the code of its source files, inlined as always.
#
# The exit status is 1 when a test's `own` is over its limit: MAX_LOCAL
# (default 171) for MPI_Iprobe, MPI_Allreduce and the failed MPI_Test,
# MAX_SENDRECV (default 198) for MPI_Sendrecv and MAX_REQUESTS (default 267)
# for the request path. The defaults are the figures reached (163, 163 and
# 155; 192; 262, 2026-11-29) plus a small margin, so that a change that adds
# to them shows; all are within the targets (200 on the local tests, 280 on
# the request path).
# OWN_ONLY=1 skips the PMPI_ runs (the `added` column: half the time);
# TESTS="iprobe test" runs only those.
#
# MPIOVER_LIB=path uses an existing libmpiover.so instead of building one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
N1=${1:-2000}
N2=${2:-12000}
command -v valgrind >/dev/null || { echo "wrapper_instructions: valgrind not installed (apt install valgrind)" >&2; exit 2; }

LIB=${MPIOVER_LIB:-}
if [ -z "$LIB" ]; then
    (cd "$root" && cargo build --release -q -p mpiover-interpose >&2)
    LIB=${CARGO_TARGET_DIR:-$root/target}/release/libmpiover.so
fi
[ -f "$LIB" ] || { echo "wrapper_instructions: $LIB not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/wi" "$here/wrapper_instructions.c"
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export MPIOVER_OUT="$tmp/run" MPIOVER_QUIET=1

FUNCS="MPI_Iprobe MPI_Allreduce MPI_Sendrecv MPI_Irecv MPI_Isend MPI_Waitall MPI_Test"
count() { # test n wrapped -> total instructions of the program [own called steps...]
    rm -f "$tmp"/cg.*
    local opts=()
    [ "$3" = 1 ] && opts=(--dump-instr=yes)
    mpirun -np 1 -x LD_PRELOAD="$LIB" -x MPIOVER_OUT -x MPIOVER_QUIET \
        valgrind --tool=callgrind "${opts[@]}" --callgrind-out-file="$tmp/cg.%p" "$tmp/wi" "$1" "$2" "$3" >/dev/null 2>&1
    local total
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$tmp"/cg.*)
    if [ "$3" = 1 ]; then
        # "own N called N clock N ... rest N" -> the numbers
        echo "$total $(python3 "$here/wrapper_steps.py" "$tmp"/cg.* "$LIB" $FUNCS | awk '{ for (i = 2; i <= NF; i += 2) printf "%s ", $i }')"
    else
        echo "$total"
    fi
}

# Slope per call of each column of two `count` lines.
slope() { # line1 line2 calls
    awk -v a="$1" -v b="$2" -v d="$(((N2 - N1) * $3))" 'BEGIN {
        n = split(a, x, " "); split(b, y, " ")
        for (i = 1; i <= n; i++) printf "%.0f ", (y[i] - x[i]) / d; print "" }'
}

steps="clock enter site key hist regions requests args rest"
echo "# libmpiover instructions added per call (callgrind; $N1 -> $N2 iterations); $(mpirun --version 2>/dev/null | head -1)"
tests=${TESTS:-iprobe allreduce sendrecv requests test}
fail=""
table1="" table2=""
for t in $tests; do
    calls=1
    [ "$t" = requests ] && calls=3
    w=$(slope "$(count "$t" "$N1" 1)" "$(count "$t" "$N2" 1)" "$calls")
    read -r wt own called rest_of <<<"$w"
    p="-" a="-"
    if [ -z "${OWN_ONLY:-}" ]; then
        p=$(slope "$(count "$t" "$N1" 0)" "$(count "$t" "$N2" 0)" "$calls" | awk '{ print $1 }')
        a=$((wt - p))
    fi
    table1="$table1$(printf '%-12s %10s %10s %10s %10s %10s' "$t" "$wt" "$p" "$a" "$own" "$called")"$'\n'
    table2="$table2$(printf '%-12s %6s' "$t" "$own"; for v in $rest_of; do printf ' %8s' "$v"; done)"$'\n'
    case $t in
    sendrecv) limit=${MAX_SENDRECV:-198} ;;
    requests) limit=${MAX_REQUESTS:-267} ;;
    *) limit=${MAX_LOCAL:-171} ;;
    esac
    if [ "$own" -gt "$limit" ]; then fail="$fail $t($own>$limit)"; fi
done
printf '%-12s %10s %10s %10s %10s %10s\n' test via_MPI_ via_PMPI_ added own called
printf '%s' "$table1"
echo "# own instructions per call by step (bench/wrapper_steps.py)"
printf '%-12s %6s' test own; for s in $steps; do printf ' %8s' "$s"; done; echo
printf '%s' "$table2"
if [ -n "$fail" ]; then
    echo "wrapper_instructions: own instructions over the limit:$fail" >&2
    exit 1
fi
