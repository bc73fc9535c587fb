# The cpuset skip on a real kernel (issue 17, item 6): with kernel.numa_balancing=1, a
# numa02-like process held by a cpuset to node 1's CPUs and memory, then the same process
# free, 30 s each, alone in the guest. Since 6.16 task_numa_work returns at once for a task
# whose cpuset allows one memory node (sched_skip_cpuset_numa), so the pinned process gets
# no PTE updates; before, it is scanned like any other. The free run shows the balancing
# is on. Prints each run's numa_pte_updates and numa_hint_faults (deltas of /proc/vmstat).
CG=/sys/fs/cgroup
echo +cpuset > $CG/cgroup.subtree_control
mkdir -p $CG/pinned
n1cpus=$(cat /sys/devices/system/node/node1/cpulist)
echo "$n1cpus" > $CG/pinned/cpuset.cpus
echo 1 > $CG/pinned/cpuset.mems
echo 1 > /proc/sys/kernel/numa_balancing
release=$(uname -r)
say "kernel $release; cpuset pinned: cpus $n1cpus, mems 1"

# run NAME CGROUP: numa02-like in CGROUP for 30 s; prints "NAME pte_updates hint_faults".
run() {
  p0=$(vmstat numa_pte_updates); f0=$(vmstat numa_hint_faults)
  sh -c "echo \$\$ > $CG/$2/cgroup.procs && exec numa02-like --node 1 --threads 2 --mb 128 --seconds 30" > /tmp/$1.out 2>&1 \
    || fail "$1: numa02-like exit $?: $(tail -1 /tmp/$1.out)"
  p1=$(vmstat numa_pte_updates); f1=$(vmstat numa_hint_faults)
  say "cpuset-skip: $1 numa_pte_updates $((p1 - p0)) numa_hint_faults $((f1 - f0))"
  eval "${1}_pte=$((p1 - p0))"
}
run pinned pinned
run free .
# 6.16 and later skip; major.minor of the running kernel.
mm=$(echo "$release" | sed 's/^\([0-9]*\)\.\([0-9]*\).*/\1 \2/')
set -- $mm
if [ "$1" -gt 6 ] || { [ "$1" = 6 ] && [ "$2" -ge 16 ]; }; then
  [ "$pinned_pte" = 0 ] && pass "pinned: no PTE updates on $release (the cpuset skip)" \
    || fail "pinned: $pinned_pte PTE updates on $release, which has the cpuset skip"
else
  [ "$pinned_pte" -gt 0 ] && pass "pinned: $pinned_pte PTE updates on $release (no cpuset skip before 6.16)" \
    || fail "pinned: no PTE updates on $release, which has no cpuset skip"
fi
[ "$free_pte" -gt 0 ] && pass "free: $free_pte PTE updates (the balancing is on)" \
  || fail "free: no PTE updates: is NUMA balancing on?"
exit $FAILED
