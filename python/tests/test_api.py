"""The Python package against the command line: same inputs, same bytes."""

import json
import pathlib
import threading

import numabal
import pyarrow as pa
import pytest


def cli_json(cli, tmp_path, *args):
    out = tmp_path / "cli.json"
    cli(*args, "--quiet", "--json", out)
    return out.read_text()


def test_run_json_is_the_clis_byte_for_byte(cli, tmp_path):
    r = numabal.run("autonuma-2n24", "numa02", "autonuma")
    assert r.json == cli_json(cli, tmp_path, "sim", "-m", "autonuma-2n24", "-w", "numa02",
                              "-p", "autonuma")
    assert r.metrics["runtime_s"] == json.loads(r.json)["metrics"]["runtime_s"] > 0


def test_run_with_seed_and_set_and_a_scenario_file(cli, tmp_path):
    r = numabal.run("tiny-2n4", "numa02", "stable", seed=7,
                    set={"sim.max_time_s": 3, "policy.scan_period_ms": 500})
    assert r.json == cli_json(cli, tmp_path, "sim", "-m", "tiny-2n4", "-w", "numa02", "-p",
                              "stable", "--seed", 7, "--set", "sim.max_time_s=3",
                              "--set", "policy.scan_period_ms=500")
    sc = tmp_path / "s.toml"
    sc.write_text('seed = 4\nworkload = "numa02"\npolicy = "bind"\n'
                  '[machine]\npreset = "tiny-2n4"\n[sim]\nmax_time_s = 2\n')
    r = numabal.run(scenario=sc)
    assert r.json == cli_json(cli, tmp_path, "sim", "--scenario", sc)
    assert r.data["scenario"]["seed"] == 4


def test_the_summary_is_what_the_cli_prints(cli):
    r = numabal.run("tiny-2n4", "numa02", "autonuma", set={"sim.max_time_s": 2})
    printed = cli("sim", "-m", "tiny-2n4", "-w", "numa02", "-p", "autonuma", "--quiet",
                  "--set", "sim.max_time_s=2").stdout
    assert r.text == printed


def test_tables_are_arrow_and_convert(tmp_path):
    r = numabal.run("autonuma-2n24", "numa02", "autonuma")
    assert isinstance(r.processes, pa.Table) and r.processes.num_rows == 1
    nodes = len(r.data["series"]["nodes"])
    samples = len(r.data["series"]["t_s"])
    assert r.series.num_rows == nodes * samples
    df = r.series.to_pandas()
    assert set(df["node"]) == set(range(nodes))
    # The last sample's resident memory per node is the JSON's.
    last = df[df["t_s"] == df["t_s"].max()].sort_values("node")["resident_mb"].tolist()
    assert last == [n["resident_mb"][-1] for n in r.data["series"]["nodes"]]
    polars = pytest.importorskip("polars")
    assert polars.from_arrow(r.processes)["name"].to_list() == ["numa02"]
    assert r.process_series.num_rows > 0


def test_compare_and_suite_tables_and_text(cli, tmp_path):
    c = numabal.compare("tiny-2n4", "numa02", ["none", "autonuma"], seeds=3,
                        set={"sim.max_time_s": 2})
    assert c.json == cli_json(cli, tmp_path, "compare", "-m", "tiny-2n4", "-w", "numa02",
                              "--policies", "none,autonuma", "--seeds", 3,
                              "--set", "sim.max_time_s=2")
    assert c.runs.num_rows == 6
    assert sorted(set(c.runs.column("policy").to_pylist())) == ["autonuma", "none"]
    assert c.summary.num_rows == 2
    assert c.text == cli("compare", "-m", "tiny-2n4", "-w", "numa02", "--policies",
                         "none,autonuma", "--seeds", 3, "--set", "sim.max_time_s=2",
                         "--quiet").stdout
    suite = tmp_path / "two.toml"
    suite.write_text('name = "two"\ndescription = "numa02 twice"\n'
                     'workloads = ["numa02", "numa02_smt"]\npolicies = ["none", "bind"]\n'
                     'seeds = 2\n[set]\n"sim.max_time_s" = 2\n')
    s = numabal.suite(suite, "autonuma-2n24", seeds=1)
    assert s.data["workload_order"] == ["numa02", "numa02_smt"]
    assert s.runs.num_rows == 2 * 2
    assert s.geomean.num_rows > 0
    assert s.json == cli_json(cli, tmp_path, "suite", suite, "-m", "autonuma-2n24",
                              "--seeds", 1)
    assert s.text == cli("suite", suite, "-m", "autonuma-2n24", "--seeds", 1,
                         "--quiet").stdout


def cli_error(cli, *args):
    r = cli(*args, check=False)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert line.startswith("numabal: ") and "\n" not in line
    return line[len("numabal: "):]


def test_bad_input_raises_input_error_with_the_clis_message(cli, tmp_path):
    with pytest.raises(numabal.InputError) as e:
        numabal.run("no-such-machine", "numa02", "autonuma")
    assert str(e.value) == cli_error(cli, "sim", "-m", "no-such-machine", "-w", "numa02",
                                     "-p", "autonuma")
    with pytest.raises(numabal.InputError) as e:
        numabal.run("tiny-2n4", "numa02", "autonuma", set={"policy.no_such_key": 1})
    assert str(e.value) == cli_error(cli, "sim", "-m", "tiny-2n4", "-w", "numa02", "-p",
                                     "autonuma", "--set", "policy.no_such_key=1")
    assert isinstance(e.value, ValueError)
    grid = tmp_path / "g.toml"
    grid.write_text('machines = ["tiny-2n4"]\nworkloads = ["numa02"]\npolicies = ["autonuma"]\n'
                    '[vary]\n"policy.scan_delay_ms" = [100, -5]\n')
    out = tmp_path / "out.jsonl"
    with pytest.raises(numabal.InputError) as e:
        numabal.sweep(grid, out)
    assert str(e.value) == cli_error(cli, "sweep", "--grid", grid, "--out", out)
    assert not out.exists(), "nothing is written for bad input"
    with pytest.raises(numabal.InputError) as e:
        numabal.sweep({"machines": ["tiny-2n4"], "workloads": ["numa02"],
                       "policies": ["autonuma"], "colours": 3}, out)
    assert "colours" in str(e.value) and not out.exists()


