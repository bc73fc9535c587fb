#!/usr/bin/env python3
"""What each mechanism of home-node buys (issue 18's ablations): home-node as numabal's
daemon runs it in the simulator (softdirty, the daemon's and the policy's defaults), and
the same with one mechanism switched off (policy tunables, docs/home-node.md):

  split_private=0       private multi-threaded processes placed whole, as every other
  move_memory=0         threads placed, memory left where it was first touched
  follow_once=0         a split process's chunk follows whichever node sampled it last
  sample_selectively=0  every managed process sampled all the time
  revise_split=0        a split private process whose chunks stray to other nodes'
                        threads stays split (on these workloads no process strays: the
                        rule shows on numa01-like on the guest's preset with shared_pct
                        50, docs/home-node.md)
  first_sight=0         a thread that started since the last pass waits for its second
                        pass to be judged busy
  second_look=0         a thread met first that started before the last pass (its process
                        just became manageable) is judged a whole interval later, not a
                        quarter
  shared_pct=50         not a mechanism but the classification's threshold as it was
                        before 2026-11-27: a process shares its memory when half its
                        chunks sampled twice were sampled by two threads (20 in the set)

and, beside them, the same policy on the damon sensor instead of softdirty (DAMON's hot
regions, credited to the threads that ran: no fault, no thread attribution)

on the workloads where binding is defined (the five AutoNUMA benchmark workloads on
autonuma-2n24, numa01 on rhel-4n40). Per variant and workload: mean runtime against
bind's, pages migrated, the sensor's soft-dirty faults and DAMON's page checks (sums over
the seeds); then the
geometric mean against bind and the totals. A table, no verdicts: the figures are what the
ablation is for (docs/home-node.md, "Ablations").

With --hpc, instead: the mechanisms that act on the hpc suite (the Stable-NUMA paper's
HPC codes, one process of a thread per CPU each) on stable-a and stable-b, against
home-node with all of them on (bind is not defined there):

  place_crowded=0        on a crowded machine a process waits for its class or
                         classify_wait_s before it is placed
  spread_concentrated=0  memory a main thread first touched on one node is left there
  concentrated_pct=25    memory is spread only when a quarter of it lies beyond its busy
                         threads' shares (the threshold before 2026-11-29; 12 now)
  reshare_split=0        a split process is shared out again only when a busy thread has
                         no node (not when its main thread goes idle, or a node is over
                         its CPUs while another has some to spare)
  sample_selectively=0   as above
  softdirty_budget_pct=100  the daemon's soft-dirty clears paced by all of one CPU
                         instead of 5% of it (ClearPacer, a daemon setting): a first clear
                         of up to 30 million entries made when first wanted, the next as
                         soon as the faults the last caused, at 2 us each, fit one CPU

Per variant and workload: mean runtime against home-node's, pages migrated, soft-dirty
faults; then the geometric mean and the sums.

Usage: scripts/home_node_ablation.py [--seeds N] [--hpc] [--numabal PATH] [--out DIR]
Wall time on 2 cores, release build: about 6 minutes with 3 seeds (the default), 12 with 10;
--hpc about 3 minutes per variant with 3 seeds.
"""
import argparse
import json
import math
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from home_node_eval import BIND_DEFINED, REPO, compare, run, runtimes  # noqa: E402

VARIANTS = [
    ("home-node", []),
    ("split_private=0", ["policy.split_private=0"]),
    ("move_memory=0", ["policy.move_memory=0"]),
    ("follow_once=0", ["policy.follow_once=0"]),
    ("sample_selectively=0", ["policy.sample_selectively=0"]),
    ("revise_split=0", ["policy.revise_split=0"]),
    ("first_sight=0", ["policy.first_sight=0"]),
    ("second_look=0", ["policy.second_look=0"]),
    ("shared_pct=50", ["policy.shared_pct=50"]),
    ("sensor damon", ["daemon.sensor=damon"]),
]


HPC_VARIANTS = [
    ("home-node", []),
    ("place_crowded=0", ["policy.place_crowded=0"]),
    ("spread_concentrated=0", ["policy.spread_concentrated=0"]),
    ("concentrated_pct=25", ["policy.concentrated_pct=25"]),
    ("reshare_split=0", ["policy.reshare_split=0"]),
    ("sample_selectively=0", ["policy.sample_selectively=0"]),
    ("softdirty_budget_pct=100", ["daemon.softdirty_budget_pct=100"]),
]


