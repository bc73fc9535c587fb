# How fast a program first-touches memory in the tiered guest (run.sh --nodes 2 --cxl-mb
# 1024; docs/vm-tests.md, "The filler's first touch"): numa02-like bound to node 0, timed
# until its RSS holds 95 % of its buffer, on guest memory never used since boot, then on
# the same frames again, then beside numa01-like's two writers on node 0's CPUs as the
# tiered scenario runs its filler, and beside them on node 1's. Under TCG the guest's RAM is
# the host's anonymous memory, which the host faults in on its first use. Prints the
# times; judges nothing. Wall time: about 40 s.
sysctl -qw kernel.numa_balancing=0 2>/dev/null
up() { cut -d' ' -f1 /proc/uptime; }
ft() {  # MiB LABEL: seconds until the filler's RSS holds 95 % of MiB
  t0=$(up)
  numactl --membind=0 numa02-like --mb "$1" --threads 1 --seconds 1 > /tmp/o 2>&1 &
  p=$!
  want=$(( $1 * 1024 * 95 / 100 ))
  while r=$(awk '/^VmRSS/ { print $2 }' /proc/$p/status 2>/dev/null) && [ "${r:-0}" -lt "$want" ]; do sleep 0.02; done
  t1=$(up)
  wait $p
  echo "  $2: $1 MiB first-touched in $(awk -v a=$t0 -v b=$t1 'BEGIN { printf "%.2f", b - a }') s ($(awk -v a=$t0 -v b=$t1 -v m=$1 'BEGIN { printf "%.0f", m / (b - a) }') MiB/s)"
}
echo "== alone: memory never used since boot, then the same frames again"
ft 600 fresh; ft 600 reused; ft 600 reused
echo "== beside numa01-like's 2 writers (256 MiB, first-touched on node 0, where they run)"
numa01-like --procs 1 --mb 256 --seconds 14 > /tmp/h 2>&1 &
sleep 6
ft 500 reused-beside; ft 600 partly-fresh-beside
wait
echo "== beside them on node 1 (first-touched there): no CPU of node 0 shared"
numa01-like --procs 1 --mb 256 --seconds 12 --node 1 > /tmp/h 2>&1 &
sleep 6
ft 500 reused-beside-node1
grep -m1 cpus /tmp/h || true
wait
