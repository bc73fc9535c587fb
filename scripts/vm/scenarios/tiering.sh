# Tiered memory in a QEMU guest (busybox sh; docs/vm-tests.md, "A tiered guest"). Run with
#   scripts/vm/run.sh --cxl-mb 1024 --scenario scripts/vm/scenarios/tiering.sh --timeout 600
# (7.2 kernel). Prints the machine (numactl --hardware, the kernel's HMAT view, the memory
# tiers and their nodelists, demotion), turns on the kernel's memory tiering mode
# (kernel.numa_balancing=2, demotion_enabled=true), then
#   1. promotion: numa01-like (one process, 2 writer threads, 256 MiB by default) is
#      first-touched on node 0 and stopped (SIGSTOP: no hinting fault promotes a page
#      while they move); `migratepages` moves its pages to the slow node and it is
#      continued. Its policy stays the default: under `numactl --preferred` or `--membind`
#      the kernel's NUMA balancing would not move its pages (START=preferred runs it
#      under `numactl --preferred=<slow node>` instead, to show that). Where its memory
#      is: 1 s apart for 5 s, then every 5 s;
#   2. pressure: FILL_AT s in, a filler bound to node 0 (`numactl --membind=0
#      numa02-like`) asks for node 0's free memory plus FILL_EXTRA_MB, so node 0's
#      reclaim has to demote pages to the slow node.
# /proc/vmstat's pgpromote_success, pgpromote_candidate, pgdemote_kswapd, pgdemote_direct,
# numa_hint_faults, numa_pages_migrated and each node's meminfo are printed before, after
# the move, before the filler and at the end. Exits 1 when the guest does not have two
# memory tiers or a program failed; the counters are printed, not judged.
# Environment (run.sh --env): START (migrate or preferred), HOT_MB (256), SECONDS_RUN (60),
# FILL_AT (30: seconds into the run), FILL_SECONDS (20), FILL_EXTRA_MB (192).

start=${START:-migrate}
case $start in migrate|preferred) ;; *) echo "FAIL: START must be migrate or preferred"; exit 1 ;; esac
hot_mb=${HOT_MB:-256}
run_s=${SECONDS_RUN:-60}
fill_at=${FILL_AT:-30}
fill_s=${FILL_SECONDS:-20}
fill_extra=${FILL_EXTRA_MB:-192}
sysnode=/sys/devices/system/node
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
up() { awk '{ print $1 }' /proc/uptime; }

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
# Before any load (its static key must not flip under load: docs/vm-tests.md, int3s).
echo 2 > /proc/sys/kernel/numa_balancing || fail "numa_balancing=2"
echo true > /sys/kernel/mm/numa/demotion_enabled || fail "demotion_enabled=true"
echo "== now: numa_balancing=$(cat /proc/sys/kernel/numa_balancing) demotion_enabled=$(cat /sys/kernel/mm/numa/demotion_enabled)" \
     "promote_rate_limit_MBps=$(cat /proc/sys/kernel/numa_balancing_promote_rate_limit_MBps 2>/dev/null || echo absent)"

COUNTERS="pgpromote_success pgpromote_candidate pgdemote_kswapd pgdemote_direct numa_hint_faults numa_pages_migrated"
snap() {  # FILE: the counters now, "name value" lines
  for c in $COUNTERS; do
    v=$(awk -v c="$c" '$1 == c { print $2 }' /proc/vmstat)
    echo "$c ${v:-absent}"
  done > "$1"
}
deltas() {  # TITLE FILE_A FILE_B
  echo "== $1"
  awk 'NR == FNR { a[$1] = $2; next }
       { d = ($2 ~ /^[0-9]+$/ && a[$1] ~ /^[0-9]+$/) ? $2 - a[$1] : "-"
         printf "  %-22s %12s -> %12s  (+%s)\n", $1, a[$1], $2, d }' "$2" "$3"
}
meminfo() {  # TITLE
  echo "== per-node meminfo, MiB ($1)"
  for n in $nodes; do
    awk -v n="$n" '
      $3 == "MemTotal:" { t = $4 } $3 == "MemFree:" { f = $4 } $3 == "AnonPages:" { a = $4 }
      $3 == "AnonHugePages:" { h = $4 }
      END { printf "  node%s MemTotal %6d MemFree %6d AnonPages %6d AnonHugePages %6d\n",
            n, t / 1024, f / 1024, a / 1024, h / 1024 }' "$sysnode/node$n/meminfo"
  done
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
where() {  # PID: MiB of its memory on each node (numa_maps counts base pages)
  awk -v nodes="$nodes" '
    { ps = 4
      for (i = 1; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { split($i, a, "="); ps = a[2] }
      for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); kb[a[1]] += a[2] * ps } }
    END { n = split(nodes, l, " "); s = ""
          for (j = 1; j <= n; j++) s = s sprintf(" node%s=%dMiB", l[j], kb[l[j]] / 1024); print s }' "/proc/$1/numa_maps" 2>/dev/null
}
counters_now() {
  awk '$1 == "pgpromote_success" || $1 == "pgdemote_kswapd" || $1 == "pgdemote_direct" { printf " %s=%s", $1, $2 }' /proc/vmstat
}

