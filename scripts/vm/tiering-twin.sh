#!/usr/bin/env bash
# The twin of the tiered guest (issue 22): scenarios/tiering.sh in the QEMU guest with a
# CPU-less slow node (run.sh --nodes 2 --cxl-mb 1024, Linux 7.2: kernel.numa_balancing=2,
# demotion on; a hot 256 MiB set placed on the slow node is promoted, a filler bound to
# node 0 makes kswapd demote), then the simulator's model of it (machine qemu-guest-tiered,
# workload tiering_guest, autonuma in tiering mode with demotion), then both side by side:
# pgpromote_success, pgdemote_kswapd + pgdemote_direct, numa_hint_faults and the hot set's
# memory on the top tier at the end, each with the guest's value, the model's, their ratio
# and PASS or FAIL at +-30 %. Exit status 1 if any failed (docs/vm-tests.md, "The tiered
# twin").
#
# The model takes from the guest run only what the machine and the workload were: each
# node's MemTotal and the memory in use before the workloads (memory_per_node,
# reserved_per_node), when the filler started and its size (node 0's free memory then plus
# 192 MiB), whether the kernel's cache-aware scheduling was on (sim.llc_balancing) and
# whether MGLRU was (sim.lru_gen) and DAMON_STAT (sim.damon_stat); and from the host, the
# cores its vCPUs shared (machine.core.host_cpus).
# Nothing of the model is fitted to the counters.
#
# Usage: scripts/vm/tiering-twin.sh [--kernel K] [--guest FILE] [--seed N] [--host-cpus N]
#   K: 7.2 (default) or 6.12 (6.1 puts the slow node in the DRAM tier); --guest FILE
#   compares the output of an earlier guest run (run.sh --log) instead of booting one;
#   --host-cpus: the cores of the host that ran the guest (default: this one's, nproc).
# Writes target/twin/tiering-K.{guest.out,sim.json}. Needs scripts/vm/setup.sh --kernel K.
# Wall time: about 80 s (a guest boot and its 65 s scenario; the simulation takes 1 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# shellcheck source=kernels.sh
. "$here/kernels.sh"
kernel=7.2 guest="" seed=1 host_cpus=$(nproc)
die() { echo "tiering-twin: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --kernel|--guest|--seed|--host-cpus) [ $# -ge 2 ] || die "$1 needs a value" ;;&
    --kernel) kernel=$2; shift 2 ;;
    --guest) guest=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --host-cpus) host_cpus=$2; shift 2 ;;
    *) die "unknown argument '$1' (allowed: --kernel K, --guest FILE, --seed N, --host-cpus N)" ;;
  esac
done
suite=$(kernel_suite "$kernel")
[ -n "$suite" ] || die "--kernel must be one of $KERNEL_NAMES, got '$kernel'"
[ "$suite" != bookworm ] || die "--kernel $kernel does not tier a CPU-less node by HMAT: 7.2 or 6.12"
version=$(kernel_version "$suite")
[[ $seed =~ ^[0-9]+$ ]] || die "--seed must be a whole number, got '$seed'"
[[ $host_cpus =~ ^[1-9][0-9]*$ ]] || die "--host-cpus must be a whole number of 1 or more, got '$host_cpus'"
[ -z "$guest" ] || [ -f "$guest" ] || die "no guest output $guest"

scripts/release-build.sh -q
bin=target/release/numabal
out=target/twin
mkdir -p "$out"
name=tiering-$version
if [ -z "$guest" ]; then
  guest=$out/$name.guest.out
  printf '\n== tiering twin: scenarios/tiering.sh on Linux %s, guest\n' "$version"
  scripts/vm/run.sh --nodes 2 --cxl-mb 1024 --kernel "$kernel" --timeout 600 \
    --scenario scripts/vm/scenarios/tiering.sh --log "$guest"
fi

