#!/usr/bin/env bash
# The guest checks on every kernel (issue 17): for each of 6.1 (bookworm), 6.12 (trixie) and
# 7.2 (sid), fetch it (scripts/vm/setup.sh --kernel K), boot the smoke scenario on 2 and 4
# nodes and run the daemon's must-shows (scripts/vm/daemon-tests.sh --kernel K); print a
# PASS/FAIL line and the wall time per kernel, and exit 1 if any failed. Not part of
# scripts/test.sh, which runs 6.1 only.
#
# Usage: scripts/vm/kernels-test.sh [K...]   (default: 6.1 6.12 7.2)
# Wall time: about 9 minutes per kernel on 2 cores, 27 in all, after the release build.
set -euo pipefail
cd "$(dirname "$0")/../.."
kernels=(6.1 6.12 7.2)
[ $# -gt 0 ] && kernels=("$@")
scripts/release-build.sh -q
rc=0
summary=()
for k in "${kernels[@]}"; do
  printf '\n==== kernel %s\n' "$k"
  start=$(date +%s)
  r=0
  scripts/vm/setup.sh --kernel "$k" || r=1
  for nodes in 2 4; do
    [ $r = 0 ] || break
    scripts/vm/run.sh --nodes "$nodes" --kernel "$k" --scenario scripts/vm/scenarios/smoke.sh \
      --timeout 300 || r=1
  done
  [ $r = 0 ] && { scripts/vm/daemon-tests.sh --kernel "$k" || r=1; }
  wall=$(( $(date +%s) - start ))
  release=$(cat "target/vm/cache/kernel-$(. scripts/vm/kernels.sh; kernel_suite "$k")/release" 2>/dev/null || echo "$k")
  if [ $r = 0 ]; then
    summary+=("PASS: kernel $k ($release): smoke on 2 and 4 nodes, the daemon's must-shows; wall ${wall} s")
  else
    rc=1
    summary+=("FAIL: kernel $k ($release): see the output above; wall ${wall} s")
  fi
done
printf '\n==== every kernel\n'
printf '%s\n' "${summary[@]}"
exit $rc
