# numa02-like under `numabal daemon -p home-node` with the kernel's balancing off (issue 18:
# "numa01-like and numa02-like placed within 60 s"). One process, a thread per CPU (8),
# each writing its own slice of 128 MiB first touched on node 0 (the guest preset's
# numa02-like, which scripts/sim_predicts_live.py runs as the twin): the threads must
# spread over the four nodes and each slice follow its thread. Placed: the sampled writes local
# (`numabal stat --sensor softdirty`, ratio >= 0.9) and no node with more of its threads
# than CPUs. Polled from 15 s after the daemon starts, every 10 s or as soon as the last
# poll ends (under TCG a poll takes about 12 s), until 55 s; a poll's time is when it
# began. Each poll samples for 2 s, and its soft-dirty clearing hides those 2 s of writes
# from the daemon's own sensor (the daemon stops sampling a split process once a window
# passes without a move). Also checked: the kernel's numa_pages_migrated stays 0, the
# daemon moves at most 1.5x the process's resident memory, and every affinity is back
# after SIGTERM.
echo 0 > /proc/sys/kernel/numa_balancing
mig0=$(vmstat numa_pages_migrated)
say "== numa02-like (1 process x 8 threads, 128 MiB first touched on node 0); numa_balancing=0"
numa02-like --node 0 --threads 8 --mb 128 --seconds 150 > /tmp/w.out 2>&1 &
wait_lines /tmp/w.out 1 'mb='
P=$(pids_in /tmp/w.out)
t0=$(now_s)
numabal daemon -p home-node --sensor softdirty --decision-log /tmp/dec.jsonl &
D=$!
# Threads per node from each worker's last CPU: "N0 N1 N2 N3" counts.
per_node() { worker_nodes "$P" | awk '{ n[$1]++ } END { printf "%d %d %d %d\n", n[0], n[1], n[2], n[3] }'; }
conv=""
for at in 15 25 35 45 55; do
  while awk -v a="$t0" -v b="$(now_s)" -v s="$at" 'BEGIN { exit !(b - a < s) }'; do sleep 1; done
  began=$(elapsed "$t0")
  # The ratio table comes last: "PID samples local ratio", one row per process.
  ratio=$(numabal stat -p "$P" --sample-s 2 --sensor softdirty |
    awk -v p="$P" '$NF == "ratio" { t = 1; next } t && $1 == p { print $NF }')
  nodes=$(per_node)
  over=$(echo "$nodes" | awk '{ for (i = 1; i <= NF; i++) if ($i > 2) o = 1; print o + 0 }')
  say "t=${began}-$(elapsed "$t0")s local_ratio=$ratio threads_per_node=[$nodes] mem_on_node0=$(mem_on "$P" 0)"
  if [ -z "$conv" ] && [ "$over" = 0 ] && awk -v r="$ratio" 'BEGIN { exit !(r + 0 >= 0.9) }'; then
    conv=$began
  fi
done
rss_pages=$(( $(awk '/^VmRSS:/ { print $2 }' "/proc/$P/status") / 4 ))
kill -TERM $D; wait $D || true
mig1=$(vmstat numa_pages_migrated)
tail -1 /tmp/dec.jsonl
grep -E '"decision"' /tmp/dec.jsonl | head -3 || true
moved=$(sed -n 's/.*"moved":\([0-9]*\).*/\1/p' /tmp/dec.jsonl | awk '{ s += $1 } END { print s + 0 }')
say "the daemon moved $moved pages of a resident $rss_pages"
# When its last action ended, on the daemon's clock (from its start): a finer time than the polls.
say "the daemon's move_pages calls: $(grep -c '"move_pages"' /tmp/dec.jsonl), its last action ended at $(acted_by /tmp/dec.jsonl 1e9) s"
say_placed_by /tmp/dec.jsonl "$conv"
if [ -n "$conv" ] && awk -v t="$conv" 'BEGIN { exit !(t <= 60) }'; then
  pass "placed within 60 s: sampled writes local and no node over its CPUs at ${conv} s after the daemon started"
else
  fail "not placed within 60 s"
fi
if [ "$mig0" = "$mig1" ]; then pass "numa_pages_migrated stayed $mig0"; else fail "numa_pages_migrated $mig0 -> $mig1"; fi
if [ "$moved" -le $(( rss_pages * 3 / 2 )) ]; then
  pass "moved $moved pages, at most 1.5x the resident $rss_pages"
else
  fail "moved $moved pages, more than 1.5x the resident $rss_pages"
fi
if affinity_restored "$P"; then pass "after SIGTERM every worker is allowed on $(online_cpus) again"; else fail "affinities not restored"; fi
kill "$P" 2>/dev/null || true
exit $FAILED
