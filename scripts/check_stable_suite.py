#!/usr/bin/env python3
"""Check Stable-NUMA's must-shows on two `numabal suite hpc --json` results.

Usage: scripts/check_stable_suite.py STABLE_A.json STABLE_B.json

Each file is one machine's `numabal suite` JSON (scripts/stable_suite.sh writes them) with
the policies none, autonuma and stable. Every must-show is checked on each file and printed
with the measured figure, the target, the paper's figure for that server (informative only)
and PASS or FAIL. Exit status: 0 if all pass, 1 if any fails, 2 if an input cannot be read.

Geometric means are the suite's (`geomean.<policy>.<figure>.value`): exactly 0 when any
workload's value is 0; the checks compare values (`stable <= k x base`), so a 0 needs no
division, and the number of workloads at 0 is shown beside the figure. A "stable lower than
base" check fails when the base's geometric mean is 0 (there is nothing to be lower than).
Because one workload at 0 makes a geometric mean 0, pages migrated and inter-node thread
migrations are also checked on the sum of the workloads' means, with the same bound.
"""

import json
import sys

POLICIES = ("none", "autonuma", "stable")
VARIANCE_WORKLOADS = ("npb_sp", "npb_lu", "npb_bt", "npb_mg")

# The paper's figures (Stable-NUMA, IEEE Access 2021, Section V), per server; informative.
PAPER = {
    "stable-a": {
        "hint": "0.35 (65% fewer)",
        "pages": "0.11",
        "tmig": "0.25 (75% fewer)",
        "cv_none": "0.47",
        "cv_autonuma": "0.27",
        "rt_none": "0.93",
        "rt_autonuma": "0.91",
        "local": "1.07x",
    },
    "stable-b": {
        "hint": "0.55 (45% fewer)",
        "pages": "0.20",
        "tmig": "0.24 (76% fewer)",
        "cv_none": "0.46",
        "cv_autonuma": "0.48",
        "rt_none": "0.75",
        "rt_autonuma": "0.86",
        "local": "1.21x",
    },
}


class Checker:
    def __init__(self):
        self.failed = 0
        self.rows = []

    def row(self, machine, what, measured, target, paper, ok):
        if not ok:
            self.failed += 1
        self.rows.append((machine, what, measured, target, paper, "PASS" if ok else "FAIL"))

    def print(self):
        head = ("machine", "must-show", "measured", "target", "paper", "result")
        widths = [max(len(str(r[i])) for r in self.rows + [head]) for i in range(len(head))]
        for r in [head] + self.rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(r, widths)).rstrip())


def fmt(x):
    if x is None:
        return "n/a"
    if x == 0:
        return "0"
    if abs(x) >= 100:
        return f"{x:.0f}"
    if abs(x) >= 1:
        return f"{x:.3f}"
    return f"{x:.3g}"


def ratio(a, b):
    return a / b if b else None


