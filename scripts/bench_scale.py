#!/usr/bin/env python3
"""The simulator's cost against the size of what it simulates (scripts/bench.sh --scale).

Three dimensions, each varied alone, under `autonuma`, `stable` and the simulated numabal
daemon (`stable-daemon`):

  nodes    2, 4, ..., 64 nodes of 16 CPUs (8 cores x 2), 1 GiB of work per node: one
           thread per CPU, each first touching its own 64 MiB, then reading and writing
           the whole region at random (a shared working set)        10 simulated s
  memory   2 nodes x 16 CPUs with 520 GiB each, 32 threads, a pmbench-like region of
           4 GiB to 1 TiB (slices first touched, then uniform random)   60 simulated s
  threads  the 64-node machine, 16 to 1024 threads of 64 MiB each   10 simulated s

For each run: wall time (one core), simulated seconds per wall second, events, steps and
hinting faults per wall second (`numabal sim --engine-stats`), peak memory (GNU time);
then, per dimension and policy, the exponent b of a least-squares fit of
log(wall per simulated second) = a + b log(size). b <= 1 is linear or better.
The memory dimension also fits the steady cost (60 s minus the first 30 s, the first
touches being per-page work as in the kernel).

Usage: scripts/bench_scale.py BIN [BASE_BIN]   (BASE_BIN: the same runs with a baseline,
and the ratio of wall times, this / base); scripts/bench_scale.py --machine NODES GIB
prints the machine file of NODES nodes of GIB each. Wall time: about 15 minutes on one core (twice
that with a baseline).
"""

import math
import os
import re
import subprocess
import sys
import tempfile

POLICIES = ["autonuma", "stable", "stable-daemon"]


def machine(nodes, per_node_gib):
    dist = [[10 if i == j else 21 for j in range(nodes)] for i in range(nodes)]
    return f'''name = "scale-{nodes}n"
description = "scaling benchmark: {nodes} nodes x 16 CPUs, {per_node_gib} GiB each"
[topology]
sockets = {nodes}
cores_per_socket = 8
threads_per_core = 2
memory_per_node = "{per_node_gib}GiB"
distance = {dist}
[memory]
local_latency_ns = 90
controller_gib_s = 20
link_gib_s = 10
queue_scale_ns = 5
reserved_per_node = "256MiB"
'''


def workload(threads, region_mib, seconds):
    return f'''name = "scale-{threads}t"
description = "scaling benchmark: {threads} threads, {region_mib} MiB"
[[process]]
name = "scale"
[[process.region]]
name = "buf"
size = "{region_mib}MiB"
[[process.group]]
name = "worker"
threads = {threads}
[[process.group.phase]]
kind = "access"
region = "buf"
slice = "thread"
passes = 1
[[process.group.phase]]
kind = "access"
region = "buf"
pattern = "uniform"
seconds = {seconds}
write = 0.5
mlp = 1
ns_per_byte = 0.5
'''


def run(binary, tmp, m, w, p, secs):
    """One run -> dict of figures."""
    out = os.path.join(tmp, "time")
    cmd = ["/usr/bin/time", "-f", "%e %M", "-o", out, "taskset", "-c", "0", binary, "sim",
           "-m", m, "-w", w, "-p", p, "--quiet", "--engine-stats",
           "--set", f"sim.max_time_s={secs}"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"bench_scale: {' '.join(cmd)} failed:\n{r.stderr}")
    wall, kb = open(out).read().split()
    line = [ln for ln in r.stderr.splitlines() if ln.startswith("engine:")][-1]
    nums = dict(
        events=int(re.search(r"(\d+) events,", line).group(1)),
        steps=int(re.search(r"(\d+) steps,", line).group(1)),
        hint=float(re.search(r"([\d.e+]+) hinting faults,", line).group(1)),
    )
    wall = max(float(wall), 0.01)
    return dict(wall=wall, mib=int(kb) / 1024, sim=secs, **nums)


def fit(xs, ys):
    """Slope of the least-squares line through (log x, log y)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    den = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / den if den else float("nan")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--machine":
        # scripts/bench.sh's 64-node machine, from the same definition.
        print(machine(int(sys.argv[2]), int(sys.argv[3])), end="")
        return
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    binary, base = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else None)
    tmp = tempfile.mkdtemp(prefix="numabal-scale-")
    files = {}

    def put(name, text):
        path = os.path.join(tmp, name + ".toml")
        if name not in files:
            open(path, "w").write(text)
            files[name] = path
        return path

    # (dimension, size shown, size for the fit, machine file, workload file, simulated s)
    points = []
    for n in [2, 4, 8, 16, 32, 64]:
        points.append(("nodes", f"{n} nodes", n * 16, put(f"m{n}", machine(n, 16)),
                       put(f"w{n * 16}t", workload(n * 16, n * 16 * 64, 3600)), 10))
    for gib in [4, 16, 64, 256, 1024]:
        points.append(("memory", f"{gib} GiB", gib, put("m2big", machine(2, 520)),
                       put(f"wmem{gib}", workload(32, gib * 1024, 3600)), 60))
    for t in [16, 64, 256, 1024]:
        points.append(("threads", f"{t} threads", t, put("m64", machine(64, 16)),
                       put(f"w{t}t", workload(t, t * 64, 3600)), 10))

    head = f"{'dimension':<9} {'size':<12} {'policy':<14} {'wall s':>7} {'sim/wall':>9} " \
           f"{'events/s':>10} {'steps/s':>9} {'hints/s':>10} {'peak MiB':>9}"
    print(head + ("  base s  ratio" if base else ""), flush=True)
    results = {}
    for dim, label, size, m, w, secs in points:
        for p in POLICIES:
            r = run(binary, tmp, m, w, p, secs)
            line = f"{dim:<9} {label:<12} {p:<14} {r['wall']:>7.2f} {r['sim'] / r['wall']:>9.1f} " \
                   f"{r['events'] / r['wall']:>10.0f} {r['steps'] / r['wall']:>9.0f} " \
                   f"{r['hint'] / r['wall']:>10.0f} {r['mib']:>9.0f}"
            if base:
                b = run(base, tmp, m, w, p, secs)
                line += f" {b['wall']:>7.2f} {r['wall'] / b['wall']:>6.3f}"
            if dim == "memory":
                half = run(binary, tmp, m, w, p, secs // 2)
                r["steady"] = max(r["wall"] - half["wall"], 0.01) / (secs - secs // 2)
                line += f"   steady {r['steady']:.3f} wall s per simulated s"
            print(line, flush=True)
            results[(dim, p, size)] = r

    print("\nlog-log fits, wall per simulated second against size (exponent b):")
    for dim, unit in [("nodes", "CPUs"), ("memory", "GiB"), ("threads", "threads")]:
        for p in POLICIES:
            pts = sorted((s, r) for (d, q, s), r in results.items() if d == dim and q == p)
            b = fit([s for s, _ in pts], [r["wall"] / r["sim"] for _, r in pts])
            extra = ""
            if dim == "memory":
                bs = fit([s for s, _ in pts], [r["steady"] for _, r in pts])
                extra = f"; steady part b = {bs:.2f}"
            print(f"  {dim:<8} ({unit:<7}) {p:<14} b = {b:.2f}{extra}")


if __name__ == "__main__":
    main()
