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
#          [--set K=V]...
#   K: 7.2 (default) or 6.12 (6.1 puts the slow node in the DRAM tier); --guest FILE
#   compares the output of an earlier guest run (run.sh --log) instead of booting one;
#   --host-cpus: the cores of the host that ran the guest (default: this one's, nproc);
#   --set: more settings for the model, after the twin's own (to look closer, e.g.
#   sim.proc_every_s=0.05 for scripts/vm/tiering-gens.py; the judgement is then of that
#   model, and the header line says so).
# Writes target/twin/tiering-K.{guest.out,sim.json,judged.json} (the judgement is
# scripts/vm/tiering-judge.py's; scripts/vm/tiering-twin-tally.py judges many guest runs).
# Needs scripts/vm/setup.sh --kernel K.
# Wall time: about 80 s (a guest boot and its 65 s scenario; the simulation takes 1 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
# shellcheck source=kernels.sh
. "$here/kernels.sh"
kernel=7.2 guest="" seed=1 host_cpus=$(nproc) extra=()
die() { echo "tiering-twin: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --kernel|--guest|--seed|--host-cpus|--set) [ $# -ge 2 ] || die "$1 needs a value" ;;&
    --kernel) kernel=$2; shift 2 ;;
    --guest) guest=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --host-cpus) host_cpus=$2; shift 2 ;;
    --set) [[ $2 == *=* ]] || die "--set needs KEY=VALUE, got '$2'"; extra+=(--set "$2"); shift 2 ;;
    *) die "unknown argument '$1' (allowed: --kernel K, --guest FILE, --seed N, --host-cpus N, --set K=V)" ;;
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
# The guest's kernel, when the output names it (since 2026-11-30), must be the one modelled.
named=$(sed -n 's/^== kernel: //p' "$guest" | head -1)
[ -z "$named" ] || [[ $named == "$version".* ]] || die "$guest ran kernel $named, not $version (give --kernel)"
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
printf '\n== tiering twin: the model of Linux %s on qemu-guest-tiered (filler %s MiB at %s s; MemTotal %s, reserved %s, tmpfs %s; llc_balancing %s, lru_gen %s, damon_stat %s; %s host cores)%s\n' \
  "$version" "$fill_mb" "$fill_at" "$sizes" "$reserved" "${shmem:-not printed}" "$llc_balancing" "$lru_gen" "$damon_stat" "$host_cpus" \
  "${extra[*]:+ with more settings: ${extra[*]}}"
sim=(sim -m qemu-guest-tiered -w presets/workloads/tiering_guest.toml -p autonuma --seed "$seed"
     --set policy.numa_balancing=2 --set sim.demotion_enabled=true --set "policy.kernel=$version"
     --set sim.transparent_hugepage=always --set sim.proc_every_s=1
     --set "sim.llc_balancing=$llc_balancing" --set "sim.lru_gen=$lru_gen"
     --set "sim.damon_stat=$damon_stat" --set "machine.core.host_cpus=$host_cpus"
     --set "machine.topology.memory_per_node=[$sizes]"
     --set "machine.memory.reserved_per_node=[$reserved]"
     --set "workload.process.1.start_s=$fill_at"
     --set "workload.process.1.region.5.size=\"${fill_mb}MiB\"" "${tmpfs[@]}" "${extra[@]}")
echo "numabal ${sim[*]}"
"$bin" "${sim[@]}" --quiet --json "$out/$name.sim.json" > /dev/null

printf '\n== tiering twin: Linux %s against its model (%s, %s)\n' "$version" "$guest" "$out/$name.sim.json"
scripts/vm/tiering-judge.py "$guest" "$out/$name.sim.json" --json "$out/$name.judged.json"
