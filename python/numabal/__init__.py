"""numabal from Python: the simulator's commands, results as Arrow tables.

The runs are the command line's own (the native module calls the same Rust functions as
``numabal sim``, ``compare``, ``suite`` and ``sweep``): the same inputs and seed give the
same JSON, byte for byte, and bad input raises :class:`InputError` with the command's
one-line message. Runs release the GIL.

>>> import numabal
>>> r = numabal.run("autonuma-2n24", "numa02", "autonuma")
>>> r.metrics["runtime_s"]                                      # doctest: +SKIP
>>> r.series.to_pandas()                                        # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

from . import _numabal
from ._numabal import InputError

__all__ = [
    "InputError",
    "Result",
    "Compare",
    "Suite",
    "presets",
    "run",
    "compare",
    "suite",
    "sweep",
    "results",
]
__version__: str = _numabal.__version__

PathLike = Union[str, "os.PathLike[str]"]


def _sets(set: Optional[Mapping[str, Any]]) -> list[str]:
    """``{"sim.max_time_s": 60}`` as the command's ``--set KEY=VALUE`` strings."""
    if set is None:
        return []
    if not isinstance(set, Mapping):
        raise InputError(f"set: is {type(set).__name__} (allowed: a dict of field: value)")
    out = []
    for k, v in set.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (list, tuple)):
            v = json.dumps(list(v))
        out.append(f"{k}={v}")
    return out


def _table(rows: list[dict]):
    import pyarrow as pa

    return pa.Table.from_pylist(rows)


def _flat_metrics(metrics: Mapping[str, Any]) -> dict:
    """The numeric and text metrics (nested ones left out: they are in the JSON)."""
    return {k: v for k, v in metrics.items() if not isinstance(v, (dict, list))}


def presets() -> dict[str, list[dict]]:
    """Machines, workloads, policies and suites, as ``numabal list`` shows them."""
    return _numabal.presets()


class _Saved:
    """A command's result: ``json`` as its ``--json`` file, byte for byte, and ``text``,
    what it prints; ``data`` the JSON parsed."""

    def __init__(self, json_text: str, text: str):
        self.json: str = json_text
        self.text: str = text

    @cached_property
    def data(self) -> dict:
        return json.loads(self.json)


def _path(p: Optional[PathLike]) -> Optional[str]:
    return os.fspath(p) if p is not None else None


class Result(_Saved):
    """One run: ``json`` is the text of ``numabal sim --json``, byte for byte; ``text`` the
    summary it prints."""

    @property
    def metrics(self) -> dict:
        """The run's metrics, by the JSON's names (``runtime_s``, ``numa_hint_faults``...)."""
        return self.data["metrics"]

    @cached_property
    def processes(self):
        """One row per process: its runtime, threads, memory per node at its end."""
        return _table([dict(p) for p in self.data["processes"]])

    @cached_property
    def series(self):
        """The run over time, one row per sample and node (tidy): resident MiB, local
        access ratio, hinting faults, pages migrated, thread migrations, scan CPU time."""
        s = self.data["series"]
        # A counter a node never had (memory tiering's, on most nodes) is absent from it:
        # zeros there, so every row has every column.
        keys = sorted({k for n in s["nodes"] for k, v in n.items() if isinstance(v, list)})
        first = s["nodes"][0] if s["nodes"] else {}
        keys = [k for k in first if k in keys] + [k for k in keys if k not in first]
        rows = []
        for n in s["nodes"]:
            for i, t in enumerate(s["t_s"]):
                row = {"t_s": t, "node": n["node"]}
                for k in keys:
                    v = n.get(k)
                    row[k] = v[i] if v is not None else 0
                rows.append(row)
        return _table(rows)

    @cached_property
    def process_series(self):
        """Each process over time, one row per sample and process (``node_mb``: a list by
        node)."""
        s = self.data["series"]
        rows = []
        for p in s["processes"]:
            for j in range(len(p["local_access_ratio"])):
                i = p["from"] + j
                row = {"t_s": s["t_s"][i], "pid": p["pid"], "name": p["name"]}
                row["node_mb"] = [per_node[j] for per_node in p["node_mb"]]
                for k, v in p.items():
                    if isinstance(v, list) and k != "node_mb":
                        row[k] = v[j]
                rows.append(row)
        return _table(rows)

    def __repr__(self) -> str:
        sc = self.data["scenario"]
        return (
            f"<numabal.Result {sc['workload']} on {sc['machine']} under {sc['policy']}, "
            f"seed {sc['seed']}: runtime_s={self.metrics['runtime_s']}>"
        )


def run(
    machine: Optional[str] = None,
    workload: Optional[str] = None,
    policy: Optional[str] = None,
    seed: Optional[int] = None,
    set: Optional[Mapping[str, Any]] = None,
    *,
    scenario: Optional[PathLike] = None,
) -> Result:
    """``numabal sim``: a machine and a workload (preset names or TOML files) under a
    policy, or a scenario file. ``set`` overrides fields by their dotted names, as
    ``--set`` does: ``set={"sim.max_time_s": 60, "policy.scan_delay_ms": 100}``."""
    j, text = _numabal.run(
        machine=machine,
        workload=workload,
        policy=policy,
        seed=seed,
        sets=_sets(set),
        scenario=_path(scenario),
    )
    return Result(j, text)


def _run_rows(runs: list[dict], **fixed) -> list[dict]:
    rows = []
    for r in runs:
        sc = r["scenario"]
        row = dict(fixed)
        row.update(policy=sc["policy"], seed=sc["seed"], finished=r["finished"])
        row.update(_flat_metrics(r["metrics"]))
        rows.append(row)
    return rows


