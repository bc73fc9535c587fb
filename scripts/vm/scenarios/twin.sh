# The guest half of the twin harness (scripts/vm/twin.sh, issue 17): one workload under the
# kernel's NUMA balancing (kernel.numa_balancing=1, no daemon), /proc read every second.
# TWIN_WORKLOAD (from the kernel command line): numa01-like, numa02-like or perfbench.
# Every sample is raw text, parsed on the host by `numabal twin` into the simulator's
# `proc_samples` record:
#   @cpus CPU:NODE ...              the guest's CPUs (numactl --hardware), once
#   @sample T                       T: guest seconds since the workload started (the
#                                   first, 0.0, before it: the counters' baseline)
#   vmstat KEY VALUE                the six NUMA counters of /proc/vmstat
#   @task PID TID CPU COMM          /proc/PID/task/TID/stat: processor (field 39), comm
#   @sched PID TID                  then that task's /proc/PID/task/TID/sched NUMA lines,
#   sched LINE                      each as it is
#   numa_maps PID NODE KB           /proc/PID/numa_maps summed per node (what numastat -p
#                                   reads), KiB
# Samples go to a file in the guest's memory and are printed when the workload has ended, so
# the serial console does not slow the run.
W=${TWIN_WORKLOAD:-numa01-like}
case $W in
# comm: the processes' name; tcomm: their tasks' (perf names its processes process_N and
# their threads thread_N/M), as a tracepoint filter.
  numa01-like) cmd="numa01-like --procs 2 --threads 2 --mb 128 --seconds 60"; comm=numa01-like ;;
  numa02-like) cmd="numa02-like --mb 128 --seconds 60"; comm=numa02-like ;;
  perfbench) cmd="perf bench numa mem -p 4 -t 1 -P 160 -s 40 -zZ0c"; comm="process"
             tcomm='@C ~ "process*" || @C ~ "thread_*"' ;;
  *) fail "TWIN_WORKLOAD must be numa01-like, numa02-like or perfbench, got '$W'"; exit 2 ;;
