#!/usr/bin/env python3
"""The tiered twin's judgement: a guest run of scenarios/tiering.sh against its model.

Prints each judged figure (pgpromote_success, pgdemote_kswapd + pgdemote_direct,
numa_hint_faults, the hot set's memory on the top tier at the end) with the guest's value,
the model's, their ratio and PASS or FAIL at +-30 %, then figures shown but not judged.
With --json OUT it also writes them, with what the run was (each node's tmpfs, the hot
program's CPUs at placement, the guest's hinting faults after the filler), for
scripts/vm/tiering-twin-tally.py.

Usage: scripts/vm/tiering-judge.py GUEST_OUTPUT SIM_JSON [--json OUT]
  (scripts/vm/tiering-twin.sh runs it; docs/vm-tests.md, "The tiered twin")
Exit status: 0 when every judged figure passes, 1 when one fails, 2 on bad input.
"""
import json
import re
import sys

from tiering_out import die, read_text

BAND = 0.3


def read_guest(path):
    """The scenario's @ lines, and the hot program's CPUs at its first sample."""
    g, cpus = {}, None
    for line in read_text(path).splitlines():
        f = line.split()
        if cpus is None and line.startswith("placed at "):
            m = re.search(r"\| hot: .* cpus ([0-9,]+) \|", line)
            cpus = m.group(1) if m else None
        if not f or not f[0].startswith("@"):
            continue
        if f[0] in ("@counter", "@phase1", "@phase2", "@time", "@shmem", "@kswapd_cpu_s") and len(f) == 3:
            g[(f[0], f[1])] = float(f[2])
        elif f[0] == "@mib" and len(f) == 4:
            g[("@mib", f[1], f[2])] = float(f[3])
    if ("@counter", "pgpromote_success") not in g:
        die(f"{path} has no @counter lines (scenarios/tiering.sh's end)")
    return g, cpus


def read_sim(path):
    text = read_text(path)
    try:
        r = json.loads(text)
        t = r["metrics"]["tiering"]
        hot = next(p for p in r["processes"] if p["name"] == "numa01-like")
        fill = next(p for p in r["processes"] if p["name"] == "numa02-like")
    except (ValueError, KeyError, StopIteration):
        die(f"{path} is not the model's result of the tiered guest (numabal sim --json with metrics.tiering)")
    return r, t, hot, fill


def node_list(s):
    """A nodelist ("0-1", "0,2-3") as node ids."""
    ids = []
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


def in_dram_sim(r, top_nodes):
    """The model's first sample with 90 % of the hot set on the top tier (as the scenario's),
    once it has been placed on the slow node (its first touch is on node 0, as the guest's;
    the scenario samples only after the move)."""
    placed = False
    for s in r.get("proc_samples", []):
        for p in s["processes"]:
            if p["name"] != "numa01-like":
                continue
            total = sum(p["node_mb"])
            top = sum(p["node_mb"][n] for n in top_nodes)
            placed = placed or (total > 0 and top <= 0.1 * total)
            if placed and total > 0 and top >= 0.9 * total:
                return s["t_s"]
    return None


def figures(g, r, t, hot, fill):
    """(judged, shown): lists of (name, guest, model, unit)."""
    m = r["metrics"]
    # The top tier: the model's first (fastest) tier; the guest's is the same (memory_tier4).
    top_nodes = node_list(min(t["tiers"], key=lambda x: x["tier"])["nodes"])

    def gc(name):
        return g.get(("@counter", name), 0.0)

    g_hot_top = sum(v for k, v in g.items() if k[:2] == ("@mib", "hot") and int(k[2][4:]) in top_nodes)
    judged = [
        ("pgpromote_success", gc("pgpromote_success"), t["pgpromote_success"], "pages"),
        ("pgdemote_kswapd + pgdemote_direct", gc("pgdemote_kswapd") + gc("pgdemote_direct"),
         t["pgdemote_kswapd"] + t["pgdemote_direct"], "pages"),
        ("numa_hint_faults", gc("numa_hint_faults"), m["numa_hint_faults"], ""),
        ("hot set on the top tier at the end", g_hot_top, sum(hot["node_mb"][n] for n in top_nodes), "MiB"),
    ]
    shown = [
        ("pgdemote_kswapd", gc("pgdemote_kswapd"), t["pgdemote_kswapd"], "pages"),
        ("pgdemote_direct", gc("pgdemote_direct"), t["pgdemote_direct"], "pages"),
        ("pgpromote_candidate", gc("pgpromote_candidate"), t["pgpromote_candidate"], "pages"),
        ("numa_pages_migrated", gc("numa_pages_migrated"), m["numa_pages_migrated"], "pages"),
        ("numa_pte_updates", gc("numa_pte_updates"), m["numa_pte_updates"], ""),
    ]
    nodes = range(len(hot["node_mb"]))
    for n in nodes:
        shown.append((f"hot set on node {n} at the end", g.get(("@mib", "hot", f"node{n}"), 0.0), hot["node_mb"][n], "MiB"))
    for n in nodes:
        shown.append((f"filler on node {n} at the end", g.get(("@mib", "filler", f"node{n}"), 0.0), fill["node_mb"][n], "MiB"))
    shown.append(("hot set 90 % on the top tier at", g.get(("@time", "hot_in_dram")), in_dram_sim(r, top_nodes), "s"))
    # Every kswapd's CPU time (the guest's from schedstat; outputs from before it printed
    # them have none).
    kswapd = [v for k, v in g.items() if k[0] == "@kswapd_cpu_s"]
    shown.append(("kswapd CPU", sum(kswapd) if kswapd else None, t.get("kswapd_cpu_s"), "s"))
    return judged, shown


def passes(gv, sv):
    return gv > 0 and 1 - BAND <= sv / gv <= 1 + BAND


def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:,.1f}"


def row(name, gv, sv, unit, verdict):
    ratio = f"{sv / gv:.3f}" if gv and sv is not None else "-"
    print(f"{name + (' (' + unit + ')' if unit else ''):<44} {fmt(gv):>10} {fmt(sv):>10} {ratio:>7}  {verdict}")


def main(argv):
    args, out = argv[1:], None
    if "--json" in args:
        i = args.index("--json")
        if i + 1 >= len(args):
            die("--json needs a file")
        out = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        die("usage: tiering-judge.py GUEST_OUTPUT SIM_JSON [--json OUT]")
    g, cpus = read_guest(args[0])
    r, t, hot, fill = read_sim(args[1])
    judged, shown = figures(g, r, t, hot, fill)
    print(f"{'figure':<44} {'guest':>10} {'model':>10} {'ratio':>7}  (model / guest, +-30 %)")
    fails = 0
    for name, gv, sv, unit in judged:
        ok = passes(gv, sv)
        fails += not ok
        row(name, gv, sv, unit, "PASS" if ok else "FAIL")
    print("not judged:")
    for name, gv, sv, unit in shown:
        row(name, gv, sv, unit, "")
    print(f"tiering twin: {len(judged) - fails} of {len(judged)} within 30 %")
    if out:
        doc = {
            "guest": args[0],
            "tmpfs_mib": {k[1]: v for k, v in g.items() if k[0] == "@shmem"},
            "hot_cpus": cpus,
            "guest_hint_faults_after_filler": g.get(("@phase2", "numa_hint_faults")),
            "judged": [{"figure": n, "guest": gv, "model": sv, "pass": passes(gv, sv)} for n, gv, sv, _ in judged],
        }
        with open(out, "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
