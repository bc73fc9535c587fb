#!/usr/bin/env bash
# Print the calibration table: autonuma-2n24 against the AutoNUMA benchmark table of
# the AutoNUMA benchmark table (2012) (docs/calibration.md). The same bounds are asserted by
# crates/numabal-sim/tests/it/calibration.rs. Usage: scripts/calibration.sh [--seed N]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/release-build.sh -q
BIN=target/release/numabal
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# workload, published bind seconds, none seconds, reverse-bind seconds (AutoNUMA benchmark table, 2012)
rows="numa01 196.07 305.36 378.34
numa01_thread_alloc 321.94 491.88 623.62
numa02 42.58 64.81 81.6
numa02_smt 39.99 73.16 77.8
numa01_numa02 237.43 366.96 368.35"
printf '%-20s %18s %26s %26s\n' workload "bind s (±25%)" "none/bind (±10%)" "reverse/bind (±10%)"
while read -r w pb pn pr; do
  for p in bind none reverse-bind; do
    "$BIN" sim -m autonuma-2n24 -w "$w" -p "$p" --json "$tmp/$p.json" "$@" >/dev/null
  done
  python3 - "$w" "$pb" "$pn" "$pr" "$tmp" <<'PY'
import json, sys
w, pb, pn, pr, d = sys.argv[1], *map(float, sys.argv[2:5]), sys.argv[5]
rt = {p: json.load(open(f"{d}/{p}.json"))["metrics"]["runtime_s"] for p in ("bind", "none", "reverse-bind")}
b, n, r = rt["bind"], rt["none"] / rt["bind"], rt["reverse-bind"] / rt["bind"]
def cell(got, want, tol):
    dev = got / want - 1
    return f"{got:7.3f} vs {want:6.3f} {dev:+6.1%}{'' if abs(dev) <= tol else ' OUT'}"
print(f"{w:<20} {b:7.2f} vs {pb:6.2f} {b/pb-1:+6.1%}{'' if abs(b/pb-1) <= .25 else ' OUT'}  {cell(n, pn/pb, .10)}  {cell(r, pr/pb, .10)}")
PY
done <<< "$rows"
