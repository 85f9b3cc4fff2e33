#!/usr/bin/env bash
# Whether two builds of libmpiover.so write the same records for the same
# programs (a change of the hot path must not change what is recorded):
#
#   bench/same_records.sh OLD_LIB [NEW_LIB]      (NEW_LIB: this checkout's build)
#
# Both run under bench/fake_clock.c with MPIOVER_TIMER=clock: libmpiover's
# own clock reads step through a fixed sequence, so every duration, and so
# every histogram bucket and region, depends only on the sequence of calls.
# Programs:
#
# - bench/wrapper_instructions.c, each of its five tests (1 rank,
#   MPI_COMM_SELF: the same calls in the same order in every run). Compared
#   whole, bucket by bucket, except what differs between any two runs (run
#   id, pid, wall-clock times, the sites' absolute addresses) and the tool's
#   measured cost per call (`tool.cost_per_call_s`, read from the real clock
#   at init).
# - examples/pingpong.c on 2 ranks (blocking calls only: each rank makes
#   the same calls in the same order in every run): compared whole too.
# - examples/datatypes.c on 4 ranks (derived datatypes, MPI_IN_PLACE,
#   MPI_ANY_SOURCE, sub-communicators): which message an MPI_ANY_SOURCE
#   receive gets depends on timing, and with it which key a duration goes
#   to, so its records are compared without the durations: keys, sites,
#   counts, peers, bytes, regions' ends and passes, per-function calls.
# - examples/nonblocking/requests.c on 2 ranks (every completion call, the
#   request map with MPI_PROC_NULL, null, persistent, cancelled requests):
#   it polls (MPI_Test until a message arrives), so even the counts depend
#   on timing; compared as the set of keys, with their sites, peers, bytes,
#   completions and request counts, and the set of regions' ends.
#
# Prints one line per program and rank, "same" or the first differences;
# exits 1 when any differs.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
OLD=${1:?usage: same_records.sh OLD_LIB [NEW_LIB]}
NEW=${2:-}
if [ -z "$NEW" ]; then
    (cd "$root" && cargo build --release -q -p mpiover-interpose >&2)
    NEW=${CARGO_TARGET_DIR:-$root/target}/release/libmpiover.so
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$OLD" "$tmp/libmpiover-old.so"
cp "$NEW" "$tmp/libmpiover-new.so"
cc -O2 -fPIC -shared -o "$tmp/fake_clock.so" "$here/fake_clock.c" -ldl
mpicc -O2 -o "$tmp/wi" "$here/wrapper_instructions.c"
for p in pingpong datatypes nonblocking/requests; do
    mpicc -g -O2 -I "$root/examples" -o "$tmp/$(basename "$p")" "$root/examples/$p.c"
done
if [ "$(id -u)" = 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 MPIOVER_TIMER=clock MPIOVER_QUIET=1

run() { # build np out program args...
    local lib=$tmp/libmpiover-$1.so np=$2 out=$3
    shift 3
    MPIOVER_OUT=$out mpirun -np "$np" -x LD_PRELOAD="$tmp/fake_clock.so:$lib" -x MPIOVER_OUT \
        -x MPIOVER_TIMER -x MPIOVER_QUIET "$@" >/dev/null
}

compare() { # mode old_dir new_dir name
    python3 - "$@" <<'EOF'
import json, sys, glob, os
mode, old, new, name = sys.argv[1:5]
ENVELOPE = {"run_id", "pid", "start_unix_s", "end_unix_s", "app_time_s"}
TIMES = {"sum_s", "min_s", "max_s", "hist", "overhead_s", "time_s", "mpi_time_s"}
if mode == "set":
    TIMES |= {"count", "calls", "folded", "warnings"}

def clean(r):
    r = {k: v for k, v in r.items() if k not in ENVELOPE}
    r.get("tool", {}).pop("cost_per_call_s", None)
    for s in r.get("sites", []):
        s.pop("address", None)
    if mode == "whole":
        return r
    # Without the durations: sites by what they are, entries and regions
    # as sorted lists of their other fields.
    r.pop("timer", None)
    sites = {s["id"]: json.dumps({k: v for k, v in s.items() if k != "id"}, sort_keys=True)
             for s in r.pop("sites", [])}
    def site(v):
        return sites.get(v, v) if isinstance(v, int) else v
    def strip(d):
        if isinstance(d, dict):
            return {k: (site(v) if k in ("site", "post_site", "completed_at") else strip(v))
                    for k, v in d.items() if k not in TIMES}
        if isinstance(d, list):
            return [strip(x) for x in d]
        return d
    r = strip(r)
    for k in ("entries", "regions", "functions"):
        if k in r:
            r[k] = sorted(set(json.dumps(x, sort_keys=True) for x in r[k]))
    return r

def diff(a, b, path=""):
    if type(a) != type(b):
        return [f"{path}: {a!r} != {b!r}"]
    if isinstance(a, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += diff(a.get(k), b.get(k), f"{path}.{k}")
        return out
    if isinstance(a, list):
        if len(a) != len(b):
            only = [f"only old: {x}" for x in a if x not in b] + [f"only new: {x}" for x in b if x not in a]
            return [f"{path}: {len(a)} items != {len(b)}"] + only[:4]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]

bad = 0
files = sorted(glob.glob(os.path.join(old, "rank-*.json")))
if not files:
    print(f"{name}: no records"); sys.exit(1)
for f in files:
    g = os.path.join(new, os.path.basename(f))
    if not os.path.exists(g):
        print(f"{name} {os.path.basename(f)}: missing in the new build's run"); bad = 1; continue
    a, b = json.load(open(f)), json.load(open(g))
    d = diff(clean(a), clean(b))
    n = sum(e.get("count", 0) for e in a.get("entries", []))
    nb = sum(len(e.get("hist", [])) for e in a.get("entries", []))
    what = f"{len(a.get('entries', []))} keys, {n} calls, {nb} histogram buckets, {len(a.get('regions', []))} regions"
    if d:
        bad = 1
        print(f"{name} {os.path.basename(f)} ({what}): {len(d)} differences: " + "; ".join(d[:5]))
    else:
        print(f"{name} {os.path.basename(f)} ({what}): same ({mode})")
sys.exit(bad)
EOF
}

status=0
for t in iprobe allreduce sendrecv requests test; do
    for b in old new; do run "$b" 1 "$tmp/$t-$b" "$tmp/wi" "$t" 500 1; done
    compare whole "$tmp/$t-old" "$tmp/$t-new" "wrapper_instructions $t" || status=1
done
for b in old new; do run "$b" 2 "$tmp/pingpong-$b" "$tmp/pingpong" 300; done
compare whole "$tmp/pingpong-old" "$tmp/pingpong-new" "pingpong (2 ranks)" || status=1
for b in old new; do run "$b" 4 "$tmp/datatypes-$b" "$tmp/datatypes"; done
compare keys "$tmp/datatypes-old" "$tmp/datatypes-new" "datatypes (4 ranks)" || status=1
for b in old new; do run "$b" 2 "$tmp/requests-$b" "$tmp/requests" 3; done
compare set "$tmp/requests-old" "$tmp/requests-new" "nonblocking/requests (2 ranks)" || status=1
exit $status
