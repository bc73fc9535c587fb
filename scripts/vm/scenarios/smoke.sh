# Smoke test of a numabal QEMU guest (run inside it by busybox sh; docs/vm-tests.md):
# the tools run, numabal reads the topology, and numa01-like runs for 10 s with the
# kernel's own NUMA balancing on. Exits 0 when every command worked; the migration
# counters are printed, not judged.
set -e

echo "== numactl --hardware"
numactl --hardware
echo "== numabal topology"
numabal topology

echo 1 > /proc/sys/kernel/numa_balancing
echo "== numa01-like --seconds 10 (numa_balancing=$(cat /proc/sys/kernel/numa_balancing))"
grep -E '^(numa_pages_migrated|pgmigrate_success) ' /proc/vmstat | sed 's/^/before: /'
out=/tmp/numa01.out
numa01-like --seconds 10 > "$out" 2>&1 &
pid=$!
# The 10 s start once both processes have placed their memory and printed their line.
i=0
while [ "$(grep -c ' mb=' "$out")" -lt 2 ]; do
  i=$((i + 1))
  if [ $i -gt 600 ] || ! kill -0 $pid 2>/dev/null; then
    cat "$out"
    echo "smoke: numa01-like did not start its processes" >&2
    exit 1
  fi
  sleep 0.1
done
sleep 8
echo "== numastat -p numa01-like (8 s into the run)"
numastat -p numa01-like
rc=0
wait $pid || rc=$?
cat "$out"
[ $rc = 0 ] || { echo "smoke: numa01-like exited with $rc" >&2; exit 1; }
echo "== /proc/vmstat"
grep numa_pages_migrated /proc/vmstat
grep pgmigrate_success /proc/vmstat
echo "smoke: ok"
