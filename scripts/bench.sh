#!/usr/bin/env bash
# Simulator speed: simulated seconds per wall-clock second and peak memory, for
#   1. numa01 under `none` on autonuma-2n24 (median of RUNS runs), and
#   2. the 200 GiB, 64-thread pmbench workload on xeon-2n104 for one simulated hour
#      under `none` and under the kernel model `autonuma` (the SPEC target, stated for the
#      kernel model: >= 60x real time within 4 GiB on one core).
# Usage: scripts/bench.sh [RUNS]   (default 3). Prints a table; nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
cargo build --release --locked -q -p numabal-cli
BIN=target/release/numabal
TIME=/usr/bin/time
[ -x "$TIME" ] || { echo "bench.sh needs GNU time (/usr/bin/time; Debian package 'time')" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bench() {  # name machine workload policy runs [extra args...]
  local name=$1 m=$2 w=$3 p=$4 n=$5; shift 5
  local walls=() rss=() sim=""
  for i in $(seq 1 "$n"); do
    $TIME -f '%e %M' -o "$tmp/t" taskset -c 0 "$BIN" sim -m "$m" -w "$w" -p "$p" --json "$tmp/r.json" "$@" >/dev/null
    read -r wall kb < "$tmp/t"
    walls+=("$wall"); rss+=("$kb")
    sim=$(python3 -c "import json;print(json.load(open('$tmp/r.json'))['metrics']['runtime_s'])")
  done
  python3 - "$name" "$sim" "${walls[*]}" "${rss[*]}" <<'PY'
import sys, statistics
name, sim, walls, rss = sys.argv[1], float(sys.argv[2]), [float(x) for x in sys.argv[3].split()], [int(x) for x in sys.argv[4].split()]
w = statistics.median(walls)
print(f"{name:<44} {sim:>10.1f} {w:>9.2f} {sim / w:>10.0f}x {max(rss) / 1024:>9.0f}   runs={len(walls)} wall min/max {min(walls):.2f}/{max(walls):.2f}")
PY
}

printf '%-44s %10s %9s %11s %9s\n' "scenario (one core)" "sim s" "wall s" "sim/wall" "peak MiB"
bench "numa01 / autonuma-2n24 / none" autonuma-2n24 numa01 none "$RUNS"
bench "pmbench 200GiB x64 / xeon-2n104 / none" xeon-2n104 pmbench none 1
bench "pmbench 200GiB x64 / xeon-2n104 / autonuma" xeon-2n104 pmbench autonuma 1
