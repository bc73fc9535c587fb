#!/usr/bin/env bash
# The cpuset skip on real kernels (issue 17, item 6): scripts/vm/scenarios/cpuset-skip.sh
# in the 4-node guest under each kernel K (default: 6.1 6.12 7.2): a numa02-like process
# held by a cpuset to one node's CPUs and memory gets PTE updates before 6.16 and none
# since. Prints each kernel's figures and PASS/FAIL lines; exits 1 if any failed.
# Usage: scripts/vm/cpuset-skip.sh [K...]   Needs scripts/vm/setup.sh --kernel K for each.
# Wall time: about 80 s per kernel (a boot, two 30 s runs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# shellcheck source=kernels.sh
. "$here/kernels.sh"
kernels=(6.1 6.12 7.2)
[ $# -gt 0 ] && kernels=("$@")
scripts/release-build.sh -q
mkdir -p target/vm/scen target/vm/logs
cat scripts/vm/scenarios/lib.sh scripts/vm/scenarios/cpuset-skip.sh > target/vm/scen/cpuset-skip.sh
rc=0
summary=()
for k in "${kernels[@]}"; do
  suite=$(kernel_suite "$k")
  [ -n "$suite" ] || { echo "cpuset-skip: unknown kernel '$k' ($KERNEL_NAMES)" >&2; exit 2; }
  out=target/vm/logs/cpuset-skip$(kernel_tag "$suite").out
  r=0
  scripts/vm/run.sh --nodes 4 --kernel "$k" --timeout 300 --scenario target/vm/scen/cpuset-skip.sh --log "$out" || r=$?
  [ $r = 0 ] || rc=1
  while IFS= read -r l; do summary+=("$k: $l"); done < <(grep -E '^(PASS|FAIL|cpuset-skip):' "$out" || true)
done
printf '\n==== the cpuset skip on real kernels\n'
printf '%s\n' "${summary[@]}"
exit $rc