def check_machine(c, path):
    try:
        with open(path) as f:
            r = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_stable_suite: {path}: cannot read: {e}", file=sys.stderr)
        sys.exit(2)
    m = r.get("machine", path)
    paper = PAPER.get(m, {})
    missing = [p for p in POLICIES if p not in r.get("geomean", {})]
    if missing:
        c.row(m, f"policies {', '.join(POLICIES)} present", f"missing {', '.join(missing)}", "all", "", False)
        return
    g = r["geomean"]

    def gm(p, k):
        return g[p][k]["value"], g[p][k].get("zeros", 0)

    n = len(r.get("workload_order", []))

    def zeros_note(*pairs):
        notes = [f"{p}: {z}/{n} at 0" for p, z in pairs if z]
        return f" ({'; '.join(notes)})" if notes else ""

    def geo_ratio(what, key, base, limit, paper_key, at_least=False):
        s, zs = gm("stable", key)
        b, zb = gm(base, key)
        rt = ratio(s, b)
        # "k x fewer than a baseline of 0" shows nothing: a 0 baseline fails.
        ok = s >= limit * b if at_least else (b > 0 and s <= limit * b)
        target = f"{'>=' if at_least else '<='} {limit:.2f}"
        c.row(m, what, f"{fmt(rt)} = {fmt(s)} / {fmt(b)}{zeros_note(('stable', zs), (base, zb))}",
              target, paper.get(paper_key, ""), ok)

    geo_ratio("hint faults/s: stable / autonuma (geomean)", "numa_hint_faults_per_s", "autonuma", 0.55, "hint")
    geo_ratio("pages migrated: stable / autonuma (geomean)", "numa_pages_migrated", "autonuma", 0.20, "pages")
    # The geomean is 0 as soon as one workload migrates nothing under stable, which would
    # pass whatever the others do: the total over the suite must meet the bound as well.
    wl_ = r.get("workloads", {})

    def sum_ratio(what, key, limit, paper_key):
        tot = {p: sum(wl_[w]["policies"][p]["metrics"][key] for w in wl_) for p in ("stable", "autonuma")}
        c.row(m, what, f"{fmt(ratio(tot['stable'], tot['autonuma']))} = {fmt(tot['stable'])} / "
              f"{fmt(tot['autonuma'])}", f"<= {limit:.2f}", paper.get(paper_key, ""),
              tot["autonuma"] > 0 and tot["stable"] <= limit * tot["autonuma"])

    sum_ratio("pages migrated: stable / autonuma (sum of the workloads' means)", "numa_pages_migrated", 0.20,
              "pages")
    sum_ratio("inter-node thread migr./s: stable / autonuma (sum of the workloads' means)",
              "thread_migrations_internode_per_s", 0.50, "tmig")
    geo_ratio("inter-node thread migr./s: stable / autonuma (geomean)", "thread_migrations_internode_per_s",
              "autonuma", 0.50, "tmig")
    for base in ("none", "autonuma"):
        geo_ratio(f"runtime CV: stable / {base} (geomean)", "runtime_cv", base, 0.60, f"cv_{base}")
    for base in ("none", "autonuma"):
        geo_ratio(f"runtime: stable / {base} (geomean)", "runtime_s", base, 1.0, f"rt_{base}")
    geo_ratio("local access ratio: stable / autonuma (geomean)", "local_access_ratio", "autonuma", 1.0,
              "local", at_least=True)

    wl = r.get("workloads", {})

    def runtime(w, p, stat="mean"):
        try:
            return wl[w]["policies"][p]["runtime_s"][stat]
        except KeyError:
            return None

    def missing_row(what, w):
        c.row(m, what, f"{w} missing from the result", "", "", False)

    what = "npb_is does not gain: stable / min(none, autonuma)"
    vals = [runtime("npb_is", p) for p in POLICIES]
    if None in vals:
        missing_row(what, "npb_is")
    else:
        none, auto, stable = vals
        base = min(none, auto)
        c.row(m, what, f"{fmt(ratio(stable, base))} = {fmt(stable)} s / {fmt(base)} s", ">= 0.98",
              "stable slower than Linux", stable >= 0.98 * base)
    for w in ("graph500", "npb_cg"):
        what = f"{w} near parity: stable / none"
        s, b = runtime(w, "stable"), runtime(w, "none")
        if s is None or b is None:
            missing_row(what, w)
            continue
        rt = ratio(s, b)
        c.row(m, what, f"{fmt(rt)} = {fmt(s)} s / {fmt(b)} s", "0.95 to 1.05", "no significant gain",
              rt is not None and abs(rt - 1.0) <= 0.05)
    for w in VARIANCE_WORKLOADS:
        for p in ("none", "autonuma"):
            what = f"{w} varies run to run under {p}: runtime CV"
            cv = runtime(w, p, "cv")
            if cv is None:
                missing_row(what, w)
                continue
            paper_cv = "0.19 / 0.18 (SP, B)" if w == "npb_sp" and m == "stable-b" else "several %"
            c.row(m, what, fmt(cv), ">= 0.01", paper_cv, cv >= 0.01)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    c = Checker()
    for path in argv[1:]:
        check_machine(c, path)
    c.print()
    total = len(c.rows)
    print(f"{total - c.failed} passed, {c.failed} failed")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
