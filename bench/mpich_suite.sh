#!/usr/bin/env bash
# MPICH's own MPI test suite (test/mpi) without and with the preload, under Open MPI
# and under MPICH: the interposer must not change what a program does, so every test
# must give the same result both ways. Exits 1 when a test's result differs
# reproducibly.
#
#   bench/mpich_suite.sh [TEST_MPI_DIR]        (or MPICH_TESTS=TEST_MPI_DIR)
#
# TEST_MPI_DIR is the directory test/mpi of MPICH's source, not downloaded here:
# - from a source release (https://www.mpich.org/downloads, mpich-VERSION.tar.gz,
#   directory mpich-VERSION/test/mpi; its configure is already generated), or
# - from a git checkout of MPICH at a release tag (v4.0.2 matches Debian 12's MPICH);
#   the script then does what MPICH's autogen.sh does for the test suite, in a copy
#   under WORK: the checkout's confdb/ into test/mpi/confdb and dtpools/confdb,
#   maint/version.m4, include/mtest_mpix.h from src/binding/mpix.txt, test/mpi's
#   autogen.sh (the f90 tests are made from the f77 ones), `autoreconf -if`. Only
#   test/mpi, confdb, maint/version.m4 and src/binding/mpix.txt are needed, e.g.
#     git -C MPICH_GIT archive v4.0.2 test/mpi confdb maint/version.m4 \
#         src/binding/mpix.txt | tar -x -C DIR        # then: DIR/test/mpi
#   This needs autoconf, automake and libtool (apt-get install autoconf automake
#   libtool).
#
# Per MPI the suite is configured once into WORK/build-MPI (options in configure_opts
# below: no spawn, I/O, C++, perf, FT, checkpoint or collective-algorithm tests;
# threads at MPI_THREAD_MULTIPLE; Fortran 77 and 90; Open MPI as a strict MPI, which
# leaves out MPICH's extensions and runs the tests MPICH expects to fail), then each
# directory of DIRS is built (`make -k -j JOBS`; a directory or program that does not
# build is reported and the rest goes on). Every test of the directories' testlist and
# testlist.dtp files (recursively, as MPICH's runtests reads them: name, ranks,
# arg=, env=, mpiexecarg=, timeLimit=, resultTest=, strict=, xfail=, mem=) is run
# without and then with LD_PRELOAD=libmpiover.so (MPIOVER_OUT, MPIOVER_QUIET=1), one
# run at a time, each under a time limit (the test's timeLimit, at most TIMEOUT s; the
# process tree is killed after it). A run passes as in runtests: exit status 0 and a
# line " No Errors" (resultTest=TestStatus, TestErrFatal: a non-zero exit status;
# TestStatusNoErrors: both). A test whose result differs between the two runs is run
# RERUNS more times each way; the difference is reproducible when every run without
# gives one result and every run with another, else transient. Tests failing or timing
# out both ways are listed apart, with the first lines of both outputs.
#
# Prints, per MPI and directory: tests run, pass both ways, fail both ways,
# differences (transient, reproducible), not built, skipped; the differing tests with
# the first lines of both outputs; the tests failing both ways; then, from the
# records (`warnings` of every rank-NNNNNN.json of each test's first run with the
# preload), the records written against the ranks started, those carrying a warning,
# and the warnings grouped by text with the tests that raised them. Runs' outputs and
# results stay in WORK/runs-MPI and WORK/results-MPI.json.
#
# Settings (environment):
#   MPIS="openmpi mpich"        MPIs to test (openmpi: mpicc/mpirun; mpich:
#                               mpicc.mpich/mpiexec.mpich)
#   DIRS="pt2pt coll ..."       directories of test/mpi (default below)
#   TIMEOUT=120                 seconds per run at most (tests' own timeLimit if lower)
#   MAXNP=16                    tests asking for more ranks are skipped (listed);
#                               up to MAXNP the ranks are oversubscribed
#   RERUNS=2                    extra runs each way of a test whose result differed
#   DTP=0                       1: also the testlist.dtp files (274 generated datatype
#                               tests in the default directories, most in rma and
#                               pt2pt; about 10 s each here: hours on 2 cores)
#   MATCH=regex                 only the tests whose "dir/name np args" matches
#   JOBS=2                      make -j
#   MPIOVER_LIB_OPENMPI=path, MPIOVER_LIB_MPICH=path
#                               existing libmpiover.so built for that MPI (default:
#                               built here, target/release resp. target/mpich/release
#                               with MPICC=mpicc.mpich)
#   WORK=dir                    build trees and outputs (default
#                               ~/.cache/mpiover-mpich-suite; outside the repository)
#   KEEP_RECORDS=1              keep every run's records under WORK/runs-MPI
#   REPORT_ONLY=1               no build or run: the report over WORK/results-MPI.json
#                               of MPIS (e.g. after running the MPIs one at a time;
#                               the file is rewritten after every test, so a pass
#                               that was cut short reports what it ran)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
. "$root/scripts/env.sh"

