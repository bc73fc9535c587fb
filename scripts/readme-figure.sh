#!/usr/bin/env bash
# Draws the README's figure, docs/demo-locality.svg: numa02 on the AutoNUMA benchmark
# machine, local access ratio over time under the placements (bind, none, reverse-bind,
# interleave) and the balancers (autonuma, stable), as `numabal demo` draws it. The test
# readme_figure_is_the_demos (crates/numabal-cli/tests/figures.rs) fails while the
# committed file differs from what the demo draws: run this, then commit the file.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cargo run --quiet --release --locked -p numabal-cli -- \
  demo --seeds 1 --quiet --svg-dir "$tmp" > /dev/null
cp "$tmp/locality.svg" docs/demo-locality.svg
echo "readme-figure: wrote docs/demo-locality.svg"