esac
echo 1 > /proc/sys/kernel/numa_balancing
say "== twin: $cmd (numa_balancing=1, THP $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled))"
say "kernel $(uname -r)"
# Cache-aware scheduling (CONFIG_SCHED_CACHE, 7.2): scripts/vm/twin.sh models it when on.
[ -d /sys/kernel/debug/sched ] || mount -t debugfs nodev /sys/kernel/debug 2>/dev/null || true
say "== cache-aware scheduling: llc_balancing/enabled=$(cat /sys/kernel/debug/sched/llc_balancing/enabled 2>/dev/null || echo absent)"
: > /tmp/twin.raw
echo "@cpus $CPU_MAP" >> /tmp/twin.raw
# The samples: twin-sample (crates/numabal-testprogs/src/sample.rs) runs the workload and
# reads, at its start and every whole second, /proc/vmstat and, for the processes named
# $comm with at least 16 MiB resident (not numa01-like's parent, which only waits; perf's
# parent holds 1 MiB of global memory plus slack), each task's CPU and sched NUMA lines and
# the process's numa_maps per node. One process that sleeps between samples: a shell loop
# spawning awk each second kept a vCPU busy under TCG and made the load balancer move the
# workload's threads (docs/vm-tests.md).
# TWIN_TRACE=1 (scripts/vm/twin.sh --trace): also record the kernel's tracepoints of task
# moves and page migration, and print them after the samples (not read by `numabal twin`):
# every move of a workload task from one node to another (sched_migrate_task; the task
# running at the time says who moved it: migration/N is the stopper (active balancing,
# NUMA's migrate_task_to and migrate_swap), <idle> or ksoftirqd periodic or idle
# balancing, another task a wake-up's placement), NUMA balancing's own decisions
# (sched_move_numa, sched_swap_numa, sched_stick_numa), the VMAs the scanner skipped
# (sched_skip_vma_numa, 6.7 and later) and page migrations (mm_migrate_pages), and
# /proc/vmstat's NUMA, migration and THP counters before and after.
T=/sys/kernel/tracing
trace_on() {
  mount -t tracefs nodev $T 2>/dev/null || true
  echo 8192 > $T/buffer_size_kb
  for e in sched/sched_migrate_task sched/sched_move_numa sched/sched_swap_numa \
           sched/sched_stick_numa sched/sched_skip_vma_numa migrate/mm_migrate_pages \
           sched/sched_switch; do
    [ -e "$T/events/$e/enable" ] && echo 1 > "$T/events/$e/enable"
  done
  # Each counted hinting fault, whoever takes it: numa_hint_faults is counted in
  # numa_migrate_check (6.10 and later) or numa_migrate_prep, whose third argument (%dx)
  # is the faulting address; a kprobe records it with the kernel stack that led there.
  for fn in numa_migrate_check numa_migrate_prep; do
    grep -q " $fn\$" /proc/kallsyms || continue
    echo "p:numab_hint $fn addr=%dx:x64" >> $T/kprobe_events &&
      echo 1 > $T/events/kprobes/numab_hint/enable &&
      echo stacktrace > $T/events/kprobes/numab_hint/trigger
    break
  done
  # The workload's tasks' sleeps, each with the kernel stack that led to it.
  f=${tcomm:-@C ~ \"$comm*\"}
  # A trigger has its own filter: the stack is recorded only for the sleeps kept.
  f=$(echo "$f" | sed 's/@C/prev_comm/g')
  echo "($f) && prev_state != 0" > $T/events/sched/sched_switch/filter
  echo "stacktrace if ($f) && prev_state != 0" > $T/events/sched/sched_switch/trigger
  # The workload's mappings, 10 s in, for each task: which VMA each hinting fault hit.
  ( sleep 10
    for d in /proc/[0-9]*; do
      case "$(cat "$d/comm" 2>/dev/null)" in "$comm"*) ;; *) continue ;; esac  # processes only
      for t in "$d"/task/*; do sed "s|^|maps ${t##*/} |" "$d/maps"; done
    done > /tmp/maps 2>/dev/null ) &
  grep -E '^(numa|pgmigrate|thp_migration|thp_split|thp_fault)' /proc/vmstat > /tmp/vm0
  echo 1 > $T/tracing_on
}
trace_off() {
  echo 0 > $T/tracing_on
  # Events lost to a full ring buffer, per CPU (the counts below are short by as many).
  for c in $T/per_cpu/cpu*; do echo "trace-overrun ${c##*/} $(awk '/^overrun/ { print $2 }' $c/stats)"; done > /tmp/overrun
  grep -E '^(numa|pgmigrate|thp_migration|thp_split|thp_fault)' /proc/vmstat > /tmp/vm1
  touch /tmp/maps
  say "@@ trace begin"
  cat /tmp/overrun
  awk 'NR == FNR { a[$1] = $2; next } { printf "vmstat-delta %s %d\n", $1, $2 - a[$1] }' /tmp/vm0 /tmp/vm1
  # Printed: each cross-node move of a workload task and each NUMA placement decision.
  # Counted: the scanner's skips by reason, page migrations by reason, the hinting faults
  # by task and VMA, and the kernel stacks of the sleeps and hinting faults.
  awk -v map="$CPU_MAP" -v comm="$comm" '
    BEGIN { n = split(map, p, " "); for (i = 1; i <= n; i++) { split(p[i], q, ":"); node[q[1]] = q[2] } }
    FILENAME == "/tmp/maps" { split($3, r, "-"); nm[$2]++; lo[$2, nm[$2]] = r[1]; hi[$2, nm[$2]] = r[2]
                               name[$2, nm[$2]] = ($8 == "" ? "anon" : $8) " " $4; next }
    /sched_switch:/ { if (instack) flush(); match($0, /prev_state=[A-Z+|]+/); st = substr($0, RSTART + 11, RLENGTH - 11); next }
    /mm_migrate_pages:/ {   # fields KEY=VALUE, the counts named nr_succeeded etc.
      delete kv
      for (i = 1; i <= NF; i++) if (split($i, q, "=") == 2) { sub(/^nr_/, "", q[1]); kv[q[1]] = q[2] }
      r = kv["reason"]; ok[r] += kv["succeeded"]; thp[r] += kv["thp_succeeded"]; bad[r] += kv["failed"]
      calls[r]++; next
    }
    /numab_hint:/ {
      if (instack) flush()
      tid = $0; sub(/ +\[[0-9]+\].*/, "", tid); c = tid; sub(/.*-/, "", tid)   # comm-TID [CPU]
      sub(/-[0-9]+$/, "", c); sub(/^ +/, "", c); gsub(/ /, "_", c)
      match($0, /addr=0x[0-9a-f]+/); a = substr($0, RSTART + 7, RLENGTH - 7)
      v = "other-process"
      for (i = 1; i <= nm[tid]; i++) if (hexlt(lo[tid, i], a, 1) && hexlt(a, hi[tid, i], 0)) v = name[tid, i]
      hints[c " " v]++
      st = "hint-fault " c; next
    }
    /<stack trace>/ { instack = 1; stack = ""; next }
    instack && /^ => / { if (depth++ < 8) stack = stack " " $2; next }
    instack { flush() }
    /sched_skip_vma_numa:/ { match($0, /reason=[a-z_]+/); skip[substr($0, RSTART + 7, RLENGTH - 7)]++; next }
    /sched_migrate_task:/ {
      if (index($0, "comm=" comm) == 0 && !(comm == "process" && index($0, "comm=thread_"))) next
      match($0, /orig_cpu=[0-9]+/); o = substr($0, RSTART + 9, RLENGTH - 9)
      match($0, /dest_cpu=[0-9]+/); d = substr($0, RSTART + 9, RLENGTH - 9)
      if (node[o] == node[d]) { same++; next }
      cross++
    }
    /: sched_/ { if (shown++ < 600) print "trace " $0 }
    END { if (instack) flush()
          printf "trace-moves cross-node %d same-node %d\n", cross, same
          for (r in skip) printf "trace-skip %s %d\n", r, skip[r]
          for (r in calls) printf "trace-migrate %s calls %d pages %d thp %d failed %d\n", r, calls[r], ok[r], thp[r], bad[r]
          for (f in hints) printf "trace-hint-faults %s %d\n", f, hints[f]
          for (k in stacks) printf "trace-stack %d %s\n", stacks[k], k }
    function flush() { stacks[st ":" stack]++; instack = 0; depth = 0 }
    # a <= b (or a < b) for hex strings without 0x, compared by length then text.
    function hexlt(a, b, eq) { sub(/^0+/, "", a); sub(/^0+/, "", b); a = "x" a; b = "x" b
      if (length(a) != length(b)) return length(a) < length(b)
      return eq ? a <= b : a < b }' /tmp/maps $T/trace
  say "@@ trace end"
}
[ "${TWIN_TRACE:-0}" = 1 ] && trace_on
t0=$(now_s)
RC=0
# shellcheck disable=SC2086
twin-sample --comm "$comm" --out /tmp/twin.raw -- $cmd > /tmp/w.out 2>&1 || RC=$?
say "workload exit status $RC after $(elapsed "$t0") s"
[ "${TWIN_TRACE:-0}" = 1 ] && trace_off
tail -5 /tmp/w.out
say "@@ twin raw begin"
cat /tmp/twin.raw
say "@@ twin raw end"
[ $RC = 0 ] && pass "the workload ran to its end" || fail "workload exit $RC"
exit $FAILED
