"""A sweep on a Ray cluster of two nodes on 127.0.0.1 (a head and a second node, each its
own processes: ``ray.cluster_utils.Cluster``, Ray's own test cluster), the second node killed
mid-sweep: every run ends in the results file exactly once, and the file holds the lines
``numabal sweep`` writes for the same grid."""

import json
import threading
import time

import numabal
import pytest

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

# 4 policies x 50 seeds = 200 runs of a few hundredths of a second each.
GRID_TOML = """machines = ["tiny-2n4"]
workloads = ["numa02"]
policies = ["none", "bind", "autonuma", "stable"]
seeds = 50
set = ["sim.max_time_s=3"]
"""


@pytest.fixture(scope="module")
def cluster():
    """One cluster for the module (its start costs seconds): the node-loss test, last,
    kills its second node."""
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1,
                                                      "include_dashboard": False})
    try:
        worker = c.add_node(num_cpus=1)
        c.wait_for_nodes()
        yield c, worker
    finally:
        ray.shutdown()
        c.shutdown()


def lines(path):
    return path.read_text().splitlines() if path.exists() else []


def test_python_m_numabal_sweep_on_a_cluster(cli, tmp_path, cluster):
    """The command line's path: `python -m numabal sweep --ray-address` connects by itself."""
    import subprocess
    import sys

    c, _ = cluster
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID_TOML.replace("seeds = 50", "seeds = 5"))
    out = tmp_path / "ray.jsonl"
    r = subprocess.run([sys.executable, "-m", "numabal", "sweep", str(grid), "--out", str(out),
                        "--ray-address", c.address], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "20/20 runs done" in r.stderr
    cli("sweep", "--grid", grid, "--out", tmp_path / "cli.jsonl", "--quiet")
    assert sorted(lines(out)) == sorted(lines(tmp_path / "cli.jsonl"))


def test_sweep_survives_a_lost_node(cli, tmp_path, cluster):
    c, worker = cluster
    grid = tmp_path / "grid.toml"
    grid.write_text(GRID_TOML)
    cli("sweep", "--grid", grid, "--out", tmp_path / "cli.jsonl", "--quiet")
    expected = sorted(lines(tmp_path / "cli.jsonl"))
    assert len(expected) == 200

    out = tmp_path / "ray.jsonl"
    ray.init(address=c.address, log_to_driver=False)
    assert len([n for n in ray.nodes() if n["Alive"]]) == 2
    result = {}

    def go():
        try:
            result["table"] = numabal.sweep(grid, out, executor="ray", batch_size=5,
                                            max_in_flight=4, progress=True)
        except BaseException as e:  # noqa: BLE001 - handed to the test's thread
            result["error"] = e

    t = threading.Thread(target=go)
    t.start()
    deadline = time.monotonic() + 300
    while len(lines(out)) < 40 and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    killed_at = len(lines(out))
    # SIGKILL to the second node's raylet, object store and workers: its tasks are lost.
    c.remove_node(worker, allow_graceful=False)
    print(f"killed the second node after {killed_at} runs", flush=True)
    t.join(timeout=600)
    assert not t.is_alive(), "the sweep did not end"
    assert "error" not in result, result.get("error")
    assert 0 < killed_at < 200, f"the node was killed after {killed_at} runs, not mid-sweep"
    got = lines(out)
    keys = [json.loads(line)["key"] for line in got]
    assert len(keys) == len(set(keys)) == 200, "every run exactly once"
    assert sorted(got) == expected, "the same results as numabal sweep"
    assert result["table"].num_rows == 200
    # A second sweep finds everything done and writes nothing.
    numabal.sweep(grid, out, executor="ray", progress=False)
    assert len(lines(out)) == 200
