# A long soak of `numabal daemon` (issue 19; not in the default list, about 32 min:
# `VM_TIMEOUT=2400 scripts/vm/daemon-tests.sh daemon-soak`; SOAK_S seconds of churn, 1800
# unless the environment says). The daemon (home-node, softdirty, `--min-rss-mb 16`, metrics
# on) beside churn:
# a set of numa01-like (2 processes x 2 threads, 48 MiB, 20 s) started every 10 s, so the
# daemon places and moves new processes all the time, a short-lived process every 50 ms, and
# its metrics scraped every second. Printed every minute: the daemon's RSS, open file
# descriptors, passes and pages moved. Must show: RSS flat (the last minute's within 10% of
# the fifth minute's, both under churn), the same open file descriptors idle before and
# after the churn, and no error logged but the expected ones (a process gone mid-operation
# is a "gone" line, not an error).
echo 0 > /proc/sys/kernel/numa_balancing
SOAK_S=${SOAK_S:-1800}
numabal daemon -p home-node --sensor softdirty --min-rss-mb 16 --metrics-port 9893 --decision-log /tmp/dec.jsonl > /tmp/daemon.out 2>&1 &
D=$!
sleep 5
rss() { awk '/^VmRSS:/ { print $2 }' /proc/$D/status; }
fds() { ls /proc/$D/fd | wc -l; }
metric() { wget -qO- http://127.0.0.1:9893/metrics 2>/dev/null | awk -v k="$1" '$1 == k { print $2 }'; }
r0=$(rss); f0=$(fds)
say "idle before: RSS $r0 kB, $f0 open fds"
( while :; do numa01-like --procs 2 --threads 2 --mb 48 --seconds 20 > /dev/null 2>&1 & sleep 10; done ) &
C=$!
( while :; do sh -c 'exit 0'; sleep 0.05; done ) &
S=$!
# Seconds since the churn began, by the guest's clock (each scrape and sleep takes more
# than a second under TCG).
t0=$(now_s); t=0; next=60; scrapes=0; r5=""
while [ $t -lt "$SOAK_S" ]; do
  wget -qO- http://127.0.0.1:9893/metrics > /dev/null 2>&1 && scrapes=$((scrapes + 1))
  sleep 1
  t=$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { printf "%d", b - a }')
  if [ $t -ge $next ]; then
    next=$((next + 60))
    r=$(rss)
    [ -z "$r5" ] && [ $t -ge 300 ] && r5=$r
    say "t=${t}s RSS ${r} kB, $(fds) fds, passes $(metric numabal_passes_total), pages moved $(metric numabal_pages_moved_total), managed $(metric numabal_managed_processes), pass max $(metric numabal_pass_seconds_max) s"
  fi
done
rl=$(rss)
kill $C $S 2>/dev/null || true
say "churn stopped after $SOAK_S s ($scrapes metrics scrapes); waiting for its processes to end"
sleep 40
r1=$(rss); f1=$(fds)
say "idle after: RSS $r1 kB, $f1 open fds"
kill -TERM $D; wait $D || true
tail -1 /tmp/dec.jsonl | cut -c1-400
r5=${r5:-$r0}
awk -v a="$r5" -v b="$rl" 'BEGIN { exit !(b <= a * 1.1) }' &&
  pass "RSS flat: $r5 kB at 5 min, $rl kB at the end of the churn ($r0 kB idle before, $r1 kB idle after)" ||
  fail "RSS grew: $r5 kB at 5 min, $rl kB at the end ($r0 idle before, $r1 after)"
[ "$f1" = "$f0" ] && pass "open fds idle before and after the churn: $f0 and $f1" || fail "open fds $f0 before, $f1 after"
errs=$(grep -c '"error"' /tmp/dec.jsonl || true)
gone=$(grep -c '"gone"' /tmp/dec.jsonl || true)
[ "$errs" = 0 ] && pass "no error logged in $(wc -l < /tmp/dec.jsonl) lines ($gone gone mid-operation)" ||
  fail "$errs errors logged: $(grep '"error"' /tmp/dec.jsonl | head -3)"
exit $FAILED
