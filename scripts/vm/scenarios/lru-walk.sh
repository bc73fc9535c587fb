# What MGLRU's aging walk costs per THP in the tiered guest (run.sh --nodes 2 --cxl-mb 1024
# --kernel 7.2; docs/vm-tests.md, "The aging walk's cost"), with no probe on each entry:
# numa01-like's 256 MiB on node 0, its two writers running, then stopped (SIGSTOP); ten
# agings of node 0 triggered through debugfs lru_gen, five with the writers running and
# five stopped (the first of those finds the entries young, the next old); kprobes only on
# try_to_inc_max_seq, inc_max_seq, walk_page_range (one pair per range of an mm walked)
# and lru_gen_add_mm (the program's mm at its exec). Prints each aging's time and how long
# its walk of the program's mm took; judges nothing. Wall time: about 20 s.
T=/sys/kernel/tracing
mount -t debugfs none /sys/kernel/debug 2>/dev/null
mount -t tracefs nodev $T 2>/dev/null
sysctl -qw kernel.numa_balancing=0 2>/dev/null
# Anonymous pages age only where they can be reclaimed: demotion to node 2 lets them.
echo true > /sys/kernel/mm/numa/demotion_enabled
echo 8192 > $T/buffer_size_kb
for spec in "p:lw_mm lru_gen_add_mm mm=%di:x64" "p:lw_walk walk_page_range mm=%di:x64 start=%si:x64" \
            "r:lw_walk_ret walk_page_range ret=\$retval:s32" \
            "p:lw_age try_to_inc_max_seq" "p:lw_inc inc_max_seq"; do
  echo "$spec" >> $T/kprobe_events || { echo "FAIL: kprobe $spec"; exit 1; }
done
for e in lw_mm lw_walk lw_walk_ret lw_age lw_inc; do echo 1 > $T/events/kprobes/$e/enable; done
numactl --cpunodebind=0 --membind=0 numa01-like --procs 1 --mb 256 --seconds 60 > /tmp/hot.out 2>&1 &
sleep 6
pid=$(sed -n 's/.* pid=\([0-9]*\).*/\1/p' /tmp/hot.out | head -1)
[ -n "$pid" ] || { cat /tmp/hot.out; echo "FAIL: numa01-like did not start"; exit 1; }
echo "== numa01-like pid $pid: $(grep AnonHugePages /proc/"$pid"/smaps_rollup)"
# "+ memcg_id node_id max_gen swappiness force_scan": age node 0 of the root memcg once.
age() {
  id=$(awk '$1 == "memcg" { print $2; exit }' /sys/kernel/debug/lru_gen)
  max=$(awk '$1 == "node" { on = ($2 == 0); next } on && $1 ~ /^[0-9]+$/ { m = $1 } END { print m }' \
    /sys/kernel/debug/lru_gen)
  echo "@age $1 $(cut -d' ' -f1 /proc/uptime)"
  echo "+ $id 0 $max 200 1" > /sys/kernel/debug/lru_gen || echo "FAIL: aging $1"
}
for i in 1 2 3 4 5; do age running; sleep 0.5; done
kill -STOP "$pid"
sleep 0.2
for i in 1 2 3 4 5; do age stopped; sleep 0.5; done
kill -CONT "$pid"
kill "$pid" 2>/dev/null
echo 0 > $T/tracing_on
echo "== agings (@walk uptime_s aging_ms program_mm_us: the aging, and its walk of numa01-like's mm)"
# The last lru_gen_add_mm by the program's pid is its exec's mm (it re-executes itself).
grep -E ' lw_(mm|age|walk|walk_ret|inc):' $T/trace | sed 's/^ *//' | awk -v pid="$pid" '
  { t = $4; sub(":", "", t); ev = $5; sub(":", "", ev); task = $1 }
  ev == "lw_mm" { if (task ~ ("-" pid "$")) { hot = $NF; sub("mm=", "", hot) }; next }
  ev == "lw_age" { a = t; sum = 0; next }
  ev == "lw_walk" { w = t; m = $(NF - 1); sub("mm=", "", m); next }
  ev == "lw_walk_ret" { if (m == hot) sum += (t - w) * 1e6; next }
  ev == "lw_inc" { printf "@walk %.3f %.2f %.0f\n", a, (t - a) * 1e3, sum }'
