#!/usr/bin/env bash
# Seed 004, Figure 15: SPECjbb-like throughput (bops, summed over the four JVMs, mean over
# seeds) against warehouses per JVM on rhel-4n40, one column per policy.
#
# Usage: scripts/specjbb_sweep.sh [-p POLICIES] [-w WAREHOUSES] [-s SEEDS] [-t SECONDS]
#                                 [-r RAMP_UP] [-j JOBS] [-o OUT_DIR]
#   -p  space-separated entries LABEL=POLICY[:SET1;SET2...] or just POLICY; each SET is a
#       --set KEY=VALUE applied to that column's runs (';' separates them, since cpulists
#       contain commas), e.g. "none autonuma numad-u85=numad:policy.u=85".
#       The label `bind` alone means numactl-style manual binding (JVM i on node i: affinity
#       to node i's CPUs and mempolicy bind:i, policy none), Fig. 15's light-blue line;
#       `bind-policy=bind` is the simulator's `bind` policy.
#       Default: "none bind numad-u85=numad:policy.u=85 numad-u100=numad:policy.u=100
#       autonuma stable".
#   -w  comma-separated warehouse counts (default 1,2,4,6,8,9,10,11,12,14,16)
#   -s  seeds 1..N (default 3)
#   -t  simulated seconds per run (sim.max_time_s, default 270: SPECjbb2005's 30 s ramp-up
#       and 240 s measurement per warehouse count)
#   -r  ramp-up left out of the throughput (sim.warmup_s, default 30)
#   -j  parallel runs (default 2)
#   -o  output directory (default: a temporary one); writes runs/*.json, sweep.csv,
#       sweep.json and prints the table.
set -euo pipefail
cd "$(dirname "$0")/.."
POLICIES="none bind numad-u85=numad:policy.u=85 numad-u100=numad:policy.u=100 autonuma stable"
WH="1,2,4,6,8,9,10,11,12,14,16"
SEEDS=3
SECS=270
RAMP=30
JOBS=2
OUT=""
while getopts "p:w:s:t:r:j:o:h" o; do
  case $o in
    p) POLICIES=$OPTARG ;;
    w) WH=$OPTARG ;;
    s) SEEDS=$OPTARG ;;
    t) SECS=$OPTARG ;;
    r) RAMP=$OPTARG ;;
    j) JOBS=$OPTARG ;;
    o) OUT=$OPTARG ;;
    *) sed -n '2,25p' "$0"; exit 2 ;;
  esac
done
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT/runs"
BIN=${NUMABAL:-target/release/numabal}
[ -x "$BIN" ] || cargo build --release -p numabal-cli >&2
# rhel-4n40's node CPU lists (presets/machines/rhel-4n40.toml).
NODE_CPUS=("0,4,8,12,16,20,24,28,32,36" "2,6,10,14,18,22,26,30,34,38"
  "1,5,9,13,17,21,25,29,33,37" "3,7,11,15,19,23,27,31,35,39")
BIND_SETS=""
for i in 0 1 2 3; do
  BIND_SETS+="workload.process.$i.affinity=\"${NODE_CPUS[$i]}\";workload.process.$i.mempolicy=\"bind:$i\";"
done

# One line per run: label policy sets warehouses seed
jobs_file="$OUT/jobs.txt"
: >"$jobs_file"
labels=()
for entry in $POLICIES; do
  label=${entry%%=*}
  spec=${entry#*=}
  [ "$entry" = "$label" ] && spec=$entry
  if [ "$entry" = "bind" ]; then spec="none:$BIND_SETS"; fi
  pol=${spec%%:*}
  sets=""
  [ "$spec" != "$pol" ] && sets=${spec#*:}
  labels+=("$label")
  for w in ${WH//,/ }; do
    for s in $(seq 1 "$SEEDS"); do
      printf '%s|%s|%s|%s|%s\n' "$label" "$pol" "$sets" "$w" "$s" >>"$jobs_file"
    done
  done
done

run_one() {
  IFS='|' read -r label pol sets w s <<<"$1"
  args=(sim -m rhel-4n40 -w specjbb -p "$pol" --seed "$s" --set "sim.max_time_s=$SECS"
    --set "sim.warmup_s=$RAMP")
  for i in 0 1 2 3; do args+=(--set "workload.process.$i.group.1.threads=$w"); done
  IFS=';' read -ra extra <<<"$sets"
  for e in "${extra[@]}"; do [ -n "$e" ] && args+=(--set "$e"); done
  "$BIN" "${args[@]}" --json "$OUT/runs/${label}_w${w}_s${s}.json" >/dev/null
}
export -f run_one
export BIN OUT SECS RAMP
start=$(date +%s)
tr '\n' '\0' <"$jobs_file" | xargs -0 -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {}
echo "$(wc -l <"$jobs_file") runs in $(($(date +%s) - start)) s wall" >&2

python3 - "$OUT" "$WH" "$SEEDS" "${labels[@]}" <<'PY'
import json, sys
out, wh, seeds, labels = sys.argv[1], [int(w) for w in sys.argv[2].split(",")], int(sys.argv[3]), sys.argv[4:]
table = {}
for l in labels:
    for w in wh:
        tp, loc = [], []
        for s in range(1, seeds + 1):
            m = json.load(open(f"{out}/runs/{l}_w{w}_s{s}.json"))["metrics"]
            tp.append(m["throughput_per_s"]); loc.append(m["local_access_ratio"])
        table[(l, w)] = (sum(tp) / len(tp), sum(loc) / len(loc))
print("throughput (bops, sum over 4 JVMs, mean over %d seeds) vs warehouses per JVM" % seeds)
print(f"{'W':>3} " + " ".join(f"{l:>14}" for l in labels) + "   local access ratio")
for w in wh:
    print(f"{w:>3} " + " ".join(f"{table[(l, w)][0]:>14.0f}" for l in labels)
          + "   " + " ".join(f"{table[(l, w)][1]:.2f}" for l in labels))
with open(f"{out}/sweep.csv", "w") as f:
    f.write("warehouses," + ",".join(f"{l},{l}_local" for l in labels) + "\n")
    for w in wh:
        f.write(f"{w}," + ",".join(f"{table[(l, w)][0]:.1f},{table[(l, w)][1]:.4f}" for l in labels) + "\n")
json.dump({"seeds": seeds, "warehouses": wh, "policies": labels,
           "throughput_per_s": {l: [table[(l, w)][0] for w in wh] for l in labels},
           "local_access_ratio": {l: [table[(l, w)][1] for w in wh] for l in labels}},
          open(f"{out}/sweep.json", "w"), indent=1)
print(f"written: {out}/sweep.csv, {out}/sweep.json")
PY
