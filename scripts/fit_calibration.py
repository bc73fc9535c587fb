#!/usr/bin/env python3
"""Fit autonuma-2n24's memory-model parameters to the AutoNUMA benchmark table (2012).

The fit is a one-off tool (it needs scipy); its result is written into
presets/machines/autonuma-2n24.toml by hand and checked by the calibration tests
(crates/numabal-sim/tests/it/calibration.rs). See docs/calibration.md.

It runs numa02 (24 threads on 24 CPUs: two threads per core) and numa02_smt (12 threads:
one per core) under bind, none and reverse-bind, and minimises the squared log error of the
bind runtimes and of the none/bind and reverse/bind ratios, plus a weak pull towards the
starting values so parameters the table cannot pin down stay where physics put them.
The other three workloads use the same machine configurations (two threads per core, all
memory on one node or across the link) and are checked, not fitted.

Usage: scripts/fit_calibration.py [path/to/numabal]
"""
import json, math, subprocess, sys, tempfile, os
from concurrent.futures import ThreadPoolExecutor

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/numabal"
PARAMS = [  # (--set key, start value)
    ("machine.memory.local_latency_ns", 90.8),
    ("machine.memory.controller_gib_s", 12.84),
    ("machine.memory.link_gib_s", 5.50),
    ("machine.memory.queue_scale_ns", 5.1),
    ("machine.core.outstanding_lines_per_thread", 7.33),
    ("machine.core.outstanding_lines_per_core", 7.87),
    ("machine.core.stream_ns_per_byte", 0.299),
    ("machine.core.smt_memory_throughput", 0.775),
]
# Published (AutoNUMA benchmark table, 2012): bind seconds, none/bind, reverse/bind.
TARGETS = {"numa02": (42.58, 1.522, 1.916), "numa02_smt": (39.99, 1.829, 1.945)}
REG = 0.02


def runtime(workload, policy, values):
    sets = []
    for (k, _), v in zip(PARAMS, values):
        sets += ["--set", f"{k}={v:.6g}"]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "r.json")
        subprocess.run([BIN, "sim", "-m", "autonuma-2n24", "-w", workload, "-p", policy, "--json", out, *sets],
                       check=True, stdout=subprocess.DEVNULL, timeout=120)
        return json.load(open(out))["metrics"]["runtime_s"]


def evaluate(values):
    jobs = [(w, p) for w in TARGETS for p in ("bind", "none", "reverse-bind")]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as ex:
        rts = list(ex.map(lambda wp: runtime(wp[0], wp[1], values), jobs))
    res = {}
    for i, w in enumerate(TARGETS):
        b, n, r = rts[3 * i: 3 * i + 3]
        res[w] = (b, n / b, r / b)
    return res


def loss(x):
    values = [s * math.exp(v) for (_, s), v in zip(PARAMS, x)]
    if values[5] < values[4] or values[7] > 2.0:
        return 10.0
    try:
        res = evaluate(values)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return 10.0
    l = 0.0
    for w, t in TARGETS.items():
        for got, want in zip(res[w], t):
            l += math.log(got / want) ** 2
    return l + REG * sum(v * v for v in x)


def main():
    from scipy.optimize import minimize
    r = minimize(loss, [0.0] * len(PARAMS), method="Nelder-Mead",
                 options={"maxiter": 400, "xatol": 1e-3, "fatol": 1e-6, "initial_simplex": None})
    values = [s * math.exp(v) for (_, s), v in zip(PARAMS, r.x)]
    for (k, _), v in zip(PARAMS, values):
        print(f"{k} = {v:.4g}")
    print("loss", r.fun)
    for w, (b, n, rr) in evaluate(values).items():
        print(f"{w}: bind {b:.2f} s, none/bind {n:.3f}, reverse/bind {rr:.3f}  (published {TARGETS[w]})")


if __name__ == "__main__":
    main()
