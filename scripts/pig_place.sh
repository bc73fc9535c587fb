#!/usr/bin/env bash
# Seed 004, Figure 13: six `pig` guests on rhel-8n, unbound (no NUMA balancing) and each
# placed on its own node like `numactl -N n -m n` (n = 1, 3, 7, 4, 6, 5, numad's advice in
# the figure). Prints pig's per-guest "Avg" (work units of the guest / 5 threads) per seed,
# the mean and stddev across guests, and the must-show: placed mean >= 1.6 x unbound mean,
# placed stddev <= 10% of unbound stddev (stddev: population stddev across the six guests,
# averaged over seeds).
#
# Usage: scripts/pig_place.sh [SEEDS] [OUT_DIR]      (defaults: 5, a temporary directory)
# Env: NUMABAL (binary; default target/release/numabal, built if missing),
#      UNBOUND_POLICY (default none), PIG_TIME (sim.max_time_s, default 61.5: -s 60 after
#      the ~1.5 s initialising pass), EXTRA (more --set arguments, space separated).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${1:-5}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=${NUMABAL:-target/release/numabal}
[ -x "$BIN" ] || cargo build --release -p numabal-cli >&2
UNBOUND_POLICY=${UNBOUND_POLICY:-none}
PIG_TIME=${PIG_TIME:-61.5}
NODES=(1 3 7 4 6 5)
extra=()
for e in ${EXTRA:-}; do extra+=(--set "$e"); done

placed_sets=()
for i in "${!NODES[@]}"; do
  n=${NODES[$i]}
  # rhel-8n: node n has CPUs 10n..10n+9.
  placed_sets+=(--set "workload.process.$i.affinity=\"$((10 * n))-$((10 * n + 9))\""
    --set "workload.process.$i.mempolicy=\"bind:$n\"")
done

for s in $(seq 1 "$SEEDS"); do
  "$BIN" sim -m rhel-8n -w pig -p "$UNBOUND_POLICY" --seed "$s" --set "sim.max_time_s=$PIG_TIME" \
    "${extra[@]}" --json "$OUT/unbound_$s.json" >/dev/null
  "$BIN" sim -m rhel-8n -w pig -p none --seed "$s" --set "sim.max_time_s=$PIG_TIME" \
    "${placed_sets[@]}" "${extra[@]}" --json "$OUT/placed_$s.json" >/dev/null
done

python3 - "$OUT" "$SEEDS" <<'PY'
import json, statistics as st, sys
out, seeds = sys.argv[1], int(sys.argv[2])
agg = {}
for kind in ("unbound", "placed"):
    means, sds, allg = [], [], []
    for s in range(1, seeds + 1):
        r = json.load(open(f"{out}/{kind}_{s}.json"))
        g = [p["work_units"] / p["threads"] for p in r["processes"] if p["name"] == "pig"]
        m, sd = st.mean(g), st.pstdev(g)
        means.append(m); sds.append(sd); allg += g
        print(f"{kind:8} seed {s}: " + " ".join(f"{x:5.1f}" for x in g)
              + f"   mean {m:5.2f}  stddev {sd:5.2f}  local {r['metrics']['local_access_ratio']:.3f}")
    agg[kind] = (st.mean(means), st.mean(sds), st.pstdev(allg))
    print(f"{kind:8} over seeds: mean {agg[kind][0]:.2f}, stddev across guests {agg[kind][1]:.2f}"
          f" (pooled over seeds {agg[kind][2]:.2f})")
u, p = agg["unbound"], agg["placed"]
ratio = p[0] / u[0]
sdr = p[1] / u[1] if u[1] > 0 else float("inf")
print(f"published (Fig. 13): unbound mean 24.17 stddev 5.67; placed mean 44.33 stddev 0.47")
print(f"placed/unbound mean: {ratio:.2f} (must be >= 1.6): {'PASS' if ratio >= 1.6 else 'FAIL'}")
print(f"placed/unbound stddev: {sdr:.2f} (must be <= 0.10): {'PASS' if sdr <= 0.10 else 'FAIL'}")
PY