TESTS=${1:-${MPICH_TESTS:-}}
[ -n "$TESTS" ] && [ -d "$TESTS" ] || {
    echo "mpich_suite: give MPICH's test/mpi directory as argument or MPICH_TESTS (see the header)" >&2
    exit 2
}
TESTS=$(cd "$TESTS" && pwd)
MPIS=${MPIS:-openmpi mpich}
DIRS=${DIRS:-pt2pt coll comm group datatype init attr info errhan topo rma threads f90}
TIMEOUT=${TIMEOUT:-120}
MAXNP=${MAXNP:-16}
RERUNS=${RERUNS:-2}
DTP=${DTP:-0}
MATCH=${MATCH:-}
JOBS=${JOBS:-2}
WORK=${WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/mpiover-mpich-suite}
PYTHON=${PYTHON:-python3}
target=${CARGO_TARGET_DIR:-$root/target}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
case "$WORK/" in "$root"/*)
    echo "mpich_suite: WORK=$WORK is inside the repository; choose a directory outside it" >&2
    exit 2 ;;
esac

# --- the test suite's sources, configure generated -------------------------------------
if [ -x "$TESTS/configure" ] && [ -f "$TESTS/include/mtest_mpix.h" ]; then
    SRC=$TESTS
else
    top=$(cd "$TESTS/../.." && pwd)
    for f in confdb/aclocal_cc.m4 maint/version.m4 src/binding/mpix.txt; do
        [ -f "$top/$f" ] || {
            echo "mpich_suite: $TESTS has no configure and $top/$f is missing (see the header)" >&2
            exit 2
        }
    done
    SRC=$WORK/src
    if [ "$(cat "$SRC/.mpiover-prepared" 2>/dev/null)" != "$TESTS" ]; then
        echo "preparing $TESTS (MPICH's autogen steps for test/mpi) in $SRC"
        rm -rf "$SRC"
        cp -a "$TESTS" "$SRC"
        rm -rf "$SRC/confdb" "$SRC/dtpools/confdb"
        cp -a "$top/confdb" "$SRC/confdb"
        cp -a "$top/confdb" "$SRC/dtpools/confdb"
        cp -p "$top/maint/version.m4" "$SRC/version.m4"
        {
            echo "#ifndef MTEST_MPIX_H_INCLUDED"
            echo "#define MTEST_MPIX_H_INCLUDED"
            sed -n 's/^\(MPI_\([A-Za-z0-9_]*\)\).*/#define \1 MPIX_\2/p' "$top/src/binding/mpix.txt"
            echo "#endif"
        } >"$SRC/include/mtest_mpix.h"
        (cd "$SRC" && ./autogen.sh && autoreconf -if) >"$WORK/autogen.log" 2>&1 || {
            echo "mpich_suite: autogen failed, see $WORK/autogen.log" >&2
            exit 2
        }
        echo "$TESTS" >"$SRC/.mpiover-prepared"
    fi
fi

# --- per MPI: compilers, launcher, configure options, library ----------------------------
common_opts=(--enable-threads=multiple --enable-fortran=f77,f90 --disable-cxx
             --disable-spawn --disable-romio --disable-perftest --disable-ft-tests
             --disable-checkpointing --disable-collalgo-tests
             FFLAGS=-fallow-argument-mismatch FCFLAGS=-fallow-argument-mismatch)
