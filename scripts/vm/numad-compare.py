#!/usr/bin/env python3
"""The real numad against numabal's, live and simulated (issue 17, item 7).

Reads the output of scripts/vm/numad-real.sh (default target/vm/logs/numad-real.out): for
each workload, the processes' bindings at the end and the decisions ("Advising pid ... to
nodes (...)") of the real numad and of `numabal daemon -p numad`, and `numad -w` beside
`numabal advise --live`. Runs the simulated numad on the guest's preset (qemu-guest-4n8)
with the same workloads and prints, per workload, the three side by side, then PASS or FAIL
per must-show: the same bindings at the end (as sets: the processes of a workload are
alike, and which of two alike processes numad takes first follows its hash table), each
decision within one numad interval (15 s, `-i 5:15`) of the real one, and equal `-w`
answers on at least five requests. Exit status 1 if any failed.

Usage: scripts/vm/numad-compare.py [OUT] [--numabal PATH]   (about 10 s of simulation)
"""
import json
import re
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

INTERVAL_S = 15  # numad's -i 5:15: a decision can come up to one max interval apart
RUN_S = 90  # NUMAD_RUN_S of the guest run
GUEST_NODE_CPUS = {0: {0, 1}, 1: {2, 3}, 2: {4, 5}, 3: {6, 7}}
BUF = "workload.process.0"
SIM_SETS = {
    "fit0": [f"{BUF}.instances=2", f'{BUF}.region.26.size="320MiB"', f"{BUF}.group.1.threads=2"],
    "spread": [f"{BUF}.instances=2", f'{BUF}.region.26.size="320MiB"', f"{BUF}.group.1.threads=2",
               f'{BUF}.group.0.phase.0.mempolicy="interleave:all"'],
    "big": [f'{BUF}.region.26.size="1300MiB"', f"{BUF}.group.1.threads=4"],
}
ADVISE = re.compile(r"Advising pid (\d+) \(.*\) move from nodes \((.*)\) to nodes \((.*)\)")


def cpus_to_nodes(cpulist):
    cpus = set()
    for part in cpulist.split(","):
        a, _, b = part.partition("-")
        cpus |= set(range(int(a), int(b or a) + 1))
    nodes = [n for n, c in GUEST_NODE_CPUS.items() if c <= cpus]
    return list_string(nodes)


def list_string(nodes):
    nodes = sorted(nodes)
    out, i = [], 0
    while i < len(nodes):
        j = i
        while j + 1 < len(nodes) and nodes[j + 1] == nodes[j] + 1:
            j += 1
        out.append(str(nodes[i]) if i == j else f"{nodes[i]}-{nodes[j]}")
        i = j + 1
    return ",".join(out)


def parse_guest(path):
    runs, wreq = {}, []
    for line in Path(path).read_text(errors="replace").splitlines():
        if not line.startswith("@@ "):
            continue
        f = line.split()
        if f[1] == "w":
            a = dict(x.split("=", 1) for x in f[3:5])
            wreq.append((f[2], a["numad"], a["numabal"]))
            continue
        if f[1] not in ("start", "pids", "place", "log"):
            continue
        if f[1] == "pids":  # runs before 2026-11-26 09:00 wrote "numad368" for one pid
            m = re.match(r"(numad|numabal)(\d*)$", f[3])
            f = f[:3] + [m.group(1)] + ([m.group(2)] if m.group(2) else []) + f[4:]
        r = runs.setdefault((f[2], f[3]), {"pids": [], "place": {}, "decisions": []})
        if f[1] == "start":
            r["epoch"] = int(f[4])
        elif f[1] == "pids":
            r["pids"] = [int(p) for p in f[4:]]
        elif f[1] == "place":
            cpus = [x for x in f[5:] if x.startswith("cpus=")][0][5:]
            r["place"][int(f[4])] = cpus_to_nodes(cpus)
        elif f[3] == "numad":
            stamp, _, text = " ".join(f[4:]).partition(": ")
            t = datetime.strptime(stamp, "%a %b %d %H:%M:%S %Y").timestamp() - r["epoch"]
            add_decision(r, t, text)
        else:
            d = json.loads(" ".join(f[4:]))
            if "decision" in d:
                add_decision(r, d["t_s"], d["decision"])
            else:
                r.setdefault("skips", []).append(f'{d["t_s"]:.1f} s pid {d["pid"]}: {d["skip"]}')
    return runs, wreq


