#!/usr/bin/env bash
# Memory-tiering policies side by side on the DRAM + CXL preset: cache_tiering on
# dram-cxl-2s under none (first touch only), autonuma-tiering (numa_balancing=2 with
# demotion), tpp and damon-tiering (DAMOS migrate_hot/migrate_cold as
# samples/damon/mtier.c sets them up), over 10 seeds: the terminal table, the JSON and the HTML report with
# promotion and demotion over time (its `tiering` figure).
# Writes target/tiering-compare/{compare.json,report.html,compare.txt}.
# Usage: scripts/tiering-compare.sh [--seeds K] [--jobs N]
# Wall time: about 4 minutes on 2 cores (40 runs of about 230 simulated s, 3-9 s each).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=10
JOBS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seeds) SEEDS=$2; shift 2 ;;
    --jobs) JOBS=(--jobs "$2"); shift 2 ;;
    *) echo "usage: $0 [--seeds K] [--jobs N]" >&2; exit 2 ;;
  esac
done
BIN=${NUMABAL_BIN:-target/release/numabal}
[ -x "$BIN" ] || scripts/release-build.sh -q
OUT=target/tiering-compare
mkdir -p "$OUT"
"$BIN" compare -m dram-cxl-2s -w cache_tiering --policies none,autonuma-tiering,tpp,damon-tiering \
  --seeds "$SEEDS" ${JOBS[@]+"${JOBS[@]}"} --json "$OUT/compare.json" --html "$OUT/report.html" \
  | tee "$OUT/compare.txt"
python3 - "$OUT/compare.json" <<'PY' | tee -a "$OUT/compare.txt"
import json, statistics, sys
c = json.load(open(sys.argv[1]))
print("\npolicy              runtime s (median)  promoted MB/s  demoted MB/s  DRAM GiB (mean)")
for p in c["policy_order"]:
    runs = c["policies"][p]["runs"]
    def med(f):
        return statistics.median(f(r["metrics"].get("tiering") or {}, r["metrics"]) for r in runs)
    # The top tier's mean memory in use (runs without memory tiering have no tiers).
    tiered = all((r["metrics"].get("tiering") or {}).get("tiers") for r in runs)
    dram = f"{med(lambda t, m: t['tiers'][0]['mean_mb'] / 1024):.1f}" if tiered else "-"
    print(f"{p:<20}{med(lambda t, m: m['runtime_s']):>18.1f}"
          f"{med(lambda t, m: t.get('promote_mb_s', 0.0)):>15.1f}"
          f"{med(lambda t, m: t.get('demote_mb_s', 0.0)):>14.1f}{dram:>17}")
PY
