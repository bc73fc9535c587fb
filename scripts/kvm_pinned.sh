#!/usr/bin/env bash
# The cpuset scan-skip patch on the simulator (issue 3): the kvm_pinned guest (cpuset cpus and mems = one
# node of xeon-2n104) under autonuma with and without the cpuset single-node skip, at the
# default scan settings and with aggressive scanning (scan_delay_ms halved, scan_size_mb
# doubled). Published: 180 s with the skip, 250 s without, 280 s without when aggressive.
# Also the kbuild and kvm_guests_build comparisons with `none` (AutoNUMA benchmark table, 2012).
# Usage: scripts/kvm_pinned.sh [--seed N]
set -euo pipefail
cd "$(dirname "$0")/.."
SEED=1
[ "${1:-}" = "--seed" ] && SEED="$2"
scripts/release-build.sh -q
BIN=target/release/numabal
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { # name machine workload policy-toml-lines...
  local name=$1 mach=$2 w=$3; shift 3
  local f="$tmp/$name.toml"
  if [ "$1" = none ]; then f=none; else printf '%s\n' "$@" >"$f"; fi
  "$BIN" sim -m "$mach" -w "$w" -p "$f" --seed "$SEED" --json "$tmp/$name.json" >/dev/null
}
A='kind = "autonuma"'
run skip_on xeon-2n104 kvm_pinned "$A" &
run skip_off xeon-2n104 kvm_pinned "$A" "cpuset_skip = false" &
wait
run aggr_on xeon-2n104 kvm_pinned "$A" "scan_delay_ms = 500" "scan_size_mb = 512" &
run aggr_off xeon-2n104 kvm_pinned "$A" "cpuset_skip = false" "scan_delay_ms = 500" "scan_size_mb = 512" &
wait
run kb_none autonuma-2n24 kbuild none &
run kb_auto autonuma-2n24 kbuild "$A" &
wait
run kg_none autonuma-2n24 kvm_guests_build none &
run kg_auto autonuma-2n24 kvm_guests_build "$A" &
wait
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
J = lambda n: json.load(open(f"{d}/{n}.json"))
print("kvm_pinned on xeon-2n104 (the cpuset scan-skip patch: 180 s with the skip, 250 s without; aggressive 280 s)")
print(f"{'scan settings':<26} {'skip on s':>10} {'skip off s':>11} {'off/on':>7} {'pte upd (off)':>14} {'hint faults (off)':>18} {'pte upd (on)':>13}")
for label, on, off in [("default", "skip_on", "skip_off"), ("delay/2, size x2", "aggr_on", "aggr_off")]:
    a, b = J(on)["metrics"], J(off)["metrics"]
    print(f"{label:<26} {a['runtime_s']:>10.2f} {b['runtime_s']:>11.2f} {b['runtime_s']/a['runtime_s']:>7.3f} {b['numa_pte_updates']:>14} {b['numa_hint_faults']:>18} {a['numa_pte_updates']:>13}")
print()
# The secondary MMU (docs/model-notes.md, "KVM guests"): what the skip-off runs paid, and the
# cost per EPT fault the published 70 s (30 vCPUs each 70 s late) would need.
print(f"{'KVM, skip off':<26} {'EPT zaps':>9} {'vCPU kicks':>11} {'EPT faults':>11} {'off - on ms':>12} {'needed per fault':>17}")
for label, on, off in [("default", "skip_on", "skip_off"), ("delay/2, size x2", "aggr_on", "aggr_off")]:
    st = J(off)["numa_balancing"]["stats"]
    inv, kicks, ept = st.get("kvm_mmu_invalidations", 0), st.get("kvm_vcpu_kicks", 0), st.get("kvm_ept_faults", 0)
    gap_ms = (J(off)["metrics"]["runtime_s"] - J(on)["metrics"]["runtime_s"]) * 1e3
    need = f"{70 * 30 / ept * 1e3:.0f} ms" if ept else "-"
    print(f"{label:<26} {inv:>9} {kicks:>11} {ept:>11} {gap_ms:>12.1f} {need:>17}")
print()
print(f"{'AutoNUMA table (2012)':<26}    none s  autonuma s   ratio  published")
for label, n, a, pub in [("kbuild", "kb_none", "kb_auto", "88.3 / 88.6 (+0.88%)"), ("kvm_guests_build", "kg_none", "kg_auto", "136.2-136.6 / 131.4-131.8")]:
    x, y = J(n)["metrics"]["runtime_s"], J(a)["metrics"]["runtime_s"]
    print(f"{label:<26} {x:>9.2f} {y:>11.2f} {y/x:>7.3f}  {pub}")
PY
