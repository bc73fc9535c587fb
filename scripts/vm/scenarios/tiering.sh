# Tiered memory in a QEMU guest (busybox sh; docs/vm-tests.md, "A tiered guest"). Run with
#   scripts/vm/run.sh --cxl-mb 1024 --scenario scripts/vm/scenarios/tiering.sh --timeout 600
# (7.2 kernel). Prints the machine (numactl --hardware, the kernel's HMAT view, the memory
# tiers and their nodelists, demotion), turns on the kernel's memory tiering mode
# (kernel.numa_balancing=2, demotion_enabled=true), then
#   1. promotion: `numa01-like --procs 1 --mem-node <slow>` (one process, 2 writer threads,
#      256 MiB by default): first-touched from node 0's CPUs, then moved to the slow node
#      by the program itself (move_pages) before any writer starts, so no hinting fault
#      races the move. Its policy stays the default: under `numactl --preferred` or
#      `--membind` the kernel's NUMA balancing would not move its pages (START=preferred
#      runs it under `numactl --preferred=<slow node>` instead, to show that). Where its
#      memory is and the CPUs its threads last ran on: about QUIET_S s after its writers
#      started, then every second to 10 s, then every 5 s;
#   2. pressure: FILL_AT s after the hot set's start line, a filler bound to node 0
#      (`numactl --membind=0 numa02-like`) asks for node 0's free memory plus
#      FILL_EXTRA_MB, so node 0's reclaim has to demote pages to the slow node.
# /proc/vmstat's pgpromote_success, pgpromote_candidate, pgdemote_kswapd, pgdemote_direct,
# numa_hint_faults, numa_pages_migrated, numa_pte_updates, pgmigrate_success, the THP
# counters thp_fault_alloc, thp_fault_fallback and thp_migration_success/fail/split (whether
# the filler's faults got THPs, and whether reclaim demoted THPs whole) and each node's
# meminfo are printed before, before the filler and at the end (the move of the hot set
# counts in pgmigrate_success only). Exits 1 when the guest does not have two
# memory tiers or a program failed; the counters are printed, not judged. The end has `@`
# lines for scripts/vm/tiering-twin.sh (times in seconds after the hot program started):
#   @meminfo nodeN TOTAL_MIB FREE_MIB     each node before the workloads
#   @shmem nodeN MIB                      each node's Shmem (tmpfs files) before them
#   @time NAME S                          hot_placed, filler_started, hot_in_dram (the first
#                                         sample with 90 % of the hot set on nodes with
#                                         CPUs), end
#   @fill_mb M                            the filler's size
#   @mib hot|filler nodeN MIB             each program's memory per node, last sample
#   @counter NAME DELTA                   /proc/vmstat over the whole run
#   @phase1 / @phase2 NAME DELTA          until the filler / from it on
#   @node nodeN NAME VALUE                per-node pgpromote_success, pgdemote_kswapd/direct
#   @kswapd_cpu_s kswapdN S              each kswapd's CPU time over the run (schedstat)
# Environment (run.sh --env): LLC_BALANCING (0 or 1: writes the kernel's debugfs switch of
# cache-aware scheduling, 7.2; unset: left as booted), START (mem-node or preferred), HOT_MB (256), SECONDS_RUN
# (60), FILL_AT (30), FILL_SECONDS (20), FILL_EXTRA_MB (192), QUIET_S (3: seconds after
# the hot set's start, about, before the first sample, in which the scenario starts no
# process and its shell does not run: its own processes tipped the load balancer's
# placement of the new writers, and its shell, woken by the start line, their forks;
# docs/vm-tests.md, "The tiered twin"); TRACE=1 also records, with
# the kernel's tracepoints, where each new workload thread was placed (sched_wakeup_new)
# and what every CPU ran around each of the hot program's forks (sched_switch and
# sched_wakeup, in a trace instance of their own until the first sample),
# each move of a workload thread between CPUs (sched_migrate_task: the task running at
# the time says who moved it, migration/N being the stopper: active balancing or NUMA
# balancing's moves and swaps), who asked the stopper, with the kernel stack (kprobes on
# stop_one_cpu, stop_one_cpu_nowait, stop_two_cpus) and NUMA balancing's decisions
# (sched_move_numa, sched_swap_numa, sched_stick_numa), printed after the counters; and
# the hot program's NUMA scanning: each task_numa_work, each range change_prot_numa
# protects with the pages it returns (kprobes), each VMA it skips and why
# (sched_skip_vma_numa, 6.7+), and its VMAs (/proc/PID/maps, at the filler's start);
# MGLRU's agings and reclaim's rounds around them (kprobes on try_to_inc_max_seq,
# inc_max_seq, balance_pgdat, try_to_free_pages, shrink_node: the comm says kswapd or the
# allocating process); MGLRU's page-table walks (kprobes on walk_page_range, its mm, start
# and return, and on lru_gen_add_mm, which names each process's mm at fork and exec), each
# THP young bit tested and cleared (pmdp_test_and_clear_young: by a walk, or by DAMON_STAT's
# kdamond until the first walk), reclaimers' failed spin_trylock calls, and reclaim's
# reference checks and batches with their durations (folio_referenced,
# shrink_folio_list, summed per task, and each check), the hot program's hinting faults
# and their isolations and migrations (do_huge_pmd_numa_page, do_numa_page,
# migrate_misplaced_folio_prepare, migrate_misplaced_folio); from
# the filler's start, every 0.2 s, MGLRU's generations of node 0 (debugfs lru_gen_full:
# each generation's seq, age in ms and anonymous pages, and the walks' counts); and the page
# flags of the hot program's buffer at the filler's start and 10 s later (page-flags);
# TRACE=2 adds them right after the buffer's move to the slow node (a process run in the
# writers' first seconds, which may change where the balancer puts them).
# TRACE_PER_FOLIO=0 (with TRACE=1) leaves out the probes that fire on every folio (each
# THP a walk or DAMON tests, each reference check), to time the agings' walks and
# reclaim's batches without them.

