#!/usr/bin/env bash
# The QEMU NUMA guest check (docs/vm-tests.md): prepares the host (scripts/vm/setup.sh),
# builds the release binaries, and runs the smoke scenario on the 2-node and the 4-node
# guest, printing the wall time of each boot. Exits non-zero when anything fails.
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
cargo build --release --locked -p numabal-cli -p numabal-testprogs
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

step "all VM checks passed in $(since "$t_all") s (${times[*]})"
