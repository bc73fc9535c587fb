#!/usr/bin/env bash
# The live daemon's scenarios and their simulated twins, side by side (issue 16): numa01-like
# on the 4-node QEMU guest under numabal daemon (stable-daemon) with the softdirty sensor
# (kernel.numa_balancing=0) and with the hint sensor (numa_balancing=1), and the same runs in
# the simulator on the guest's preset (qemu-guest-4n8, workload numa01-like, the daemon's
# defaults, THP `always` as the guest's Debian kernel has it, and beside the hint sensor
# the model of that kernel's release, 6.1: daemon-tests.sh runs this after the 6.1 guest). For each: when both processes were placed (each with its workers on one node
# holding >= 90 % of its memory, on different nodes; checked every 5 s after the daemon
# started managing them, as the guest script checks), pages migrated (pgmigrate_success),
# of which by the kernel's NUMA balancing (numa_pages_migrated), the daemon's page moves
# (its stop line's pages_moved: base pages, a huge page's 512) and its CPU time.
#
# Usage: scripts/twin.sh [LOG_DIR]   LOG_DIR: the guest scenarios' output
#   (default target/vm/logs, written by scripts/vm/daemon-tests.sh); without it only the
#   simulated column is filled. Wall time: about 10 s after the release build.
# Simulated timing is that of the preset's assumed machine, the guest's is TCG's: compare
# placement and page counts, and the daemon's CPU only as a share of one CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
logs=${1:-target/vm/logs}
scripts/release-build.sh -q
bin=target/release/numabal
out=target/twin
mkdir -p "$out"
# The guest's daemon runs 60 s after it starts managing the processes (then SIGTERM):
# each twin runs once to find when its daemon managed both, then to 60 s after that.
for sensor in softdirty hint; do
  host=()
  [ $sensor = hint ] && host=(--set daemon.kernel=6.1)
  run() {
    "$bin" sim -m qemu-guest-4n8 -w numa01-like -p stable-daemon --quiet \
      --set daemon.sensor=$sensor "${host[@]}" --set sim.transparent_hugepage=always \
      --set sim.numastat_every_s=1 "$@" --json "$out/$sensor.json" > /dev/null
  }
  run
  end=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]));
print(max(l["t_s"] for l in r["daemon"]["log"] if l.get("managed")) + 60)' "$out/$sensor.json")
  run --set sim.max_time_s="$end"
done
python3 - "$out" "$logs" <<'EOF'
import json, os, re, sys
out, logs = sys.argv[1], sys.argv[2]
sys.path.insert(0, "scripts")
from sim_predicts_live import placed  # the guest scripts' check, on one numastat sample

def sim(sensor):
    r = json.load(open(os.path.join(out, sensor + ".json")))
    log = r["daemon"]["log"]
    managed = max(l["t_s"] for l in log if l.get("managed"))
    stop = log[-1]["stop"]
    samples = r["numastat"]
    at = None
    for k in range(1, 1000):  # every 5 s after the daemon manages both: the first sample then
        s = next((x for x in samples if x["t_s"] >= managed + 5 * k - 1e-9), None)
        if s is None:
            break
        if placed(s):
            at = 5 * k
            break
    return {
        "placed_s": at,
        "pgmigrate": r["metrics"]["pgmigrate_success"],
        "numa_pages_migrated": r["metrics"]["numa_pages_migrated"],
        "daemon_pages_moved": stop["pages_moved"],
        "cpu": (stop["cpu_s"], stop["wall_s"]),
    }

def live(scenario):
    path = os.path.join(logs, scenario + ".out")
    if not os.path.exists(path):
        return None
    line = [l for l in open(path, errors="replace") if l.startswith("twin:")]
    if not line:
        return None
    f = dict(kv.split("=", 1) for kv in line[-1].split()[1:])
    num = lambda k: None if f.get(k, "") in ("", "?") else float(f[k])
    return {
        "placed_s": num("placed_s"),
        "pgmigrate": num("pgmigrate_success"),
        "numa_pages_migrated": num("numa_pages_migrated"),
        "daemon_pages_moved": num("daemon_pages_moved"),
        "cpu": (num("daemon_cpu_s"), num("daemon_wall_s")),
    }

def cell(v, k):
    if v is None:
        return "(no guest run)"
    x = v[k]
    if k == "cpu":
        c, w = x
        return "?" if c is None or not w else f"{c:.2f} s in {w:.0f} s ({100 * c / w:.1f} % of a CPU)"
    if x is None:
        return "not placed" if k == "placed_s" else "?"
    return f"{x:.1f} s" if k == "placed_s" else f"{int(x):,}"

rows = [("placed, s after the daemon managed both (5 s checks)", "placed_s"),
        ("pages migrated (pgmigrate_success)", "pgmigrate"),
        ("... by the kernel (numa_pages_migrated)", "numa_pages_migrated"),
        ("the daemon's pages moved (base pages)", "daemon_pages_moved"),
        ("the daemon's CPU", "cpu")]
for sensor, scenario, what in [("softdirty", "daemon-numa01", "numa_balancing=0"),
                               ("hint", "daemon-hint", "numa_balancing=1")]:
    s, l = sim(sensor), live(scenario)
    print(f"\nnuma01-like under stable-daemon, sensor {sensor} ({what})")
    print(f"| figure | simulated (qemu-guest-4n8) | live (4-node TCG guest) |")
    print(f"|---|---|---|")
    for name, k in rows:
        print(f"| {name} | {cell(s, k)} | {cell(l, k)} |")
EOF
