#!/usr/bin/env bash
# The twin (issue 17): one workload in the 4-node QEMU guest under a real kernel's NUMA
# balancing (kernel.numa_balancing=1, THP always, /proc read every second:
# scripts/vm/scenarios/twin.sh), then the simulator's model of that kernel on the guest's
# machine preset with the same workload and the same sampling, then both side by side
# (`numabal twin`): the NUMA counters' totals within ±25 %, the same final placement, the
# time to converge within ±30 %, PASS or FAIL per figure. Exit status 1 if any failed.
#
# Usage: scripts/vm/twin.sh [--kernel K] [--workload W] [--machine M] [--trace]
#   K: 6.1 (default), 6.12, 7.2 (or bookworm, trixie, sid); W: numa01-like (default),
#   numa02-like or perfbench (perf bench numa mem -p 4 -t 1 -P 160 -s 40 -zZ0c);
#   M: the simulated machine (default qemu-guest-4n8). --trace: the guest also records the
#   kernel's task-move, NUMA-placement, VMA-skip and migration tracepoints and prints them
#   after its samples (scenarios/twin.sh, TWIN_TRACE).
# Writes target/twin/W-K.{guest.out,sim.json,json,svg}. Needs scripts/vm/setup.sh --kernel K.
# Wall time: about 2 minutes per workload (a guest boot and a 40-60 s run, then seconds of
# simulation).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# shellcheck source=kernels.sh
. "$here/kernels.sh"
kernel=6.1 workload=numa01-like machine=qemu-guest-4n8 trace=0
die() { echo "twin: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --kernel|--workload|--machine) [ $# -ge 2 ] || die "$1 needs a value" ;;&
    --kernel) kernel=$2; shift 2 ;;
    --workload) workload=$2; shift 2 ;;
    --machine) machine=$2; shift 2 ;;
    --trace) trace=1; shift ;;
    *) die "unknown argument '$1' (allowed: --kernel K, --workload W, --machine M, --trace)" ;;
  esac
done
suite=$(kernel_suite "$kernel")
[ -n "$suite" ] || die "--kernel must be one of $KERNEL_NAMES, got '$kernel'"
version=$(kernel_version "$suite")
# The simulator's run of each workload: the guest's command line in the preset's terms.
case $workload in
  numa01-like) sim=(-w numa01-like --set workload.process.0.group.1.phase.0.seconds=60) ;;
  numa02-like) sim=(-w numa02-like) ;;
  perfbench) sim=(-w perf-bench-numa-mem) ;;
  *) die "--workload must be numa01-like, numa02-like or perfbench, got '$workload'" ;;
esac
scripts/release-build.sh -q
bin=target/release/numabal
out=target/twin
mkdir -p "$out" target/vm/scen
name=$workload-$version
cat scripts/vm/scenarios/lib.sh scripts/vm/scenarios/twin.sh > target/vm/scen/twin.sh
printf '\n== twin: %s on Linux %s, guest\n' "$workload" "$version"
scripts/vm/run.sh --nodes 4 --kernel "$kernel" --timeout 420 --env "TWIN_WORKLOAD=$workload" \
  --env "TWIN_TRACE=$trace" \
  --scenario target/vm/scen/twin.sh --log "$out/$name.guest.out"
# Cache-aware scheduling as the guest had it (the scenario prints its switch).
llc=$(sed -n 's/^== cache-aware scheduling: llc_balancing\/enabled=//p' "$out/$name.guest.out" | head -1)
[ "$llc" = 1 ] && llc_balancing=true || llc_balancing=false
printf '\n== twin: %s under the simulated Linux %s on %s (llc_balancing %s)\n' "$workload" "$version" "$machine" "$llc_balancing"
"$bin" sim -m "$machine" "${sim[@]}" -p autonuma --quiet --set "policy.kernel=$version" \
  --set sim.transparent_hugepage=always --set sim.proc_every_s=1 \
  --set "sim.llc_balancing=$llc_balancing" --json "$out/$name.sim.json" > /dev/null
printf '\n== twin: %s, Linux %s against its model\n' "$workload" "$version"
"$bin" twin --guest "$out/$name.guest.out" --sim "$out/$name.sim.json" \
  --json "$out/$name.json" --svg "$out/$name.svg"
