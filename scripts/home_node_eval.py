#!/usr/bin/env python3
"""home-node against bind, the kernel and Stable-NUMA in the simulator (issue 18's must-shows
that the simulator answers), one figure a line with PASS or FAIL.

Part 1, where binding is defined: the five AutoNUMA benchmark workloads on autonuma-2n24,
numa01 on rhel-4n40 (mean runtime over the seeds; home-node within 1.05x of bind on each and
1.03x in geometric mean), kvm_guests on rhel-4n40 (home-node aligns the four guests, >= 95% on
one node each, four nodes, sooner than autonuma: scripts/kvm_guests.sh) and specjbb with 4, 8
and 12 warehouses on rhel-4n40 (throughput within 1/1.05 of bind's: scripts/specjbb_sweep.sh).

Part 2, everywhere (--everywhere): the same workloads plus the hpc suite on stable-a and
stable-b, pig on rhel-8n and pmbench for 600 s on xeon-2n104: home-node's runtime against
the best of autonuma, autonuma-2012, stable and numad per workload at most 1 in geometric
mean over the workloads, none more than 3% worse than that best; pages migrated, summed over the workloads, at most half
autonuma's; sampling faults (the daemon's sensor's soft-dirty faults, and DAMON's page
checks in runs on the damon sensor) at most 30% of
autonuma's hinting faults, summed; run-to-run CV no higher than stable's (mean over the
workloads).

Every run is numabal's own daemon as the simulator runs it, with the sensor it would choose
live (kernel.numa_balancing=0: softdirty), at the daemon's and the policy's defaults.

Usage: scripts/home_node_eval.py [--seeds N] [--everywhere] [--numabal PATH] [--out DIR]
                                 [--rivals-from EARLIER_OUT]
Wall time on 2 cores, release build: part 1 with 20 seeds about 25-60 minutes (kvm_guests
about 15, specjbb about 30); --seeds 3 about 10; part 2 with 3 seeds about 8 minutes, with
20 about 53 (each home-node run of pmbench takes about 30 s); both parts with 20 seeds and
--rivals-from about 23 minutes (specjbb's 15 of them). pmbench runs its 600 s under every
policy, so its cost is the time per GiB it accessed. Exit status 1 if a figure fails.
"""
import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIND_DEFINED = [
    ("autonuma-2n24", "numa01"),
    ("autonuma-2n24", "numa01_thread_alloc"),
    ("autonuma-2n24", "numa02"),
    ("autonuma-2n24", "numa02_smt"),
    ("autonuma-2n24", "numa01_numa02"),
    ("rhel-4n40", "numa01"),
]
RIVALS = ["autonuma", "autonuma-2012", "stable", "numad"]


def compare(numabal, machine, workload, policies, seeds, out, sets=(), rivals=None):
    """`numabal compare` of `policies` (its JSON kept in `out`, reused when present); with
    `rivals` (a directory of an earlier run laid out as `out`), only home-node is run and
    the other policies' runs are taken from the file of the same name there."""
    path = out / f"{machine}-{workload}.json"
    if not path.exists():
        args = [numabal, "compare", "-m", machine, "-w", workload, "--seeds", str(seeds),
                "--quiet"]
        for s in sets:
            args += ["--set", s]
        run_whole(path, args, policies, rivals)
    return json.loads(path.read_text())["policies"]


def run_whole(path, args, policies, rivals):
    """Run `args` (a compare or a suite, without its --policies and --json) into `path`,
    written whole or not at all: a half-made file would be reused by the next run. With
    `rivals`, home-node alone, and every other policy's runs from the file of the same
    name in `rivals`, which must hold them for the same seeds (else exit 2)."""
    old = None
    if rivals:
        earlier = rivals / path.name
        if not earlier.exists():
            bad_rivals(f"--rivals-from has no {earlier}")
        old = json.loads(earlier.read_text())
    tmp = path.with_name(path.name + ".part")
    own = ["home-node"] if rivals else policies
    run(args + ["--policies", ",".join(own), "--json", str(tmp)])
    if rivals:
        new = json.loads(tmp.read_text())
        # A suite's file holds a compare's fields per workload.
        if "workloads" in new:
            for w, entry in new["workloads"].items():
                take_rivals(entry, old["workloads"].get(w), policies, f"{earlier} ({w})")
        else:
            take_rivals(new, old, policies, str(earlier))
        new["policy_order"] = list(policies)
        new["rivals_from"] = str(earlier)
        tmp.write_text(json.dumps(new))
    tmp.rename(path)


