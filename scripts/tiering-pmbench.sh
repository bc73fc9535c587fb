#!/usr/bin/env bash
# The memory-tiering hot-page-selection test (Huang Ying, linux-mm 2022) in the simulator:
# pmbench_tiering on dram-pmem-2s96 under NUMA balancing's tiering mode with demotion on, in
# the series' configurations, each patch added to the one before:
#   base        numa_balancing=2 as in 5.18-6.0: every slow-tier fault promotes
#   hot         + hot-page selection by hint-fault latency (1000 ms)
#   ratelimit   + the promotion rate limit, 100 MB/s per target node (see docs/tiering.md)
#   autothresh  + the hot threshold's automatic adjustment (6.1's default)
# and the published ratios between consecutive rows beside the simulated ones, each judged
# against +-30 %. Writes target/tiering-pmbench/<config>.json and summary.txt.
# Usage: scripts/tiering-pmbench.sh [--seconds S] [--jobs N]
# Wall time: about 5 minutes on 2 cores (4 runs of 300 simulated s, about 90 s each).
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_RUN=300
JOBS=2
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_RUN=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    *) echo "usage: $0 [--seconds S] [--jobs N]" >&2; exit 2 ;;
  esac
done
BIN=${NUMABAL_BIN:-target/release/numabal}
[ -x "$BIN" ] || scripts/release-build.sh -q
OUT=target/tiering-pmbench
mkdir -p "$OUT"
common=(-m dram-pmem-2s96 -w pmbench_tiering -p autonuma --seed 1
  --set policy.numa_balancing=2 --set sim.demotion_enabled=true
  --set "workload.process.0.group.0.phase.1.seconds=$SECONDS_RUN")
declare -A extra=(
  [base]="--set policy.promote_hot_selection=false"
  [hot]="--set policy.promote_adjust_threshold=false"
  [ratelimit]="--set policy.promote_adjust_threshold=false --set policy.promote_rate_limit_mbps=100"
  [autothresh]="--set policy.promote_rate_limit_mbps=100"
)
one() {  # config: a run, its wall time on stderr
  local c=$1 start=$SECONDS
  read -r -a more <<< "${extra[$c]}"
  "$BIN" sim "${common[@]}" "${more[@]}" --json "$OUT/$c.json" > /dev/null 2> "$OUT/$c.err" ||
    { echo "tiering-pmbench: $c failed: $(tail -1 "$OUT/$c.err")" >&2; return 1; }
  echo "$c: $((SECONDS - start)) s" >&2
}
pids=()
for c in base hot ratelimit autothresh; do
  one "$c" & pids+=($!)
  if [ ${#pids[@]} -ge "$JOBS" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p"; done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import json, sys
out = sys.argv[1]
rows = ["base", "hot", "ratelimit", "autothresh"]
# Published (linux-mm, "memory tiering: hot page selection", v1-v4 cover letters, 2022):
# pmbench score (accesses/s) and promotion MB/s per configuration.
pub = {"base": (146887704.1, 725.6), "hot": (165695601.2, 544.0),
       "ratelimit": (162814569.8, 165.2), "autothresh": (170495294.0, 136.9)}
sim = {}
for r in rows:
    m = json.load(open(f"{out}/{r}.json"))["metrics"]
    sim[r] = (m["access_gib_per_s"], m["tiering"]["promote_mb_s"], m["tiering"])
print("config       access GiB/s  promote MB/s  demote MB/s  candidates   published score   MB/s")
for r in rows:
    t = sim[r][2]
    print(f"{r:<12} {sim[r][0]:>12.3f}  {sim[r][1]:>12.1f}  {t['demote_mb_s']:>11.1f}  "
          f"{t['pgpromote_candidate']:>10}   {pub[r][0]:>15,.0f}  {pub[r][1]:>5.1f}")
print()
print("step                    quantity   published  simulated  sim/pub   within 30 %")
for a, b in zip(rows, rows[1:]):
    for i, q in enumerate(["score", "promote"]):
        p = pub[b][i] / pub[a][i]
        s = sim[b][i] / sim[a][i]
        ok = abs(s / p - 1) <= 0.30
        print(f"{a + ' -> ' + b:<23} {q:<9} {p:>10.3f} {s:>10.3f} {s / p:>8.3f}   {'yes' if ok else 'NO'}")
PY