def add_decision(run, t, text):
    m = ADVISE.search(text)
    if m:
        run["decisions"].append((round(t, 1), int(m.group(1)), m.group(2), m.group(3)))


def simulate(numabal, w):
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "r.json"
        sets = SIM_SETS[w] + [f"{BUF}.group.1.phase.0.seconds={RUN_S + 15}"]
        args = [numabal, "sim", "-m", "qemu-guest-4n8", "-w", "numa02-like", "-p", "numad",
                "--json", str(out)]
        for s in sets:
            args += ["--set", s]
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        j = json.loads(out.read_text())
    run = {"pids": sorted({p["pid"] for p in j["processes"]}), "place": {}, "decisions": []}
    for e in j.get("policy_log", []):
        if e["t_s"] <= RUN_S:
            add_decision(run, e["t_s"], e["message"])
    for p in run["pids"]:
        run["place"][p] = "0-3"
    for t, pid, _, to in run["decisions"]:
        run["place"][pid] = to
    return run


def by_index(run):
    """Decisions and bindings with pids replaced by the process's start order."""
    ix = {p: i for i, p in enumerate(run["pids"])}
    dec = [(t, ix.get(pid, "?"), fr, to) for t, pid, fr, to in run["decisions"]]
    return dec, sorted(run["place"].values())


def main():
    args = sys.argv[1:]
    numabal = "target/release/numabal"
    if "--numabal" in args:
        i = args.index("--numabal")
        numabal = args[i + 1]
        del args[i:i + 2]
    path = args[0] if args else "target/vm/logs/numad-real.out"
    runs, wreq = parse_guest(path)
    verdicts = []
    for w in SIM_SETS:
        real = runs.get((w, "numad"))
        if real is None:
            print(f"{w}: not in {path}")
            verdicts.append(False)
            continue
        live = runs.get((w, "numabal"))
        sim = simulate(numabal, w)
        print(f"== {w}")
        rows = [("numad (real)", real), ("numabal daemon -p numad", live), ("simulated numad", sim)]
        base_dec, base_place = by_index(real)
        for name, r in rows:
            if r is None:
                print(f"  {name:<24} missing")
                continue
            dec, place = by_index(r)
            ds = "; ".join(f"{t:.1f} s p{i} ({fr})->({to})" for t, i, fr, to in dec) or "none"
            print(f"  {name:<24} bindings {place}  decisions: {ds}")
            for sk in r.get("skips", []):
                print(f"  {'':<24} left alone: {sk}")
        for name, r in rows[1:]:
            if r is None:
                verdicts.append(False)
                continue
            dec, place = by_index(r)
            same = place == base_place
            verdicts.append(same)
            print(f"  {'PASS' if same else 'FAIL'}: {name}: bindings at the end {place} "
                  f"(numad {base_place})")
            ok = len(dec) == len(base_dec) and all(
                abs(a[0] - b[0]) <= INTERVAL_S and a[3] == b[3] for a, b in zip(dec, base_dec))
            verdicts.append(ok)
            print(f"  {'PASS' if ok else 'FAIL'}: {name}: {len(dec)} decisions against numad's "
                  f"{len(base_dec)}, each to the same nodes within {INTERVAL_S} s")
    print("== numad -w against numabal advise --live (same guest state, sampled together)")
    equal = 0
    for req, a, b in wreq:
        equal += a == b
        print(f"  -w {req:<8} numad {a:<6} numabal {b:<6} {'same' if a == b else 'DIFFERENT'}")
    ok = equal >= 5
    verdicts.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}: {equal} of {len(wreq)} -w answers equal (at least 5)")
    sys.exit(0 if all(verdicts) else 1)


if __name__ == "__main__":
    main()