start=${START:-mem-node}
case $start in mem-node|preferred) ;; *) echo "FAIL: START must be mem-node or preferred"; exit 1 ;; esac
hot_mb=${HOT_MB:-256}
run_s=${SECONDS_RUN:-60}
fill_at=${FILL_AT:-30}
fill_s=${FILL_SECONDS:-20}
fill_extra=${FILL_EXTRA_MB:-192}
quiet_s=${QUIET_S:-3}
sysnode=/sys/devices/system/node
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# The slow node: NUMABAL_VM_CXL_NODE from run.sh, else the node with memory and no CPUs.
slow=${NUMABAL_VM_CXL_NODE:-}
if [ -z "$slow" ]; then
  for d in "$sysnode"/node[0-9]*; do
    [ -z "$(cat "$d/cpulist")" ] && slow=${d##*node}
  done
fi
[ -n "$slow" ] || { echo "FAIL: no CPU-less node (run.sh --cxl-mb N)"; exit 1; }
nodes=$(ls -d "$sysnode"/node[0-9]* | sed 's/.*node//' | sort -n | tr '\n' ' ')
fast=$(cat "$sysnode/has_cpu")

echo "== kernel: $(uname -r)"
echo "== numactl --hardware"
numactl --hardware || fail "numactl --hardware"

echo "== the kernel's HMAT view (access class 0: best initiator; 1: best CPU initiator)"
for n in $nodes; do
  for a in 0 1; do
    d=$sysnode/node$n/access$a/initiators
    [ -d "$d" ] || continue
    printf 'node%s access%s: initiators %s read_latency %s ns write_latency %s ns read_bandwidth %s MB/s write_bandwidth %s MB/s\n' \
      "$n" "$a" "$(ls "$d" | grep '^node' | tr '\n' ' ' | sed 's/ $//')" \
      "$(cat "$d/read_latency" 2>/dev/null)" "$(cat "$d/write_latency" 2>/dev/null)" \
      "$(cat "$d/read_bandwidth" 2>/dev/null)" "$(cat "$d/write_bandwidth" 2>/dev/null)"
  done
done

echo "== memory tiers (/sys/devices/virtual/memory_tiering)"
tiers=0
for t in /sys/devices/virtual/memory_tiering/memory_tier*; do
  [ -d "$t" ] || continue
  tiers=$((tiers + 1))
  printf '%s: nodelist %s\n' "${t##*/}" "$(cat "$t"/nodelist* 2>/dev/null)"
done
echo "tiers: $tiers; slow node: $slow; nodes with CPUs: $fast"
[ "$tiers" -ge 2 ] || fail "the kernel made $tiers memory tier(s), not 2: the slow node is not in a lower tier"
echo "== kernel messages on HMAT and tiers (dmesg)"
dmesg | grep -iE 'hmat|memory-tier|memory tier|demotion' | sed 's/^/  /'

echo "== before: numa_balancing=$(cat /proc/sys/kernel/numa_balancing) demotion_enabled=$(cat /sys/kernel/mm/numa/demotion_enabled)"
# Cache-aware scheduling (CONFIG_SCHED_CACHE, Linux 7.2): its switch is in debugfs.
llc=/sys/kernel/debug/sched/llc_balancing/enabled
[ -d /sys/kernel/debug/sched ] || mount -t debugfs nodev /sys/kernel/debug 2>/dev/null || true
if [ -n "${LLC_BALANCING:-}" ]; then
  echo "$LLC_BALANCING" > "$llc" || fail "LLC_BALANCING=$LLC_BALANCING: cannot write $llc"
fi
echo "== cache-aware scheduling: llc_balancing/enabled=$(cat "$llc" 2>/dev/null || echo absent)"
# MGLRU decides what reclaim demotes (the twin models it with sim.lru_gen when on).
echo "== multi-gen LRU: lru_gen/enabled=$(cat /sys/kernel/mm/lru_gen/enabled 2>/dev/null || echo absent)"
# DAMON_STAT (6.17+) runs a kdamond over physical memory whose checks clear accessed bits
# that MGLRU's walk then misses (the twin models it with sim.damon_stat when on).
echo "== DAMON_STAT: damon_stat/parameters/enabled=$(cat /sys/module/damon_stat/parameters/enabled 2>/dev/null || echo absent)"
# Before any load (its static key must not flip under load: docs/vm-tests.md, int3s).
echo 2 > /proc/sys/kernel/numa_balancing || fail "numa_balancing=2"
echo true > /sys/kernel/mm/numa/demotion_enabled || fail "demotion_enabled=true"
echo "== now: numa_balancing=$(cat /proc/sys/kernel/numa_balancing) demotion_enabled=$(cat /sys/kernel/mm/numa/demotion_enabled)" \
     "promote_rate_limit_MBps=$(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps 2>/dev/null || echo absent)"

COUNTERS="pgpromote_success pgpromote_candidate pgdemote_kswapd pgdemote_direct numa_hint_faults numa_pages_migrated numa_pte_updates pgmigrate_success thp_fault_alloc thp_fault_fallback thp_migration_success thp_migration_fail thp_migration_split"
snap() {  # FILE: the counters now, "name value" lines (one awk)
  awk -v list="$COUNTERS" 'BEGIN { n = split(list, c, " "); for (i = 1; i <= n; i++) want[c[i]] = 1 }
    $1 in want { v[$1] = $2 }
    END { for (i = 1; i <= n; i++) print c[i], (c[i] in v) ? v[c[i]] : "absent" }' /proc/vmstat > "$1"
}
deltas() {  # TITLE FILE_A FILE_B
  echo "== $1"
  awk 'NR == FNR { a[$1] = $2; next }
       { d = ($2 ~ /^[0-9]+$/ && a[$1] ~ /^[0-9]+$/) ? $2 - a[$1] : "-"
         printf "  %-22s %12s -> %12s  (+%s)\n", $1, a[$1], $2, d }' "$2" "$3"
}
at_deltas() {  # TAG FILE_A FILE_B: "@TAG NAME DELTA" lines
  awk -v tag="$1" 'NR == FNR { a[$1] = $2; next }
       $2 ~ /^[0-9]+$/ && a[$1] ~ /^[0-9]+$/ { printf "@%s %s %d\n", tag, $1, $2 - a[$1] }' "$2" "$3"
}
meminfo() {  # TITLE (one awk)
  echo "== per-node meminfo, MiB ($1)"
  # shellcheck disable=SC2086
  awk '$3 == "MemTotal:" { t[$2] = $4 } $3 == "MemFree:" { f[$2] = $4 } $3 == "AnonPages:" { a[$2] = $4 }
       $3 == "Shmem:" { s[$2] = $4 } $3 == "AnonHugePages:" { h[$2] = $4; n[++k] = $2 }
       END { for (i = 1; i <= k; i++) printf "  node%s MemTotal %6d MemFree %6d AnonPages %6d AnonHugePages %6d Shmem %6d\n",
             n[i], t[n[i]] / 1024, f[n[i]] / 1024, a[n[i]] / 1024, h[n[i]] / 1024, s[n[i]] / 1024 }' \
    $(for n in $nodes; do echo "$sysnode/node$n/meminfo"; done)
  # Each populated zone's free pages, watermark boost and marks (kswapd balances a node
  # to WMARK_PROMO in tiering mode), in pages.
  awk '$1 == "Node" { node = $2; sub(",", "", node); zone = $4; next }
       $1 == "pages" && $2 == "free" { free = $3; next }
       $1 ~ /^(boost|min|low|high|promo)$/ { w[$1] = $2; next }
       $1 == "managed" && $2 > 0 { printf "  zone node%s %-7s managed %7d free %7d boost %5d min %5d low %5d high %5d promo %5d\n",
             node, zone, $2, free, w["boost"], w["min"], w["low"], w["high"], w["promo"] }' /proc/zoneinfo
}
pernode_vmstat() {
  echo "== per-node vmstat (promoted to / demoted from each node)"
  for n in $nodes; do
    printf '  node%s' "$n"
    for c in pgpromote_success pgdemote_kswapd pgdemote_direct; do
      printf ' %s=%s' "$c" "$(awk -v c="$c" '$1 == c { print $2 }' "$sysnode/node$n/vmstat")"
    done
    echo
  done
}
# The run is watched lightly, as the twin's model has no watcher: processes the scenario
# starts take vCPUs from the workload and move the load balancer (docs/vm-tests.md, "The
# tiered twin"). The start line is read from a FIFO (the shell blocks, no process), the
# time comes from /proc/uptime by the shell's `read`, and a sample is one awk (and the
# sleep before it).
now_cs() {  # NOW: uptime in hundredths of a second, without a process
  read -r _up _idle < /proc/uptime
  NOW=$(( ${_up%.*} * 100 + 1${_up#*.} - 100 ))
}
secs() { echo "$(($1 / 100)).$(( ($1 % 100) / 10 ))"; }  # hundredths -> "S.d"
# sample TAG PID [FILLER_PID]: one line of where each program's memory is (numa_maps counts
# base pages; MiB per node), the CPU each of the hot program's threads last ran on
# (/proc/PID/task/TID/stat, field 39) and the promotion/demotion counters; the MiB per
# node also go to /tmp/at-hot and /tmp/at-fill as "@mib" lines, and the first time 90 % of
# the hot set is off the slow node, "@time hot_in_dram S" to /tmp/at-indram.
sample() {
  _f=""
  [ -n "${3:-}" ] && _f="/proc/$3/numa_maps"
  now_cs
  _in=""
  [ -s /tmp/at-indram ] && _in=1
  # shellcheck disable=SC2086
  awk -v nodes="$nodes" -v tag="$1" -v hot="/proc/$2/numa_maps" -v slow="$slow" \
      -v when="$(secs $((NOW - t0)))" -v done="$_in" '
    FILENAME == "/proc/vmstat" {
      if ($1 == "pgpromote_success" || $1 == "pgdemote_kswapd" || $1 == "pgdemote_direct") c = c sprintf(" %s=%s", $1, $2)
      next }
    FILENAME ~ /\/stat$/ { sub(/.*\) /, ""); split($0, f, " "); cpus = cpus (cpus == "" ? "" : ",") f[37]; next }
    { ps = 4; w = (FILENAME == hot) ? "hot" : "filler"
      for (i = 1; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { split($i, a, "="); ps = a[2] }
      for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); kb[w, a[1]] += a[2] * ps; seen[w] = 1 } }
    END { n = split(nodes, l, " ")
          for (k = 1; k <= 2; k++) {
            w = (k == 1) ? "hot" : "filler"; if (!(w in seen)) continue
            line = line sprintf(" | %s:", w)
            out = (w == "hot") ? "/tmp/at-hot" : "/tmp/at-fill"
            for (j = 1; j <= n; j++) {
              line = line sprintf(" node%s=%dMiB", l[j], kb[w, l[j]] / 1024)
              printf "@mib %s node%s %.1f\n", w, l[j], kb[w, l[j]] / 1024 > out
            }
            if (w == "hot") line = line " cpus " cpus
          }
          for (j = 1; j <= n; j++) { tot += kb["hot", l[j]]; if (l[j] != slow) fast += kb["hot", l[j]] }
          if (done == "" && tot > 0 && fast >= 0.9 * tot) print "@time hot_in_dram " when > "/tmp/at-indram"
          if ("hot" in seen) print tag line " |" c }' \
    /proc/vmstat "/proc/$2/numa_maps" /proc/"$2"/task/*/stat $_f 2>/dev/null
}

# kswapd_ns FILE: each kswapd's time on a CPU so far ("kswapdN ns" lines, the first field
# of /proc/PID/schedstat): reclaim's work in the background, untraced.
kswapd_ns() {
  for p in /proc/[0-9]*; do
    read -r comm < "$p/comm" 2>/dev/null || continue
    case $comm in kswapd*) read -r ns _ < "$p/schedstat" 2>/dev/null && echo "$comm $ns" ;; esac
  done > "$1"
}

snap /tmp/c0
kswapd_ns /tmp/k0
meminfo "before"
# Shmem: the root file system's files (the initramfs unpacked into tmpfs), on the
# anonymous LRU and so demoted by reclaim like the programs' pages, though no process maps
# most of them (the twin's [[tmpfs]]).
for n in $nodes; do
  awk -v n="$n" '$3 == "MemTotal:" { t = $4 } $3 == "MemFree:" { f = $4 } $3 == "Shmem:" { s = $4 }
    END { printf "@meminfo node%s %d %d\n@shmem node%s %d\n", n, t / 1024, f / 1024, n, s / 1024 }' "$sysnode/node$n/meminfo"
done > /tmp/at-meminfo

T=/sys/kernel/tracing
# kprobes FILTER SPEC...: each kprobe_events SPEC ("p:NAME FUNCTION ARGS", "r:..."), if
# FUNCTION is a symbol of this kernel, enabled with FILTER (none when empty).
kprobes() {
  filter=$1; shift
  for spec in "$@"; do
    fn=${spec#* }; fn=${fn%% *}; ev=${spec%% *}; ev=${ev#*:}
    grep -q " $fn\$" /proc/kallsyms || continue
    echo "$spec" >> $T/kprobe_events || continue
    [ -z "$filter" ] || echo "$filter" > "$T/events/kprobes/$ev/filter"
    echo 1 > "$T/events/kprobes/$ev/enable"
  done
}
if [ "${TRACE:-0}" -ge 1 ]; then
  mount -t tracefs nodev $T 2>/dev/null || true
  echo 4096 > $T/buffer_size_kb
  for e in sched/sched_wakeup_new sched/sched_migrate_task sched/sched_move_numa \
           sched/sched_swap_numa sched/sched_stick_numa sched/sched_skip_vma_numa; do
    [ -e "$T/events/$e/enable" ] && echo 1 > "$T/events/$e/enable"
  done
  # Every CPU's switches and wakeups around the hot program's forks, in a buffer of their
  # own, so that they push none of the run's other events out of the main one.
  F=$T/instances/fork
  mkdir "$F" 2>/dev/null || true
  if [ -d "$F/events/sched" ]; then
    echo 2048 > "$F/buffer_size_kb"
    for e in sched_switch sched_wakeup sched_wakeup_new; do echo 1 > "$F/events/sched/$e/enable"; done
  fi
  # Who asks a CPU's stopper (migration/N) to move a task, with the kernel stack: active
  # load balancing, NUMA balancing's moves and swaps, affinity changes.
  for fn in stop_one_cpu_nowait stop_one_cpu stop_two_cpus; do
    grep -q " $fn\$" /proc/kallsyms || continue
    echo "p:tier_$fn $fn" >> $T/kprobe_events &&
      echo 1 > "$T/events/kprobes/tier_$fn/enable" &&
      echo stacktrace > "$T/events/kprobes/tier_$fn/trigger"
  done
  # The scan: when it runs, what it protects (change_prot_numa(vma, addr, end) returns
  # the pages it changed).
  if grep -q " task_numa_work\$" /proc/kallsyms; then
    echo "p:tier_scan task_numa_work" >> $T/kprobe_events && echo 1 > $T/events/kprobes/tier_scan/enable
  fi
  if grep -q " change_prot_numa\$" /proc/kallsyms; then
    echo "p:tier_cpn change_prot_numa addr=%si:x64 end=%dx:x64" >> $T/kprobe_events &&
      echo "r:tier_cpn_ret change_prot_numa pages=\$retval:s64" >> $T/kprobe_events &&
      echo 1 > $T/events/kprobes/tier_cpn/enable && echo 1 > $T/events/kprobes/tier_cpn_ret/enable
  fi
  # Reclaim's rounds (entry and return): kswapd's balance_pgdat, direct reclaim's
  # try_to_free_pages, and shrink_node under both.
  for fn in balance_pgdat try_to_free_pages shrink_node; do
    grep -q " $fn\$" /proc/kallsyms || continue
    echo "p:tier_rc_$fn $fn" >> $T/kprobe_events && echo 1 > "$T/events/kprobes/tier_rc_$fn/enable"
    echo "r:tier_rc_${fn}_ret $fn" >> $T/kprobe_events && echo 1 > "$T/events/kprobes/tier_rc_${fn}_ret/enable"
  done
  # MGLRU's aging, with who asked for it (kswapd or an allocation's direct reclaim).
  for fn in inc_max_seq try_to_inc_max_seq; do
    grep -q " $fn\$" /proc/kallsyms || continue
    echo "p:tier_age_$fn $fn" >> $T/kprobe_events &&
      echo 1 > "$T/events/kprobes/tier_age_$fn/enable" &&
      echo "stacktrace 5" > "$T/events/kprobes/tier_age_$fn/trigger"
  done
  # MGLRU's page-table walks: each mm an aging walks and how the walk ended
  # (walk_page_range), and which process an mm is (lru_gen_add_mm, at fork and exec: the
  # pid is the exec'ing process, or the parent at a fork).
  kprobes "" "p:tier_mm_add lru_gen_add_mm mm=%di:x64" \
    "p:tier_walk walk_page_range mm=%di:x64 start=%si:x64" \
    "r:tier_walk_ret walk_page_range ret=\$retval:s32"
  # Per folio (each THP a walk or DAMON tests, each reference check): off with
  # TRACE_PER_FOLIO=0, whose runs time the walks and reclaim's batches without a probe's
  # cost on every folio.
  if [ "${TRACE_PER_FOLIO:-1}" = 1 ]; then
    kprobes "" "p:tier_pmdy pmdp_test_and_clear_young addr=%si:x64" \
      "r:tier_pmdy_ret pmdp_test_and_clear_young young=\$retval:s32"
  fi
  # A walk skips a batch of THPs whose PMD table's lock it cannot take
  # (walk_pmd_range_locked's spin_trylock): failed trylocks in a reclaimer, with the stack.
  if grep -q " _raw_spin_trylock\$" /proc/kallsyms &&
     echo "r:tier_trylock _raw_spin_trylock ok=\$retval:s32" >> $T/kprobe_events; then
    echo 'ok == 0 && (comm == "numa02-like" || comm == "kswapd0")' > $T/events/kprobes/tier_trylock/filter &&
      echo "stacktrace 6" > $T/events/kprobes/tier_trylock/trigger &&
      echo 1 > $T/events/kprobes/tier_trylock/enable
  fi
  # What eviction's reference check costs (folio_referenced, an rmap walk per folio), on
  # which folio (its struct page's address and flags word) and what it found, and each
  # batch of reclaim's (shrink_folio_list, returning the pages reclaimed), in the
  # reclaimers only; vmemmap_base (once a batch) turns a folio's address into its frame.
  if [ "${TRACE_PER_FOLIO:-1}" = 1 ]; then
    kprobes 'comm == "numa02-like" || comm == "kswapd0"' \
      "p:tier_fref folio_referenced folio=%di:x64 flags=+0(%di):x64" \
      "r:tier_fref_ret folio_referenced refs=\$retval:s32"
  fi
  kprobes 'comm == "numa02-like" || comm == "kswapd0"' \
    "p:tier_sfl shrink_folio_list" "r:tier_sfl_ret shrink_folio_list reclaimed=\$retval:u32" \
    "p:tier_vb shrink_folio_list vb=@vmemmap_base:x64"
  # The hot program's hinting faults and their promotions: each fault on a THP or a page
  # (do_huge_pmd_numa_page, do_numa_page: the vm_fault's address), each folio the fault
  # tries to isolate for migration and the answer (migrate_misplaced_folio_prepare: 0, or
  # -EAGAIN when the node lacks room or the folio is isolated already), and the migration's.
  kprobes 'comm == "numa01-like"' "p:tier_hpmd do_huge_pmd_numa_page addr=+24(%di):x64" \
    "p:tier_hpte do_numa_page addr=+24(%di):x64" \
    "p:tier_mmp migrate_misplaced_folio_prepare folio=%di:x64" \
    "r:tier_mmp_ret migrate_misplaced_folio_prepare ret=\$retval:s32" \
    "r:tier_mmf_ret migrate_misplaced_folio ret=\$retval:s32"
  echo 1 > $T/tracing_on
fi

# --- 1. promotion -----------------------------------------------------------------------
pre="" post=""
if [ "$start" = preferred ]; then
  pre="numactl --preferred=$slow"
  echo "== 1. $pre numa01-like --procs 1 --mb $hot_mb --seconds $run_s (first touch from node 0's CPUs)"
else
  post="--mem-node $slow"
  echo "== 1. numa01-like --procs 1 --mb $hot_mb --seconds $run_s $post (first touch from node 0's CPUs, then moved to node $slow)"
fi
rm -f /tmp/at-indram
now_cs; t0=$NOW
since() { now_cs; secs $((NOW - t0)); }
rm -f /tmp/hot.fifo; mkfifo /tmp/hot.fifo
# shellcheck disable=SC2086
$pre numa01-like --procs 1 --mb "$hot_mb" --seconds "$run_s" $post > /tmp/hot.fifo 2>&1 &
hot=$!
exec 3< /tmp/hot.fifo
# The shell must not run when the writers start. Woken by the start line, which
# numa01-like prints just before it starts them, it kept node 0's second CPU busy at both
# forks in run 44, and the kernel put both writers on node 1 (docs/vm-tests.md). So it
# waits on a FIFO nobody writes (no process, and no wakeup at the start line) through the
# buffer's first touch and move (about 2 s) and QUIET_S s more, then reads the start line
# written meanwhile.
rm -f /tmp/idle.fifo; mkfifo /tmp/idle.fifo
exec 4<> /tmp/idle.fifo
read -t $((quiet_s + 3)) _ <&4 || true
exec 4<&-
IFS= read -r first <&3 || first=""
echo "$first" > /tmp/hot.out
case $first in
  *" mb="*) ;;
  *) cat <&3 >> /tmp/hot.out; cat /tmp/hot.out; echo "FAIL: numa01-like did not start"; exit 1 ;;