configure_opts() {
    case $1 in
        # Open MPI 4 hides the prototypes of the functions removed in MPI-3 (dtpools and
        # a few tests use them; libmpi still has them).
        openmpi) echo MPICC=mpicc MPICXX=mpicxx MPIF77=mpif77 MPIFC=mpif90 \
                      CPPFLAGS=-DOMPI_OMIT_MPI1_COMPAT_DECLS=0 --enable-strictmpi "${common_opts[@]}" ;;
        mpich) echo MPICC=mpicc.mpich MPICXX=mpicxx.mpich MPIF77=mpif77.mpich \
                    MPIFC=mpif90.mpich "${common_opts[@]}" ;;
    esac
}
library() {
    local mpi=$1 lib
    case $mpi in
        openmpi) lib=${MPIOVER_LIB_OPENMPI:-}
                 if [ -z "$lib" ]; then
                     (cd "$root" && cargo build --release -q -p mpiover-interpose >&2)
                     lib=$target/release/libmpiover.so
                 fi ;;
        mpich) lib=${MPIOVER_LIB_MPICH:-}
               if [ -z "$lib" ]; then
                   (cd "$root" && MPICC=mpicc.mpich CARGO_TARGET_DIR=$target/mpich \
                       cargo build --release -q -p mpiover-interpose >&2)
                   lib=$target/mpich/release/libmpiover.so
               fi ;;
    esac
    [ -f "$lib" ] || { echo "mpich_suite: $lib not found" >&2; exit 2; }
    readlink -f "$lib"
}

status=0
t_start=$(date +%s)
echo "MPICH test suite $(sed -n 's/^m4_define(\[MPICH_VERSION_m4\],\[\(.*\)\])dnl/\1/p' "$SRC/version.m4" 2>/dev/null) from $TESTS"
echo "MPIs: $MPIS; directories: $DIRS; timeout ${TIMEOUT} s; at most $MAXNP ranks; reruns $RERUNS; dtp $DTP${MATCH:+; tests matching $MATCH}"
echo "machine: $(nproc) cores, $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg); work in $WORK"
for mpi in $MPIS; do
    [ "${REPORT_ONLY:-0}" != 1 ] || break
    case $mpi in openmpi|mpich) ;; *) echo "mpich_suite: unknown MPI $mpi (openmpi, mpich)" >&2; exit 2 ;; esac
    lib=$(library "$mpi")
    b=$WORK/build-$mpi
    opts=$(configure_opts "$mpi")
    echo
    echo "=== $mpi: $(case $mpi in openmpi) mpirun --version | head -1 ;; mpich) mpichversion 2>/dev/null | head -1 | tr -s '\t ' ' ' ;; esac); preload $lib"
    if [ "$(cat "$b/.mpiover-configure" 2>/dev/null)" != "$SRC $opts" ] || [ ! -f "$b/config.status" ]; then
        echo "configure: $opts"
        rm -rf "$b"
        mkdir -p "$b"
        # shellcheck disable=SC2086 # the options are words without blanks
        if ! (cd "$b" && "$SRC/configure" $opts) >"$b/configure.log" 2>&1; then
            echo "configure failed for $mpi (see $b/configure.log): not tested"
            tail -3 "$b/configure.log"
            status=2
            continue
        fi
        echo "$SRC $opts" >"$b/.mpiover-configure"
    fi
    built=""
    for d in $DIRS; do
        if [ ! -f "$b/$d/Makefile" ]; then
            echo "build $d: not configured for $mpi (no $d/Makefile), left out"
            continue
        fi
        t0=$(date +%s)
        if make -k -j"$JOBS" -C "$b/$d" >"$b/make-${d//\//_}.log" 2>&1; then
            echo "build $d: ok ($(( $(date +%s) - t0 )) s)"
        else
            echo "build $d: make failed ($(( $(date +%s) - t0 )) s; programs that did not build are listed as not built; $b/make-${d//\//_}.log):"
            grep -oE "undefined reference to \`[A-Za-z0-9_]+'|error: .*" "$b/make-${d//\//_}.log" \
                | sort | uniq -c | sort -rn | head -8 | sed 's/^ */    /' || true
        fi
        built="$built $d"
    done
    [ -n "$built" ] || continue
    MPI=$mpi LIB=$lib BUILD=$b SRC=$SRC DIRS_BUILT=$built TIMEOUT=$TIMEOUT MAXNP=$MAXNP \
        RERUNS=$RERUNS DTP=$DTP MATCH=$MATCH WORK=$WORK "$PYTHON" - <<'EOF' || status=$?
