#!/usr/bin/env python3
"""Sim predicts live (issue 18): the guest scenarios run under home-node and their
simulated twins on the guest's preset, side by side. For each: the final placement, as
the guest scripts check it, and the time to it from the daemon's start, live and
simulated; PASS when the placement has the same shape and the simulated time is within 2x
of the live one. Placed, for processes placed whole: each on a node of its own, its
workers there and >= 90% of its memory on it (perf bench: the same, but two processes
may share a node, as the guest script checks); for numa02-like (split): no node with more
workers than CPUs and the accesses local (live: sampled writes, ratio >= 0.9; simulated:
the series' local access ratio of that second >= 0.9). The live time of the two rows
whose placement the guest polls seconds apart is when the daemon's last action before
the first placed poll ended (its decision log); perf bench's is its ~1 s poll's.

  daemon-damon      numa01-like, 2 processes x 2 threads, home-node, sensor damon
  daemon-numa02     numa02-like, 8 threads, 128 MiB, home-node, softdirty
  daemon-perfbench  perf bench numa mem -p 4 -t 1 -P 160 -s 40 -zZ0c, home-node, softdirty
                    (the guest run must have been made with DAEMON_POLICY=home-node)

The live figures are read from the guest scenarios' output (scripts/vm/daemon-tests.sh
writes target/vm/logs/SCENARIO-TAG.out; TAG -sid for 7.2); the twins run here
(qemu-guest-4n8, THP always as Debian's kernels have it, numastat every second), as the
guest ran them:
- on the host's cores: the guest's 8 vCPUs share `--host-cpus` cores (default: this
  machine's, where scripts/vm runs the guest), `machine.core.host_cpus`;
- with the daemon's own move costs, measured in the same guest kernel by the
  `migrate-speed` scenario (target/vm/logs/migrate-speed-TAG.out: `migratepages` of a
  stopped writer's 160 MiB in huge pages and in base pages, solved for
  `costs.migrate_page_ns` and `costs.migrate_copy_gib_s`; of a case made several times,
  the fastest); without that log, the preset's
  costs (`numa-costs`, a process moving its own pages), and the script says so;
- with the TLB shootdown's wait on the shared host per CPU that runs the process
  (`core.host_shootdown_ns`), solved from the same log's `eight-threads` cases (a running
  eight-thread process's 160 MiB against the same stopped);
- on 7.2, a migration's TLB flush waiting for every busy CPU that ran the process, not
  only those that run it (`core.mm_cpumask_kept`: 7.2 keeps a CPU in a process's
  mm_cpumask after it switches away, and migration's batched flush names no mm);
- numa01-like and numa02-like with the daemon started once the workers run, as their
  guest scripts start it after the programs' start lines (`daemon.start_s`: when the
  twin's workers start, from a run without the daemon); times are from the daemon's start.

Usage: scripts/sim_predicts_live.py [--logs DIR] [--kernel 7.2|6.1] [--numabal PATH]
       [--host-cpus N] [--set KEY=VALUE]...
Wall time: about 10 s after the release build. Exit status 1 if a row fails, 2 if a live
log is missing.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TAGS = {"7.2": "-sid", "6.12": "-trixie", "6.1": ""}
# Kernels whose x86 code trims a process's mm_cpumask at most once a second ("only trim
# the mm_cpumask once a second", mainline 2025) instead of at every switch: a migration's
# batched flush, which names no mm, goes to every CPU in it that is not idle.
MM_CPUMASK_KEPT = {"7.2"}
ROWS = [
    # scenario, workload, sensor, how the live log gives the time placed
    ("daemon-damon", "numa01-like", "damon",
     r"placed by the daemon's actions that ended at ([0-9.]+) s|"
     r"converged at ([0-9.]+) s after the daemon started"),
    ("daemon-numa02", "numa02-like", "softdirty",
     r"placed by the daemon's actions that ended at ([0-9.]+) s|"
     r"no node over its CPUs at ([0-9.]+) s after the daemon started"),
    ("daemon-perfbench", "perf-bench-numa-mem", "softdirty",
     r"^converged after \(s\)\s+(\S+)\s+\S+"),
]


def placed(sample, distinct=True):
    """The homes of every process if each is placed (and, when `distinct`, no two share a
    node), else None."""
    homes = []
    for p in sample["processes"]:
        total = sum(p["node_mb"])
        home = max(range(len(p["node_mb"])), key=lambda n: p["node_mb"][n])
        workers = p.get("worker_nodes", [])
        if not (total > 0 and workers and all(n == home for n in workers)
                and p["node_mb"][home] / total >= 0.9):
            return None
        homes.append(home)
    if len(homes) < 2 or (distinct and len(set(homes)) != len(homes)):
        return None
    return homes


def sim(numabal, workload, policy, path, sets):
    args = [numabal, "sim", "-m", "qemu-guest-4n8", "-w", workload, "-p", policy,
            "--quiet", "--set", "sim.transparent_hugepage=always", "--json", str(path)]
    for s in sets:
        args += ["--set", s]
    r = subprocess.run(args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        sys.exit(f"sim_predicts_live: {' '.join(args)} failed (exit {r.returncode})")
    return json.loads(path.read_text())


def workers_start(numabal, workload, out, sets):
    """When every process of the twin has its workers running, without the daemon (the
    guest scripts start the daemon after the programs print their start lines)."""
    res = sim(numabal, workload, "none", out / f"{workload}-start.json",
              list(sets) + ["sim.numastat_every_s=0.1", "sim.max_time_s=5"])
    return next(s["t_s"] for s in res["numastat"]
                if s["processes"] and all(p.get("worker_nodes") for p in s["processes"]))


def twin(numabal, workload, sensor, out, sets=()):
    """(time placed from the daemon's start or None, the end's placement or None)."""
    start = 0.0
    sets = list(sets)
    if workload in ("numa01-like", "numa02-like"):
        start = round(workers_start(numabal, workload, out, sets), 1)
        sets.append(f"daemon.start_s={start}")
    path = out / f"{workload}-{sensor}.json"
    res = sim(numabal, workload, "home-node", path,
              sets + [f"daemon.sensor={sensor}", "sim.numastat_every_s=1"])
    at, end = placed_twin(numabal, workload, res)
    return (None if at is None else at - start), end


def placed_twin(numabal, workload, res):
    if workload == "numa02-like":
        return spread(res, node_cpus(numabal))
    # perf bench's check is per process (scenarios/daemon-perfbench.sh): node 0's two CPUs
    # keep two of the four, so homes may repeat.
    distinct = workload != "perf-bench-numa-mem"
    at = next((s["t_s"] for s in res["numastat"] if placed(s, distinct)), None)
    # The end: the last sample with every process (they exit at different moments, as
    # the guest script keeps its last poll that saw all of them whole).
    n = max((len(s["processes"]) for s in res["numastat"]), default=0)
    whole = [s for s in res["numastat"] if len(s["processes"]) == n]
    end = placed(whole[-1], distinct) if whole else None
    return at, end


def node_cpus(numabal):
    """CPUs per node of the guest's preset, from `numabal topology` (numactl's layout)."""
    text = subprocess.run([numabal, "topology", "-m", "qemu-guest-4n8"], capture_output=True,
                          text=True, check=True).stdout
    return [len(m.group(1).split()) for m in re.finditer(r"^node \d+ cpus:(.*)$", text, re.M)]


def spread(res, cpus):
    """numa02-like's twin: (the first second with no node over its CPUs and the accesses
    of that second >= 90% local, whether the last second is so)."""
    ratio = dict(zip(res["series"]["t_s"], res["series"]["local_access_ratio"]))
    def ok(s):
        workers = s["processes"][0]["worker_nodes"] if s["processes"] else []
        over = any(workers.count(n) > c for n, c in enumerate(cpus))
        return bool(workers) and not over and ratio.get(s["t_s"], 0) >= 0.9
    at = next((s["t_s"] for s in res["numastat"] if ok(s)), None)
    return at, (True if res["numastat"] and ok(res["numastat"][-1]) else None)


def live(log, pattern):
    """(time placed or None, whether placed at the end, the daemon's policy) from a log.
    The pattern's first group that matched is the time: the guest polls numa01-like's and
    numa02-like's placement seconds apart (10 s for numa02-like, whose poll samples
    writes), so their time is the end of the daemon's last action that ended before the
    first placed poll when the log has it (scenarios/lib.sh, `acted_by`), else that
    poll's."""
    text = log.read_text(errors="replace")
    m = re.search(pattern, text, re.M)
    t = None
    found = next((g for g in m.groups() if g is not None), None) if m else None
    if found is not None and found != "never":
        t = float(found)
    policy = re.search(r"^daemon policy: ([\w-]+)", text, re.M)
    policy = policy.group(1) if policy else None
    if "damon" in log.name or "numa02" in log.name:
        end = bool(re.search(r"^PASS: placed within 60 s", text, re.M))
        policy = "home-node"  # the scenarios run no other
    else:
        m = re.search(r"^placed at the end\s+(\S+)", text, re.M)
        end = bool(m and m.group(1) == "1")
    return t, end, policy


