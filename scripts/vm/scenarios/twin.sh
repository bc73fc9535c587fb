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
# the serial console does not slow the run. One awk per sample reads every file.
W=${TWIN_WORKLOAD:-numa01-like}
case $W in
  numa01-like) cmd="numa01-like --procs 2 --threads 2 --mb 128 --seconds 60"; comm=numa01-like ;;
  numa02-like) cmd="numa02-like --mb 128 --seconds 60"; comm=numa02-like ;;
  perfbench) cmd="perf bench numa mem -p 4 -t 1 -P 160 -s 40 -zZ0c"; comm="process" ;;
  *) fail "TWIN_WORKLOAD must be numa01-like, numa02-like or perfbench, got '$W'"; exit 2 ;;
esac
# Workload processes: the ones named $comm with at least 16 MiB resident (not numa01-like's
# parent, which only waits; perf's parent holds 1 MiB of global memory plus slack).
procs() {
  for s in /proc/[0-9]*/stat; do
    p=${s#/proc/}; p=${p%/stat}
    read -r _ c _ < "$s" 2>/dev/null || continue
    case $c in "($comm"*) ;; *) continue ;; esac
    r=$(awk '/^VmRSS:/ { print $2 }' "/proc/$p/status" 2>/dev/null) || continue
    [ "${r:-0}" -ge 16384 ] && echo "$p"
  done
}

# One sample: "@sample T", then what /proc shows of the processes PIDS.
sample() {
  t=$1; shift
  files=""
  for p in "$@"; do files="$files /proc/$p/task/*/stat /proc/$p/task/*/sched /proc/$p/numa_maps"; done
  # shellcheck disable=SC2086
  awk -v t="$t" '
    FNR == 1 && FILENAME == "/proc/vmstat" { print "@sample " t }
    FILENAME == "/proc/vmstat" {
      if ($1 ~ /^(numa_pte_updates|numa_huge_pte_updates|numa_hint_faults|numa_hint_faults_local|numa_pages_migrated|pgmigrate_success)$/)
        print "vmstat " $1 " " $2
      next
    }
    FILENAME ~ /\/stat$/ {
      split(FILENAME, f, "/"); c = $0; sub(/^[^(]*\(/, "", c); sub(/\).*/, "", c); gsub(/ /, "_", c)
      r = $0; sub(/.*\) /, "", r); split(r, x, " ")
      print "@task " f[3] " " f[5] " " x[37] " " c
      next
    }
    FILENAME ~ /\/sched$/ {
      if (FNR == 1) { split(FILENAME, f, "/"); print "@sched " f[3] " " f[5] }
      if ($0 ~ /numa|current_node/) print "sched " $0
      next
    }
    FILENAME ~ /numa_maps$/ {
      split(FILENAME, f, "/"); kb = 4
      for (i = 1; i <= NF; i++) if ($i ~ /^kernelpagesize_kB=/) { kb = $i; sub(/.*=/, "", kb) }
      for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) {
        n = $i; sub(/^N/, "", n); v = n; sub(/=.*/, "", n); sub(/.*=/, "", v)
        mem[f[3] " " n] += v * kb
      }
      next
    }
    END { for (k in mem) print "numa_maps " k " " mem[k] }
  ' /proc/vmstat $files >> /tmp/twin.raw 2>/dev/null || true
}

echo 1 > /proc/sys/kernel/numa_balancing
say "== twin: $cmd (numa_balancing=1, THP $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled))"
say "kernel $(uname -r)"
: > /tmp/twin.raw
echo "@cpus $CPU_MAP" >> /tmp/twin.raw
# The counters before the workload: the baseline of every sample.
sample 0.0
t0=$(now_s)
# shellcheck disable=SC2086
$cmd > /tmp/w.out 2>&1 &
B=$!
k=1
while kill -0 $B 2>/dev/null; do
  # Sleep to the next whole second since the start.
  sleep "$(awk -v a="$t0" -v b="$(now_s)" -v k=$k 'BEGIN { d = a + k - b; printf "%.2f", (d > 0 ? d : 0) }')"
  k=$((k + 1))
  # shellcheck disable=SC2046
  sample "$(elapsed "$t0")" $(procs)
done
RC=0; wait $B || RC=$?
say "workload exit status $RC after $(elapsed "$t0") s"
tail -5 /tmp/w.out
say "@@ twin raw begin"
cat /tmp/twin.raw
say "@@ twin raw end"
[ $RC = 0 ] && pass "the workload ran to its end" || fail "workload exit $RC"
exit $FAILED
