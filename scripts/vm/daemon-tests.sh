#!/usr/bin/env bash
# The live daemon's must-shows (issue 6), each a scenario in the 4-node QEMU TCG guest
# (docs/vm-tests.md): numa01-like under stable/softdirty with record and replay, perf bench
# numa mem against the kernel's balancing, the hint sensor, the safety rules, idle CPU,
# issue 18's numa02-like under home-node (daemon-numa02), "never harms a host" under home-node
# (daemon-harm) and the damon sensor (daemon-damon: placed with it on 7.2, refused with the
# reason and the softdirty fallback on 6.1); issue 19's faults: the daemon killed and
# restored (daemon-restart), SIGHUP, cpuset and taskset narrowing, CPU hotplug and a full
# node (daemon-faults).
# Prints every scenario's output and a PASS/FAIL summary with the measured figures; exits 1
# if any check failed.
#
# Usage: [DAEMON_POLICY=P] scripts/vm/daemon-tests.sh [--kernel K] [SCENARIO...]   (default:
#        all; names without .sh; K: 6.1 (default), 6.12, 7.2 or a suite name, see run.sh;
#        P: the policy daemon-perfbench's daemon runs, default the daemon's own; VM_TIMEOUT:
#        seconds a guest may run, default 420, daemon-soak needs 2400)
# Needs scripts/vm/setup.sh [--kernel K] and the release build (scripts/vm/test.sh does both
# for the default kernel).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# shellcheck source=kernels.sh
. "$here/kernels.sh"
kernel=6.1
if [ "${1:-}" = --kernel ]; then
  [ $# -ge 2 ] || { echo "daemon-tests: --kernel needs a value ($KERNEL_NAMES)" >&2; exit 2; }
  kernel=$2
  shift 2
fi
suite=$(kernel_suite "$kernel")
[ -n "$suite" ] || { echo "daemon-tests: --kernel must be one of $KERNEL_NAMES, got '$kernel'" >&2; exit 2; }
tag=$(kernel_tag "$suite")
all=(daemon-numa01 daemon-numa02 daemon-perfbench daemon-hint daemon-safety daemon-idle daemon-harm daemon-damon daemon-restart daemon-faults)
[ $# -gt 0 ] && all=("$@")
mkdir -p target/vm/scen target/vm/logs
rc=0
summary=()
for s in "${all[@]}"; do
  src=scripts/vm/scenarios/$s.sh
  [ -f "$src" ] || { echo "daemon-tests: no scenario $src" >&2; exit 2; }
  # One file for the guest: the shared functions, then the scenario.
  cat scripts/vm/scenarios/lib.sh "$src" > "target/vm/scen/$s.sh"
  out=target/vm/logs/$s$tag.out
  printf '\n== %s (4 nodes x 2 CPUs, TCG, kernel %s)\n' "$s" "$(cat "target/vm/cache/kernel-$suite/release" 2>/dev/null || echo "$suite")"
  start=$(date +%s)
  r=0
  scripts/vm/run.sh --nodes 4 --kernel "$kernel" --timeout "${VM_TIMEOUT:-420}" --env "DAEMON_POLICY=${DAEMON_POLICY:-}" --env "SOAK_S=${SOAK_S:-1800}" \
    --scenario "target/vm/scen/$s.sh" --log "$out" || r=$?
  cat "$out"
  wall=$(( $(date +%s) - start ))
  while IFS= read -r l; do summary+=("$s: $l"); done < <(grep -E '^(PASS|FAIL):' "$out" || true)
  if [ $r -ne 0 ]; then
    rc=1
    grep -qE '^FAIL:' "$out" || summary+=("$s: FAIL: scenario exit status $r (see target/vm/logs/$s-4n$tag.console.log)")
  fi
  summary+=("$s: wall ${wall} s")
done
printf '\n== daemon must-shows\n'
printf '%s\n' "${summary[@]}"
# The simulated twins beside the guest's figures (numa01-like, softdirty and hint).
if [ "$suite" = bookworm ] && { [ -f target/vm/logs/daemon-numa01.out ] || [ -f target/vm/logs/daemon-hint.out ]; }; then
  printf '\n== the live scenarios and their simulated twins (scripts/twin.sh)\n'
  scripts/twin.sh target/vm/logs || echo "twin: the simulated twins failed" >&2
fi
exit $rc
