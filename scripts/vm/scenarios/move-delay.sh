# Where a single move's intermittent delay in the 7.2 guest goes (docs/home-node.md, "Open"):
# a stopped writer's 160 MiB (numa02-like, first touched on node 0) moved to node 1 by
# migratepages(8), REPEATS times (default 8), nothing else running. Per move: its time,
# the /proc/vmstat counters that changed (nr_* left out) and the interrupts of which more
# than 50 came during it (summed over the guest's 8 CPUs). Run with
# `scripts/vm/daemon-tests.sh --kernel 7.2 move-delay` (about 40 s); it checks nothing.
MB=160
REPEATS=${SPEED_REPEATS:-8}
sysctl -qw kernel.numa_balancing=0
for r in $(seq "$REPEATS"); do
  : > /tmp/w.out
  numa02-like --node 0 --threads 1 --mb "$MB" --seconds 600 >> /tmp/w.out 2>&1 &
  wait_lines /tmp/w.out 1 'pid='
  P=$(pids_in /tmp/w.out)
  kill -STOP "$P"
  cp /proc/vmstat /tmp/vm0; cp /proc/interrupts /tmp/irq0
  t=$(now_s)
  migratepages "$P" 0 1
  el=$(elapsed "$t")
  cp /proc/vmstat /tmp/vm1; cp /proc/interrupts /tmp/irq1
  say "move $r seconds=$el"
  awk 'NR==FNR {a[$1]=$2; next} ($2 - a[$1]) != 0 && $1 !~ /^nr_/ {printf "%s=%d ", $1, $2 - a[$1]} END {print ""}' /tmp/vm0 /tmp/vm1
  awk 'NR==FNR {s=0; for (i=2;i<=9;i++) s+=$i; a[$1]=s; next} {s=0; for (i=2;i<=9;i++) s+=$i; if (s - a[$1] > 50) printf "%s%d ", $1, s - a[$1]} END {print ""}' /tmp/irq0 /tmp/irq1
  kill -CONT "$P"; kill "$P"; wait "$P" 2>/dev/null || true
done