def speed_case(log, name):
    """A migrate-speed case's (seconds, pgmigrate_success, thp_migration_success), or None;
    of a case made several times, the fastest: with the fast string moves (`-cpu max`) the
    7.2 guest's copies were 5x slower when source and destination aliased in TCG's
    software TLB (docs/vm-tests.md), which only adds."""
    if not log.exists():
        return None
    runs = re.findall(rf"^speed {name} seconds=([0-9.]+) pgmigrate_success=(\d+) "
                      rf"thp_migration_success=(\d+)", log.read_text(errors="replace"), re.M)
    return min((float(s), int(p), int(h)) for s, p, h in runs) if runs else None


def move_costs(log):
    """The daemon's move costs in the guest from a migrate-speed log: (migrate_page_ns,
    migrate_copy_gib_s), or None. A stopped writer's 160 MiB moved in huge pages (t_h s,
    h huge pages, b base pages besides) and in base pages only (t_b s, n pages): a base
    page costs c_b = t_b / n = k + 4 KiB / v, a huge page c_h = (t_h - b c_b) / h =
    k + 2 MiB / v; solved for k and v."""
    huge, base = speed_case(log, "alone-stopped"), speed_case(log, "alone-stopped-base-pages")
    if not huge or not base or huge[2] == 0 or base[1] == 0:
        return None
    c_b = base[0] / base[1]
    h = huge[2]
    c_h = (huge[0] - (huge[1] - 512 * h) * c_b) / h
    per_byte = (c_h - c_b) / (2 * 1024 * 1024 - 4096)
    if per_byte <= 0:
        return None
    k = c_b - 4096 * per_byte
    return max(k, 0.0) * 1e9, 1.0 / per_byte / 1024 ** 3


