#!/usr/bin/env bash
# The RHEL 7 memory brief, Figure 15: SPECjbb-like throughput (bops, summed over the four JVMs, mean over
# seeds) against warehouses per JVM on rhel-4n40, one column per policy.
#
# By default a run is what SPECjbb2005 runs: every warehouse count in one JVM invocation,
# 1, 2, ... up to the largest asked for, a 30 s ramp-up and 240 s of measurement each
# (group `warehouse` staggered by 270 s: warehouse k joins at 1 + 270 (k-1) s), so a point
# starts with the placement the earlier points left (a JVM numad bound to a node has its CPU
# use capped by that node). The throughput of point W is the work the JVMs did in its
# measurement interval (numastat samples carry the work done so far) over 240 s.
#
# Usage: scripts/specjbb_sweep.sh [-p POLICIES] [-w WAREHOUSES] [-s SEEDS] [-t SECONDS]
#                                 [-r RAMP_UP] [-i] [-j JOBS] [-o OUT_DIR]
#   -p  space-separated entries LABEL=POLICY[:SET1;SET2...] or just POLICY; each SET is a
#       --set KEY=VALUE applied to that column's runs (';' separates them, since cpulists
#       contain commas), e.g. "none autonuma numad-u85=numad:policy.u=85".
#       The label `bind` alone means numactl-style manual binding (JVM i on node i: affinity
#       to node i's CPUs and mempolicy bind:i, policy none), Fig. 15's light-blue line;
#       `bind-policy=bind` is the simulator's `bind` policy.
#       Default: "none bind numad-u85=numad:policy.u=85 numad-u100=numad:policy.u=100
#       autonuma stable".
#   -w  comma-separated warehouse counts reported (default 1,2,4,6,8,9,10,11,12,14,16)
#   -s  seeds 1..N (default 3)
#   -t  seconds per warehouse point (default 270: 30 s ramp-up + 240 s measurement)
#   -r  ramp-up left out of the throughput (default 30)
#   -i  independent points: one run per warehouse count, all warehouses from the start
#       (sim.warmup_s = the ramp-up)
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
INDEP=0
JOBS=2
OUT=""
while getopts "p:w:s:t:r:ij:o:h" o; do
  case $o in
    p) POLICIES=$OPTARG ;;
    w) WH=$OPTARG ;;
    s) SEEDS=$OPTARG ;;
    t) SECS=$OPTARG ;;
    r) RAMP=$OPTARG ;;
    i) INDEP=1 ;;
    j) JOBS=$OPTARG ;;
    o) OUT=$OPTARG ;;
    *) sed -n '2,30p' "$0"; exit 2 ;;
  esac
done
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT/runs"
BIN=${NUMABAL:-target/release/numabal}
[ -x "$BIN" ] || scripts/release-build.sh >&2
# rhel-4n40's node CPU lists (presets/machines/rhel-4n40.toml).
NODE_CPUS=("0,4,8,12,16,20,24,28,32,36" "2,6,10,14,18,22,26,30,34,38"
  "1,5,9,13,17,21,25,29,33,37" "3,7,11,15,19,23,27,31,35,39")
BIND_SETS=""
for i in 0 1 2 3; do
  BIND_SETS+="workload.process.$i.affinity=\"${NODE_CPUS[$i]}\";workload.process.$i.mempolicy=\"bind:$i\";"
done
WMAX=$(echo "$WH" | tr ',' '\n' | sort -n | tail -1)

