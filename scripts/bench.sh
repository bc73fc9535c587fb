#!/usr/bin/env bash
# Simulator speed, the table of docs/speed.md:
#   1. pmbench's simulated hour on xeon-2n104 (64 threads, 200 GiB) under `autonuma`:
#      simulated s per wall s and peak memory (target: >= 100x real time, <= 1 GiB);
#   2. numa01 on a 64-node x 16-CPU machine, its first 60 simulated s, under `autonuma`
#      and `stable` (target: >= 20x real time);
#   3. `compare -m autonuma-2n24 -w numa01 --policies none,bind,autonuma,stable --seeds 20`
#      on 2 cores, and the same with --jobs 1 (target: < 60 s, and >= 1.8x faster than
#      --jobs 1);
#   4. once: a 2-socket machine with 1 TiB (xeon-2n104 with 512 GiB a node) and a 768 GiB
#      pmbench-like working set, one simulated hour under `autonuma` (target: <= 4 GiB).
# Rows 1-3 are medians of RUNS runs (default 3); single runs on one core (taskset -c 0).
# Usage: scripts/bench.sh [RUNS]
#        BASE=/path/to/numabal scripts/bench.sh [RUNS]: every row also with a baseline
#        binary (e.g. built at an earlier commit), runs alternating between the two, and the
#        ratio of median wall times (this tree / baseline; below 1 is faster); the
#        --jobs 1 and 1 TiB rows run this tree only.
#        scripts/bench.sh --scale: the scaling table and its log-log fits
#        (scripts/bench_scale.py; BASE too).
# Prints a table; nothing is asserted. Wall time: about 20 minutes on 2 cores (30 with
# BASE); --scale about 15 (30).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/release-build.sh -q
BIN=target/release/numabal
BASE=${BASE:-}
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "bench.sh: BASE=$BASE is not an executable" >&2; exit 2; }
if [ "${1:-}" = --scale ]; then
  exec python3 scripts/bench_scale.py "$BIN" ${BASE:+"$BASE"}
fi
RUNS=${1:-3}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "bench.sh needs GNU time (/usr/bin/time; Debian package 'time')" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 scripts/bench_scale.py --machine 64 16 > "$tmp/scale-64n.toml"

one() {  # binary out-prefix cores numabal-args... -> appends "wall kb" to out-prefix.t
  local bin=$1 out=$2 cores=$3; shift 3
  if ! $TIME -f '%e %M' -o "$tmp/t" taskset -c "$cores" "$bin" "$@" >/dev/null 2>"$tmp/err"; then
    echo "bench.sh: $bin $* failed:" >&2
    cat "$tmp/err" >&2
    exit 1
  fi
  cat "$tmp/t" >> "$out.t"
}

# name runs cores sim-seconds(0: from the JSON) numabal-args... : one row (NOBASE=1: this
# tree only).
row() {
  local name=$1 n=$2 cores=$3 sim=$4; shift 4
  local base=$BASE
  [ "${NOBASE:-0}" = 0 ] || base=
  rm -f "$tmp"/a.* "$tmp"/b.* "$tmp/run.json"
  for _ in $(seq 1 "$n"); do
    one "$BIN" "$tmp/a" "$cores" "$@"
    [ -z "$base" ] || one "$base" "$tmp/b" "$cores" "$@"
  done
  python3 - "$name" "$tmp" "$base" "$sim" <<'PY'
import json, os, sys, statistics
name, d, base, sim = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def load(k):
    rows = [l.split() for l in open(f"{d}/{k}.t")]
    return [float(r[0]) for r in rows], [int(r[1]) for r in rows]
if sim == 0 and os.path.exists(f"{d}/run.json"):
    sim = json.load(open(f"{d}/run.json"))["metrics"]["runtime_s"]
walls, rss = load("a")
w = statistics.median(walls)
rate = f"{sim / w:>9.1f}x" if sim > 0 else f"{'':>10}"
line = f"{name:<58} {w:>8.2f} {rate} {max(rss) / 1024:>9.0f}"
if base:
    bw = statistics.median(load("b")[0])
    line += f" {bw:>8.2f} {w / bw:>6.3f}"
print(f"{line}   runs={len(walls)} wall min/max {min(walls):.2f}/{max(walls):.2f}", flush=True)
PY
}

hdr="%-58s %8s %10s %9s"
if [ -n "$BASE" ]; then
  printf "$hdr %8s %6s\n" "row" "wall s" "sim/wall" "peak MiB" "base s" "ratio"
else
  printf "$hdr\n" "row" "wall s" "sim/wall" "peak MiB"
fi
row "pmbench hour / xeon-2n104 / autonuma (>= 100x, <= 1 GiB)" "$RUNS" 0 0 \
  sim -m xeon-2n104 -w pmbench -p autonuma --quiet --json "$tmp/run.json"
for p in autonuma stable; do
  row "numa01 / 64 nodes x 16 CPUs / $p, 60 sim s (>= 20x)" "$RUNS" 0 60 \
    sim -m "$tmp/scale-64n.toml" -w numa01 -p "$p" --quiet --set sim.max_time_s=60
done
cmp=(compare -m autonuma-2n24 -w numa01 --policies none,bind,autonuma,stable --seeds 20 --quiet)
row "compare numa01 x 4 policies x 20 seeds, 2 cores (< 60 s)" "$RUNS" 0,1 0 "${cmp[@]}"
cp "$tmp/a.t" "$tmp/jobs2.t"
NOBASE=1 row "  the same, --jobs 1" "$RUNS" 0,1 0 "${cmp[@]}" --jobs 1
python3 - "$tmp" <<'PY'
import statistics, sys
d = sys.argv[1]
med = lambda f: statistics.median(float(l.split()[0]) for l in open(f"{d}/{f}"))
print(f"{'  compare on 2 cores against --jobs 1 (>= 1.8x)':<58} {med('a.t') / med('jobs2.t'):>8.2f}x")
PY
NOBASE=1 row "1 TiB, 768 GiB pmbench-like hour / autonuma (<= 4 GiB)" 1 0 0 \
  sim -m xeon-2n104 -w pmbench -p autonuma --quiet --json "$tmp/run.json" \
  --set machine.topology.memory_per_node=512GiB --set workload.process.0.region.0.size=768GiB
