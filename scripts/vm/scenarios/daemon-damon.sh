# The damon sensor (issue 18). Where the kernel has DAMON's sysfs interface (7.2): refused
# while the kernel's DAMON_STAT holds DAMON, with the reason; with DAMON_STAT off,
# numa01-like under `numabal daemon -p home-node --sensor damon` is placed within 60 s,
# without a fault (numa_pages_migrated 0, numa_balancing=0, no soft-dirty clearing), the
# kdamonds' CPU is reported, and after SIGTERM every affinity is back and no kdamond is
# left. Where it has none (6.1): `--sensor damon` is refused with the reason, and the
# daemon's own choice falls back to softdirty and says that damon is not here.
echo 0 > /proc/sys/kernel/numa_balancing
A=/sys/kernel/mm/damon/admin
POLICY=home-node
# `numabal daemon --sensor damon` must exit 2 with a line matching PATTERN: refused(PATTERN,
# WHAT) passes or fails WHAT.
refused() {
  r=0; numabal daemon -p $POLICY --sensor damon --passes 1 > /tmp/refused.out 2>&1 || r=$?
  cat /tmp/refused.out
  if [ $r = 2 ] && grep -q "$1" /tmp/refused.out; then
    pass "$2, with the reason (exit 2)"
  else
    fail "$2: exit $r, no reason given"
  fi
}
if [ ! -d "$A" ]; then
  say "== no DAMON sysfs interface in this kernel ($(uname -r))"
  refused 'damon cannot work here.*CONFIG_DAMON_SYSFS' "--sensor damon refused"
  numabal daemon -p $POLICY --passes 2 --decision-log /tmp/dec.jsonl > /dev/null 2>&1 || fail "the daemon's own choice did not run"
  head -1 /tmp/dec.jsonl
  if head -1 /tmp/dec.jsonl | grep -q '"sensor":"softdirty"' \
     && head -1 /tmp/dec.jsonl | grep -q 'not here: [^"]*damon (needs DAMON'; then
    pass "the daemon's own choice falls back to softdirty and says damon is not here"
  else
    fail "no fallback to softdirty with damon's reason in the start line"
  fi
  exit $FAILED
fi

say "== DAMON: $(cat $A/kdamonds/nr_kdamonds) sysfs kdamonds; DAMON_STAT enabled=$(cat /sys/module/damon_stat/parameters/enabled 2>/dev/null || echo absent)"
if [ "$(cat /sys/module/damon_stat/parameters/enabled 2>/dev/null)" = Y ]; then
  refused 'DAMON_STAT module holds DAMON' "refused while DAMON_STAT holds DAMON"
  echo N > /sys/module/damon_stat/parameters/enabled
  say "DAMON_STAT turned off for this scenario"
fi

say "== numa01-like (2 processes x 2 threads, 128 MiB each, first touch on node 0); numa_balancing=0"
start_numa01_like
t0=$(now_s)
numabal daemon -p $POLICY --sensor damon --decision-log /tmp/dec.jsonl > /tmp/daemon.out 2>&1 &
D=$!
# The kdamonds while the processes are being placed (the daemon turns a kdamond off once
# its process is placed and no longer sampled), polled every 0.5 s for 8 s: the most on at
# once, and their CPU while they were seen on (first and last reading of each).
(
  set +e  # a reading that fails (a kdamond stopping under it) ends no poll
  most=0
  for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do
    sleep 0.5
    n=0
    for k in $A/kdamonds/*/; do
      [ "$(cat "$k/state" 2>/dev/null)" = on ] || continue
      p=$(cat "$k/pid"); c=$(cpu_s "$p" 2>/dev/null) || continue
      n=$((n + 1)); t=$(now_s)
      [ -f /tmp/kd.$p.first ] || echo "$t $c" > /tmp/kd.$p.first
      echo "$t $c" > /tmp/kd.$p.last
    done
    [ "$n" -gt "$most" ] && most=$n
  done
  pct=$(for f in /tmp/kd.*.first; do
      [ -f "$f" ] || continue
      read t0k c0k < "$f"; read t1k c1k < "${f%.first}.last"
      echo "$t0k $c0k $t1k $c1k"
    done | awk '{ s += $4 - $2; w += $3 - $1 } END { if (w > 0) printf "%.1f", s / w * 100; else print "?" }')
  echo "$most $pct" > /tmp/kd.txt
) &
# Polled every 5 s (polls take CPU the daemon's movers would have, and 1-2 s each under
# TCG); `acted_by` below gives the finer time that scripts/sim_predicts_live.py compares
# with the twin's.
watch_placement "$P" 60 "$t0"
conv=$CONV
wait_s=0; while [ ! -f /tmp/kd.txt ] && [ $wait_s -lt 30 ]; do sleep 1; wait_s=$((wait_s + 1)); done
read most kd_pct < /tmp/kd.txt || { most=0; kd_pct=?; }
say "kdamonds: at most $most on at once in the first 8 s; each took ${kd_pct}% of one CPU while seen on (TCG: page-table walks emulated; 0.01 s ticks)"
kill -TERM $D; wait $D || true
say "== the decisions"
grep -E '"decision"|"migrate_pages"' /tmp/dec.jsonl | cut -c1-200
mig1=$(vmstat numa_pages_migrated)
head -1 /tmp/dec.jsonl
grep -c sensor_error /tmp/dec.jsonl | sed 's/^/sensor errors: /'
tail -1 /tmp/dec.jsonl
say_placed_by /tmp/dec.jsonl "$conv"
if [ -n "$conv" ] && awk -v t="$conv" 'BEGIN { exit !(t <= 60) }'; then
  pass "placed within 60 s with the damon sensor: converged at ${conv} s after the daemon started"
else
  fail "not placed within 60 s with the damon sensor"
fi
if [ "$most" -ge 1 ] && [ "$most" -le 2 ]; then pass "a kdamond per process being sampled: at most $most on at once for 2 processes"; else fail "$most kdamonds on at once for 2 processes"; fi
samples=$(stop_field /tmp/dec.jsonl samples)
moved=$(stop_field /tmp/dec.jsonl pages_moved)
say "stop: samples ${samples:-?}, pages moved ${moved:-?}, pgmigrate_success +$(( $(vmstat pgmigrate_success) - pg0 )), daemon CPU $(stop_field /tmp/dec.jsonl cpu_s) s"
if [ "${samples:-0}" -gt 0 ]; then pass "hot regions read: $samples samples"; else fail "no sample from DAMON"; fi
if [ "$mig0" = "$mig1" ]; then pass "numa_pages_migrated stayed $mig0"; else fail "numa_pages_migrated $mig0 -> $mig1"; fi
r=0; for p in $P; do affinity_restored "$p" || r=1; done
if [ $r = 0 ]; then pass "after SIGTERM every worker is allowed on $(online_cpus) again"; else fail "affinities not restored"; fi
left=$(cat $A/kdamonds/nr_kdamonds)
[ "$left" = 0 ] && pass "no kdamond left after the stop (nr_kdamonds 0)" || fail "nr_kdamonds $left after the stop"
kill $(pids_in /tmp/w.out) 2>/dev/null || true
exit $FAILED
