#!/usr/bin/env bash
# The RHEL 7 memory brief, Figures 2 and 12: four qemu-kvm guests (10 vCPUs, 44730 MiB) on rhel-4n40
# whose memory starts spread over the four nodes. For each policy and seed: does every
# guest end with >= 95% of its memory on one node, the four on four different nodes
# (Figure 12), how long it took (the first numastat sample from which that holds to the
# end, samples every 5 s), and how many pages moved. Under `none` the memory must stay
# dispersed.
#
# Usage: scripts/kvm_guests.sh [-p POLICIES] [-s SEEDS] [-t VCPU_SECONDS] [-o OUT_DIR]
#   -p  space-separated LABEL=POLICY[:SET1;SET2] or POLICY (default: "none numad
#       numad-u100=numad:policy.u=100 autonuma stable")
#   -s  seeds 1..N (default 3)
#   -t  how long the vCPUs run, simulated seconds (default 600, the preset's)
#   -o  output directory (default: a temporary one)
set -euo pipefail
cd "$(dirname "$0")/.."
POLICIES="none numad numad-u100=numad:policy.u=100 autonuma stable"
SEEDS=3
VCPU_S=600
OUT=""
while getopts "p:s:t:o:h" o; do
  case $o in
    p) POLICIES=$OPTARG ;;
    s) SEEDS=$OPTARG ;;
    t) VCPU_S=$OPTARG ;;
    o) OUT=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
BIN=${NUMABAL:-target/release/numabal}
[ -x "$BIN" ] || scripts/release-build.sh >&2
labels=()
for entry in $POLICIES; do
  label=${entry%%=*}
  spec=${entry#*=}
  [ "$entry" = "$label" ] && spec=$entry
  pol=${spec%%:*}
  sets=""
  [ "$spec" != "$pol" ] && sets=${spec#*:}
  labels+=("$label")
  for s in $(seq 1 "$SEEDS"); do
    args=(sim -m rhel-4n40 -w kvm_guests -p "$pol" --seed "$s"
      --set "workload.process.0.group.1.phase.0.seconds=$VCPU_S"
      --set sim.numastat_every_s=5)
    IFS=';' read -ra extra <<<"$sets"
    for e in "${extra[@]}"; do [ -n "$e" ] && args+=(--set "$e"); done
    t0=$(date +%s%N)
    "$BIN" "${args[@]}" --json "$OUT/${label}_$s.json" >/dev/null
    echo "$label seed $s: $((($(date +%s%N) - t0) / 1000000)) ms wall" >&2
  done
done

python3 - "$OUT" "$SEEDS" "${labels[@]}" <<'PY'
import json, sys
out, seeds, labels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
GIB = 1024.0

def aligned(sample):
    """(every guest >= 95% on one node and the nodes distinct, min share, nodes)"""
    shares, nodes = [], []
    for p in sample["processes"]:
        if p["name"] != "qemu-kvm":
            continue
        tot = sum(p["node_mb"])
        n = max(range(len(p["node_mb"])), key=lambda i: p["node_mb"][i])
        shares.append(p["node_mb"][n] / tot if tot else 0.0)
        nodes.append(n)
    ok = len(shares) == 4 and min(shares) >= 0.95 and len(set(nodes)) == 4
    return ok, min(shares), nodes

print("kvm_guests on rhel-4n40: four 10-vCPU guests of 44730 MiB, memory spread at the start")
print(f"{'policy':12} {'seed':>4} {'aligned':>8} {'converged':>10} {'min share':>9} "
      f"{'nodes':>9} {'pages moved':>12} {'GiB moved':>9} {'numa_pages_migrated':>19}")
verdict = {}
for l in labels:
    ok_all, dispersed_all, times = True, True, []
    for s in range(1, seeds + 1):
        r = json.load(open(f"{out}/{l}_{s}.json"))
        # The samples while all four guests run: a guest that finished its vCPU time
        # first is gone from the later ones.
        samples = [x for x in r["numastat"]
                   if sum(p["name"] == "qemu-kvm" for p in x["processes"]) == 4]
        ok, share, nodes = aligned(samples[-1])
        conv = None
        if ok:
            conv = samples[-1]["t_s"]
            for smp in reversed(samples):
                if aligned(smp)[0]:
                    conv = smp["t_s"]
                else:
                    break
            times.append(conv)
        m = r["metrics"]
        moved = m["pgmigrate_success"]
        print(f"{l:12} {s:>4} {'yes' if ok else 'no':>8} "
              f"{(f'{conv:.0f} s' if conv is not None else '-'):>10} {share:>9.3f} "
              f"{','.join(map(str, nodes)):>9} {moved:>12} {moved * 4096 / 2**30:>9.1f} "
              f"{m['numa_pages_migrated']:>19}")
        for log in r.get("policy_log", []):
            print(f"{'':17}{log['t_s']:8.1f} s  {log['message']}")
        ok_all &= ok
        dispersed_all &= share < 0.5
    verdict[l] = (ok_all, dispersed_all, times)
print()
for l, (ok, dispersed, times) in verdict.items():
    if l == "none":
        print(f"none: memory stays dispersed (every guest < 50% on any node) in every seed: "
              f"{'PASS' if dispersed else 'FAIL'}")
    else:
        t = f", converged at {min(times):.0f}-{max(times):.0f} s" if times else ""
        print(f"{l}: every guest >= 95% on its own node in every seed: {'PASS' if ok else 'FAIL'}{t}")
PY