def take_rivals(new, old, policies, where):
    """Give `new` (a compare's fields) every policy's runs but home-node's from `old`."""
    have = (old or {}).get("policies", {})
    missing = [p for p in policies if p != "home-node" and p not in have]
    if old is None or old["seeds"] != new["seeds"] or missing:
        bad_rivals(f"{where} does not hold the seeds {new['seeds']} of "
                   f"{', '.join(missing) or 'every policy'}; run without --rivals-from")
    new["policies"] = {p: (new if p == "home-node" else old)["policies"][p] for p in policies}
    new["policy_order"] = list(policies)


def bad_rivals(msg):
    """--rivals-from cannot serve this run: say why, exit 2."""
    print(f"home_node_eval: {msg}", file=sys.stderr)
    sys.exit(2)


def run(args, env=None):
    """Run a command quietly; on failure print what it said and stop."""
    r = subprocess.run(args, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        sys.exit(f"home_node_eval: {' '.join(map(str, args))} failed (exit {r.returncode})")


def runtimes(p):
    return [r["metrics"]["runtime_s"] for r in p["runs"]]


def per_gib_ms(p):
    return [1e3 / r["metrics"]["access_gib_per_s"] for r in p["runs"]]


def verdict(ok, text, verdicts):
    verdicts.append(ok)
    print(f"{'PASS' if ok else 'FAIL'}: {text}")


def part1(numabal, seeds, out, verdicts, rivals=None):
    ratios = []
    for machine, w in BIND_DEFINED:
        pol = compare(numabal, machine, w, ["bind", "autonuma", "home-node"], seeds, out,
                      rivals=rivals)
        b, h, a = (statistics.mean(runtimes(pol[k])) for k in ("bind", "home-node", "autonuma"))
        ratios.append(h / b)
        verdict(h / b <= 1.05, f"{w} on {machine}: home-node {h:.2f} s = {h / b:.3f}x bind "
                f"({b:.2f} s; autonuma {a / b:.3f}x), within 1.05x", verdicts)
    kvm = kvm_guests(numabal, seeds, out)
    if kvm:
        verdict(kvm["home-node"][1] < kvm["autonuma"][0],
                f"kvm_guests on rhel-4n40: home-node aligns the four guests at "
                f"{kvm['home-node'][0]:.0f}-{kvm['home-node'][1]:.0f} s, autonuma at "
                f"{kvm['autonuma'][0]:.0f}-{kvm['autonuma'][1]:.0f} s", verdicts)
    for w, (b, h) in specjbb(numabal, seeds, out).items():
        ratios.append(b / h)
        verdict(b / h <= 1.05, f"specjbb W={w} on rhel-4n40: home-node {h:.0f} bops = "
                f"{b / h:.3f}x bind's runtime per bop ({b:.0f} bops), within 1.05x", verdicts)
    g = math.exp(statistics.mean(math.log(r) for r in ratios))
    verdict(g <= 1.03, f"geometric mean against bind: {g:.3f}x, within 1.03x", verdicts)


def with_numabal(numabal):
    """The environment for the shell scripts, which take the binary from NUMABAL."""
    return {**os.environ, "NUMABAL": str(numabal)}


def kvm_guests(numabal, seeds, out):
    """Alignment time (min, max over seeds) per policy, from scripts/kvm_guests.sh."""
    text = subprocess.run(
        [str(REPO / "scripts/kvm_guests.sh"), "-p", "autonuma home-node", "-s", str(seeds),
         "-o", str(out / "kvm")], check=False, capture_output=True, text=True,
        env=with_numabal(numabal)).stdout
    got = {}
    for line in text.splitlines():
        m = re.match(r"(\S+): every guest .*: (PASS|FAIL)(?:, converged at (\d+)-(\d+) s)?", line)
        if m:
            got[m.group(1)] = ((float(m.group(3)), float(m.group(4))) if m.group(3)
                               else (math.inf, math.inf))
    return got


def specjbb(numabal, seeds, out):
    """Throughput (bops) of bind and home-node at 4, 8 and 12 warehouses."""
    d = out / "specjbb"
    if not (d / "sweep.csv").exists():
        run([str(REPO / "scripts/specjbb_sweep.sh"), "-p", "bind home-node", "-w", "4,8,12",
             "-s", str(seeds), "-o", str(d)], env=with_numabal(numabal))
    rows = [line.split(",") for line in (d / "sweep.csv").read_text().splitlines()]
    head, rows = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(head)}
    got = {}
    for r in rows:
        w = int(r[col["warehouses"]])
        got[w] = (float(r[col["bind"]]), float(r[col["home-node"]]))
    return got


