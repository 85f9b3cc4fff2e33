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
# by; it leaves out the few instructions a wrapper costs in other objects
# (the loader's thread-local look-up, libc). MAX_REQUESTS / MAX_LOCAL set
# limits (added instructions per call) above which the script exits 1;
# unset, it only prints.
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

count() { # test n wrapped -> total instructions of the program, and those of its tested wrappers
    rm -f "$tmp"/cg.*
    mpirun -np 1 -x LD_PRELOAD="$LIB" -x MPIOVER_OUT -x MPIOVER_QUIET \
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.%p" "$tmp/wi" "$1" "$2" "$3" >/dev/null 2>&1
    local total own
    total=$(awk '/^(summary|totals):/ { print $2; exit }' "$tmp"/cg.*)
    # Self costs per source line's file and function: the lines inlined into
    # a tested wrapper, from any source file but the MPI library's (`???`).
    own=$(callgrind_annotate --inclusive=no --auto=no --threshold=100 "$tmp"/cg.* 2>/dev/null |
        sed -E 's/^ *([0-9,]+) +\( *[0-9.]+%\) +/\1 /' |
        awk '$2 ~ /:MPI_(Iprobe|Allreduce|Sendrecv|Irecv|Isend|Waitall|Test)$/ && $2 !~ /^\?\?\?/ { gsub(",", "", $1); w += $1 } END { print w + 0 }')
    echo "$total $own"
}

echo "# libmpiover instructions added per call (callgrind; $N1 -> $N2 iterations); $(mpirun --version 2>/dev/null | head -1)"
printf '%-12s %14s %14s %14s %14s\n' test via_MPI_ via_PMPI_ added own
fail=""
for t in iprobe allreduce sendrecv requests test; do
    calls=1
    [ "$t" = requests ] && calls=3
    read -r w1 o1 < <(count "$t" "$N1" 1)
    read -r w2 o2 < <(count "$t" "$N2" 1)
    read -r p1 _ < <(count "$t" "$N1" 0)
    read -r p2 _ < <(count "$t" "$N2" 0)
    read -r w p a o < <(awk -v w1="$w1" -v w2="$w2" -v p1="$p1" -v p2="$p2" -v o1="$o1" -v o2="$o2" -v d="$(((N2 - N1) * calls))" \
        'BEGIN { w = (w2 - w1) / d; p = (p2 - p1) / d; printf "%.0f %.0f %.0f %.0f\n", w, p, w - p, (o2 - o1) / d }')
    printf '%-12s %14s %14s %14s %14s\n' "$t" "$w" "$p" "$a" "$o"
    limit=${MAX_LOCAL:-}
    [ "$t" = requests ] && limit=${MAX_REQUESTS:-}
    if [ -n "$limit" ] && [ "$a" -gt "$limit" ]; then fail="$fail $t($a>$limit)"; fi
done
if [ -n "$fail" ]; then
    echo "wrapper_instructions: over the limit:$fail" >&2
    exit 1
fi
