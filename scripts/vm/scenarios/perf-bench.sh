# `perf bench numa mem` in the guest: 4 processes of 1 thread, 64 MB each, all memory
# first allocated on node 0 (-0), for 20 s, with the kernel's balancing on; convergence
# status lines (-c) and the memory placement near the end (numastat).
set -e
echo 1 > /proc/sys/kernel/numa_balancing
perf bench numa mem -p 4 -t 1 -P 64 -s 20 -zZ0c --thp -1 > /tmp/bench.out 2>&1 &
pid=$!
sleep 18
numastat -p process
rc=0
wait $pid || rc=$?
cat /tmp/bench.out
grep -E '^(numa_pages_migrated|pgmigrate_success) ' /proc/vmstat
exit $rc