class Compare(_Saved):
    """``numabal compare``: ``json`` as its ``--json`` file, ``text`` the table it prints."""

    @cached_property
    def runs(self):
        """One row per run: policy, seed, finished and the run's metrics."""
        d = self.data
        rows = []
        for p in d["policy_order"]:
            rows += _run_rows(d["policies"][p]["runs"])
        return _table(rows)

    @cached_property
    def summary(self):
        """One row per policy: the figures of the printed table (means over seeds)."""
        d = self.data
        rows = []
        for p in d["policy_order"]:
            pr = d["policies"][p]
            row = {"policy": p}
            row.update({f"runtime_s_{k}": v for k, v in pr["runtime_s"].items()})
            row.update(pr["metrics"])
            rows.append(row)
        return _table(rows)


def compare(
    machine: Optional[str] = None,
    workload: Optional[str] = None,
    policies: Sequence[str] = (),
    seeds: int = 5,
    first_seed: int = 1,
    set: Optional[Mapping[str, Any]] = None,
    *,
    scenario: Optional[PathLike] = None,
    jobs: Optional[int] = None,
) -> Compare:
    """``numabal compare``: every policy over seeds ``first_seed .. first_seed+seeds-1``,
    ``jobs`` runs at a time (default: one per core)."""
    if isinstance(policies, str):
        policies = policies.split(",")
    j, text = _numabal.compare(
        list(policies),
        machine=machine,
        workload=workload,
        seeds=seeds,
        first_seed=first_seed,
        jobs=jobs,
        sets=_sets(set),
        scenario=_path(scenario),
    )
    return Compare(j, text)


class Suite(_Saved):
    """``numabal suite``: ``json`` as its ``--json`` file, ``text`` the tables it prints."""

    @cached_property
    def runs(self):
        """One row per run: workload, policy, seed, finished and the run's metrics."""
        d = self.data
        rows = []
        for w in d["workload_order"]:
            c = d["workloads"][w]
            for p in c["policy_order"]:
                rows += _run_rows(c["policies"][p]["runs"], workload=w)
        return _table(rows)

    @cached_property
    def geomean(self):
        """One row per policy and figure: the geometric means over the workloads."""
        rows = []
        for p, figures in self.data["geomean"].items():
            for figure, g in figures.items():
                row = {"policy": p, "figure": figure}
                row.update(g if isinstance(g, dict) else {"value": g})
                rows.append(row)
        return _table(rows)


def suite(
    suite: PathLike,
    machine: str,
    policies: Sequence[str] = (),
    seeds: Optional[int] = None,
    set: Optional[Mapping[str, Any]] = None,
    *,
    jobs: Optional[int] = None,
) -> Suite:
    """``numabal suite``: a suite (a preset or a TOML file) on a machine; ``policies`` and
    ``seeds`` replace the suite's when given."""
    if isinstance(policies, str):
        policies = policies.split(",")
    j, text = _numabal.suite(
        os.fspath(suite), machine, list(policies), seeds=seeds, sets=_sets(set), jobs=jobs
    )
    return Suite(j, text)


def _grid(grid: Union[PathLike, Mapping[str, Any]]) -> tuple[str, str, str]:
    """(kind, text, label) for the native module."""
    if isinstance(grid, Mapping):
        return "json", json.dumps(dict(grid)), "grid"
    if isinstance(grid, (str, os.PathLike)):
        return "file", os.fspath(grid), os.fspath(grid)
    raise InputError(
        f"grid: is {type(grid).__name__} (allowed: a TOML file's path, or a dict of the same)"
    )


def results(out: PathLike):
    """A results file (``numabal sweep --out``) as a table: one row per run, sorted by key;
    ``vary`` and ``metrics`` flattened into columns."""
    rows = []
    with open(out, encoding="utf-8") as f:
        for line in f:
            if not line.endswith("\n"):
                break  # cut short by an interrupted write: not a run
            r = json.loads(line)
            row = {k: r[k] for k in ("key", "machine", "workload", "policy", "seed", "finished")}
            row.update({f"vary.{k}": v for k, v in r["vary"].items()})
            row.update(_flat_metrics(r["metrics"]))
            rows.append(row)
    rows.sort(key=lambda r: r["key"])
    return _table(rows)


def sweep(
    grid: Union[PathLike, Mapping[str, Any]],
    out: PathLike,
    executor: str = "local",
    *,
    jobs: Optional[int] = None,
    max_runs: Optional[int] = None,
    ray_address: Optional[str] = None,
    batch_size: Optional[int] = None,
    max_in_flight: Optional[int] = None,
    progress: bool = True,
):
    """``numabal sweep``: the grid (a TOML file, or a dict with its keys) into the results
    file ``out``, one JSON line per run; runs already in ``out`` are not made again, whichever
    executor wrote them. ``executor="local"`` runs on this machine's cores (``jobs``);
    ``executor="ray"`` runs batches of runs as Ray tasks on the cluster at ``ray_address``
    (default: the one ``ray.init`` finds, or a local one). Returns :func:`results` of
    ``out`` for the grid's runs: one row per run."""
    kind, text, label = _grid(grid)
    if executor == "local":
        _numabal.sweep_local(kind, text, label, os.fspath(out), jobs, max_runs, not progress)
    elif executor == "ray":
        from ._ray import sweep_on_ray

        sweep_on_ray(
            (kind, text, label),
            os.fspath(out),
            address=ray_address,
            batch_size=batch_size,
            max_in_flight=max_in_flight,
            max_runs=max_runs,
            progress=progress,
        )
    else:
        raise InputError(f"executor: is {executor!r} (allowed: local, ray)")
    keys = set(_numabal.Sweep(kind, text, label).keys())
    t = results(out)
    mask = [k in keys for k in t.column("key").to_pylist()] if t.num_rows else []
    return t.filter(mask) if t.num_rows else t
