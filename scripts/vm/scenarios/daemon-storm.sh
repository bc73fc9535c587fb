# Process storms around `numabal daemon` (issue 19; not in the default list: run with
# `scripts/vm/daemon-tests.sh daemon-storm`). Two parts of 60 s each, the daemon (home-node,
# softdirty, metrics on) beside two numa01-like processes it places:
#  A. as many process starts a second as `spawner` makes (8 threads, posix_spawn of
#     /bin/true; the target is 1000 a second, the rate reached is printed from /proc/stat's
#     `processes`), after 60 s
#     without them (the baseline: what managing the two numa01-like costs);
#  B. 500 long-lived small processes (a shell holding 1.5 MiB each), managed with
#     `--min-rss-mb 1`; first, what reading each /proc file of every process once costs.
# For each: the daemon's CPU (utime + stime over the 60 s, % of one CPU) and its pass time
# (the metrics' numabal_pass_seconds scraped every second: median and max), PASS when under
# 5% of a CPU and 1 s a pass.
echo 0 > /proc/sys/kernel/numa_balancing
forks() { awk '$1 == "processes" { print $2 }' /proc/stat; }
scrape() { wget -qO- http://127.0.0.1:9893/metrics 2>/dev/null | awk -v k="$1" '$1 == k { print $2 }'; }
numa01-like --procs 2 --threads 2 --mb 64 --seconds 400 > /tmp/w.out 2>&1 &
wait_lines /tmp/w.out 2 'mb='
# Measure 60 s of the daemon $D: prints "cpu_pct median_pass_s max_pass_s managed".
measure() {
  c0=$(cpu_s $D); : > /tmp/pass.txt
  i=0
  while [ $i -lt 60 ]; do
    sleep 1; i=$((i + 1))
    scrape numabal_pass_seconds >> /tmp/pass.txt
  done
  c1=$(cpu_s $D)
  med=$(sort -g /tmp/pass.txt | awk '{ a[NR] = $1 } END { print (NR ? a[int((NR + 1) / 2)] : "?") }')
  max=$(scrape numabal_pass_seconds_max)
  echo "$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", (b - a) / 60 * 100 }') $med $max $(scrape numabal_managed_processes)"
}
judge() {  # $1 part, $2 "cpu_pct median max managed"
  set -- "$1" $2
  say "$1: daemon CPU $2% of one CPU over 60 s; pass time median $3 s, max $4 s; managed $5"
  awk -v c="$2" 'BEGIN { exit !(c < 5) }' && pass "$1: daemon CPU $2% of a CPU (< 5%)" || fail "$1: daemon CPU $2% of a CPU"
  awk -v m="$3" 'BEGIN { exit !(m < 1) }' && pass "$1: median pass $3 s (< 1 s; max $4 s)" || fail "$1: median pass $3 s (max $4 s)"
}

say "== A: process starts"
numabal daemon -p home-node --sensor softdirty --metrics-port 9893 --decision-log /tmp/dec.jsonl > /tmp/daemon.out 2>&1 &
D=$!
sleep 10
# The same 60 s without the storm first: what managing the two numa01-like costs.
set -- $(measure)
say "baseline (no storm): daemon CPU $1% of one CPU; pass time median $2 s, max $3 s; managed $4"
base=$1
f0=$(forks)
spawner --threads 8 --seconds 62 > /tmp/spawn.out 2>&1 &
r=$(measure)
f1=$(forks)
wait $! || true
say "$(cat /tmp/spawn.out)"
say "process starts: $(( (f1 - f0) / 60 )) a second over 60 s ($((f1 - f0)) in all)"
set -- $r
say "the storm's own cost: $(awk -v a="$1" -v b="$base" 'BEGIN { printf "%.2f", a - b }')% of one CPU over the baseline"
judge "A (process starts)" "$r"
kill -TERM $D; wait $D || true
tail -1 /tmp/dec.jsonl

say "== B: 500 managed processes"
i=0
while [ $i -lt 500 ]; do
  sh -c 'x=$(dd if=/dev/zero bs=1024 count=1536 2>/dev/null | tr "\000" a); sleep 400; echo ${#x}' > /dev/null 2>&1 &
  i=$((i + 1))
done
sleep 20
say "500 holders started; MemFree $(awk '/MemFree/ { print int($2 / 1024) }' /proc/meminfo) MiB"
# What one read of each file of every process costs here (cat, one process, no daemon).
for f in stat status cmdline cgroup numa_maps task/*/stat task/*/status; do
  t0=$(now_s); cat /proc/[0-9]*/$f > /dev/null 2>&1; say "reading /proc/*/$f of $(ls -d /proc/[0-9]* | wc -l) processes: $(elapsed "$t0") s"
done
numabal daemon -p home-node --sensor softdirty --min-rss-mb 1 --metrics-port 9893 --decision-log /tmp/dec2.jsonl > /tmp/daemon2.out 2>&1 &
D=$!
sleep 10
r=$(measure)
judge "B (500 processes)" "$r"
set -- $r
[ "${4:-0}" -ge 500 ] && pass "B: $4 processes managed" || fail "B: only ${4:-0} processes managed (want 500 and the two numa01-like)"
kill -TERM $D; wait $D || true
tail -1 /tmp/dec2.jsonl | cut -c1-400
grep -c '"slow_pass"' /tmp/dec2.jsonl | sed 's/^/slow passes logged: /'
grep '"slow_pass"' /tmp/dec2.jsonl | tail -1 | cut -c1-300
exit $FAILED
