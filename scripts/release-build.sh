#!/usr/bin/env bash
# The release build the repository's scripts share: numabal, the test programs and the
# Python module, always as one set. Cargo unifies features per build and pyo3's macros widen
# syn's, so a build of fewer packages compiles the workspace again under other features (66 s
# on 2 cores after the whole set, 2026-11-30) and puts that build's binaries in place.
#
# Usage: scripts/release-build.sh [CARGO BUILD OPTIONS...]   (e.g. -q)
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo build --release --locked -p numabal-cli -p numabal-testprogs -p numabal-py "$@"
