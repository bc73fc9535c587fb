# Where a single move's time goes in the 4-node guest (docs/vm-tests.md, "How fast memory
# moves"): a stopped writer's 160 MiB (numa02-like, first touched on node 0) moved to node
# 1 by migratepages(8), REPEATS times (default 12), nothing else running. Per move: its
# time; the /proc/vmstat counters that changed (nr_* left out); the interrupts of which
# more than 50 came during it (summed over the guest's 8 CPUs); each CPU's user, system,
# idle and irq+softirq time during it (USER_HZ ticks); and how many of 80 sampled pages
# (one per 2 MiB) landed a multiple of 4 MiB from where they were (`aliased`: such a
# source and destination evict each other from TCG's 1024-entry software TLB, which makes
# a byte-at-a-time `rep movsb` copy 5x slower). Run with
# `scripts/vm/daemon-tests.sh --kernel 7.2 move-delay` (about 60 s), and with
# `NUMABAL_VM_CPU=max` for the fast string moves the guest has by default no longer; it
# checks nothing.
MB=160
REPEATS=${SPEED_REPEATS:-12}
sysctl -qw kernel.numa_balancing=0
# The frame of every 512th page of the mapping from virtual page $2 on, one per line.
frames() {
  i=0
  while [ $i -lt 80 ]; do
    e=$(dd if=/proc/$1/pagemap bs=8 skip=$(($2 + i * 512)) count=1 2>/dev/null | od -A n -t x8 | tr -d ' \n')
    echo $((0x$e & 0x7fffffffffffff))
    i=$((i + 1))
  done
}
for r in $(seq "$REPEATS"); do
  : > /tmp/w.out
  numa02-like --node 0 --threads 1 --mb "$MB" --seconds 600 >> /tmp/w.out 2>&1 &
  wait_lines /tmp/w.out 1 'pid='
  P=$(pids_in /tmp/w.out)
  kill -STOP "$P"
  # The writer's buffer: its one mapping of at least 150 MiB.
  vpn=$(awk '{split($1, a, "-"); print a[1], a[2]}' /proc/$P/maps | while read -r a b; do
    if [ $((0x$b - 0x$a)) -ge $((150 << 20)) ]; then echo $((0x$a / 4096)); break; fi; done)
  frames "$P" "$vpn" > /tmp/src
  cp /proc/vmstat /tmp/vm0; cp /proc/interrupts /tmp/irq0; cp /proc/stat /tmp/st0
  t=$(now_s)
  migratepages "$P" 0 1
  el=$(elapsed "$t")
  cp /proc/vmstat /tmp/vm1; cp /proc/interrupts /tmp/irq1; cp /proc/stat /tmp/st1
  frames "$P" "$vpn" > /tmp/dst
  aliased=$(paste /tmp/src /tmp/dst | while read -r s d; do
    [ "$s" -gt 0 ] && [ "$d" -gt 0 ] && [ $(((d - s) % 1024)) -eq 0 ] && echo x; done | wc -l)
  say "move $r seconds=$el aliased=$aliased/80"
  awk 'NR==FNR {a[$1]=$2; next} ($2 - a[$1]) != 0 && $1 !~ /^nr_/ {printf "%s=%d ", $1, $2 - a[$1]} END {print ""}' /tmp/vm0 /tmp/vm1
  awk 'NR==FNR {s=0; for (i=2;i<=9;i++) s+=$i; a[$1]=s; next} {s=0; for (i=2;i<=9;i++) s+=$i; if (s - a[$1] > 50) printf "%s%d ", $1, s - a[$1]} END {print ""}' /tmp/irq0 /tmp/irq1
  awk 'NR==FNR && /^cpu[0-9]/ {u[$1]=$2; s[$1]=$4; i[$1]=$5; q[$1]=$7+$8; next}
       /^cpu[0-9]/ {printf "%s u%d s%d i%d q%d  ", $1, $2-u[$1], $4-s[$1], $5-i[$1], $7+$8-q[$1]}
       END {print ""}' /tmp/st0 /tmp/st1
  kill -CONT "$P"; kill "$P"; wait "$P" 2>/dev/null || true
done