def part2(numabal, seeds, out, verdicts, rivals=None):
    pols = RIVALS + ["home-node"]
    # Apart from part 1's runs of the same workloads, which have other policies.
    out = out / "everywhere"
    rivals = rivals / "everywhere" if rivals else None
    out.mkdir(parents=True, exist_ok=True)
    runs = {}
    for machine, w in BIND_DEFINED + [("rhel-8n", "pig")]:
        runs[(machine, w)] = compare(numabal, machine, w, pols, seeds, out, rivals=rivals)
    runs[("xeon-2n104", "pmbench")] = compare(numabal, "xeon-2n104", "pmbench", pols, seeds, out,
                                              ["sim.max_time_s=600"], rivals)
    for machine in ("stable-a", "stable-b"):
        path = out / f"hpc-{machine}.json"
        if not path.exists():
            args = [numabal, "suite", "hpc", "-m", machine, "--seeds", str(seeds), "--quiet"]
            run_whole(path, args, pols, rivals)
        for w, pol in json.loads(path.read_text())["workloads"].items():
            runs[(machine, w)] = pol["policies"]
    migrated = {p: 0 for p in pols}
    hint, sd = 0, 0
    against_best = []
    cv = {p: [] for p in pols}
    for (machine, w), pol in runs.items():
        # pmbench runs for its 600 s whatever the policy: its cost is the time per GiB it
        # accessed, in ms (its own figure of merit is accesses per second).
        capped = w == "pmbench"
        cost = per_gib_ms if capped else runtimes
        unit = "ms per GiB accessed" if capped else "s"
        mean = {p: statistics.mean(cost(pol[p])) for p in pols}
        best = min(RIVALS, key=lambda p: mean[p])
        h = mean["home-node"]
        against_best.append(h / mean[best])
        verdict(h <= mean[best] * 1.03, f"{w} on {machine}: home-node {h:.2f} {unit}, best of "
                f"the others {best} {mean[best]:.2f} {unit} ({h / mean[best]:.3f}x), within 3%",
                verdicts)
        for p in pols:
            migrated[p] += sum(r["metrics"]["pgmigrate_success"] for r in pol[p]["runs"])
            t = cost(pol[p])
            cv[p].append(statistics.stdev(t) / statistics.mean(t) if len(t) > 1 else 0.0)
        hint += sum(r["metrics"]["numa_hint_faults"] for r in pol["autonuma"]["runs"])
        # The sensor's sampling events: soft-dirty faults, or DAMON's page checks.
        sd += sum((r.get("daemon") or {}).get("soft_dirty_faults", 0)
                  + (r.get("daemon") or {}).get("damon_checks", 0)
                  for r in pol["home-node"]["runs"])
    g = math.exp(statistics.mean(math.log(x) for x in against_best))
    verdict(g <= 1.0, f"geometric mean over the {len(against_best)} workloads of home-node "
            f"against each one's best of the others: {g:.3f}x, at most 1", verdicts)
    m, a = migrated["home-node"], migrated["autonuma"]
    verdict(m <= a / 2, f"pages migrated, all workloads: home-node {m} = {m / a:.2f} of "
            f"autonuma's {a}, at most 0.5", verdicts)
    verdict(sd <= 0.3 * hint, f"sampling faults: home-node's soft-dirty faults and DAMON "
            f"checks {sd} = "
            f"{sd / hint:.2f} of autonuma's hinting faults {hint}, at most 0.3", verdicts)
    ch, cs = statistics.mean(cv["home-node"]), statistics.mean(cv["stable"])
    verdict(ch <= cs, f"run-to-run CV, mean over the workloads: home-node {ch:.4f}, stable "
            f"{cs:.4f}", verdicts)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--everywhere", action="store_true")
    ap.add_argument("--numabal", default=str(REPO / "target/release/numabal"))
    ap.add_argument("--out", help="keep the runs here (reused when present)")
    ap.add_argument("--rivals-from", metavar="DIR",
                    help="an earlier run's --out: run home-node only and take the other "
                    "policies' runs of the compares and suites from there (for a change to "
                    "home-node or the simulated daemon alone, which leaves theirs as they "
                    "were; kvm_guests and specjbb are run whole)")
    a = ap.parse_args()
    rivals = Path(a.rivals_from) if a.rivals_from else None
    if rivals and not rivals.is_dir():
        ap.error(f"--rivals-from {rivals}: no such directory")
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="home-node-eval."))
    out.mkdir(parents=True, exist_ok=True)
    print(f"runs in {out}, {a.seeds} seeds")
    verdicts = []
    if rivals:
        print(f"the other policies' runs from {rivals}")
    part1(a.numabal, a.seeds, out, verdicts, rivals)
    if a.everywhere:
        part2(a.numabal, a.seeds, out, verdicts, rivals)
    print(f"{sum(verdicts)} of {len(verdicts)} figures PASS")
    sys.exit(0 if all(verdicts) else 1)


if __name__ == "__main__":
    main()
