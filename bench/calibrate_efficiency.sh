#!/usr/bin/env bash
# Efficiency of the calibration: wall time of `mpiover-calibrate --quick`
# divided by the sum of the measured call times of the samples it kept
# (what synchronization, windows, warm-up, dropped samples, statistics and
# process start cost on top of the calls themselves).
#
#   bench/calibrate_efficiency.sh [NP] [extra mpiover-calibrate options]
#
# NP defaults to 4. Builds the release binary first (honours CARGO_TARGET_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
NP="${1:-4}"
shift || true
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cargo build --release -q -p mpiover-calibrate
BIN="${CARGO_TARGET_DIR:-target}/release/mpiover-calibrate"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
t0=$(date +%s.%N)
mpirun -np "$NP" "$BIN" --quick -o "$OUT/profile.json" "$@" 2>"$OUT/log" || {
    cat "$OUT/log" >&2
    exit 1
}
t1=$(date +%s.%N)
kept=$(sed -n 's/.*kept call time \([0-9.e+-]*\) s.*/\1/p' "$OUT/log")
summary=$(grep 'entries (' "$OUT/log" | sed 's/^mpiover-calibrate: //')
awk -v t0="$t0" -v t1="$t1" -v kept="$kept" -v np="$NP" -v s="$summary" 'BEGIN {
    wall = t1 - t0
    printf "calibrate --quick, -np %d: %s\n", np, s
    printf "wall time (mpirun start to end): %.2f s\n", wall
    printf "sum of kept samples call times:  %.4f s\n", kept
    printf "efficiency = wall / kept call time = %.1f\n", wall / kept
}'
