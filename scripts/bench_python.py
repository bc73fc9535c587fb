"""The Python package's overhead against the command line, in one run (issue 21):

1. ``numabal.run`` (with its metrics parsed) against ``numabal sim --json`` as a process, on
   numa02 (autonuma-2n24, autonuma): medians of N, run alternately.
2. A 400-run sweep (numa02 on autonuma-2n24, 4 policies x 100 seeds) on a local Ray cluster
   of two nodes with one CPU each (``ray.cluster_utils.Cluster``: a head and a second node,
   separate processes, on this 2-core machine) against ``numabal sweep --jobs 2``: the
   sweep's wall time with the cluster up (its start is reported apart).

Usage: target/py-venv/bin/python scripts/bench_python.py [N]   (scripts/bench-python.sh)
About 4 minutes on the 2-core development machine with N = 5.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numabal

ROOT = Path(__file__).resolve().parents[1]
CLI = os.environ.get("NUMABAL_BIN", str(ROOT / "target" / "release" / "numabal"))
GRID = """machines = ["autonuma-2n24"]
workloads = ["numa02"]
policies = ["none", "bind", "autonuma", "stable"]
seeds = 100
"""


def timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


def run_overhead(n, tmp):
    out = Path(tmp) / "cli.json"
    args = [CLI, "sim", "-m", "autonuma-2n24", "-w", "numa02", "-p", "autonuma", "--quiet",
            "--json", str(out)]
    cli, py = [], []
    for _ in range(n):
        cli.append(timed(lambda: subprocess.run(args, check=True, stdout=subprocess.DEVNULL)))
        py.append(timed(lambda: numabal.run("autonuma-2n24", "numa02", "autonuma").metrics))
    c, p = statistics.median(cli), statistics.median(py)
    print(f"numa02 run: CLI {c:.3f} s, numabal.run {p:.3f} s (medians of {n}): "
          f"{p / c:.3f}x (target <= 1.05x)")
    return p / c


def sweep_overhead(tmp):
    from ray.cluster_utils import Cluster
    import ray

    grid = Path(tmp) / "grid.toml"
    grid.write_text(GRID)
    cli_out = Path(tmp) / "cli.jsonl"
    c = timed(lambda: subprocess.run([CLI, "sweep", "--grid", str(grid), "--out", str(cli_out),
                                      "--jobs", "2", "--quiet"], check=True))
    started = time.perf_counter()
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                            "include_dashboard": False})
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        up = time.perf_counter() - started
        ray_out = Path(tmp) / "ray.jsonl"
        r = timed(lambda: numabal.sweep(grid, ray_out, executor="ray", progress=False))
    finally:
        ray.shutdown()
        cluster.shutdown()
    same = sorted(cli_out.read_text().splitlines()) == sorted(ray_out.read_text().splitlines())
    print(f"400-run sweep: CLI --jobs 2 {c:.1f} s, Ray (2 nodes x 1 CPU) {r:.1f} s "
          f"(+{up:.1f} s to start the cluster): {r / c:.3f}x (target <= 1.3x); "
          f"results {'identical' if same else 'DIFFERENT'}")
    return r / c, same


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    with tempfile.TemporaryDirectory(prefix="numabal-bench-py-") as tmp:
        run_overhead(n, tmp)
        sweep_overhead(tmp)


if __name__ == "__main__":
    main()
