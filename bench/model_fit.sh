#!/usr/bin/env bash
# How well the error models fit this machine: for Open MPI and MPICH at 2 and
# 4 ranks, two quick calibrations one after the other, then
# `mpiover profile check A --against B` on their kept samples. Prints one row
# per MPI and rank count:
#
#   entries            entries of calibration A
#   modelled           entries whose tmax comes from an accepted model, by family
#   empirical          entries where every model was rejected
#   exceed model       out of sample: tmax fitted on the even samples of each
#                      entry, share of its odd samples above it (median, p10,
#                      p90 over entries; 1 - q_max = 1 % is the target)
#   exceed emp.        the same for the even samples' empirical q_max quantile
#   A/B tmax|q99|med   the same entry's tmax in A and in B, larger over
#                      smaller (median, p90), then the stored empirical 99th
#                      percentiles' ratio and the medians' ratio: how far the
#                      machine itself moved between the two
#   tmax/med           the tmax ratio's median over the medians' (1 when
#                      tmax moves no more than the machine does)
#   (second line)      the same pairs under other estimators of the q_max
#                      quantile (empirical, Harrell-Davis, a GPD tail at a
#                      fixed threshold): their A/B ratio and its multiple of
#                      the medians', and their out-of-sample share
#   needed             samples the stopping rule (5 % of terr,max over the last
#                      75 samples) needed, from 50 on (median, p90), and the
#                      samples the calibration kept (median)
#
#   bench/model_fit.sh [CALIBRATE OPTIONS...]     (default: --quick)
#
# Settings (environment): MPIS="openmpi mpich", NPS="2 4", KEEP=dir (keep the
# profiles there; default a temporary directory). Builds the release binaries
# (MPICH's under target/mpich with MPICC=mpicc.mpich) unless BUILD=0. The
# machine should be idle: the calibrator says when it was not (the rows then
# end in "BUSY"), and such figures describe the load, not the models.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/env.sh
command -v jq >/dev/null || { echo "model_fit.sh: needs jq" >&2; exit 2; }
MPIS=${MPIS:-openmpi mpich}
NPS=${NPS:-2 4}
OPTS=("$@")
[ ${#OPTS[@]} -gt 0 ] || OPTS=(--quick)
TARGET=${CARGO_TARGET_DIR:-target}
if [ "${BUILD:-1}" = 1 ]; then
    cargo build --release -q -p mpiover-calibrate -p mpiover-report
    if [[ " $MPIS " == *" mpich "* ]]; then
        MPICC=mpicc.mpich CARGO_TARGET_DIR=$TARGET/mpich cargo build --release -q -p mpiover-calibrate
    fi
fi
OUT=${KEEP:-$(mktemp -d)}
mkdir -p "$OUT"
[ -n "${KEEP:-}" ] || trap 'rm -rf "$OUT"' EXIT
MPIOVER=$TARGET/release/mpiover

printf '%-8s %3s %7s %-44s %9s %-26s %-26s %-30s %-8s %-12s %s\n' mpi np entries modelled empirical \
    "exceed model (med p10 p90)" "exceed emp. (med p10 p90)" "A/B tmax | q99 | median" "tmax/med" "needed|kept" load
for mpi in $MPIS; do
    case $mpi in
    openmpi) run=(mpirun --oversubscribe) cal=$TARGET/release/mpiover-calibrate ;;
    mpich) run=(mpiexec.mpich) cal=$TARGET/mpich/release/mpiover-calibrate ;;
    *) echo "model_fit.sh: unknown MPI $mpi" >&2; exit 2 ;;
    esac
    for np in $NPS; do
        for x in a b; do
            "${run[@]}" -np "$np" "$cal" "${OPTS[@]}" -o "$OUT/$mpi-np$np-$x.json" \
                >"$OUT/$mpi-np$np-$x.log" 2>&1 || {
                echo "model_fit.sh: calibration failed ($mpi, $np ranks):" >&2
                tail -5 "$OUT/$mpi-np$np-$x.log" >&2
                exit 1
            }
        done
        c=$("$MPIOVER" profile check "$OUT/$mpi-np$np-a.json" --against "$OUT/$mpi-np$np-b.json" --json)
        busy=$(jq -r '[.runs[].load // {} | if .busy then "BUSY" elif .unsteady then "unsteady"
                else "idle" end] | join(",")' \
            "$OUT/$mpi-np$np-a.json" "$OUT/$mpi-np$np-b.json" | sort -u | tr '\n' ' ')
        jq -r --arg mpi "$mpi" --arg np "$np" --arg busy "$busy" '
          def p: (. * 1000 | round / 10 | tostring) + "%";
          def t3: if . == null then "-" else "\(.[0]|p) \(.[1]|p) \(.[2]|p)" end;
          def r2: if . == null then "-" else "\(.[0]*100|round/100) \(.[2]*100|round/100)" end;
          ( .entries - .without_samples - .empirical ) as $m
          | [ $mpi, $np, (.entries|tostring),
              ("\($m) (\((100 * $m / (.entries - .without_samples)) | round)%): "
                + ([.models | to_entries[] | "\(.key) \(.value)"] | join(", "))),
              (.empirical|tostring),
              (.exceed|t3), (.exceed_empirical|t3),
              ((.against.tmax_ratio|r2) + " | " + (.against.q99_ratio|r2) + " | "
                + (.against.median_ratio|r2)),
              (if .against.tmax_ratio == null or .against.median_ratio == null then "-"
               else (.against.tmax_ratio[0] / .against.median_ratio[0] * 100 | round / 100 | tostring)
               end),
              ("\(.needed[0] // "-")|\(.n[0])"), $busy ]
          | @tsv' <<<"$c" |
            awk -F'\t' '{printf "%-8s %3s %7s %-44s %9s %-26s %-26s %-30s %-8s %-12s %s\n", $1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11}'
        # The same pairs under other estimators of the quantile: when they all
        # move alike, the spread is the data's rather than tmax's method.
        jq -r '.against.median_ratio[0] as $m | "         other estimators, A/B (median, p90; x median) | exceed (median, p90): "
          + ([.against.estimators[] | select(.ratio != null and .exceed != null) | "\(.estimator) \(.ratio[0]*100|round/100) \(.ratio[2]*100|round/100) x\(.ratio[0]/$m*100|round/100) | \(.exceed[0]*1000|round/10)% \(.exceed[2]*1000|round/10)%"]
             | join("; "))' <<<"$c"
    done
done
echo "profiles and logs: $OUT${KEEP:+ (kept)}"
