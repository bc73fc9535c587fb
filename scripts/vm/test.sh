#!/usr/bin/env bash
# The QEMU NUMA guest check (docs/vm-tests.md): prepares the host (scripts/vm/setup.sh),
# builds the release binaries, runs the smoke scenario on the 2-node and the 4-node guest,
# the daemon's scenarios and one twin case (numa01-like on 6.1 beside the simulator),
# printing the wall time of each. Exits non-zero when anything fails.
#
# Usage: scripts/vm/test.sh   (environment: VM_TIMEOUT=SECONDS per boot, default 300)
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
now() { date +%s.%N; }
since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1f", e - s }'; }
step() { printf '\n== vm: %s\n' "$*"; }

t_all=$(now)
step "setup"
t=$(now)
scripts/vm/setup.sh
echo "vm/test: setup took $(since "$t") s"

step "release build"
t=$(now)
# The set every script builds (scripts/release-build.sh): nothing to do after scripts/test.sh.
scripts/release-build.sh
echo "vm/test: build took $(since "$t") s"

times=()
for nodes in 2 4; do
  step "smoke scenario, $nodes nodes"
  t=$(now)
  scripts/vm/run.sh --nodes "$nodes" --scenario scripts/vm/scenarios/smoke.sh \
    --timeout "${VM_TIMEOUT:-300}"
  times+=("$nodes nodes: $(since "$t") s")
  echo "vm/test: $nodes-node boot took $(since "$t") s (wall, with the initramfs build)"
done

step "the live daemon's must-shows, 4 nodes"
t=$(now)
scripts/vm/daemon-tests.sh
times+=("daemon scenarios: $(since "$t") s")

step "the twin: numa01-like on Linux 6.1 and its model"
t=$(now)
# The harness must run end to end (guest, simulator, comparison); its figures are printed
# with PASS/FAIL but do not fail this check until the model meets them (issue 17, item 4:
# docs/vm-tests.md, "The twin", has today's figures and the traced reasons).
r=0
scripts/vm/twin.sh --kernel 6.1 --workload numa01-like || r=$?
[ $r -le 1 ] || { echo "vm/test: the twin harness failed (exit $r)" >&2; exit 1; }
times+=("twin: $(since "$t") s")

step "all VM checks passed in $(since "$t_all") s (${times[*]})"