GRID = {
    "machines": ["tiny-2n4"],
    "workloads": ["numa02"],
    "policies": ["none", "autonuma"],
    "seeds": 3,
    "set": ["sim.max_time_s=2"],
    "vary": {"policy.scan_delay_ms": [100, 1000]},
}
GRID_TOML = """machines = ["tiny-2n4"]
workloads = ["numa02"]
policies = ["none", "autonuma"]
seeds = 3
set = ["sim.max_time_s=2"]
[vary]
"policy.scan_delay_ms" = [100, 1000]
"""


def test_sweep_local_equals_the_cli_and_resumes(cli, tmp_path):
    """`vary` of a tunable `none` does not have fails for `none`: the grid keeps autonuma."""
    grid = dict(GRID, policies=["autonuma"])
    toml_grid = GRID_TOML.replace('["none", "autonuma"]', '["autonuma"]')
    (tmp_path / "g.toml").write_text(toml_grid)
    cli("sweep", "--grid", tmp_path / "g.toml", "--out", tmp_path / "cli.jsonl", "--quiet")
    out = tmp_path / "py.jsonl"
    t = numabal.sweep(grid, out, max_runs=2, progress=False)
    assert t.num_rows == 2
    t = numabal.sweep(grid, out, progress=False)  # resumed: the 4 others
    assert t.num_rows == 6
    assert sorted(out.read_text().splitlines()) == sorted(
        (tmp_path / "cli.jsonl").read_text().splitlines())
    assert set(t.column("vary.policy.scan_delay_ms").to_pylist()) == {"100", "1000"}
    df = numabal.results(out).to_pandas()
    assert len(df) == 6 and df["runtime_s"].gt(0).all()


def test_runs_release_the_gil():
    ticks = 0
    stop = threading.Event()

    def count():
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    before = []
    t = threading.Thread(target=count)
    t.start()
    try:
        before.append(ticks)
        numabal.run("autonuma-2n24", "numa02", "stable")
        during = ticks - before[0]
    finally:
        stop.set()
        t.join()
    # With the GIL held for the run's 0.2 s, the counting thread would get no turn beyond
    # the interpreter's switch interval before the call (a few thousand ticks at most).
    assert during > 100_000, during


def test_presets_are_numabal_list():
    p = numabal.presets()
    assert {"machines", "workloads", "policies", "suites"} <= set(p)
    names = [m["name"] for m in p["machines"]]
    assert "autonuma-2n24" in names
    stable = next(x for x in p["policies"] if x["name"] == "stable")
    assert stable["sim"] is True


def test_python_m_numabal_sweep(cli, tmp_path):
    import subprocess
    import sys

    grid = tmp_path / "g.toml"
    grid.write_text(GRID_TOML.replace('["none", "autonuma"]', '["autonuma"]'))
    out = tmp_path / "out.jsonl"
    r = subprocess.run([sys.executable, "-m", "numabal", "sweep", str(grid), "--out", str(out),
                        "--quiet"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    cli("sweep", "--grid", grid, "--out", tmp_path / "cli.jsonl", "--quiet")
    assert sorted(out.read_text().splitlines()) == sorted(
        (tmp_path / "cli.jsonl").read_text().splitlines())
    bad = tmp_path / "bad.toml"
    bad.write_text('machines = ["no-such-machine"]\nworkloads = ["numa02"]\n'
                   'policies = ["none"]\n')
    r = subprocess.run([sys.executable, "-m", "numabal", "sweep", str(bad), "--out",
                        str(tmp_path / "bad.jsonl")], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr.strip() == "numabal: " + cli_error(cli, "sweep", "--grid", bad, "--out",
                                                       tmp_path / "bad.jsonl")
    assert not (tmp_path / "bad.jsonl").exists()


# The simulator tests' tiered machine and workload (crates/numabal-sim/tests/fixtures).
TIER_FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "crates/numabal-sim/tests/fixtures"


def test_tiering_counters_and_series_have_every_column(cli, tmp_path):
    m = TIER_FIXTURES / "tier-machine.toml"
    w = TIER_FIXTURES / "tier-workload.toml"
    r = numabal.run(str(m), str(w), "tpp")
    assert r.json == cli_json(cli, tmp_path, "sim", "-m", m, "-w", w, "-p", "tpp")
    t = r.metrics["tiering"]
    assert t["pgpromote_success"] > 0 and t["pgdemote_kswapd"] > 0
    df = r.series.to_pandas()
    # Promotions land on the DRAM node only; the CXL node's column is zeros, not missing.
    assert {"pgpromote_success", "pgdemote"} <= set(df.columns)
    assert df["pgpromote_success"].notna().all() and df["pgdemote"].notna().all()
    last = df[df["t_s"] == df["t_s"].max()].sort_values("node")
    assert last["pgpromote_success"].tolist()[0] == t["pgpromote_success"]
    assert last["pgpromote_success"].tolist()[1] == 0
