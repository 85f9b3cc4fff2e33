#!/usr/bin/env bash
# What Python sites add per MPI call made from Python through mpi4py.
#
#   bench/python_site_cost.sh [RUNS] [REPS]      (defaults 6 and 11)
#
# Each run starts bench/python_site_cost.py (one rank: a failed
# MPI_Iprobe poll and a 1-int MPI_Allreduce on MPI_COMM_SELF, called from a
# Python function; fastest of 21 batches per repetition, median over REPS
# repetitions) in each mode, alternating: without the preload ("none"), with
# it and Python sites off (MPIOVER_PY_SITES=off: the nearest native frame,
# "off"), with it and Python sites on ("on"); and the same two at
# MPIOVER_DEPTH=2 ("off2", "on2": without Python sites depth 2 unwinds the
# native stack). Prints per test the median ns/call of each mode over the
# runs and the differences on - off (what Python sites add, the figure held
# against 150 ns) and off - none (the wrapper itself), and the record's own
# figure: tool.python.cost_per_call_s, the site look-up timed at MPI_Init.
#
# MPIOVER_LIB=path uses an existing libmpiover.so instead of building one;
# PYTHON=interpreter (default python3); MPIOVER_E2E_MPI=mpich runs under
# mpiexec.mpich (with an mpi4py built against MPICH on PYTHONPATH).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$root/scripts/env.sh"
RUNS=${1:-6}
REPS=${2:-11}
PYTHON=${PYTHON:-python3}
target=${CARGO_TARGET_DIR:-$root/target}
LIB=${MPIOVER_LIB:-}
if [ -z "$LIB" ]; then
    (cd "$root" && cargo build --release -q -p mpiover-interpose >&2)
    LIB=$target/release/libmpiover.so
fi
[ -f "$LIB" ] || { echo "python_site_cost: $LIB not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# mode -> preload? and extra environment
run_mode() {
    local mode=$1 out=$2
    local run=$tmp/run-$mode-$3
    local env=()
    case $mode in
        none) ;;
        off) env=(MPIOVER_PY_SITES off) ;;
        on) env=(MPIOVER_PY_SITES on) ;;
        off2) env=(MPIOVER_PY_SITES off MPIOVER_DEPTH 2) ;;
        on2) env=(MPIOVER_PY_SITES on MPIOVER_DEPTH 2) ;;
    esac
    if [ "${MPIOVER_E2E_MPI:-openmpi}" = mpich ]; then
        local args=(-n 1)
        if [ "$mode" != none ]; then
            args+=(-genv LD_PRELOAD "$LIB" -genv MPIOVER_OUT "$run" -genv MPIOVER_QUIET 1)
            local i
            for ((i = 0; i < ${#env[@]}; i += 2)); do args+=(-genv "${env[i]}" "${env[i+1]}"); done
        fi
        mpiexec.mpich "${args[@]}" "$PYTHON" "$here/python_site_cost.py" "$REPS" >"$out"
    else
        local args=(-np 1)
        if [ "$mode" != none ]; then
            args+=(-x "LD_PRELOAD=$LIB" -x "MPIOVER_OUT=$run" -x MPIOVER_QUIET=1)
            local i
            for ((i = 0; i < ${#env[@]}; i += 2)); do args+=(-x "${env[i]}=${env[i+1]}"); done
        fi
        mpirun "${args[@]}" "$PYTHON" "$here/python_site_cost.py" "$REPS" >"$out"
    fi
    if [ "$mode" = on ] || [ "$mode" = on2 ]; then
        "$PYTHON" -c 'import json,sys; t=json.load(open(sys.argv[1]))["tool"]; p=t.get("python") or {}; print("record", p.get("cost_per_call_s", 0) * 1e9, p.get("calls", 0))' \
            "$run/rank-000000.json" >>"$out"
    fi
}

MODES=(none off on off2 on2)
for r in $(seq 1 "$RUNS"); do
    for m in "${MODES[@]}"; do
        run_mode "$m" "$tmp/$m.$r" "$r"
    done
    echo "run $r/$RUNS done" >&2
done

"$PYTHON" - "$tmp" "$RUNS" <<'PY'
import statistics as st, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
modes = ["none", "off", "on", "off2", "on2"]
data = {m: {} for m in modes}
rec = {"on": [], "on2": []}
for m in modes:
    for r in range(1, runs + 1):
        for line in open(f"{tmp}/{m}.{r}"):
            k, v, *rest = line.split()
            if k == "record":
                rec[m].append(float(v))
            else:
                data[m].setdefault(k, []).append(float(v))
med = lambda xs: st.median(xs) if xs else float("nan")
print(f"ns per call from Python, median of {runs} runs (each: median over repetitions of the fastest batch)")
print(f"{'test':<10}" + "".join(f"{m:>9}" for m in modes) + f"{'on-off':>9}{'on2-off2':>10}{'off-none':>10}")
for t in data["none"]:
    v = {m: med(data[m][t]) for m in modes}
    print(f"{t:<10}" + "".join(f"{v[m]:9.1f}" for m in modes)
          + f"{v['on'] - v['off']:9.1f}{v['on2'] - v['off2']:10.1f}{v['off'] - v['none']:10.1f}")
print(f"record (site look-up timed at MPI_Init): depth 1 {med(rec['on']):.1f} ns, depth 2 {med(rec['on2']):.1f} ns")
PY
