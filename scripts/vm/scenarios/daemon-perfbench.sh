# `perf bench numa mem` (4 processes of 1 thread, 160 MiB each, memory starting on node 0)
# twice: under `numabal daemon` (stable, softdirty) with numa_balancing=0, then under the
# kernel's own balancing (numa_balancing=1, no daemon). Must show: the daemon's run goes its
# full length and ends with each process's memory on its thread's node (numastat); time to
# converge and pages migrated of both, side by side.
SECS=${BENCH_S:-40}

# Children of PID (perf bench's worker processes).
children() {
  parent=$1
  for s in /proc/[0-9]*/stat; do
    # Shell built-ins only (a fork per process is slow under TCG); the comm may hold spaces.
    read -r line < "$s" 2>/dev/null || continue
    set -- ${line##*) }
    if [ "$2" = "$parent" ]; then s=${s#/proc/}; echo "${s%/stat}"; fi
  done
  true
}

# Run the bench under the current settings; polls placement every 2 s (each poll one
# program, `placement`); sets CONV (s after
# the bench started, or "never") and ENDOK (1 if every process ends placed).
bench() {
  : > /tmp/polls.log
  perf bench numa mem -p 4 -t 1 -P 160 -s "$SECS" -zZ0c > /tmp/bench.out 2>&1 &
  B=$!
  t0=$(now_s); CONV=never; ENDOK=0; kids=""
  while kill -0 $B 2>/dev/null; do
    sleep 2
    [ "$(echo $kids | wc -w)" -lt 4 ] && kids=$(children $B)
    [ -z "$kids" ] && continue
    # One program for all four (placement, numabal-testprogs): the shell's `placed` runs
    # a few dozen, seconds in the loaded guest, and its polls came 6-8 s apart.
    # shellcheck disable=SC2086
    if placement $kids > /tmp/placed.all; then ok=1; else ok=0; fi
    n=0; gone=0
    for k in $kids; do
      line=$(grep "^pid=$k " /tmp/placed.all) || { ok=0; continue; }
      n=$((n + 1))
      # A process whose memory fell below 90% of its largest is exiting (perf bench frees
      # its buffer first): what is left says nothing of the placement.
      mb=$(echo "$line" | sed -n 's/.*mem_mb=\([0-9.]*\).*/\1/p')
      eval "peak=\${peak_$k:-0}"
      if awk -v a="$mb" -v b="$peak" 'BEGIN { exit !(a > b) }'; then eval "peak_$k=$mb"; peak=$mb; fi
      awk -v a="$mb" -v b="$peak" 'BEGIN { exit !(a < 0.9 * b) }' && gone=1
    done
    # Polls after the processes exit say nothing: keep the last one that saw all four whole.
    if [ $n -lt 4 ] || [ $gone = 1 ]; then
      echo "t=$(elapsed "$t0")s exiting (not counted): $(cat /tmp/placed.all 2>/dev/null | tr '\n' ';')" >> /tmp/polls.log
      rm -f /tmp/placed.all; continue
    fi
    if [ $ok = 1 ] && [ "$CONV" = never ]; then CONV=$(elapsed "$t0"); fi
    [ $ok = 1 ] && ENDOK=1 || ENDOK=0
    last=$(cat /tmp/placed.all 2>/dev/null | tr '\n' ';'); rm -f /tmp/placed.*
    # Every poll, printed after the bench: what changed, and when.
    echo "t=$(elapsed "$t0")s placed=$ok $last" >> /tmp/polls.log
  done
  RC=0; wait $B || RC=$?
  say "last placement before the bench ended: $last"
  grep -iE 'converge|runtime-max|secs' /tmp/bench.out | head -5 || true
}

echo 0 > /proc/sys/kernel/numa_balancing
m0=$(vmstat numa_pages_migrated); s0=$(vmstat pgmigrate_success)
# DAEMON_POLICY (scripts/vm/daemon-tests.sh): another policy than the daemon's default.
numabal daemon ${DAEMON_POLICY:+-p "$DAEMON_POLICY"} --sensor softdirty \
  --decision-log /tmp/dec.jsonl &
D=$!
sleep 1
say "== perf bench numa mem under numabal daemon (numa_balancing=0)"
bench
kill -TERM $D; wait $D || true
d_conv=$CONV; d_end=$ENDOK; d_rc=$RC
cp /tmp/polls.log /tmp/d_polls.log
head -1 /tmp/dec.jsonl | sed -n 's/.*"policy":"\([^"]*\)".*"sensor":"\([^"]*\)".*/daemon policy: \1, sensor: \2/p'
say "-- the daemon's decisions and page moves (decision log, the first 30)"
grep -E '"(managed|decision|migrate_pages|move_pages)"' /tmp/dec.jsonl | head -30 || true
d_moved=$(tail -1 /tmp/dec.jsonl | sed -n 's/.*"pages_moved":\([0-9]*\).*/\1/p')
d_kmig=$(( $(vmstat numa_pages_migrated) - m0 )); d_pgm=$(( $(vmstat pgmigrate_success) - s0 ))

echo 1 > /proc/sys/kernel/numa_balancing
m0=$(vmstat numa_pages_migrated); s0=$(vmstat pgmigrate_success)
say "== perf bench numa mem under the kernel's NUMA balancing (numa_balancing=1, no daemon)"
bench
k_conv=$CONV; k_end=$ENDOK; k_rc=$RC
k_kmig=$(( $(vmstat numa_pages_migrated) - m0 )); k_pgm=$(( $(vmstat pgmigrate_success) - s0 ))

say "== side by side (${SECS} s runs, 4 x 1 thread x 160 MiB, memory from node 0)"
printf '%-28s %14s %14s\n' "" "numabal daemon" "kernel"
printf '%-28s %14s %14s\n' "converged after (s)" "$d_conv" "$k_conv"
printf '%-28s %14s %14s\n' "placed at the end" "$d_end" "$k_end"
printf '%-28s %14s %14s\n' "daemon pages moved" "${d_moved:-?}" "0"
printf '%-28s %14s %14s\n' "numa_pages_migrated" "$d_kmig" "$k_kmig"
printf '%-28s %14s %14s\n' "pgmigrate_success" "$d_pgm" "$k_pgm"
[ "$d_rc" = 0 ] && pass "the bench ran its full length under the daemon" || fail "bench exit $d_rc under the daemon"
# Every poll under the daemon, pass or fail: when each process was placed, beside the moves.
say "-- placement at every poll under the daemon"; cat /tmp/d_polls.log
if [ "$d_end" = 1 ]; then
  pass "under the daemon every process ends with >= 90% of its memory on its thread's node"
else
  fail "not placed at the end under the daemon"
  say "-- the daemon's actions (decision log, without sensor lines)"
  grep -v '"sensor' /tmp/dec.jsonl | tail -40
fi
exit $FAILED
