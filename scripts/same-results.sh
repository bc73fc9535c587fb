#!/usr/bin/env bash
# Same results at two commits: builds numabal at REV_A and REV_B (default: HEAD and the
# working tree) and runs a fixed set of scenarios with each, comparing the JSON results
# byte for byte. Refactors and speed work must show "identical" here; any other change of
# results is listed, scenario by scenario, with the first JSON keys that differ, to be
# explained in the commit.
# Usage: scripts/same-results.sh [--full] [REV_A [REV_B]]   (REV_B "." = the working tree;
# either may be the path of a numabal binary already built, to save its build)
# --full adds the engine redesign's set: every policy on every calibration workload of
# autonuma-2n24, kvm_guests on rhel-4n40, pmbench for 300 simulated s, the hpc suite
# with 2 seeds on stable-a, and pmbench's simulated hour under autonuma.
# Wall time: two release builds (about 5 minutes each on 2 cores), then about 4 minutes of
# runs (--full: about 17 more). Nothing is left behind but target/same-results/.
set -euo pipefail
cd "$(dirname "$0")/.."
FULL=0
if [ "${1:-}" = --full ]; then FULL=1; shift; fi
A=${1:-HEAD}
B=${2:-.}
out=target/same-results
mkdir -p "$out"

# name | numabal arguments (each a sim with --json, or a compare)
SCENARIOS=(
  "numa01-none|sim -m autonuma-2n24 -w numa01 -p none"
  "numa01-autonuma|sim -m autonuma-2n24 -w numa01 -p autonuma"
  "numa01-stable|sim -m autonuma-2n24 -w numa01 -p stable"
  "numa01-autonuma-2012|sim -m autonuma-2n24 -w numa01 -p autonuma-2012"
  "numa02-bind|sim -m autonuma-2n24 -w numa02 -p bind"
  "numa02-interleave|sim -m autonuma-2n24 -w numa02 -p interleave --seed 3"
  "kvm_guests-numad|sim -m rhel-4n40 -w kvm_guests -p numad"
  "kbuild-autonuma|sim -m xeon-2n104 -w kbuild -p autonuma"
  "npb_cg-stable|sim -m stable-a -w npb_cg -p stable --set sim.transparent_hugepage=never"
  "pmbench-120s|sim -m xeon-2n104 -w pmbench -p autonuma --set sim.max_time_s=120"
  "kvm_pinned-autonuma|sim -m xeon-2n104 -w kvm_pinned -p autonuma --set sim.max_time_s=60"
  "numa02-compare|compare -m tiny-2n4 -w numa02 --policies none,bind,autonuma,stable --seeds 3"
  # numabal's own daemon as the simulator runs it: home-node (softdirty) and stable-daemon
  # on the guest's preset (hint, beside the kernel model).
  "numa01_numa02-home-node|sim -m autonuma-2n24 -w numa01_numa02 -p home-node --seed 4"
  "numa01-like-stable-daemon|sim -m qemu-guest-4n8 -w numa01-like -p stable-daemon --set daemon.numa_balancing=1"
)
if [ "$FULL" = 1 ]; then
  for w in numa01 numa01_thread_alloc numa02 numa02_smt numa01_numa02; do
    for p in none bind reverse-bind interleave numad autonuma autonuma-2012 stable; do
      SCENARIOS+=("cal-$w-$p|sim -m autonuma-2n24 -w $w -p $p")
    done
  done
  for p in none bind interleave numad autonuma autonuma-2012 stable; do
    SCENARIOS+=("kvm_guests-$p|sim -m rhel-4n40 -w kvm_guests -p $p")
    SCENARIOS+=("pmbench300-$p|sim -m xeon-2n104 -w pmbench -p $p --set sim.max_time_s=300")
  done
  SCENARIOS+=("hpc-suite|suite hpc -m stable-a --seeds 2 --jobs 2")
  # The simulated hour of the speed work's benchmark (scripts/bench.sh).
  SCENARIOS+=("pmbench-hour-autonuma|sim -m xeon-2n104 -w pmbench -p autonuma")
fi

build() {  # rev (or a numabal binary built before) -> path of its numabal binary
  local rev=$1 dir
  if [ -f "$rev" ] && [ -x "$rev" ]; then
    echo "$rev"
    return
  fi
  if [ "$rev" = . ]; then
    cargo build --release --locked -q -p numabal-cli >&2
    echo "$PWD/target/release/numabal"
    return
  fi
  local sha
  sha=$(git rev-parse --verify "$rev^{commit}")
  dir="$out/src-$sha"
  [ -d "$dir" ] || git worktree add --detach -q "$dir" "$sha" >&2
  CARGO_TARGET_DIR="$PWD/$out/target-$sha" cargo build --release --locked -q -p numabal-cli \
    --manifest-path "$dir/Cargo.toml" >&2
  echo "$PWD/$out/target-$sha/release/numabal"
}

echo "building $A and $B" >&2
bin_a=$(build "$A")
bin_b=$(build "$B")
differ=0
for s in "${SCENARIOS[@]}"; do
  name=${s%%|*}
  args=${s#*|}
  # shellcheck disable=SC2086
  "$bin_a" $args --quiet --json "$out/$name.a.json" >/dev/null
  # shellcheck disable=SC2086
  "$bin_b" $args --quiet --json "$out/$name.b.json" >/dev/null
  if cmp -s "$out/$name.a.json" "$out/$name.b.json"; then
    printf '%-24s identical\n' "$name"
  else
    differ=1
    printf '%-24s DIFFERENT: ' "$name"
    python3 - "$out/$name.a.json" "$out/$name.b.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
diffs = []
def walk(x, y, path):
    if len(diffs) >= 5:
        return
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            walk(x.get(k), y.get(k), f"{path}.{k}")
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (p, q) in enumerate(zip(x, y)):
            walk(p, q, f"{path}[{i}]")
    elif x != y:
        diffs.append(f"{path}: {json.dumps(x)[:40]} -> {json.dumps(y)[:40]}")
walk(a, b, "")
print("; ".join(diffs) if diffs else "same values, different bytes (layout)")
PY
  fi
done
for d in "$out"/src-*; do
  [ -d "$d" ] && git worktree remove --force "$d"
done
exit $differ