def counts(runs):
    """Pages migrated, the sensor's soft-dirty faults and DAMON's page checks, summed over
    a policy's runs."""
    daemon = [x.get("daemon") or {} for x in runs["runs"]]
    return (sum(x["metrics"]["pgmigrate_success"] for x in runs["runs"]),
            sum(d.get("soft_dirty_faults", 0) for d in daemon),
            sum(d.get("damon_checks", 0) for d in daemon))


def hpc_suite(numabal, machine, seeds, d, sets):
    """The hpc suite under home-node with `sets` on `machine`: {workload: runs}."""
    path = d / f"hpc-{machine}.json"
    if not path.exists():
        args = [numabal, "suite", "hpc", "-m", machine, "--policies", "home-node", "--seeds",
                str(seeds), "--quiet", "--json", str(path)]
        for x in sets:
            args += ["--set", x]
        run(args)
    return {w: p["policies"]["home-node"]
            for w, p in json.loads(path.read_text())["workloads"].items()}


def hpc(a, out):
    """The ablation on the hpc suite: each variant against home-node with every mechanism."""
    base, rows = {}, []
    for i, (name, sets) in enumerate(HPC_VARIANTS, 1):
        print(f"[{i}/{len(HPC_VARIANTS)}] {name}", file=sys.stderr, flush=True)
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        ratios, migrated, faults = [], 0, 0
        for machine in ("stable-a", "stable-b"):
            for w, runs in hpc_suite(a.numabal, machine, a.seeds, d, sets).items():
                t = statistics.mean(runtimes(runs))
                base.setdefault((machine, w), t)
                r = t / base[(machine, w)]
                m, f, _ = counts(runs)
                ratios.append(r)
                migrated += m
                faults += f
                rows.append((name, f"{w} on {machine}", f"{t:.2f}", f"{r:.3f}", str(m), str(f)))
        g = math.exp(statistics.mean(math.log(r) for r in ratios))
        rows.append((name, "all (geometric mean; sums)", "", f"{g:.3f}", str(migrated),
                     str(faults)))
    table(("variant", "workload", "runtime s", "x home-node", "pages migrated",
           "soft-dirty faults"), rows)


def table(head, rows):
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    for r in [head] + rows:
        print("  ".join(c.ljust(wd) if i < 2 else c.rjust(wd)
                        for i, (c, wd) in enumerate(zip(r, widths))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--numabal", default=str(REPO / "target/release/numabal"))
    ap.add_argument("--out", help="keep the runs here (reused when present)")
    ap.add_argument("--hpc", action="store_true",
                    help="the mechanisms that act on the hpc suite, on stable-a and stable-b")
    a = ap.parse_args()
    if a.seeds < 1:
        print("home_node_ablation: --seeds must be a whole number of 1 or more", file=sys.stderr)
        sys.exit(2)
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="home-node-ablation."))
    print(f"runs in {out}, {a.seeds} seeds")
    if a.hpc:
        hpc(a, out / "hpc")
        return
    (out / "bind").mkdir(parents=True, exist_ok=True)
    bind = {}
    for machine, w in BIND_DEFINED:
        pol = compare(a.numabal, machine, w, ["bind"], a.seeds, out / "bind")
        bind[(machine, w)] = statistics.mean(runtimes(pol["bind"]))
    rows = []
    for i, (name, sets) in enumerate(VARIANTS, 1):
        print(f"[{i}/{len(VARIANTS)}] {name}", file=sys.stderr, flush=True)
        d = out / name
        d.mkdir(parents=True, exist_ok=True)
        ratios, migrated, faults, checks = [], 0, 0, 0
        for machine, w in BIND_DEFINED:
            runs = compare(a.numabal, machine, w, ["home-node"], a.seeds, d, sets)["home-node"]
            r = statistics.mean(runtimes(runs)) / bind[(machine, w)]
            m, f, c = counts(runs)
            ratios.append(r)
            migrated += m
            faults += f
            checks += c
            rows.append((name, f"{w} on {machine}", f"{r:.3f}", str(m), str(f), str(c)))
        g = math.exp(statistics.mean(math.log(r) for r in ratios))
        rows.append((name, "all (geometric mean; sums)", f"{g:.3f}", str(migrated), str(faults),
                     str(checks)))
    table(("variant", "workload", "x bind", "pages migrated", "soft-dirty faults",
           "DAMON checks"), rows)


if __name__ == "__main__":
    main()
