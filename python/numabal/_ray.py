"""A sweep's runs as Ray tasks.

The driver builds the grid (every scenario checked before any task starts, as ``numabal
sweep`` does), leaves out the runs already in the results file, and sends the rest in
batches (Ray's guidance: tasks of well over 10 ms, here many runs each). At most
``max_in_flight`` batches are out at once; each finished batch's lines are appended to the
results file by the driver alone, each run once (a run whose line is there already, from
a retried task or an earlier sweep, is not written again). A task lost with its worker or
node is retried by Ray (``max_retries``); one that still fails is sent again by the
driver, up to ``RESUBMITS`` times, before the sweep stops with the error (the file keeps
every run finished so far: the next sweep resumes).

The cluster is the one this process is connected to when Ray is initialized already (as a
notebook that called ``ray.init`` is), else the one at ``address`` (``None``: a cluster found
through ``RAY_ADDRESS`` or a new local one, as ``ray.init`` decides).

A task builds the grid again from its text (cached per worker process) and runs its
indices with the GIL released. A grid that names files by relative paths is read from the
driver's working directory, which the task enters first.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Optional

from . import _numabal

RESUBMITS = 3

_plans: dict = {}


def _plan(grid: tuple, cwd: str):
    key = (grid, cwd)
    if key not in _plans:
        _plans.clear()
        _plans[key] = _numabal.Sweep(*grid)
    return _plans[key]


def _run_batch(grid: tuple, cwd: str, indices: list) -> list:
    if os.getcwd() != cwd and os.path.isdir(cwd):
        os.chdir(cwd)
    return _plan(grid, cwd).run(indices)


def _batches(todo: list, batch_size: int) -> list:
    """Runs dealt round-robin: a grid's order groups runs of one policy or machine, whose
    costs differ by tens of times; dealt, every batch costs about the same, and the last
    ones end together."""
    n = max(1, -(-len(todo) // batch_size))
    return [todo[k::n] for k in range(n)]


def sweep_on_ray(
    grid: tuple,
    out: str,
    address: Optional[str] = None,
    batch_size: Optional[int] = None,
    max_in_flight: Optional[int] = None,
    max_runs: Optional[int] = None,
    progress: bool = True,
) -> None:
    import ray

    plan = _numabal.Sweep(*grid)
    keys = plan.keys()
    done = set(_numabal.results_done(out))
    todo = [i for i, k in enumerate(keys) if k not in done]
    if max_runs is not None:
        todo = todo[:max_runs]
    say = (lambda m: print(f"numabal sweep: {m}", file=sys.stderr, flush=True)) if progress else (
        lambda m: None
    )
    say(f"{len(keys)} runs in the grid, {len(keys) - len(todo)} already in {out}, "
        f"{len(todo)} to run now on Ray")
    if not todo:
        return
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False, include_dashboard=False)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    if batch_size is None:
        # About four batches per CPU: big enough to dwarf a task's overhead, small enough
        # that a lost node costs little and the last batches end together.
        batch_size = max(1, min(64, len(todo) // (4 * cpus)))
    if max_in_flight is None:
        max_in_flight = 2 * cpus
    task = ray.remote(num_cpus=1, max_retries=3)(_run_batch)
    cwd = os.getcwd()
    queue = [(b, 0) for b in _batches(todo, batch_size)]
    queue.reverse()  # pop() takes them in grid order
    pending: dict = {}
    written = set(done)
    finished = 0
    started = time.monotonic()
    with open(out, "a", encoding="utf-8") as f:
        while queue or pending:
            while queue and len(pending) < max_in_flight:
                batch, tries = queue.pop()
                pending[task.remote(grid, cwd, batch)] = (batch, tries)
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            batch, tries = pending.pop(ref)
            try:
                lines = ray.get(ref)
            except ray.exceptions.RayError as e:
                if tries >= RESUBMITS or isinstance(e, ray.exceptions.RayTaskError):
                    raise
                say(f"a batch of {len(batch)} runs was lost ({type(e).__name__}): sent again")
                queue.append((batch, tries + 1))
                continue
            for line in lines:
                k = json.loads(line)["key"]
                if k in written:
                    continue
                # One write per line, flushed: a run is in the file whole or not at all.
                f.write(line + "\n")
                f.flush()
                written.add(k)
                finished += 1
            say(f"{finished}/{len(todo)} runs done ({time.monotonic() - started:.0f} s)")
