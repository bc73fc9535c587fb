#!/usr/bin/env bash
# The guest's costs (issue 17, item 3): runs numa-costs (crates/numabal-testprogs/src/costs.rs)
# in the 4-node QEMU guest under kernel K and prints what it measured, one figure per line,
# as the machine preset qemu-guest-4n8 records them (docs/model-notes.md, "The guest's
# costs"). Writes target/vm/costs-K.out.
#
# Usage: scripts/vm/guest-costs.sh [--kernel K] [--runs N] [--mb N]
#   K: 6.1 (default), 6.12, 7.2 or a suite name; N runs (default 5) of N MiB (default 64).
# Needs scripts/vm/setup.sh --kernel K. Wall time: about 2 minutes (boot, 5 runs under TCG).
# Run it alone: TCG's vCPUs are host threads, and a busy host changes every figure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# shellcheck source=kernels.sh
. "$here/kernels.sh"
kernel=6.1 runs=5 mb=64
die() { echo "guest-costs: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --kernel|--runs|--mb) [ $# -ge 2 ] || die "$1 needs a value" ;;&
    --kernel) kernel=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    *) die "unknown argument '$1' (allowed: --kernel K, --runs N, --mb N)" ;;
  esac
done
suite=$(kernel_suite "$kernel")
[ -n "$suite" ] || die "--kernel must be one of $KERNEL_NAMES, got '$kernel'"
version=$(kernel_version "$suite")
scripts/release-build.sh -q
mkdir -p target/vm/scen
cat scripts/vm/scenarios/lib.sh scripts/vm/scenarios/costs.sh > target/vm/scen/costs.sh
out=target/vm/costs-$version.out
scripts/vm/run.sh --nodes 4 --kernel "$kernel" --timeout 600 --env "COSTS_RUNS=$runs" \
  --env "COSTS_MB=$mb" --scenario target/vm/scen/costs.sh --log "$out"
printf '\n== the guest'"'"'s costs, Linux %s (%s runs of %s MiB, medians)\n' "$version" "$runs" "$mb"
grep -E '^(cost|THP|FAIL)' "$out"