snap /tmp/c0
meminfo "before"

# --- 1. promotion -----------------------------------------------------------------------
pre=""
if [ "$start" = preferred ]; then
  pre="numactl --preferred=$slow"
  echo "== 1. $pre numa01-like --procs 1 --mb $hot_mb --seconds $run_s (first touch from node 0's CPUs)"
else
  echo "== 1. numa01-like --procs 1 --mb $hot_mb --seconds $run_s, first-touched on node 0, moved to node $slow"
fi
t0=$(up)
$pre numa01-like --procs 1 --mb "$hot_mb" --seconds "$run_s" > /tmp/hot.out 2>&1 &
hot=$!
i=0
while ! grep -q ' mb=' /tmp/hot.out; do
  i=$((i + 1))
  if [ $i -gt 1200 ] || ! kill -0 $hot 2>/dev/null; then
    cat /tmp/hot.out; echo "FAIL: numa01-like did not start"; exit 1
  fi
  sleep 0.1
done
pid=$(sed -n 's/.* pid=\([0-9]*\) mb=.*/\1/p' /tmp/hot.out | head -1)
t1=$(up)
echo "placed at +$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s (pid $pid):$(where "$pid")"
if [ "$start" = migrate ]; then
  kill -STOP "$pid"
  migratepages "$pid" "$fast" "$slow" || fail "migratepages $pid $fast $slow"
  t2=$(up)
  echo "migratepages $pid $fast -> $slow (stopped) took $(awk -v a="$t1" -v b="$t2" 'BEGIN { printf "%.1f", b - a }') s:$(where "$pid") |$(counters_now)"
  snap /tmp/c1
  kill -CONT "$pid"
  t1=$(up)
else
  snap /tmp/c1
fi

filler=""
elapsed=0
while kill -0 "$pid" 2>/dev/null; do
  if [ "$elapsed" -lt 5 ]; then sleep 1; else sleep 5; fi
  now=$(up)
  elapsed=$(awk -v a="$t1" -v b="$now" 'BEGIN { printf "%d", b - a }')
  w=$(where "$pid")
  fpid=$filler  # numactl execs numa02-like: the same pid
  fw=""
  [ -n "$fpid" ] && fw=$(where "$fpid") && [ -n "$fw" ] && fw=" | filler:$fw"
  [ -n "$w" ] && echo "+${elapsed}s: hot:$w$fw |$(counters_now)"
  if [ -z "$filler" ] && [ "$elapsed" -ge "$fill_at" ] && kill -0 "$pid" 2>/dev/null; then
    # --- 2. pressure on node 0 ----------------------------------------------------------
    snap /tmp/c2
    meminfo "before the filler"
    free0=$(awk '$3 == "MemFree:" { print int($4 / 1024) }' "$sysnode/node0/meminfo")
    fill_mb=$((free0 + fill_extra))
    echo "== 2. numactl --membind=0 numa02-like --mb $fill_mb --threads 1 --seconds $fill_s (node 0 free: $free0 MiB)"
    numactl --membind=0 numa02-like --mb "$fill_mb" --threads 1 --seconds "$fill_s" > /tmp/fill.out 2>&1 &
    filler=$!
  fi
done
wait $hot || fail "numa01-like exited with $?"
[ -n "$filler" ] && { wait "$filler" || fail "the filler exited with $? (killed by the OOM killer?)"; }
t3=$(up)
echo "== the workloads' output (run ended +$(awk -v a="$t1" -v b="$t3" 'BEGIN { printf "%.1f", b - a }') s after placement)"
cat /tmp/hot.out
[ -f /tmp/fill.out ] && cat /tmp/fill.out
snap /tmp/c3

[ "$start" = migrate ] && deltas "counters: before -> after migratepages to node $slow" /tmp/c0 /tmp/c1
if [ -f /tmp/c2 ]; then
  deltas "counters: phase 1 (promotion, until the filler)" /tmp/c1 /tmp/c2
  deltas "counters: phase 2 (filler on node 0 and after)" /tmp/c2 /tmp/c3
fi
deltas "counters: whole run" /tmp/c0 /tmp/c3
pernode_vmstat
meminfo "after"
echo "== dmesg: OOM and warnings"
dmesg | grep -iE 'oom|killed process|warning|bug:' | tail -n 20 | sed 's/^/  /'
echo "tiering: $fails failure(s)"
[ "$fails" = 0 ]
