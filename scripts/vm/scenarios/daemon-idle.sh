# `numabal daemon` (defaults: stable-daemon, sensor chosen for the host) on an idle guest for 60 s:
# its own CPU use, measured from /proc/PID/stat, must stay under 1% of one CPU.
echo 0 > /proc/sys/kernel/numa_balancing
numabal daemon --decision-log /tmp/dec.jsonl &
D=$!
sleep 2
c0=$(cpu_s $D); t0=$(now_s)
sleep 60
c1=$(cpu_s $D); t=$(elapsed "$t0")
kill -TERM $D; wait $D || true
head -1 /tmp/dec.jsonl | cut -c1-200
pct=$(awk -v a="$c0" -v b="$c1" -v t="$t" 'BEGIN { printf "%.3f", 100 * (b - a) / t }')
say "daemon CPU over ${t} s idle: $(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.2f", b - a }') s = ${pct}% of one CPU"
if awk -v p="$pct" 'BEGIN { exit !(p < 1) }'; then pass "idle CPU ${pct}% < 1%"; else fail "idle CPU ${pct}% >= 1%"; fi
exit $FAILED
