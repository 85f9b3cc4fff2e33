"""The instructions of libmpiover's tested wrappers in one callgrind run, by
step of the hot path, for bench/wrapper_instructions.sh.

usage: python3 wrapper_steps.py CALLGRIND_OUT LIB FUNCTION...
prints one line: "own N called N" and then "STEP N" for every step of STEPS

The run must have been made with `--dump-instr=yes`: callgrind then gives
the self cost of every instruction address. `own` is the self cost of the
named functions in LIB (the wrappers, with everything inlined into them);
`called` what their calls into anything but the MPI library cost (the
loader's thread-local look-up, an out-of-line helper of libmpiover): the
cost of such a call's whole subtree.

A step is found from the address alone: `addr2line -i` gives the chain of
functions inlined at that address (innermost first, each with the source
file of its own code), and the innermost frame in a file of this repository
names the step by its file (STEPS). Frames of the standard library (a
`min`, an atomic load, `Option::map`) count for the repository's code that
used them. So the split costs nothing at run time: the steps are ordinary
functions, inlined as before, each in the source file of its step; a change
that moves code between files moves it between steps.
"""
import os
import subprocess
import sys

# Step -> the repository's source files whose code it is. Everything else
# (the generated wrapper's own lines, the event's fields and key, the
# argument facts) is "rest".
STEPS = [
    ("clock", ["common/src/timer.rs", "interpose/src/rt/clock.rs"]),
    ("enter", ["interpose/src/rt/guard.rs"]),
    ("site", ["interpose/src/rt/site.rs", "interpose/src/site_ref.rs"]),
    ("key", ["interpose/src/rt/table.rs", "interpose/src/rt/call_key.rs"]),
    ("hist", ["interpose/src/rt/buckets.rs", "common/src/histogram.rs"]),
    ("regions", ["interpose/src/rt/regions.rs"]),
    ("requests", ["interpose/src/rt/requests.rs", "interpose/src/rt/completion.rs"]),
    ("args", ["interpose/src/rt/arguments.rs", "interpose/src/rt/comms.rs",
              "interpose/src/rt/type_sizes.rs", "interpose/src/rt/event.rs",
              "mpisys/src/lib.rs"]),
]
NAMES = [s for s, _ in STEPS] + ["rest"]
# Frames of the standard library and of other crates (paths as the build
# recorded them: a library built in another checkout is read the same way).
FOREIGN = ("/rustc/", "/.cargo/registry/", "/.cargo/git/")


def parse(path, lib, funcs):
    """(costs by address of the tested functions in `lib`, cost of their
    calls outside the MPI library)."""
    names = {"fn": {}, "ob": {}}
    costs = {}
    called = 0
    ob = fn = cfn = None
    mine = False
    in_call = False
    addr = 0

    def name(kind, v):
        # "(id) name" defines a compressed name, "(id)" reuses it.
        v = v.strip()
        if v.startswith("("):
            i, _, rest = v.partition(")")
            rest = rest.strip()
            if rest:
                names[kind][i] = rest
            return names[kind].get(i, "")
        return v

    def position(tok):
        nonlocal addr
        if tok.startswith("0x"):
            addr = int(tok, 16)
        elif tok[0] in "+-":
            addr += int(tok)
        # "*": the same address.
        return addr

    with open(path) as f:
        for line in f:
            c = line[0]
            if c in "0123456789+-*":
                parts = line.split()
                a = position(parts[0])
                cost = int(parts[2]) if len(parts) > 2 else 0
                if in_call:
                    in_call = False
                    if mine and not cfn.startswith("PMPI_"):
                        called += cost
                elif mine:
                    costs[a] = costs.get(a, 0) + cost
                continue
            key, _, val = line.partition("=")
            if key == "ob":
                ob = name("ob", val)
            elif key == "cob":
                name("ob", val)
            elif key == "fn":
                fn = name("fn", val)
                mine = fn in funcs and os.path.basename(ob or "") == os.path.basename(lib)
            elif key == "cfn":
                cfn = name("fn", val)
            elif key == "calls":
                in_call = True
    return costs, called


def steps_of(lib, addrs):
    """Step of each address (see the module's docs)."""
    if not addrs:
        return {}
    text = "\n".join(hex(a) for a in addrs) + "\n"
    # A sentinel after each address marks where its chain ends.
    out = subprocess.run(
        ["addr2line", "-i", "-f", "-a", "-e", lib],
        input=text, capture_output=True, text=True, check=True,
    ).stdout.splitlines()
    result, cur, chain = {}, None, []

    def close():
        if cur is None:
            return
        step, where = "rest", "?"
        for loc in chain:
            p = loc.rsplit(":", 1)[0]
            if p.startswith("??") or any(f in p for f in FOREIGN):
                continue
            step = next((s for s, fs in STEPS if any(p.endswith("/" + f) for f in fs)), "rest")
            where = os.path.basename(p) + ":" + loc.rsplit(":", 1)[1]
            break
        result[cur] = (step, where)

    i = 0
    while i < len(out):
        ln = out[i]
        if ln.startswith("0x"):
            close()
            cur, chain = int(ln, 16), []
            i += 1
            continue
        # function, then file:line
        if i + 1 < len(out):
            chain.append(out[i + 1])
        i += 2
    close()
    return result


def main():
    path, lib, funcs = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    costs, called = parse(path, lib, funcs)
    step = steps_of(lib, sorted(costs))
    total = {s: 0 for s in NAMES}
    lines = {}
    for a, c in costs.items():
        s, where = step.get(a, ("rest", "?"))
        total[s] += c
        lines[(s, where)] = lines.get((s, where), 0) + c
    # WRAPPER_STEPS_LINES=1: the source lines too (on stderr), to see what a
    # step is made of.
    if os.environ.get("WRAPPER_STEPS_LINES"):
        for (s, where), c in sorted(lines.items()):
            print(f"{s:9} {where:28} {c}", file=sys.stderr)
    print("own", sum(costs.values()), "called", called,
          " ".join(f"{s} {total[s]}" for s in NAMES))


if __name__ == "__main__":
    main()
