#!/usr/bin/env bash
# Efficiency of the calibration: wall time of `mpiover-calibrate --quick`
# divided by the measured call time of the samples it kept (what
# synchronization, windows, warm-up, dropped samples, statistics and process
# start cost on top of the calls themselves). Two denominators:
#
#   per window  the run's `kept_window_s`: for every kept window the longest
#               rank's call time, counted once. This is the time the machine
#               spent inside measured calls; wall / this is the efficiency.
#   pooled      the sum of the entries' `sum_s`: every rank's duration, so a
#               p-rank collective window counts about p times (overlapping
#               calls). Shown for comparison; it flatters the efficiency.
#
#   bench/calibrate_efficiency.sh [NP] [extra mpiover-calibrate options]
#
# NP defaults to 4. Builds the release binary first (honours CARGO_TARGET_DIR).
# Reads the numbers from the profile (not the log), so --quiet is fine. Fails
# (exit 1) when the calibration failed or skipped entries: an efficiency over
# part of the grid would not be the quick calibration's.
set -euo pipefail
cd "$(dirname "$0")/.."
NP="${1:-4}"
shift || true
command -v jq >/dev/null || { echo "calibrate_efficiency.sh: needs jq" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
cargo build --release -q -p mpiover-calibrate
BIN="${CARGO_TARGET_DIR:-target}/release/mpiover-calibrate"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
P="$OUT/profile.json"
t0=$(date +%s.%N)
mpirun -np "$NP" "$BIN" --quick -o "$P" "$@" 2>"$OUT/log" || {
    cat "$OUT/log" >&2
    exit 1
}
t1=$(date +%s.%N)
skipped=$(jq '.skipped | length' "$P")
if [ "$skipped" -ne 0 ]; then
    echo "calibrate_efficiency.sh: $skipped entries skipped; no efficiency for a partial grid:" >&2
    jq -c '.skipped[]' "$P" >&2
    exit 1
fi
read -r entries samples dropped pooled windows per_window recorded < <(jq -r '
    [(.entries | length), ([.entries[].n] | add), ([.entries[].n_invalid] | add),
     ([.entries[].sum_s // 0] | add), .runs[-1].kept_windows, .runs[-1].kept_window_s,
     .runs[-1].wall_s] | @tsv' "$P")
awk -v t0="$t0" -v t1="$t1" -v np="$NP" -v e="$entries" -v n="$samples" -v d="$dropped" \
    -v pooled="$pooled" -v w="$windows" -v pw="$per_window" -v rec="$recorded" 'BEGIN {
    wall = t1 - t0
    if (pw <= 0) { print "calibrate_efficiency.sh: no kept_window_s in the profile" > "/dev/stderr"; exit 1 }
    printf "calibrate --quick, -np %d: %d entries, %d samples kept, %d dropped, %d kept windows\n", np, e, n, d, w
    printf "wall time (mpirun start to end):         %8.2f s (calibrator: %.2f s)\n", wall, rec
    printf "kept call time, per window (longest rank): %8.4f s\n", pw
    printf "kept call time, pooled over ranks:         %8.4f s\n", pooled
    printf "efficiency = wall / per-window call time = %.0f\n", wall / pw
    printf "           (wall / pooled call time      = %.0f)\n", wall / pooled
}'