# Lists, runs and compares the tests of one MPI; writes WORK/results-MPI.json.
import json, os, re, shlex, shutil, signal, subprocess, sys, time

E = os.environ
mpi, lib, build, src = E["MPI"], E["LIB"], E["BUILD"], E["SRC"]
timeout_max, maxnp, reruns = int(E["TIMEOUT"]), int(E["MAXNP"]), int(E["RERUNS"])
match = re.compile(E["MATCH"]) if E.get("MATCH") else None
strict = mpi == "openmpi"          # configured with --enable-strictmpi
listfiles = ["testlist"] + (["testlist.dtp"] if E["DTP"] == "1" else [])
mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
runs_dir = os.path.join(E["WORK"], "runs-" + mpi)
shutil.rmtree(runs_dir, ignore_errors=True)
os.makedirs(runs_dir)
log = open(os.path.join(runs_dir, "runs.log"), "w")

def collect(reldir, tests, skipped):
    """The tests of reldir's list files, as MPICH's runtests reads them."""
    for lf in listfiles:
        path = os.path.join(build, reldir, lf)
        if not (os.path.isfile(path) and os.path.getsize(path) > 0):
            path = os.path.join(src, reldir, lf)
        if not os.path.isfile(path):
            continue
        for line in open(path):
            line = re.sub(r"#.*", "", line).strip()
            if not line:
                continue
            m = re.match(r"!([^:]*):(.*)", line)
            if m:   # a support target to build first
                subprocess.run(["make", m.group(2)], cwd=os.path.join(build, reldir, m.group(1)),
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                continue
            tok = line.split()
            name = tok[0]
            if os.path.isdir(os.path.join(build, reldir, name)):
                collect(os.path.join(reldir, name), tests, skipped)
                continue
            np = int(tok[1]) if len(tok) > 1 else 2
            t = {"dir": reldir, "name": name, "np": np, "args": [], "env": [], "mpiexecargs": [],
                 "timeLimit": None, "resultTest": None, "xfail": None, "mem": None, "strict": None}
            for kv in tok[2:]:
                if "=" not in kv:
                    continue
                k, v = kv.split("=", 1)
                if k == "arg": t["args"].append(v)
                elif k == "env": t["env"].append(v)
                elif k == "mpiexecarg": t["mpiexecargs"].append(v)
                elif k in ("timeLimit", "resultTest", "xfail", "mem", "strict"): t[k] = v
            t["key"] = " ".join([os.path.join(reldir, name), str(np)] + [kv for kv in tok[2:] if "=" in kv])
            if match and not match.search(t["key"]):
                continue
            if (t["strict"] or "").lower() == "false" and strict:
                skipped.append((t, "uses MPICH extensions (strict=false), strict MPI build"))
            elif t["xfail"] and not strict:
                skipped.append((t, "marked as expected to fail in MPICH (xfail)"))
            elif t["mem"] and float(t["mem"]) > mem_gb:
                skipped.append((t, "needs %s GB" % t["mem"]))
            elif np > maxnp:
                skipped.append((t, "needs %d ranks > MAXNP=%d" % (np, maxnp)))
            else:
                tests.append(t)

MARK = "MPIOVER_SUITE_RUN"

def run_pids(tag, launcher_pid):
    """The processes of one run: the launcher and every process whose environment
    holds the run's mark (the launchers' daemons and the ranks, which hydra and
    mpirun may put in sessions of their own)."""
    want = ("%s=%s" % (MARK, tag)).encode() + b"\0"
    pids = []
    for p in os.listdir("/proc"):
        if p.isdigit() and int(p) != os.getpid():
            try:
                with open("/proc/%s/environ" % p, "rb") as f:
                    if want in f.read() or int(p) == launcher_pid:
                        pids.append(int(p))
            except OSError:
                pass
    return pids

def kill_run(tag, launcher_pid, grace):
    """Ends every process of the run: SIGTERM, then SIGKILL after grace seconds."""
    left = run_pids(tag, launcher_pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in left:
            try: os.kill(p, sig)
            except OSError: pass
        end = time.time() + grace
        while time.time() < end:
            left = [p for p in run_pids(tag, launcher_pid) if p != launcher_pid]
            if not left: return
            time.sleep(0.1)

def launcher(np, out):
    if mpi == "openmpi":
        cmd = ["mpirun", "-np", str(np)]
        if out: cmd += ["-x", "LD_PRELOAD=" + lib, "-x", "MPIOVER_OUT=" + out, "-x", "MPIOVER_QUIET=1"]
    else:
        cmd = ["mpiexec.mpich", "-n", str(np)]
        if out: cmd += ["-genv", "LD_PRELOAD", lib, "-genv", "MPIOVER_OUT", out, "-genv", "MPIOVER_QUIET", "1"]
    return cmd

NOERR = re.compile(r"^\s*No [Ee]rrors\s*$")
counter = [0]

def run(t, preload):
    """One run: its result (pass, fail, timeout), exit status, time, output, records."""
    counter[0] += 1
    tag = "%05d-%s" % (counter[0], "with" if preload else "without")
    outfile = os.path.join(runs_dir, tag + ".out")
    recdir = os.path.join(runs_dir, tag + ".records") if preload else None
    if recdir: os.makedirs(recdir)
    limit = timeout_max
    if t["timeLimit"] and t["timeLimit"].isdigit():
        limit = min(limit, int(t["timeLimit"]))
    env = dict(os.environ)
    for kv in t["env"]:
        k, _, v = kv.partition("=")
        env[k] = v
    env["MPIEXEC_TIMEOUT"] = str(limit)      # as runtests: the launcher's own limit
    env[MARK] = "%d-%d" % (os.getpid(), counter[0])   # finds the run's processes
    cwd = os.path.join(build, t["dir"], os.path.dirname(t["name"]))
    cmd = (launcher(t["np"], recdir) + sum((shlex.split(a) for a in t["mpiexecargs"]), [])
           + ["./" + os.path.basename(t["name"])] + shlex.split(" ".join(t["args"])))
    t0 = time.time()
    killed = False
    with open(outfile, "w") as f:
        f.write("# " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=f, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = p.wait(timeout=limit + 15)
        except subprocess.TimeoutExpired:
            killed = True
            kill_run(env[MARK], p.pid, 5)
            rc = p.wait()
    secs = time.time() - t0
    left = [q for q in run_pids(env[MARK], -1)]
    if left:                         # ranks left behind by a failed run
        kill_run(env[MARK], -1, 5)
    text = open(outfile, errors="replace").read().split("\n", 1)[1]
    lines = text.splitlines()
    noerr = any(NOERR.match(l) for l in lines if "FORTRAN STOP" not in l)
    rt = t["resultTest"]
    if rt in ("TestStatus", "TestErrFatal"): ok = rc != 0
    elif rt == "TestStatusNoErrors": ok = rc != 0 and noerr
    else: ok = rc == 0 and noerr
    res = "pass" if ok else ("timeout" if killed or secs >= limit - 0.5 else "fail")
    r = {"result": res, "rc": rc, "secs": round(secs, 2), "out": outfile, "leftover": len(left),
         "first": [l[:200] for l in lines if l.strip()][:4],
         "mpiover_lines": [l[:200] for l in lines if "mpiover" in l.lower()][:4]}
    if recdir:
        recs = []
        for fn in sorted(os.listdir(recdir)):
            if fn.startswith("rank-") and fn.endswith(".json"):
                try:
                    d = json.load(open(os.path.join(recdir, fn)))
                    recs.append({"rank": d.get("rank"), "finished": d.get("finished"),
                                 "thread_level": d.get("thread_level"),
                                 "warnings": d.get("warnings") or []})
                except (OSError, ValueError) as e:
                    recs.append({"rank": fn, "finished": None, "thread_level": None,
                                 "warnings": ["(unreadable record: %s)" % e]})
        r["records"] = recs
        if E.get("KEEP_RECORDS") != "1":
            shutil.rmtree(recdir, ignore_errors=True)
    return r

tests, skipped = [], []
for d in E["DIRS_BUILT"].split():
    collect(d, tests, skipped)
seen = {}
for t in tests:                      # the same line twice: tell them apart
    n = seen.get(t["key"], 0) + 1
    seen[t["key"]] = n
    if n > 1: t["key"] += " (#%d)" % n
print("%d tests to run, %d skipped" % (len(tests), len(skipped)))
for t, why in skipped:
    print("  skipped %s: %s" % (t["key"], why))
sys.stdout.flush()

results = []
cur, t_dir = None, time.time()

def save(complete):
    """WORK/results-MPI.json, after every test: a pass cut short keeps what it
    ran (complete: false), for REPORT_ONLY=1."""
    path = os.path.join(E["WORK"], "results-%s.json" % mpi)
    with open(path + ".tmp", "w") as f:
        json.dump({"mpi": mpi, "lib": lib, "complete": complete, "planned": len(tests),
                   "results": [r for r in results if "class" in r],
                   "skipped": [{"key": t["key"], "top": t["dir"].split("/")[0], "why": w}
                               for t, w in skipped]}, f, indent=1)
    os.replace(path + ".tmp", path)
def dir_done():
    if cur is None: return
    rs = [r for r in results if r["top"] == cur]
    same = sum(1 for r in rs if r["class"] == "pass both")
    print("  %s: %d tests in %d s: %d pass both ways, %d otherwise" % (
        cur, len(rs), time.time() - t_dir, same, len(rs) - same))
    sys.stdout.flush()

for t in tests:
    top = t["dir"].split("/")[0]
    if top != cur:
        dir_done()
        cur, t_dir = top, time.time()
    exe = os.path.join(build, t["dir"], t["name"])
    rec = {"key": t["key"], "top": top, "np": t["np"], "resultTest": t["resultTest"],
           "without": [], "with": []}
    results.append(rec)
    if not os.access(exe, os.X_OK):
        rec["class"] = "not built"
        print("    not built: %s" % t["key"]); sys.stdout.flush()
        continue
    rec["without"].append(run(t, False))
    rec["with"].append(run(t, True))
    a, b = rec["without"][0]["result"], rec["with"][0]["result"]
    if a == b == "pass":
        rec["class"] = "pass both"
    elif a != "pass" and b != "pass":
        rec["class"] = "fail both"
    else:
        for _ in range(reruns):
            rec["without"].append(run(t, False))
            rec["with"].append(run(t, True))
        wo = {r["result"] == "pass" for r in rec["without"]}
        wi = {r["result"] == "pass" for r in rec["with"]}
        rec["class"] = "reproducible" if len(wo) == len(wi) == 1 and wo != wi else "transient"
    log.write("%s: %s: without %s, with %s\n" % (t["key"], rec["class"],
              " ".join("%s(%s, %.1fs)" % (r["result"], r["rc"], r["secs"]) for r in rec["without"]),
              " ".join("%s(%s, %.1fs)" % (r["result"], r["rc"], r["secs"]) for r in rec["with"])))
    log.flush()
    save(False)
    if rec["class"] != "pass both":
        print("    %s: %s (without: %s; with: %s)" % (t["key"], rec["class"],
              " ".join(r["result"] for r in rec["without"]), " ".join(r["result"] for r in rec["with"])))
        sys.stdout.flush()
dir_done()
save(True)
EOF
done

# --- the report over the MPIs of this run --------------------------------------------------
echo
MPIS=$MPIS WORK=$WORK "$PYTHON" - <<'EOF' || status=$?
import collections, json, os
E = os.environ
data = []
for mpi in E["MPIS"].split():
    f = os.path.join(E["WORK"], "results-%s.json" % mpi)
    if os.path.isfile(f): data.append(json.load(open(f)))
CLASSES = ["pass both", "fail both", "transient", "reproducible", "not built"]

def res(runs): return " ".join("%s(%s)" % (r["result"], r["rc"]) for r in runs)
def firsts(r):
    return " | ".join(r["first"][:2]) if r["first"] else "(no output)"

print("=== counts (tests run = pass both + fail both + differences; skipped not run)")
print("%-8s %-9s %5s %9s %9s %9s %12s %9s %7s" % ("MPI", "dir", "run", "pass both", "fail both",
      "transient", "reproducible", "not built", "skipped"))
for d in data:
    if not d.get("complete", True):
        print("%s: cut short: %d of %d tests ran" % (d["mpi"], len(d["results"]), d.get("planned", 0)))
for d in data:
    tops = []
    for r in d["results"] + d["skipped"]:
        if r["top"] not in tops: tops.append(r["top"])
    tot = collections.Counter()
    for top in tops + ["total"]:
        c = collections.Counter()
        if top == "total": c = tot
        else:
            for r in d["results"]:
                if r["top"] == top: c[r["class"]] += 1
            c["skipped"] = sum(1 for s in d["skipped"] if s["top"] == top)
            tot.update(c)
        ran = sum(c[k] for k in CLASSES[:4])
        print("%-8s %-9s %5d %9d %9d %9d %12d %9d %7d" % (d["mpi"], top, ran, c["pass both"],
              c["fail both"], c["transient"], c["reproducible"], c["not built"], c["skipped"]))

nrep = 0
for cls, title in (("reproducible", "reproducible differences"), ("transient", "transient differences")):
    print("\n=== %s" % title)
    n = 0
    for d in data:
        for r in d["results"]:
            if r["class"] != cls: continue
            n += 1
            print("%s %s: without %s; with %s" % (d["mpi"], r["key"], res(r["without"]), res(r["with"])))
            w0 = next((x for x in r["without"] if x["result"] != r["with"][0]["result"]), r["without"][0])
            print("    without: %s   [%s]" % (firsts(w0), w0["out"]))
            print("    with:    %s   [%s]" % (firsts(r["with"][0]), r["with"][0]["out"]))
    if cls == "reproducible": nrep = n
    if n == 0: print("none")

print("\n=== failing both ways (not counted as differences)")
n = 0
for d in data:
    for r in d["results"]:
        if r["class"] != "fail both": continue
        n += 1
        a, b = r["without"][0], r["with"][0]
        print("%s %s: without %s(%s, %.0f s), with %s(%s, %.0f s)" % (d["mpi"], r["key"], a["result"],
              a["rc"], a["secs"], b["result"], b["rc"], b["secs"]))
        print("    without: %s" % firsts(a))
        if b["first"][:2] != a["first"][:2]: print("    with:    %s" % firsts(b))
if n == 0: print("none")
nb = [(d["mpi"], r["key"]) for d in data for r in d["results"] if r["class"] == "not built"]
if nb:
    print("\n=== not built (%d)" % len(nb))
    for m, k in nb: print("%s %s" % (m, k))

print("\n=== the preload's records (first run with the preload of every test)")
for d in data:
    runs = [(r, r["with"][0]) for r in d["results"] if r["with"]]
    ranks = sum(r["np"] for r, _ in runs)
    recs = [(r, x) for r, w in runs for x in w.get("records", [])]
    warned = [(r, x) for r, x in recs if x["warnings"]]
    short = [(r, w) for r, w in runs if w["result"] == "pass" and not r.get("resultTest")
             and len(w.get("records", [])) < r["np"]]
    fin = collections.Counter(x["finished"] for _, x in recs)
    tl = collections.Counter(x["thread_level"] for _, x in recs)
    print("%s: %d runs with the preload, %d ranks started, %d records (finished: %s; thread level: %s), "
          "%d records with a warning, from %d tests" % (d["mpi"], len(runs), ranks, len(recs),
          ", ".join("%s %d" % kv for kv in fin.most_common()), ", ".join("%s %d" % kv for kv in tl.most_common()),
          len(warned), len({r["key"] for r, _ in warned})))
    if short:
        print("  passing runs with fewer records than ranks: %d: %s" % (len(short),
              "; ".join("%s (%d of %d)" % (r["key"], len(w.get("records", [])), r["np"]) for r, w in short[:20])))
    said = [(r, w) for r, w in runs if w.get("mpiover_lines")]
    if said:
        print("  outputs with a line naming mpiover (MPIOVER_QUIET=1): %d tests: %s" % (len(said),
              "; ".join("%s: %s" % (r["key"], w["mpiover_lines"][0]) for r, w in said[:10])))
    groups = collections.defaultdict(list)
    for r, x in recs:
        for w in set(x["warnings"]): groups[w].append(r["key"])
    for w, keys in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        tests = list(dict.fromkeys(keys))
        print("  [%d records, %d tests] %s" % (len(keys), len(tests), w))
        full = w.startswith("unmatched completions") or len(tests) <= 30
        for k in (tests if full else tests[:30]):
            print("      %s (%d records)" % (k, keys.count(k)))
        if not full: print("      ... and %d more tests" % (len(tests) - 30))
exit(1 if nrep else 0)
EOF
echo
echo "total wall time $(( $(date +%s) - t_start )) s"
exit $status
