#!/usr/bin/env bash
# Simulator speed: simulated seconds per wall-clock second and peak memory, for
#   1. numa01 under `none` on autonuma-2n24 (median of RUNS runs), and
#   2. the 200 GiB, 64-thread pmbench workload on xeon-2n104 for one simulated hour
#      under `none` and under the kernel model `autonuma` (the SPEC target, stated for the
#      kernel model: >= 60x real time within 4 GiB on one core).
# Usage: scripts/bench.sh [RUNS]   (default 3; PM_RUNS, default 1, for each pmbench hour).
# Prints a table; nothing is asserted.
#        BASE=/path/to/numabal scripts/bench.sh [RUNS]: the same runs with a baseline binary
#        (e.g. one built at an earlier commit), each scenario's runs alternating between the
#        two, and the ratio of median wall times (this tree / baseline; above 1 is slower).
# Wall time: about 3 minutes on one core (twice that with BASE).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
PM_RUNS=${PM_RUNS:-1}   # runs of each hour of pmbench
cargo build --release --locked -q -p numabal-cli
BIN=target/release/numabal
BASE=${BASE:-}
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "bench.sh needs GNU time (/usr/bin/time; Debian package 'time')" >&2; exit 2; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "bench.sh: BASE=$BASE is not an executable" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

one() {  # binary out-prefix machine workload policy [extra args...] -> appends "wall kb" to out-prefix.t
  local bin=$1 out=$2 m=$3 w=$4 p=$5; shift 5
  $TIME -f '%e %M' -o "$tmp/t" taskset -c 0 "$bin" sim -m "$m" -w "$w" -p "$p" --json "$out.json" --quiet "$@" >/dev/null
  cat "$tmp/t" >> "$out.t"
}

bench() {  # name machine workload policy runs [extra args...]
  local name=$1 m=$2 w=$3 p=$4 n=$5; shift 5
  rm -f "$tmp"/a.* "$tmp"/b.*
  for _ in $(seq 1 "$n"); do
    one "$BIN" "$tmp/a" "$m" "$w" "$p" "$@"
    [ -z "$BASE" ] || one "$BASE" "$tmp/b" "$m" "$w" "$p" "$@"
  done
  python3 - "$name" "$tmp" "$BASE" <<'PY'
import json, os, sys, statistics
name, d, base = sys.argv[1], sys.argv[2], sys.argv[3]
def load(k):
    rows = [l.split() for l in open(f"{d}/{k}.t")]
    walls, rss = [float(r[0]) for r in rows], [int(r[1]) for r in rows]
    sim = json.load(open(f"{d}/{k}.json"))["metrics"]["runtime_s"]
    return sim, walls, rss
sim, walls, rss = load("a")
w = statistics.median(walls)
line = f"{name:<44} {sim:>10.1f} {w:>9.2f} {sim / w:>10.0f}x {max(rss) / 1024:>9.0f}"
if base:
    bsim, bwalls, _ = load("b")
    bw = statistics.median(bwalls)
    line += f" {bw:>9.2f} {w / bw:>7.3f}"
print(f"{line}   runs={len(walls)} wall min/max {min(walls):.2f}/{max(walls):.2f}")
PY
}

if [ -n "$BASE" ]; then
  printf '%-44s %10s %9s %11s %9s %9s %7s\n' "scenario (one core)" "sim s" "wall s" "sim/wall" "peak MiB" "base s" "ratio"
else
  printf '%-44s %10s %9s %11s %9s\n' "scenario (one core)" "sim s" "wall s" "sim/wall" "peak MiB"
fi
bench "numa01 / autonuma-2n24 / none" autonuma-2n24 numa01 none "$RUNS"
bench "pmbench 200GiB x64 / xeon-2n104 / none" xeon-2n104 pmbench none "$PM_RUNS"
bench "pmbench 200GiB x64 / xeon-2n104 / autonuma" xeon-2n104 pmbench autonuma "$PM_RUNS"
