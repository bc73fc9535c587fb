# numa01-like under `numabal daemon` (stable-daemon, sensor hint) with the kernel's balancing on:
# the daemon places threads, the kernel migrates pages on its hinting faults. Must show the
# same placement criteria as daemon-numa01.sh within 60 s, with both counters reported.
echo 1 > /proc/sys/kernel/numa_balancing
start_numa01_like
t0=$(now_s)
numabal daemon --sensor hint --decision-log /tmp/dec.jsonl &
D=$!
watch_placement "$P" 60 "$t0"
conv=$CONV
kill -TERM $D; wait $D || true
tail -1 /tmp/dec.jsonl
twin_line hint "$conv" $(( $(vmstat pgmigrate_success) - pg0 )) $(( $(vmstat numa_pages_migrated) - mig0 )) /tmp/dec.jsonl
moved=$(tail -1 /tmp/dec.jsonl | sed -n 's/.*"pages_moved":\([0-9]*\).*/\1/p')
say "kernel numa_pages_migrated: $(( $(vmstat numa_pages_migrated) - mig0 )); pages moved by the daemon: ${moved:-?}"
if [ -n "$conv" ]; then pass "hint: placed within 60 s (at ${conv} s)"; else fail "hint: not placed within 60 s"; fi
kill $P 2>/dev/null || true
exit $FAILED