# The guest's machine and workload inputs (the scenario's @ lines).
at() { awk -v k="$1" -v n="$2" '$1 == "@" k && $2 == n { print $3; exit }' "$guest"; }
grep -q '^@counter pgpromote_success ' "$guest" || die "$guest has no @counter lines (scenarios/tiering.sh's end)"
# Each node's memory in use before the workloads: the root file system's tmpfs files
# (@shmem, on the node's LRU, which reclaim demotes: the workload's [[tmpfs]]) and the rest
# (reserved). An output from before the scenario printed @shmem: all of it reserved.
sizes="" reserved="" tmpfs=()
for n in 0 1 2; do
  line=$(awk -v n="node$n" '$1 == "@meminfo" && $2 == n { print $3, $4; exit }' "$guest")
  [ -n "$line" ] || die "$guest has no @meminfo line for node $n"
  shm=$(awk -v n="node$n" '$1 == "@shmem" && $2 == n { print $3; exit }' "$guest")
  set -- $line
  sizes+="${sizes:+,}\"${1}MiB\"" reserved+="${reserved:+,}\"$(($1 - $2 - ${shm:-0}))MiB\""
  [ "$n" = 2 ] || tmpfs+=(--set "workload.tmpfs.$n.size=\"${shm:-0}MiB\"")
done
fill_at=$(at time filler_started) fill_mb=$(awk '$1 == "@fill_mb" { print $2; exit }' "$guest")
[ -n "$fill_at" ] && [ -n "$fill_mb" ] || die "$guest has no filler (@time filler_started, @fill_mb)"
# Cache-aware scheduling as the guest had it (its debugfs switch, printed by the scenario;
# an output from before the scenario printed it: Linux 7.2's default, on).
llc=$(sed -n 's/^== cache-aware scheduling: llc_balancing\/enabled=//p' "$guest" | head -1)
[ -n "$llc" ] || { [ "$version" = 7.2 ] && llc=1 || llc=0; }
[ "$llc" = 1 ] && llc_balancing=true || llc_balancing=false
# MGLRU as the guest had it (/sys/kernel/mm/lru_gen/enabled, printed by the scenario; an
# output from before it printed it: the kernel's CONFIG_LRU_GEN_ENABLED, y on 6.12 and 7.2).
lru=$(sed -n 's/^== multi-gen LRU: lru_gen\/enabled=//p' "$guest" | head -1)
case ${lru:-0x0001} in 0x0000|absent) lru_gen=false ;; *) lru_gen=true ;; esac
# DAMON_STAT as the guest had it (/sys/module/damon_stat/parameters/enabled; an output from
# before the scenario printed it: CONFIG_DAMON_STAT_ENABLED_DEFAULT, y on 7.2, absent on 6.12).
stat=$(sed -n 's/^== DAMON_STAT: damon_stat\/parameters\/enabled=//p' "$guest" | head -1)
[ -n "$stat" ] || { [ "$version" = 7.2 ] && stat=Y || stat=absent; }
[ "$stat" = Y ] && damon_stat=true || damon_stat=false

shmem=$(awk '$1 == "@shmem" { printf "%s%s %s MiB", sep, $2, $3; sep = ", " }' "$guest")
printf '\n== tiering twin: the model of Linux %s on qemu-guest-tiered (filler %s MiB at %s s; MemTotal %s, reserved %s, tmpfs %s; llc_balancing %s, lru_gen %s, damon_stat %s; %s host cores)\n' \
  "$version" "$fill_mb" "$fill_at" "$sizes" "$reserved" "${shmem:-not printed}" "$llc_balancing" "$lru_gen" "$damon_stat" "$host_cpus"
sim=(sim -m qemu-guest-tiered -w presets/workloads/tiering_guest.toml -p autonuma --seed "$seed"
     --set policy.numa_balancing=2 --set sim.demotion_enabled=true --set "policy.kernel=$version"
     --set sim.transparent_hugepage=always --set sim.proc_every_s=1
     --set "sim.llc_balancing=$llc_balancing" --set "sim.lru_gen=$lru_gen"
     --set "sim.damon_stat=$damon_stat" --set "machine.core.host_cpus=$host_cpus"
     --set "machine.topology.memory_per_node=[$sizes]"
     --set "machine.memory.reserved_per_node=[$reserved]"
     --set "workload.process.1.start_s=$fill_at"
     --set "workload.process.1.region.5.size=\"${fill_mb}MiB\"" "${tmpfs[@]}")
echo "numabal ${sim[*]}"
"$bin" "${sim[@]}" --quiet --json "$out/$name.sim.json" > /dev/null

printf '\n== tiering twin: Linux %s against its model (%s, %s)\n' "$version" "$guest" "$out/$name.sim.json"
python3 - "$guest" "$out/$name.sim.json" <<'EOF'
import json
import sys

