#!/usr/bin/env bash
# The kernel NUMA-balancing models on the AutoNUMA benchmark table (2012) (issue 3): for each
# workload, the runtime ratio of `autonuma` (Linux 6.x) and `autonuma-2012` (the original
# AutoNUMA) to `bind` (target 1.00-1.10; AutoNUMA's published ratios 1.058, 1.020, 1.066,
# 1.040, 1.063) with hinting faults, their local share, pages migrated and task moves/swaps
# (autonuma-2012: exchanges, counted per task).
# Usage: scripts/autonuma_table.sh [--seed N] [--set k=v]...
# Runs one simulation at a time (JOBS=n for more).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/release-build.sh -q
BIN=target/release/numabal
JOBS=${JOBS:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# workload, published AutoNUMA/bind ratio (the AutoNUMA benchmark table (2012): 2012 AutoNUMA column / bind column)
rows="numa01 1.058
numa01_thread_alloc 1.020
numa02 1.066
numa02_smt 1.040
numa01_numa02 1.063"
policies="bind autonuma autonuma-2012"
printf '%-20s %-14s %8s %9s %8s %9s %12s %10s %12s %10s\n' workload policy "bind s" "policy s" ratio published hint_faults "local %" migrated "task mv/sw"
while read -r w pub; do
  for p in $policies; do
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
    "$BIN" sim -m autonuma-2n24 -w "$w" -p "$p" --json "$tmp/$w.$p.json" "$@" >/dev/null &
  done
done <<<"$rows"
wait
while read -r w pub; do
  for p in $policies; do
    [ "$p" = bind ] && continue
    python3 - "$w" "$pub" "$tmp" "$p" <<'PY'
import json, sys
w, pub, d, p = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
b = json.load(open(f"{d}/{w}.bind.json"))["metrics"]
a = json.load(open(f"{d}/{w}.{p}.json"))["metrics"]
r = a["runtime_s"] / b["runtime_s"]
hf = a["numa_hint_faults"]
loc = 100.0 * a["numa_hint_faults_local"] / hf if hf else 0.0
flag = "" if 1.0 <= r <= 1.10 else " OUT"
print(f"{w:<20} {p:<14} {b['runtime_s']:8.2f} {a['runtime_s']:9.2f} {r:8.3f}{flag:4} {pub:5.3f} {hf:12d} {loc:9.1f}% {a['numa_pages_migrated']:12d} {a['numa_task_migrated']:5d}/{a['numa_task_swapped']:<4d}")
PY
  done
done <<<"$rows"
