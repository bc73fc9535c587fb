"""``python -m numabal sweep GRID --out FILE [--ray-address ADDR]``: ``numabal sweep`` of a
grid file, on this machine's cores or as Ray tasks on a cluster. Bad input: one line on
stderr, exit status 2, nothing written (as the command line)."""

from __future__ import annotations

import argparse
import sys

import numabal


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m numabal")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sw = sub.add_parser("sweep", help="a grid of runs into a results file (resumed)")
    sw.add_argument("grid", help="the grid, a TOML file as `numabal sweep --grid` reads")
    sw.add_argument("--out", "-o", required=True, help="the results file (JSON lines)")
    sw.add_argument("--executor", choices=["local", "ray"], default=None,
                    help="where the runs go (default: ray with --ray-address, else local)")
    sw.add_argument("--ray-address", help="a Ray cluster's address (e.g. 10.0.0.1:6379, "
                    "or auto for the one `ray start` made on this machine)")
    sw.add_argument("--jobs", type=int, help="local: runs at a time (default: every core)")
    sw.add_argument("--batch-size", type=int, help="ray: runs per task")
    sw.add_argument("--max-in-flight", type=int, help="ray: tasks out at once")
    sw.add_argument("--max-runs", type=int, help="stop after this many new runs")
    sw.add_argument("--quiet", action="store_true", help="no progress on stderr")
    a = ap.parse_args(argv)
    executor = a.executor or ("ray" if a.ray_address else "local")
    try:
        t = numabal.sweep(a.grid, a.out, executor, jobs=a.jobs, max_runs=a.max_runs,
                          ray_address=a.ray_address, batch_size=a.batch_size,
                          max_in_flight=a.max_in_flight, progress=not a.quiet)
    except numabal.InputError as e:
        print(f"numabal: {e}", file=sys.stderr)
        return 2
    if not a.quiet:
        print(f"numabal sweep: {t.num_rows} runs of the grid in {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
