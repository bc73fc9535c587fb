#!/usr/bin/env bash
# The twin's must-show (issue 17): numa01-like, numa02-like and perf bench numa mem, each on
# Linux 6.1 and 7.2 and beside the simulator's model of that release (scripts/vm/twin.sh),
# every figure PASS or FAIL; a summary of every figure at the end, with the wall time.
# Exit status 1 if any figure failed, 2 if a run could not be made.
#
# Usage: scripts/vm/twin-check.sh [K...]   (default: 6.1 7.2)
# Needs scripts/vm/setup.sh --kernel K for each K. Wall time: about 12 minutes for both
# kernels on 2 cores (6 guest runs of 40-60 s with their boots), after the release build.
# Run it alone: TCG's vCPUs are host threads, and a busy host changes the guest's figures.
set -euo pipefail
cd "$(dirname "$0")/../.."
kernels=(6.1 7.2)
[ $# -gt 0 ] && kernels=("$@")
start=$(date +%s)
summary=()
rc=0
for k in "${kernels[@]}"; do
  for w in numa01-like numa02-like perfbench; do
    log=target/twin/check-$w-$k.log
    mkdir -p target/twin
    r=0
    scripts/vm/twin.sh --kernel "$k" --workload "$w" 2>&1 | tee "$log" || r=${PIPESTATUS[0]}
    [ "$r" -le 1 ] || { summary+=("$w on $k: the run failed (exit $r, $log)"); rc=2; continue; }
    [ "$r" = 0 ] || { [ $rc = 2 ] || rc=1; }
    while IFS= read -r l; do summary+=("$w on $k: $l"); done < <(grep -E '^(PASS|FAIL): ' "$log")
  done
done
printf '\n==== the twin, every figure (wall %s s)\n' "$(( $(date +%s) - start ))"
printf '%s\n' "${summary[@]}"
exit $rc