def shootdown_wait(log, host_cpus):
    """`core.host_shootdown_ns` from a migrate-speed log: a running eight-thread process's
    160 MiB (one thread on each of the guest's 8 CPUs) against the same stopped; the extra
    wall time over its flushes (huge pages and base pages, one each), as the model charges
    it: CPU work at the mover's speed (half a CPU beside a writer, each CPU at host_cpus / 8
    of a core), for each of the 8 CPUs the process runs on. None without the cases."""
    run, stopped = speed_case(log, "eight-threads"), speed_case(log, "eight-threads-stopped")
    if not run or not stopped:
        return None
    flushes = run[2] + max(run[1] - 512 * run[2], 0)
    speed = min(1.0, host_cpus / 8) * 0.5
    return max(run[0] - stopped[0], 0.0) * speed / flushes / 8 * 1e9


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--logs", default=str(REPO / "target/vm/logs"))
    ap.add_argument("--kernel", default="7.2", choices=sorted(TAGS))
    ap.add_argument("--numabal", default=str(REPO / "target/release/numabal"))
    ap.add_argument("--host-cpus", type=int, default=os.cpu_count(),
                    help="the host cores the guest's vCPUs ran on (default: this machine's)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="passed to every twin after the above, repeatable")
    a = ap.parse_args()
    if a.host_cpus < 1:
        sys.stderr.write(f"sim_predicts_live: --host-cpus: is {a.host_cpus} (allowed: 1 or more)\n")
        sys.exit(2)
    out = Path(tempfile.mkdtemp(prefix="sim-predicts-live."))
    sets = [f"machine.core.host_cpus={a.host_cpus}"]
    speed = Path(a.logs) / f"migrate-speed{TAGS[a.kernel]}.out"
    costs = move_costs(speed)
    if costs:
        sets += [f"machine.costs.migrate_page_ns={costs[0]:.0f}",
                 f"machine.costs.migrate_copy_gib_s={costs[1]:.3f}"]
        print(f"the daemon's move costs from {speed.name}: migrate_page_ns {costs[0]:.0f}, "
              f"migrate_copy_gib_s {costs[1]:.3f}; the guest on {a.host_cpus} host cores")
    else:
        print(f"no move costs in {speed} (scripts/vm/run.sh migrate-speed): the preset's; "
              f"the guest on {a.host_cpus} host cores")
    wait = shootdown_wait(speed, a.host_cpus)
    if wait is not None:
        sets.append(f"machine.core.host_shootdown_ns={wait:.0f}")
        print(f"a TLB shootdown waits {wait:.0f} ns of work per CPU running the process "
              f"(eight-threads against eight-threads-stopped in {speed.name})")
    else:
        print(f"no eight-threads cases in {speed}: shootdowns cost the preset's flat figure")
    if a.kernel in MM_CPUMASK_KEPT:
        sets.append("machine.core.mm_cpumask_kept=true")
        print(f"{a.kernel} keeps a CPU in a process's mm_cpumask after it switches away: a "
              f"migration's flush waits for every busy CPU that ran the process")
    sets += a.set
    ok, missing = True, False
    head = f"{'scenario':18} {'sensor':9} {'live placed at':>15} {'sim placed at':>14} {'ratio':>6}  verdict"
    print(head)
    for scen, workload, sensor, pattern in ROWS:
        log = Path(a.logs) / f"{scen}{TAGS[a.kernel]}.out"
        if not log.exists():
            print(f"{scen:18} {sensor:9} no live log {log}")
            missing = True
            continue
        if sensor == "damon" and "no DAMON sysfs interface" in log.read_text(errors="replace"):
            # The 6.1 guest: the scenario checks the fallback, nothing is placed on DAMON.
            print(f"{scen:18} {sensor:9} not a row: this kernel has no DAMON")
            continue
        lt, lend, policy = live(log, pattern)
        if policy != "home-node":
            print(f"{scen:18} {sensor:9} live run under {policy or 'the default policy'}, not "
                  f"home-node: DAEMON_POLICY=home-node scripts/vm/daemon-tests.sh --kernel "
                  f"{a.kernel} {scen}")
            missing = True
            continue
        st, send = twin(a.numabal, workload, sensor, out, sets)
        fmt = lambda t, end: (f"{t:.1f} s" if t is not None else "never") + ("" if end else " (not at end)")
        ratio = (max(lt, st) / min(lt, st)) if lt and st else None
        shape = lend == (send is not None)
        good = shape and lend and ratio is not None and ratio <= 2.0
        ok &= good
        why = [] if good else (["placement differs"] if not shape else []) + (
            ["time beyond 2x"] if ratio is None or ratio > 2.0 else [])
        print(f"{scen:18} {sensor:9} {fmt(lt, lend):>15} {fmt(st, send is not None):>14} "
              f"{(f'{ratio:.1f}x' if ratio else '-'):>6}  {'PASS' if good else 'FAIL: ' + ', '.join(why)}")
    if missing:
        sys.exit(2)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