guest_file, sim_file = sys.argv[1], sys.argv[2]
g = {}
for line in open(guest_file):
    f = line.split()
    if not f or not f[0].startswith("@"):
        continue
    if f[0] in ("@counter", "@phase1", "@phase2", "@time") and len(f) == 3:
        g[(f[0], f[1])] = float(f[2])
    elif f[0] == "@mib" and len(f) == 4:
        g[("@mib", f[1], f[2])] = float(f[3])
r = json.load(open(sim_file))
m, t = r["metrics"], r["metrics"]["tiering"]
hot = next(p for p in r["processes"] if p["name"] == "numa01-like")
fill = next(p for p in r["processes"] if p["name"] == "numa02-like")


def node_list(s):
    """A nodelist ("0-1", "0,2-3") as node ids."""
    ids = []
    for part in s.split(","):
        lo, _, hi = part.partition("-")
        ids.extend(range(int(lo), int(hi or lo) + 1))
    return ids


# The top tier: the model's first (fastest) tier; the guest's is the same (memory_tier4).
top_nodes = node_list(min(t["tiers"], key=lambda x: x["tier"])["nodes"])


def gc(name):
    return g.get(("@counter", name), 0.0)


def in_dram_sim():
    """The first sample with 90 % of the hot set on the top tier (as the scenario's)."""
    for s in r.get("proc_samples", []):
        for p in s["processes"]:
            if p["name"] != "numa01-like":
                continue
            total = sum(p["node_mb"])
            if total > 0 and sum(p["node_mb"][n] for n in top_nodes) >= 0.9 * total:
                return s["t_s"]
    return None


g_hot_top = sum(v for k, v in g.items() if k[:2] == ("@mib", "hot") and int(k[2][4:]) in top_nodes)
s_hot_top = sum(hot["node_mb"][n] for n in top_nodes)
judged = [
    ("pgpromote_success", gc("pgpromote_success"), t["pgpromote_success"], "pages"),
    ("pgdemote_kswapd + pgdemote_direct", gc("pgdemote_kswapd") + gc("pgdemote_direct"),
     t["pgdemote_kswapd"] + t["pgdemote_direct"], "pages"),
    ("numa_hint_faults", gc("numa_hint_faults"), m["numa_hint_faults"], ""),
    ("hot set on the top tier at the end", g_hot_top, s_hot_top, "MiB"),
]
shown = [
    ("pgdemote_kswapd", gc("pgdemote_kswapd"), t["pgdemote_kswapd"], "pages"),
    ("pgdemote_direct", gc("pgdemote_direct"), t["pgdemote_direct"], "pages"),
    ("pgpromote_candidate", gc("pgpromote_candidate"), t["pgpromote_candidate"], "pages"),
    ("numa_pages_migrated", gc("numa_pages_migrated"), m["numa_pages_migrated"], "pages"),
    ("numa_pte_updates", gc("numa_pte_updates"), m["numa_pte_updates"], ""),
]
nodes = range(len(hot["node_mb"]))
for n in nodes:
    shown.append((f"hot set on node {n} at the end", g.get(("@mib", "hot", f"node{n}"), 0.0), hot["node_mb"][n], "MiB"))
for n in nodes:
    shown.append((f"filler on node {n} at the end", g.get(("@mib", "filler", f"node{n}"), 0.0), fill["node_mb"][n], "MiB"))
shown.append(("hot set 90 % on the top tier at", g.get(("@time", "hot_in_dram")), in_dram_sim(), "s"))


def fmt(v):
    if v is None:
        return "-"
    return f"{v:,.0f}" if abs(v) >= 100 or float(v).is_integer() else f"{v:,.1f}"


def row(name, gv, sv, unit, verdict):
    ratio = f"{sv / gv:.3f}" if gv and sv is not None else "-"
    print(f"{name + (' (' + unit + ')' if unit else ''):<44} {fmt(gv):>10} {fmt(sv):>10} {ratio:>7}  {verdict}")


print(f"{'figure':<44} {'guest':>10} {'model':>10} {'ratio':>7}  (model / guest, +-30 %)")
fails = 0
for name, gv, sv, unit in judged:
    ok = gv > 0 and 0.7 <= sv / gv <= 1.3
    fails += not ok
    row(name, gv, sv, unit, "PASS" if ok else "FAIL")
print("not judged:")
for name, gv, sv, unit in shown:
    row(name, gv, sv, unit, "")
print(f"tiering twin: {len(judged) - fails} of {len(judged)} within 30 %")
sys.exit(1 if fails else 0)
EOF
