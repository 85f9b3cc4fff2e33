#!/usr/bin/env bash
# The job log's merge at MPI_Finalize (MPIOVER_FORMAT=log): how long it takes
# at 8, 16, 32 and 64 ranks (oversubscribed on a small machine) and how that
# grows per doubling of the ranks. Each run is examples/late_sender (2
# iterations of 1 ms); the merge time of a rank is what libmpiover prints with
# MPIOVER_DEBUG (folding its record, the duplicate communicator, the tree of
# aggregates, rank 0's write and the closing MPI_Allreduce); rank 0's is the
# merge's. (The report's tool cost states rank 0's time up to the last
# aggregate merged, without the write.)
#
#   bench/merge_cost.sh            (NPS="8 16 32 64" REPS=3 from the environment)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
NPS=${NPS:-8 16 32 64}
REPS=${REPS:-3}
T=${CARGO_TARGET_DIR:-target}
cargo build -q --release -p mpiover-interpose -p mpiover-report
EX="$T/bench-examples"
make -s -C examples OUT="$PWD/$EX" "$PWD/$EX/late_sender"
LIB="$PWD/$T/release/libmpiover.so"
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -r); $(date -u '+%Y-%m-%d %H:%M UTC')"
prev=""
for np in $NPS; do
  best=""
  for r in $(seq "$REPS"); do
    dir=$(mktemp -d)
    out=$(mpirun -np "$np" -x LD_PRELOAD="$LIB" -x MPIOVER_OUT="$dir" -x MPIOVER_FORMAT=log \
      -x MPIOVER_DEBUG=1 "$EX/late_sender" 2 1 2>&1 >/dev/null || true)
    ms=$(grep -o 'rank 0 job log merge: [0-9.]* ms, written' <<<"$out" | awk '{print $(NF-2)}')
    size=$(stat -c %s "$dir/job.mpiover-log" 2>/dev/null || echo 0)
    rm -rf "$dir"
    [[ -n "$ms" ]] || { echo "merge_cost: no merge time at -np $np (was the log written?)" >&2; exit 1; }
    if [[ -z "$best" ]] || awk -v a="$ms" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$ms; fi
  done
  growth=""
  [[ -n "$prev" ]] && growth=$(awk -v a="$best" -v b="$prev" 'BEGIN{printf ", x%.2f per doubling", a/b}')
  printf 'np %3d: merge %8.2f ms (best of %d), log %d bytes%s\n' "$np" "$best" "$REPS" "$size" "$growth"
  prev=$best
done
