#!/usr/bin/env bash
# The Python package against the command line (scripts/bench_python.py): numabal.run against
# `numabal sim`, and a 400-run sweep on a local two-node Ray cluster against `numabal sweep`.
# Usage: scripts/bench-python.sh [N]   (N runs for the medians, default 5; about 4 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/release-build.sh -q
[ -x target/py-venv/bin/python ] || scripts/python-setup.sh
exec target/py-venv/bin/python scripts/bench_python.py "$@"