# One line per run: label policy sets warehouses seed (warehouses 0: the sequence run)
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
  for s in $(seq 1 "$SEEDS"); do
    if [ "$INDEP" = 1 ]; then
      for w in ${WH//,/ }; do
        printf '%s|%s|%s|%s|%s\n' "$label" "$pol" "$sets" "$w" "$s" >>"$jobs_file"
      done
    else
      printf '%s|%s|%s|%s|%s\n' "$label" "$pol" "$sets" 0 "$s" >>"$jobs_file"
    fi
  done
done

run_one() {
  IFS='|' read -r label pol sets w s <<<"$1"
  args=(sim -m rhel-4n40 -w specjbb -p "$pol" --seed "$s")
  if [ "$w" = 0 ]; then
    # Point k (1-based) runs [1 + (k-1) SECS, 1 + k SECS); samples at its ramp-up's end
    # and at its end; the run lasts one tick past the last sample.
    at=$(python3 -c "import sys; k=int(sys.argv[1]); t=float(sys.argv[2]); r=float(sys.argv[3])
print(','.join(f'{1+(i-1)*t+r},{1+i*t}' for i in range(1,k+1)))" "$WMAX" "$SECS" "$RAMP")
    args+=(--set "sim.max_time_s=$((1 + WMAX * SECS + 1))" --set "sim.numastat_at_s=[$at]")
    for i in 0 1 2 3; do
      args+=(--set "workload.process.$i.group.1.threads=$WMAX"
        --set "workload.process.$i.group.1.stagger_s=$SECS")
    done
    out="$OUT/runs/${label}_seq_s${s}.json"
  else
    args+=(--set "sim.max_time_s=$SECS" --set "sim.warmup_s=$RAMP")
    for i in 0 1 2 3; do args+=(--set "workload.process.$i.group.1.threads=$w"); done
    out="$OUT/runs/${label}_w${w}_s${s}.json"
  fi
  IFS=';' read -ra extra <<<"$sets"
  for e in "${extra[@]}"; do [ -n "$e" ] && args+=(--set "$e"); done
  "$BIN" "${args[@]}" --json "$out" >/dev/null
}
export -f run_one
export BIN OUT SECS RAMP WMAX
start=$(date +%s)
tr '\n' '\0' <"$jobs_file" | xargs -0 -P "$JOBS" -I{} bash -c 'run_one "$1"' _ {}
echo "$(wc -l <"$jobs_file") runs in $(($(date +%s) - start)) s wall" >&2

python3 - "$OUT" "$WH" "$SEEDS" "$INDEP" "$SECS" "$RAMP" "${labels[@]}" <<'PY'
import json, sys
out, wh, seeds, indep = sys.argv[1], [int(w) for w in sys.argv[2].split(",")], int(sys.argv[3]), sys.argv[4] == "1"
secs, ramp, labels = float(sys.argv[5]), float(sys.argv[6]), sys.argv[7:]

def point(r, w):
    """(throughput, local ratio) of point w of a sequence run."""
    t0, t1 = 1 + (w - 1) * secs + ramp, 1 + w * secs
    at = {round(s["t_s"], 6): s for s in r["numastat"]}
    work = lambda t: sum(p.get("work_units", 0.0) for p in at[round(t, 6)]["processes"]
                         if p["name"] == "java")
    return (work(t1) - work(t0)) / (t1 - t0)

table = {}
for l in labels:
    for w in wh:
        tp, loc = [], []
        for s in range(1, seeds + 1):
            if indep:
                r = json.load(open(f"{out}/runs/{l}_w{w}_s{s}.json"))
                tp.append(r["metrics"]["throughput_per_s"])
                loc.append(r["metrics"]["local_access_ratio"])
            else:
                r = json.load(open(f"{out}/runs/{l}_seq_s{s}.json"))
                tp.append(point(r, w))
        table[(l, w)] = (sum(tp) / len(tp), sum(loc) / len(loc) if loc else None)
mode = "independent runs" if indep else "one SPECjbb2005 sequence per run"
print(f"throughput (bops, sum over 4 JVMs, mean over {seeds} seeds) vs warehouses per JVM ({mode})")
print(f"{'W':>3} " + " ".join(f"{l:>14}" for l in labels)
      + ("   local access ratio" if indep else ""))
for w in wh:
    print(f"{w:>3} " + " ".join(f"{table[(l, w)][0]:>14.0f}" for l in labels)
          + ("   " + " ".join(f"{table[(l, w)][1]:.2f}" for l in labels) if indep else ""))
with open(f"{out}/sweep.csv", "w") as f:
    f.write("warehouses," + ",".join(labels) + "\n")
    for w in wh:
        f.write(f"{w}," + ",".join(f"{table[(l, w)][0]:.1f}" for l in labels) + "\n")
json.dump({"seeds": seeds, "mode": mode, "warehouses": wh, "policies": labels,
           "throughput_per_s": {l: [table[(l, w)][0] for w in wh] for l in labels}},
          open(f"{out}/sweep.json", "w"), indent=1)
print(f"written: {out}/sweep.csv, {out}/sweep.json")

# Figure 15's shape, where the columns exist.
def col(l):
    return [table[(l, w)][0] for w in wh] if l in labels else None
b, a, n = col("bind"), col("autonuma"), col("none")
u85, u100 = col("numad-u85"), col("numad-u100")
checks = []
if b and a:
    r = [a[i] / b[i] for i, w in enumerate(wh) if w <= 10]
    checks.append((f"autonuma near bind up to 10 warehouses (min autonuma/bind {min(r):.3f} >= 0.95)",
                   min(r) >= 0.95))
if n:
    others = [l for l in labels if l != "none"]
    below = [f"{l} at W={w} ({col(l)[i] / n[i]:.3f} x none)" for i, w in enumerate(wh)
             for l in others if col(l)[i] < n[i]]
    checks.append(("none lowest at every warehouse count"
                   + (f" (below it: {', '.join(below)})" if below else ""), not below))
if b and u85 and u100:
    drop = lambda c: next((w for i, w in enumerate(wh) if c[i] < 0.95 * b[i]), None)
    d85, d100 = drop(u85), drop(u100)
    checks.append((f"numad -u 85 falls below 95% of bind at W={d85}, -u 100 at W={d100}: "
                   f"-u 85 first, past 85% of the CPUs (W > 8.5)",
                   d85 is not None and d85 > 8.5 and (d100 is None or d100 > d85)))
for text, ok in checks:
    print(f"{'PASS' if ok else 'FAIL'}: {text}")
PY
