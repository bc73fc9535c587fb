# numa01-like under `numabal daemon` (policy stable-daemon, or DAEMON_POLICY, sensor
# softdirty) with the kernel's balancing off. Must show: within 60 s each process has its
# workers on one node holding >= 90% of its memory (numastat -p), the two processes on
# different nodes; the kernel's numa_pages_migrated stays 0; after SIGTERM every affinity
# is back; the recording replayed by the simulator under the same policy reaches the same
# process-to-node placement.
echo 0 > /proc/sys/kernel/numa_balancing
say "== numa01-like (2 processes x 2 threads, 128 MiB each, first touch on node 0); numa_balancing=0"
start_numa01_like
for p in $P; do placed "$p" || true; done
t0=$(now_s)
POLICY=${DAEMON_POLICY:-stable-daemon}
say "daemon policy: $POLICY, sensor: softdirty"
numabal daemon -p "$POLICY" --sensor softdirty \
  --record /tmp/rec.jsonl --decision-log /tmp/dec.jsonl --metrics-port 9893 &
D=$!
watch_placement "$P" 60 "$t0"
conv=$CONV
say "== numabal stat --sample-s 3 (local access ratio of sampled writes, after placement)"
numabal stat -p numa01-like --sample-s 3 --sensor softdirty | tail -4 || true
say "== metrics"
wget -q -O - http://127.0.0.1:9893/metrics | grep -v '^#' || fail "no metrics on 127.0.0.1:9893"
kill -TERM $D; wait $D || true
mig1=$(vmstat numa_pages_migrated)
tail -1 /tmp/dec.jsonl
say "-- the daemon's decisions (decision log, the first 8)"
grep '"decision"' /tmp/dec.jsonl | head -8 || true
twin_line softdirty "$conv" $(( $(vmstat pgmigrate_success) - pg0 )) $((mig1 - mig0)) /tmp/dec.jsonl
if [ -n "$conv" ] && awk -v t="$conv" 'BEGIN { exit !(t <= 60) }'; then
  pass "placed within 60 s: converged at ${conv} s after the daemon started"
else
  fail "not placed within 60 s"
fi
if [ "$mig0" = "$mig1" ]; then pass "numa_pages_migrated stayed $mig0"; else fail "numa_pages_migrated $mig0 -> $mig1"; fi
r=0; for p in $P; do affinity_restored "$p" || r=1; done
if [ $r = 0 ]; then pass "after SIGTERM every worker is allowed on $(online_cpus) again"; else fail "affinities not restored"; fi
live=$(placement_in /tmp/dec.jsonl '"stop"')
numabal sim --trace /tmp/rec.jsonl --policy "$POLICY" > /tmp/replay.out 2>/tmp/replay.err || fail "replay failed: $(cat /tmp/replay.err)"
replayed=$(placement_in /tmp/replay.out '"placement"')
say "placement live $live, replayed $replayed ($(wc -l < /tmp/rec.jsonl) recorded passes)"
if [ -n "$live" ] && [ "$live" = "$replayed" ]; then pass "replay reaches the live placement $live"; else fail "replay placement $replayed != live $live"; fi
kill $(pids_in /tmp/w.out) 2>/dev/null || true
exit $FAILED
