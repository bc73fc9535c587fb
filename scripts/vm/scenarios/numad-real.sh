# The real numad in the 4-node guest (issue 17, item 7; first step): Debian's numad
# 0.5+20150602 (scripts/vm/numad-real.sh packs it) with kernel.numa_balancing=0, beside
# two numa02-like processes sized as numad expects (more than its 300 MB candidate
# threshold, each fitting a node), both first-touched on node 0. Prints numad's own log
# (its "Advising pid ... move from nodes (...) to nodes (...)" lines), where each process
# ends, and numad -w answers on the same guest state.
mkdir -p /var/log /var/run
echo 0 > /proc/sys/kernel/numa_balancing
# numad reads a never-bound process's bind time as 0 and compares it with the uptime, so
# for the first 300 s after boot every process looks bound too recently to evaluate
# (docs/model-notes.md, numad's departures): wait that out first.
W=${NUMAD_AFTER_UPTIME:-300}
say "waiting for uptime $W s (now $(now_s))"
while [ "$(awk -v w="$W" '{ print ($1 >= w) }' /proc/uptime)" = 0 ]; do sleep 5; done
S=${NUMAD_RUN_S:-60}
# numad first, then the processes at once: the simulator's numad starts with the workload.
t0=$(now_s)
numad -i 5:15 -l 7 || fail "numad exit $?"
numa02-like --node 0 --threads 2 --mb 320 --seconds $((S + 10)) > /tmp/a.out 2>&1 &
A=$!
numa02-like --node 0 --threads 2 --mb 320 --seconds $((S + 10)) > /tmp/b.out 2>&1 &
B=$!
sleep "$S"
say "numad ran $(elapsed "$t0") s; A=$A B=$B"
for p in $A $B; do say "numastat $p: $(awk '/^N[0-9]|N[0-9]+=/ {print}' /proc/$p/numa_maps | awk '{for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); n[a[1]] += a[2] } } END { for (k in n) printf "N%s=%d ", k, n[k] }')"; done
for req in 1 2 2:256 4:512 4:1024 6:256 8:2048; do say "numad -w $req: $(numad -w $req 2>&1 | tr '\n' ' ')"; done
say "@@ numad log begin"
cat /var/log/numad.log
say "@@ numad log end"
kill $A $B 2>/dev/null || true
pkill numad 2>/dev/null || kill "$(cat /var/run/numad.pid 2>/dev/null)" 2>/dev/null || true
exit $FAILED
