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
  numa01-like) cmd="numa01-like --procs 2 --threads 2 --mb 128 --seconds 60"; comm=numa01-like ;;
  numa02-like) cmd="numa02-like --mb 128 --seconds 60"; comm=numa02-like ;;
  perfbench) cmd="perf bench numa mem -p 4 -t 1 -P 160 -s 40 -zZ0c"; comm="process" ;;
  *) fail "TWIN_WORKLOAD must be numa01-like, numa02-like or perfbench, got '$W'"; exit 2 ;;
esac
echo 1 > /proc/sys/kernel/numa_balancing
say "== twin: $cmd (numa_balancing=1, THP $(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled))"
say "kernel $(uname -r)"
: > /tmp/twin.raw
echo "@cpus $CPU_MAP" >> /tmp/twin.raw
# The samples: twin-sample (crates/numabal-testprogs/src/sample.rs) runs the workload and
# reads, at its start and every whole second, /proc/vmstat and, for the processes named
# $comm with at least 16 MiB resident (not numa01-like's parent, which only waits; perf's
# parent holds 1 MiB of global memory plus slack), each task's CPU and sched NUMA lines and
# the process's numa_maps per node. One process that sleeps between samples: a shell loop
# spawning awk each second kept a vCPU busy under TCG and made the load balancer move the
# workload's threads (docs/vm-tests.md).
t0=$(now_s)
RC=0
# shellcheck disable=SC2086
twin-sample --comm "$comm" --out /tmp/twin.raw -- $cmd > /tmp/w.out 2>&1 || RC=$?
say "workload exit status $RC after $(elapsed "$t0") s"
tail -5 /tmp/w.out
say "@@ twin raw begin"
cat /tmp/twin.raw
say "@@ twin raw end"
[ $RC = 0 ] && pass "the workload ran to its end" || fail "workload exit $RC"
exit $FAILED
