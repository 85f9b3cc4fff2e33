"""For bench/mpich_suite.sh: the report over the results of every MPI of MPIS
(WORK/results-MPI.json, written by mpich_suite_run.py).

usage: MPIS="openmpi mpich" WORK=dir python3 mpich_suite_report.py
prints: counts per MPI and directory, the differing tests (reproducible, then
transient) with the first lines of both outputs, the tests failing both ways,
the tests not built, and the warnings of the preload's records.
exit status: 1 when a difference is reproducible, else 0.
"""
import collections, json, os, sys
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
sys.exit(1 if nrep else 0)
