#!/usr/bin/env bash
# The RHEL 7 memory brief, Figure 13 (`pig_place_test.sh 6 5 8`): six `pig` guests (5 threads, 8000 MiB)
# on the 8-node rhel-8n, first unbound (RHEL 6: no NUMA balancing, policy `none`), then each
# placed like `numactl -N n -m n` on the node `numabal advise` names, asked the way the
# script asks numad: `numad -w 5:8000` before each launch, on the machine as the guests
# already placed leave it.
#
# For each seed and guest i, a short run (5 s: the guests' memory allocated, 2 s of CPU
# samples) with guests 0..i-1 placed on their advised nodes and guests i..5 not started
# gives the state; `numabal advise --state` on it gives guest i's node. Then the measured
# runs: all six guests unbound, all six placed, 61.5 s (pig -s 60 after its ~1.5 s
# initialising pass).
#
# Prints pig's per-guest "Avg" (work units of the guest / 5 threads), the mean and the
# standard deviation across the six guests per seed and over seeds, the same without the
# OS-noise model (informational), and the must-show: placed mean >= 1.6 x unbound mean,
# placed stddev <= 10% of unbound stddev (population stddev across guests, averaged over
# seeds).
#
# Usage: scripts/pig_place.sh [SEEDS] [OUT_DIR]      (defaults: 5, a temporary directory)
# Env: NUMABAL (binary; default target/release/numabal, built if missing),
#      KERNEL (--set for the kernel's scheduler; default sim.allow_numa_imbalance=false,
#      RHEL 6's 2.6.32; KERNEL= for Linux 6.x), PIG_TIME (sim.max_time_s, default 61.5).
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${1:-5}
OUT=${2:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=${NUMABAL:-target/release/numabal}
[ -x "$BIN" ] || scripts/release-build.sh >&2
KERNEL=${KERNEL-sim.allow_numa_imbalance=false}
PIG_TIME=${PIG_TIME:-61.5}
kernel=()
for e in $KERNEL; do kernel+=(--set "$e"); done
# The same guests without the OS-noise include.
grep -v '^include = \["os_noise"\]' presets/workloads/pig.toml >"$OUT/pig_quiet.toml"

# CPUs of a node, from `numabal topology` (numactl --hardware's "node N cpus: ..." line).
node_cpus() {
  "$BIN" topology -m rhel-8n | awk -v n="$1" '$1 == "node" && $2 == n && $3 == "cpus:" {
    s = ""; for (i = 4; i <= NF; i++) s = s (s == "" ? "" : ",") $i; print s }'
}

placed_sets() { # guest nodes... -> --set arguments
  local i=0 n
  for n in "$@"; do
    printf '%s\n' --set "workload.process.$i.affinity=\"$(node_cpus "$n")\"" \
      --set "workload.process.$i.mempolicy=\"bind:$n\""
    i=$((i + 1))
  done
}

for s in $(seq 1 "$SEEDS"); do
  nodes=()
  for i in 0 1 2 3 4 5; do
    sets=()
    if [ "$i" -gt 0 ]; then mapfile -t sets < <(placed_sets "${nodes[@]}"); fi
    for j in $(seq "$i" 5); do sets+=(--set "workload.process.$j.start_s=100000"); done
    "$BIN" sim -m rhel-8n -w pig -p none --seed "$s" --set sim.max_time_s=5 \
      "${kernel[@]}" "${sets[@]}" --json "$OUT/state_${s}_$i.json" >/dev/null
    n=$("$BIN" advise -m rhel-8n --state "$OUT/state_${s}_$i.json" --cpus 5 --mem-mb 8000)
    case "$n" in
      *[!0-9]*) echo "advice for guest $i is not one node: $n" >&2; exit 1 ;;
    esac
    nodes+=("$n")
  done
  echo "${nodes[*]}" >"$OUT/advice_$s.txt"
  mapfile -t sets < <(placed_sets "${nodes[@]}")
  for w in pig "$OUT/pig_quiet.toml"; do
    tag=$([ "$w" = pig ] && echo "" || echo "_quiet")
    "$BIN" sim -m rhel-8n -w "$w" -p none --seed "$s" --set "sim.max_time_s=$PIG_TIME" \
      "${kernel[@]}" --json "$OUT/unbound${tag}_$s.json" >/dev/null
    "$BIN" sim -m rhel-8n -w "$w" -p none --seed "$s" --set "sim.max_time_s=$PIG_TIME" \
      "${kernel[@]}" "${sets[@]}" --json "$OUT/placed${tag}_$s.json" >/dev/null
  done
done

python3 - "$OUT" "$SEEDS" "$KERNEL" <<'PY'
import json, statistics as st, sys
out, seeds, kernel = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(f"rhel-8n, six pig guests (5 threads, 8000 MiB), {seeds} seeds, kernel: {kernel or 'Linux 6.x'}")
for s in range(1, seeds + 1):
    print(f"seed {s}: numabal advise placed the guests on nodes {open(f'{out}/advice_{s}.txt').read().strip()}")
def summary(tag, show):
    agg = {}
    for kind in ("unbound", "placed"):
        means, sds = [], []
        for s in range(1, seeds + 1):
            r = json.load(open(f"{out}/{kind}{tag}_{s}.json"))
            g = [p["work_units"] / p["threads"] for p in r["processes"] if p["name"] == "pig"]
            m, sd = st.mean(g), st.pstdev(g)
            means.append(m); sds.append(sd)
            if show:
                print(f"{kind:8} seed {s}: " + " ".join(f"{x:5.1f}" for x in g)
                      + f"   mean {m:5.2f}  stddev {sd:5.2f}  local {r['metrics']['local_access_ratio']:.3f}")
        agg[kind] = (st.mean(means), st.mean(sds))
        if show:
            print(f"{kind:8} over seeds: mean {agg[kind][0]:.2f}, stddev across guests {agg[kind][1]:.2f}")
    return agg
a = summary("", True)
q = summary("_quiet", False)
u, p = a["unbound"], a["placed"]
ratio = p[0] / u[0]
sdr = p[1] / u[1] if u[1] > 0 else float("inf")
print("published (Fig. 13): unbound mean 24.17 stddev 5.67; placed mean 44.33 stddev 0.47")
print(f"without the OS-noise model: unbound mean {q['unbound'][0]:.2f} stddev {q['unbound'][1]:.2f}; "
      f"placed mean {q['placed'][0]:.2f} stddev {q['placed'][1]:.2f}; ratio {q['placed'][0] / q['unbound'][0]:.2f}")
print(f"placed/unbound mean: {ratio:.2f} (must be >= 1.6): {'PASS' if ratio >= 1.6 else 'FAIL'}")
print(f"placed/unbound stddev: {sdr:.2f} (must be <= 0.10): {'PASS' if sdr <= 0.10 else 'FAIL'}")
PY
