#!/usr/bin/env bash
# The 6.4 NUMA scan regression and its 6.7 recovery in the simulator (issue 17, item 5):
# autonuma-benchmark numa01 on lkp-csl-2sp9 (the 2-socket Cascade Lake where Intel's LKP
# reported fc137c0ddab2, "sched/numa: enhance vma scanning logic", as numa01.seconds
# +118.9 %) under the autonuma model of Linux 6.3 (before the per-VMA PID filter), 6.4 (with
# it), 6.6 (the last release before the 6.7 fixes), 6.7 (partial and inactive VMAs
# completed) and 6.12 (the starvation fix), SEEDS seeds each, nothing else changed.
# Prints each release's mean runtime, numa_pte_updates, numa_hint_faults and
# numa_pages_migrated, and the runtime against 6.3.
#
# Usage: scripts/kernel-versions.sh [SEEDS]   (default 3)
# Wall time: about 15 s with 3 seeds on 2 cores after the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
seeds=${1:-3}
scripts/release-build.sh -q
out=target/kernel-versions
mkdir -p "$out"
rm -f "$out/numa01.jsonl"
target/release/numabal sweep -m lkp-csl-2sp9 -w numa01 --policies autonuma --seeds "$seeds" \
  --each policy.kernel=6.3,6.4,6.6,6.7,6.12 -o "$out/numa01.jsonl" > /dev/null
python3 - "$out/numa01.jsonl" <<'PY'
import json, sys, statistics as st
runs = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    runs.setdefault(r["tunables"]["kernel"], []).append(r["metrics"])
order = sorted(runs, key=lambda k: tuple(int(x) for x in k.split(".")))
base = st.mean(m["runtime_s"] for m in runs[order[0]])
print(f"{'kernel':>7} {'runs':>4} {'runtime s':>10} {'vs ' + order[0]:>8} {'pte_updates':>12} {'hint_faults':>12} {'pages_migrated':>15}")
for k in order:
    ms = runs[k]
    rt = st.mean(m["runtime_s"] for m in ms)
    f = lambda key: st.mean(m[key] for m in ms)
    print(f"{k:>7} {len(ms):>4} {rt:>10.1f} {rt / base:>8.3f} {f('numa_pte_updates'):>12.0f} {f('numa_hint_faults'):>12.0f} {f('numa_pages_migrated'):>15.0f}")
PY