esac
pid=${first#* pid=}
pid=${pid%% *}
# The placement's time: when its first writer started (/proc stat field 22, in hundredths
# of a second since boot, as now_cs counts), the start line's moment to a few ms.
t1=""
for f in /proc/"$pid"/task/*/stat; do
  [ "$f" != "/proc/$pid/task/$pid/stat" ] && read -r st < "$f" || continue
  # shellcheck disable=SC2086
  set -- ${st#*) }
  shift 19
  { [ -z "$t1" ] || [ "$1" -lt "$t1" ]; } && t1=$1
done
[ -n "$t1" ] || { now_cs; t1=$NOW; }
# The buffer's flags as placed (moved to the slow node, not yet promoted): a diagnostic
# that runs a process in the writers' first seconds, so only with TRACE=2.
[ "${TRACE:-0}" = 2 ] && page-flags "$pid" --tag placed > /tmp/hot.flags 2>&1
# Every CPU's switches and wakeups until here only: the writers' fork among them.
if [ "${TRACE:-0}" -ge 1 ] && [ -d "$F/events/sched" ]; then
  for e in sched_switch sched_wakeup sched_wakeup_new; do echo 0 > "$F/events/sched/$e/enable"; done
fi
cat <&3 >> /tmp/hot.out &
drain=$!
exec 3<&-
placed=$(secs $((t1 - t0)))
echo "@time hot_placed $placed" > /tmp/at-time
echo "$first"
now_cs
sample "placed at +$placed s (pid $pid), sampled $(secs $((NOW - t1))) s later" "$pid"
case $first in *unmoved_pages=*) echo "note: not every page reached node $slow" ;; esac

filler=""
elapsed=0
while kill -0 "$pid" 2>/dev/null; do
  if [ "$elapsed" -lt 10 ]; then sleep 1; else sleep 5; fi
  now_cs
  elapsed=$(( (NOW - t1) / 100 ))
  sample "+${elapsed}s (+$(secs $((NOW - t0))) s)" "$pid" "$filler"
  if [ "${TRACE:-0}" -ge 1 ] && [ -n "$filler" ] && [ -z "${flags_after:-}" ] && [ "$elapsed" -ge $((fill_at + 10)) ]; then
    page-flags "$pid" --tag after_reclaim --pfns >> /tmp/hot.flags 2>&1; flags_after=1
  fi
  if [ -z "$filler" ] && [ "$elapsed" -ge "$fill_at" ] && kill -0 "$pid" 2>/dev/null; then
    # --- 2. pressure on node 0 ----------------------------------------------------------
    snap /tmp/c2
    meminfo "before the filler"
    free0=$(awk '$3 == "MemFree:" { print int($4 / 1024) }' "$sysnode/node0/meminfo")
    fill_mb=$((free0 + fill_extra))
    echo "@time filler_started $(since)" >> /tmp/at-time
    if [ "${TRACE:-0}" -ge 1 ]; then
      cp "/proc/$pid/maps" /tmp/hot.maps
      page-flags "$pid" --tag before_filler --pfns >> /tmp/hot.flags 2>&1
      if [ -r /sys/kernel/debug/lru_gen ]; then
        ( while kill -0 "$pid" 2>/dev/null; do
            read -r up _ < /proc/uptime; echo "@t $up"; cat /sys/kernel/debug/lru_gen_full; sleep 0.2
          done > /tmp/lrugen.log ) &
      fi
    fi
    read -r fill_up _ < /proc/uptime
    echo "@fill_mb $fill_mb" > /tmp/at-fill-mb
    numactl --membind=0 numa02-like --mb "$fill_mb" --threads 1 --seconds "$fill_s" > /tmp/fill.out 2>&1 &
    filler=$!  # numactl execs numa02-like: the same pid
    if [ "${TRACE:-0}" = 2 ]; then  # the filler's first-touched pages, before reclaim
      sleep 2; page-flags "$filler" --tag filler_2s >> /tmp/hot.flags 2>&1
    fi
    echo "== 2. numactl --membind=0 numa02-like --mb $fill_mb --threads 1 --seconds $fill_s (node 0 free: $free0 MiB)"
  fi
done
wait $hot || fail "numa01-like exited with $?"
wait $drain
[ -n "$filler" ] && { wait "$filler" || fail "the filler exited with $? (killed by the OOM killer?)"; }
now_cs; t3=$NOW
echo "@time end $(secs $((t3 - t0)))" >> /tmp/at-time
echo "== the workloads' output (run ended +$(secs $((t3 - t1))) s after placement)"
cat /tmp/hot.out
[ -f /tmp/fill.out ] && cat /tmp/fill.out
snap /tmp/c3
kswapd_ns /tmp/k3

if [ -f /tmp/c2 ]; then
  deltas "counters: phase 1 (promotion, from the start until the filler)" /tmp/c0 /tmp/c2
  deltas "counters: phase 2 (filler on node 0 and after)" /tmp/c2 /tmp/c3
fi
deltas "counters: whole run" /tmp/c0 /tmp/c3
pernode_vmstat
meminfo "after"
echo "== dmesg: OOM and warnings"
dmesg | grep -iE 'oom|killed process|warning|bug:' | tail -n 20 | sed 's/^/  /'
if [ "${TRACE:-0}" -ge 1 ]; then
  echo 0 > $T/tracing_on
  echo "== trace: the workloads' threads (new-thread placement, moves between CPUs, NUMA decisions)"
  # Each event of the workloads' threads, and each stopper request with its stack.
  awk '/tier_stop_|comm=numa0[12]-like|sched_(move|swap|stick)_numa/ { keep = 1 }
       /<stack trace>/ { if (last) { print; instack = 1 }; next }
       instack && /^ => / { print; next }
       { instack = 0; last = keep; if (keep) print; keep = 0 }' $T/trace | sed 's/^ *//' | head -n 600
  echo "== trace: the hot program's new threads and their moves between CPUs in the first 5 s after its last fork (sched_wakeup_new, sched_migrate_task)"
  tl=$(grep 'sched_wakeup_new:.*comm=numa01-like' $T/trace | tail -1 | awk '{ t = $4; sub(":", "", t); print t }')
  [ -z "$tl" ] || awk -v b="$tl" '/sched_(wakeup_new|migrate_task): comm=numa01-like/ { t = $4; sub(":", "", t)
    if (t <= b + 5) print }' $T/trace | sed 's/^ *//' | head -n 200
  echo "== trace: what each CPU ran from 10 ms before to 5 ms after each new thread of the hot program (sched_switch, sched_wakeup, sched_wakeup_new)"
  tn=$(grep 'sched_wakeup_new:.*comm=numa01-like' "$F/trace" | awk '{ t = $4; sub(":", "", t); printf "%s ", t }')
  [ -z "$tn" ] || awk -v forks="$tn" 'BEGIN { n = split(forks, f, " ") }
    /sched_(switch|wakeup|wakeup_new):/ { t = $4; sub(":", "", t)
      for (i = 1; i <= n; i++) if (t >= f[i] - 0.01 && t <= f[i] + 0.005) { print; next } }' "$F/trace" |
    sed 's/^ *//' | head -n 400
  echo "== trace: the hot program's NUMA scanning (task_numa_work, change_prot_numa, VMAs skipped)"
  grep -E 'tier_scan|tier_cpn|sched_skip_vma_numa' $T/trace | grep -F "numa01-like-" | sed 's/^ *//' | head -n 5000
  echo "== trace: MGLRU's aging (inc_max_seq / try_to_inc_max_seq, with the caller's stack)"
  awk '/tier_age_/ { keep = 1; print; next } keep && /^ => / { print; next } { keep = 0 }' $T/trace |
    sed 's/^ *//' | head -n 400
  echo "== trace: reclaim's rounds and MGLRU's agings, 50 ms before the first aging to 60 ms after"
  t0a=$(grep -m1 'tier_age_' $T/trace | awk '{ sub(":", "", $4); print $4 }')
  awk -v t0="${t0a:-0}" '/tier_rc_|tier_age_/ { t = $4; sub(":", "", t); if (t >= t0 - 0.05 && t <= t0 + 0.06) print }' $T/trace |
    sed 's/^ *//' | head -n 400
  echo "== trace: reclaim's reference checks and batches (folio_referenced, shrink_folio_list: calls, us each, by task)"
  grep -E 'tier_fref|tier_sfl' $T/trace | sed 's/^ *//' | awk '
    { task = $1; t = $4; sub(":", "", t) }
    /tier_fref:/ { f0[task] = t; next }
    /tier_fref_ret:/ && (task in f0) { d = (t - f0[task]) * 1e6; fn[task]++; fus[task] += d
      if (d > fmax[task]) fmax[task] = d; if ($NF != "refs=0") fref[task]++; delete f0[task]; next }
    /tier_sfl:/ { s0[task] = t; next }
    /tier_sfl_ret:/ && (task in s0) { d = (t - s0[task]) * 1e6; sn[task]++; sus[task] += d
      r = $NF; sub("reclaimed=", "", r); srec[task] += r; delete s0[task] }
    END { for (k in fn) printf "  %s folio_referenced: %d calls, %.1f us mean, %.0f us max, %d found references\n", k, fn[k], fus[k] / fn[k], fmax[k], fref[k]
          for (k in sn) printf "  %s shrink_folio_list: %d calls, %.1f us mean, %d pages reclaimed\n", k, sn[k], sus[k] / sn[k], srec[k] }'
  echo "== trace: each reference check (uptime s, task, folio, its flags word, references found, us) and batch (sfl: start; sfl_ret: pages reclaimed); vmemmap_base"
  grep -m1 'tier_vb' $T/trace | sed 's/.* vb=/@vmemmap_base /'
  grep -E 'tier_fref|tier_sfl' $T/trace | sed 's/^ *//' | awk '
    { task = $1; t = $4; sub(":", "", t) }
    /tier_fref:/ { f0[task] = t; fo[task] = $(NF - 1); ff[task] = $NF; next }
    /tier_fref_ret:/ && (task in f0) { r = $NF; sub("refs=", "", r); f = fo[task]; sub("folio=", "", f); g = ff[task]; sub("flags=", "", g)
      printf "@fref %s %s %s %s %s %.0f\n", t, task, f, g, r, (t - f0[task]) * 1e6; delete f0[task]; next }
    /tier_sfl:/ { print "@sfl " t " " task; next }
    /tier_sfl_ret:/ { r = $NF; sub("reclaimed=", "", r); print "@sfl_ret " t " " task " " r }' | head -n 40000
  echo "== trace: the hot program's hinting faults and promotions (@hf: uptime s, thread, THP or page, address; @mmp: folio, the isolation's answer; @mmf: the migration's)"
  grep -E 'tier_(hpmd|hpte|mmp|mmf)' $T/trace | sed 's/^ *//' | awk '
    { task = $1; t = $4; sub(":", "", t) }
    /tier_hpmd:/ { a = $NF; sub("addr=", "", a); print "@hf " t " " task " thp " a; next }
    /tier_hpte:/ { a = $NF; sub("addr=", "", a); print "@hf " t " " task " page " a; next }
    /tier_mmp:/ { f = $NF; sub("folio=", "", f); fo[task] = f; next }
    /tier_mmp_ret:/ { r = $NF; sub("ret=", "", r); print "@mmp " t " " task " " fo[task] " " r; next }
    /tier_mmf_ret:/ { r = $NF; sub("ret=", "", r); print "@mmf " t " " task " " r }' | head -n 20000
  echo "== trace: failed spin_trylock in reclaimers (kswapd0, the filler), with the stack"
  awk '/tier_trylock/ { keep = 1; print; next } keep && /^ => / { print; next } { keep = 0 }' $T/trace |
    sed 's/^ *//' | head -n 400
  echo "== trace: MGLRU's page-table walks by reclaim (walk_page_range: each mm walked from its start address, one call per 512 GiB region, and its return; pmdp_test_and_clear_young on each THP a walk tries, and whether it was young, with other tasks' (DAMON_STAT's kdamond) from the filler's start to 0.5 s after the first aging; mm named hot or filler from lru_gen_add_mm at their exec)"
  # The last lru_gen_add_mm by a pid is its exec's mm (numactl execs the filler).
  grep -E 'tier_mm_add|tier_walk|tier_pmdy' $T/trace | sed 's/^ *//' |
    awk -v hot="$pid" -v fill="${filler:-none}" -v from="${fill_up:-0}" -v aged="${t0a:-0}" '
      /tier_mm_add/ { p = $1; sub(/.*-/, "", p); m = $NF; sub(/mm=/, "", m)
                      if (p == hot) name[m] = "hot"
                      if (p == fill) { if (fm != "") delete name[fm]; fm = m; name[m] = "filler" }
                      next }
      /tier_walk|tier_pmdy/ { p = $1; sub(/.*-/, "", p)
                    if ($1 !~ /^kswapd/ && p != fill && !/tier_pmdy/) next
                    t = $4; sub(":", "", t); if (/tier_pmdy/ && t < from) next
                    # Clears by other tasks (the DAMON_STAT kdamond) until the first walk.
                    if (/tier_pmdy/ && $1 !~ /^kswapd/ && p != fill && t > aged + 0.5) next
                    for (i = 1; i <= NF; i++) if ($i ~ /^mm=/) { m = substr($i, 4); if (m in name) $i = $i "(" name[m] ")" }
                    print }' | head -n 5000
  echo "== the hot program's page flags (page-flags: pages present referenced active lru thp huge_heads)"
  cat /tmp/hot.flags 2>/dev/null
  echo "== the hot program's VMAs at the filler's start"
  cat /tmp/hot.maps 2>/dev/null
  echo "== MGLRU's generations of node 0 from the filler's start (uptime s: seq/age ms/anon pages ...; walks: the mm walks' entries seen T, young Y, PMD tables found F and added A)"
  awk '$1 == "@t" { if (line != "") print line; line = $2 ":"; node = -1; next }
       $1 == "node" { node = $2; next }
       node == 0 && NF == 4 && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { line = line " " $1 "/" $2 "/" $3 }
       node == 0 && NF >= 4 && NF <= 6 && $1 ~ /^[0-9]+[A-Za-wyz]$/ { $1 = $1; line = line " | walks " $0 }
       END { if (line != "") print line }' /tmp/lrugen.log 2>/dev/null | head -n 600
fi
echo "== for the twin (scripts/vm/tiering-twin.sh)"
cat /tmp/at-meminfo /tmp/at-time
[ -f /tmp/at-indram ] && cat /tmp/at-indram
[ -f /tmp/at-fill-mb ] && cat /tmp/at-fill-mb
[ -f /tmp/at-hot ] && cat /tmp/at-hot
[ -f /tmp/at-fill ] && cat /tmp/at-fill
at_deltas counter /tmp/c0 /tmp/c3
awk 'NR == FNR { t0[$1] = $2; next } ($1 in t0) { printf "@kswapd_cpu_s %s %.3f\n", $1, ($2 - t0[$1]) / 1e9 }' /tmp/k0 /tmp/k3
if [ -f /tmp/c2 ]; then
  at_deltas phase1 /tmp/c0 /tmp/c2
  at_deltas phase2 /tmp/c2 /tmp/c3
fi
for n in $nodes; do
  for c in pgpromote_success pgdemote_kswapd pgdemote_direct; do
    echo "@node node$n $c $(awk -v c="$c" '$1 == c { print $2 }' "$sysnode/node$n/vmstat")"
  done
done
echo "tiering: $fails failure(s)"
[ "$fails" = 0 ]
