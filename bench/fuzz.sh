#!/usr/bin/env bash
# Mutation fuzzing of every file the mpiover command reads, a million mutants
# per format (report/tests/fuzz/): per-rank records, job logs, calibration
# profiles, `mpiover fit` sample files, from the seed inputs of real runs
# under Open MPI and MPICH in report/tests/fixtures/fuzz/.
#
#   bench/fuzz.sh                 1,000,000 mutants of each format
#   MUTANTS=20000 bench/fuzz.sh   fewer
#   FORMATS="record log" bench/fuzz.sh
#   JOBS=2 (default): formats fuzzed at once, one process each
#   CLI=200 (default): mutants per format also run through the mpiover binary
#
# Prints per format: mutants, wall time, outcomes (ok: a result; errors: one
# clear error line naming the file; failures: a panic, an input over the time
# or memory limit, or an error of another shape) and the slowest mutant.
# A failing mutant is reproduced with
#   MPIOVER_FUZZ_ONLY=FORMAT:INDEX cargo test --release -p mpiover-report --test fuzz
# and kept in target/tmp/fuzz-failures/. Exits 1 when any mutant failed.
#
# `profile check` fits every entry of a profile again (tens of ms): it runs on
# one profile mutant in CHECK_EVERY (default 64), the other profile commands
# on all. `mpiover fit` fits five models (about 7 ms): the whole command runs
# on one sample-file mutant in FIT_EVERY (default 8), its reader (the file's
# parsing and checks) on all. `cargo test` runs every command on every mutant.
set -euo pipefail
cd "$(dirname "$0")/.."
MUTANTS=${MUTANTS:-1000000}
FORMATS=${FORMATS:-record log profile fit}
JOBS=${JOBS:-2}
CLI=${CLI:-200}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
cargo build --release -q -p mpiover-report --tests
# Tmpfs when there is one: every mutant is written as a file, as the
# command reads it.
DIR=${MPIOVER_FUZZ_DIR:-/dev/shm}
[ -d "$DIR" ] || DIR=$PWD/target/tmp
run() {
    MPIOVER_FUZZ_DIR=$DIR MPIOVER_FUZZ_MUTANTS=$MUTANTS MPIOVER_FUZZ_FORMATS=$1 \
        MPIOVER_FUZZ_CHECK_EVERY=${CHECK_EVERY:-64} MPIOVER_FUZZ_FIT_EVERY=${FIT_EVERY:-8} \
        cargo test --release -q -p mpiover-report --test fuzz every_mutant -- --nocapture \
        >"$OUT/$1.log" 2>&1 || true
}
# Every seed input cut at every length, through the same readers.
MPIOVER_FUZZ_DIR=$DIR MPIOVER_FUZZ_TRUNCATE_STEP=1 MPIOVER_FUZZ_CHECK_EVERY=${CHECK_EVERY:-64} \
    MPIOVER_FUZZ_FIT_EVERY=${FIT_EVERY:-8} \
    cargo test --release -q -p mpiover-report --test fuzz a_seed_input_cut -- --nocapture \
    >"$OUT/cuts.log" 2>&1 && cuts=ok || cuts=FAILED
echo "fuzz: $MUTANTS mutants per format, $JOBS at once, on $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
running=0
for f in $FORMATS; do
    run "$f" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
if [ "$CLI" -gt 0 ]; then
    start=$(date +%s.%N)
    MPIOVER_FUZZ_DIR=$DIR MPIOVER_FUZZ_CLI=$CLI \
        cargo test --release -q -p mpiover-report --test fuzz the_command -- --nocapture \
        >"$OUT/cli.log" 2>&1 && cli=ok || cli=FAILED
    end=$(date +%s.%N)
fi
printf '%-8s %10s %10s %10s %10s %10s %9s  %s\n' format mutants seconds ok errors failures peak_MiB slowest
failed=0
for f in $FORMATS; do
    line=$(grep "^fuzz $f " "$OUT/$f.log" || true)
    if [ -z "$line" ]; then
        echo "$f: no result; the test's output:"
        tail -20 "$OUT/$f.log"
        failed=1
        continue
    fi
    # fuzz F mutants N ok A errors B failures C seconds S peak_mib M slowest F:I T
    set -- $line
    printf '%-8s %10s %10s %10s %10s %10s %9s  %s %s\n' "$2" "$4" "${12}" "$6" "$8" "${10}" "${14}" "${16}" "${17}"
    [ "${10}" = 0 ] || { failed=1; grep -A30 "mutants that broke" "$OUT/$f.log" | head -30; }
done
echo "truncations at every length: $(grep -o 'truncations [0-9]*' "$OUT/cuts.log" | awk '{n += $2} END {print n}') cuts: $cuts"
[ "$cuts" = ok ] || { failed=1; tail -30 "$OUT/cuts.log"; }
if [ "$CLI" -gt 0 ]; then
    printf 'CLI pass: %s mutants per format through the mpiover binary (report, diff, profile show/check/merge, fit): %s in %.0f s\n' \
        "$CLI" "$cli" "$(echo "$end - $start" | bc)"
    [ "$cli" = ok ] || { failed=1; tail -30 "$OUT/cli.log"; }
fi
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $failed
