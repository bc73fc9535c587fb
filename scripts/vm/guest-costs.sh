#!/usr/bin/env bash
# The guest's costs (issue 17, item 3): runs numa-costs (crates/numabal-testprogs/src/costs.rs)
# in the 4-node QEMU guest under kernel K and prints what it measured, one figure per line,
# as the machine preset qemu-guest-4n8 records them (docs/model-notes.md, "The guest's
# costs"). With --tiered, in the tiered guest instead (run.sh --nodes 2 --cxl-mb 1024, whose
# preset qemu-guest-tiered records them; numa-costs uses the two nodes with CPUs). Writes
# target/vm/costs-K.out, or target/vm/costs-K-tiered.out.
#
# Usage: scripts/vm/guest-costs.sh [--kernel K] [--runs N] [--mb N] [--tiered]
#   K: 6.1 (default), 6.12, 7.2 or a suite name; N runs (default 5) of N MiB (default 64).
# Needs scripts/vm/setup.sh --kernel K. Wall time: about 2 minutes (boot, 5 runs under TCG).
# Run it alone: TCG's vCPUs are host threads, and a busy host changes every figure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# shellcheck source=kernels.sh
. "$here/kernels.sh"
kernel=6.1 runs=5 mb=64 guest=(--nodes 4) tag=""
die() { echo "guest-costs: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --kernel|--runs|--mb) [ $# -ge 2 ] || die "$1 needs a value" ;;&
    --kernel) kernel=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --mb) mb=$2; shift 2 ;;
    --tiered) guest=(--nodes 2 --cxl-mb 1024) tag=-tiered; shift ;;
    *) die "unknown argument '$1' (allowed: --kernel K, --runs N, --mb N, --tiered)" ;;
  esac
done
suite=$(kernel_suite "$kernel")
[ -n "$suite" ] || die "--kernel must be one of $KERNEL_NAMES, got '$kernel'"
version=$(kernel_version "$suite")
scripts/release-build.sh -q
mkdir -p target/vm/scen
cat scripts/vm/scenarios/lib.sh scripts/vm/scenarios/costs.sh > target/vm/scen/costs.sh
out=target/vm/costs-$version$tag.out
scripts/vm/run.sh "${guest[@]}" --kernel "$kernel" --timeout 600 --env "COSTS_RUNS=$runs" \
  --env "COSTS_MB=$mb" --scenario target/vm/scen/costs.sh --log "$out"
printf '\n== the guest'"'"'s costs, Linux %s%s (%s runs of %s MiB, medians)\n' "$version" "${tag:+, the tiered guest}" "$runs" "$mb"
grep -E '^(cost|THP|FAIL)' "$out"
