#!/usr/bin/env bash
# mpi4py's own test suite under the preload, Python sites on: the interposer
# must be transparent to it (every test that passes without the tool passes
# with it), while it attributes the suite's MPI calls to Python lines.
#
#   bench/mpi4py_suite.sh [NP ...]        (default: 1 2)
#
# The suite is not in the installed package: the source distribution of the
# installed mpi4py version is downloaded once into target/mpi4py-sdist
# (`pip download --no-binary :all: mpi4py==VERSION`) and its test/runtests.py
# is run against the installed mpi4py, `mpirun -np NP python3 runtests.py`,
# with LD_PRELOAD=libmpiover.so. Per NP it prints the suite's own summary
# line of each rank ("Ran N tests", "OK (skipped=K)" or the failures), and
# from the records how many calls got a Python site.
#
# MPIOVER_LIB=path uses an existing libmpiover.so instead of building one;
# PYTHON=interpreter (default python3); MPIOVER_E2E_MPI=mpich runs under
# mpiexec.mpich (put an mpi4py built against MPICH on PYTHONPATH, e.g.
# target/mpi4py-mpich from scripts/setup --tests, and build the library with
# MPICC=mpicc.mpich). Extra runtests.py options: RUNTESTS_ARGS="...".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$root/scripts/env.sh"
PYTHON=${PYTHON:-python3}
NPS=("$@")
[ ${#NPS[@]} -gt 0 ] || NPS=(1 2)
target=${CARGO_TARGET_DIR:-$root/target}

LIB=${MPIOVER_LIB:-}
if [ -z "$LIB" ]; then
    (cd "$root" && cargo build --release -q -p mpiover-interpose >&2)
    LIB=$target/release/libmpiover.so
fi
[ -f "$LIB" ] || { echo "mpi4py_suite: $LIB not found" >&2; exit 2; }

ver=$("$PYTHON" -c 'import mpi4py; print(mpi4py.__version__)')
sdist=$target/mpi4py-sdist
tests=$sdist/mpi4py-$ver/test
if [ ! -f "$tests/runtests.py" ]; then
    mkdir -p "$sdist"
    "$PYTHON" -m pip download -q --no-binary :all: --no-deps "mpi4py==$ver" -d "$sdist"
    tar -xzf "$sdist/mpi4py-$ver.tar.gz" -C "$sdist"
fi

if [ "${MPIOVER_E2E_MPI:-openmpi}" = mpich ]; then
    launch() { local np=$1; shift; mpiexec.mpich -n "$np" -genv LD_PRELOAD "$LIB" \
        -genv MPIOVER_OUT "$run" -genv MPIOVER_QUIET 1 "$@"; }
else
    launch() { local np=$1; shift; mpirun -np "$np" -x LD_PRELOAD="$LIB" \
        -x MPIOVER_OUT="$run" -x MPIOVER_QUIET=1 "$@"; }
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
echo "mpi4py $ver test suite under $LIB ($("$PYTHON" -c 'import sys; print(sys.version.split()[0])'), ${MPIOVER_E2E_MPI:-openmpi})"
for np in "${NPS[@]}"; do
    run=$tmp/run-$np
    log=$tmp/log-$np
    t0=$(date +%s)
    # Run from the test directory (the suite imports its helpers from there).
    if (cd "$tests" && launch "$np" "$PYTHON" runtests.py ${RUNTESTS_ARGS:-}) >"$log" 2>&1; then
        rc=0
    else
        rc=$?
    fi
    t1=$(date +%s)
    echo "--- np=$np: exit $rc after $((t1 - t0)) s"
    grep -E '^(Ran [0-9]+ tests|OK|FAILED)' "$log" | sort | uniq -c || true
    "$PYTHON" - "$run" <<'EOF' || true
import glob, json, sys
calls = py = fb = 0
recs = sorted(glob.glob(sys.argv[1] + "/rank-*.json"))
for f in recs:
    t = json.load(open(f))["tool"]
    calls += t["calls"]
    p = t.get("python") or {}
    py += p.get("calls", 0)
    fb += p.get("fallbacks", 0)
print(f"records: {len(recs)}; wrapped calls {calls}, at Python sites {py}, fallbacks {fb}")
EOF
    if [ "$rc" != 0 ]; then
        status=1
        echo "--- np=$np: last lines of the log"
        tail -40 "$log"
    fi
done
exit $status
