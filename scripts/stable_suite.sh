#!/usr/bin/env bash
# Stable-NUMA's single-server HPC evaluation as must-shows: `numabal suite hpc` (NPB SP, LU,
# BT, MG, CG, FT, IS, EP, UA, XSBench, Graph500, HPL; THP off; none, autonuma, stable) on
# stable-a and stable-b (the paper's Servers A and B), then scripts/check_stable_suite.py
# prints every must-show with the measured figure, the paper's and PASS/FAIL, and exits
# non-zero if any fails.
# Usage: scripts/stable_suite.sh [--set k=v]...     (extra arguments go to both suites)
# Environment: SEEDS (default 20), JOBS (runs in parallel; default one per core), OUT (where
# the JSON and the tables go; default a new temporary directory, kept).
# A long measurement (about 30 minutes or more on 2 cores): not part of scripts/test.sh/CI.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/release-build.sh -q
BIN=${CARGO_TARGET_DIR:-target}/release/numabal
SEEDS=${SEEDS:-20}
OUT=${OUT:-$(mktemp -d -t numabal-stable-suite.XXXXXX)}
mkdir -p "$OUT"
jobs=()
if [ -n "${JOBS:-}" ]; then jobs=(--jobs "$JOBS"); fi
for m in stable-a stable-b; do
  "$BIN" suite hpc -m "$m" --seeds "$SEEDS" ${jobs[@]+"${jobs[@]}"} --json "$OUT/$m.json" "$@" >"$OUT/$m.txt"
  echo "== $m ($OUT/$m.txt, $OUT/$m.json)"
  sed -n '/^Geometric means/,$p' "$OUT/$m.txt"
  echo
done
python3 scripts/check_stable_suite.py "$OUT/stable-a.json" "$OUT/stable-b.json"
