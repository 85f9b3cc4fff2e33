"""For bench/mpich_suite.sh: lists, runs and compares the tests of one MPI
(each test without and then with the preload) and writes WORK/results-MPI.json.

usage: MPI=openmpi|mpich LIB=libmpiover.so BUILD=dir SRC=dir DIRS_BUILT="pt2pt ..."
       TIMEOUT=s MAXNP=n RERUNS=n DTP=0|1 MATCH=regex WORK=dir python3 mpich_suite_run.py
       (KEEP_RECORDS=1 keeps each run's records); the script sets these.
prints: per directory the tests run and how many passed both ways, and each test
whose result differs or that did not build.
"""
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
