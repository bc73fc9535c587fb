# The real numad against numabal's (issue 17, item 7), in the 4-node guest with
# kernel.numa_balancing=0. Debian's numad 0.5+20150602 (scripts/vm/numad-real.sh packs it).
# Three workloads sized as numad expects, each run twice, NUMAD_RUN_S seconds each: under
# `numad -i 5:15 -l 7`, then under `numabal daemon -p numad` (no migration budget, as numad):
#   fit0    two numa02-like (2 threads, 320 MiB) first-touched on node 0: each fits a node
#   spread  the same two under `numactl --interleave=all`: memory spread at the start
#   big     one numa02-like (4 threads, 1300 MiB): fits no node (a node has about 1 GB)
# For each run it prints the processes' final placement (pages per node, allowed CPUs) and
# the decisions (numad's log lines, numabal's decision log) as "@@" lines that
# scripts/vm/numad-compare.py reads. Then, under a fixed background load and without a numad
# daemon, `numad -w R` and `numabal advise --live` on the same requests, side by side (both
# sample the CPUs for 2 s, at the same time).
# Not lib.sh's `set -e`: a grep without a match or a wait on a killed process is not a failure.
set +e
mkdir -p /var/log /var/run
echo 0 > /proc/sys/kernel/numa_balancing
# numad reads a never-bound process's bind time as 0 and compares it with the uptime, so
# for the first 300 s after boot every process looks bound too recently to evaluate
# (docs/model-notes.md, numad's departures): wait that out first, with a margin (numad's
# own time stamps run behind the uptime: docs/vm-tests.md, "The real numad").
W=${NUMAD_AFTER_UPTIME:-360}
say "waiting for uptime $W s (now $(now_s))"
while [ "$(awk -v w="$W" '{ print ($1 >= w) }' /proc/uptime)" = 0 ]; do sleep 5; done
S=${NUMAD_RUN_S:-90}

start_workload() { # name: starts its processes, their pids in $PIDS
  PIDS=""
  case $1 in
    fit0)
      for i in 1 2; do numa02-like --node 0 --threads 2 --mb 320 --seconds $((S + 15)) > /tmp/w$i.out 2>&1 & PIDS="$PIDS $!"; done ;;
    spread)
      for i in 1 2; do numactl --interleave=all numa02-like --node 0 --threads 2 --mb 320 --seconds $((S + 15)) > /tmp/w$i.out 2>&1 & PIDS="$PIDS $!"; done ;;
    big)
      numa02-like --node 0 --threads 4 --mb 1300 --seconds $((S + 15)) > /tmp/w1.out 2>&1 & PIDS=" $!" ;;
  esac
}

# "@@ place WORKLOAD MANAGER PID N0=pages ... cpus=LIST"
print_placement() {
  for p in $PIDS; do
    pages=$(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^N[0-9]+=/) { split(substr($i, 2), a, "="); n[a[1]] += a[2] } } END { for (k = 0; k < 8; k++) if (k in n) printf "N%d=%d ", k, n[k] }' /proc/$p/numa_maps)
    cpus=$(awk '/^Cpus_allowed_list/ { print $2 }' /proc/$p/status)
    say "@@ place $1 $2 $p ${pages}cpus=$cpus"
  done
}

stop_workload() { for p in $PIDS; do kill "$p" 2>/dev/null; done; wait $PIDS 2>/dev/null; sleep 1; }

for w in $(echo "${NUMAD_WORKLOADS:-fit0,spread,big}" | tr , " "); do
  # The real numad: started first, the processes right after (the simulator's numad starts
  # with its workload). Its log's time stamps are the guest's date.
  : > /var/log/numad.log
  say "@@ start $w numad $(date +%s)"
  numad -i 5:15 -l 7 || fail "numad exit $?"
  start_workload $w
  say "@@ pids $w numad$PIDS"
  sleep "$S"
  print_placement $w numad
  numad -i 0 2>/dev/null; sleep 1
  pkill -x numad 2>/dev/null
  grep -e 'Advising pid' -e 'moved to node' /var/log/numad.log | sed "s/^/@@ log $w numad /"
  # NUMAD_TRACE=1: what numad saw at each decision (its -l 7 node values and choices).
  [ "${NUMAD_TRACE:-0}" = 1 ] && grep -e 'Node\[' -e Totmag -e best_node -e '^.*Node: ' -e 'MBs:' \
    -e PICK -e 'Advising' -e 'Process' -e 'candidates' -e 'Skipping' -e 'recently' /var/log/numad.log | sed "s/^/@@ trace $w numad /"
  stop_workload
  # numabal's numad: the live daemon, no migration budget (numad has none).
  say "@@ start $w numabal $(date +%s)"
  numabal daemon -p numad --migrate-mb-s 100000 --decision-log /tmp/nb-$w.jsonl > /tmp/nb-$w.out 2>&1 &
  D=$!
  sleep 0.2
  start_workload $w
  say "@@ pids $w numabal$PIDS"
  sleep "$S"
  print_placement $w numabal
  kill -TERM $D; wait $D 2>/dev/null
  grep -e '"decision"' -e '"skip"' /tmp/nb-$w.jsonl | sed "s/^/@@ log $w numabal /"
  stop_workload
done

# numad -w against numabal advise --live, under a fixed load: node 0 busy with a 2-thread
# 320 MiB process, node 2 holding a 1-thread 600 MiB one.
numa02-like --node 0 --threads 2 --mb 320 --seconds 120 > /tmp/l1.out 2>&1 &
L1=$!
numa02-like --node 2 --threads 1 --mb 600 --seconds 120 > /tmp/l2.out 2>&1 &
L2=$!
sleep 15
for req in 1:100 2:256 2:700 3:512 4:900 4:1200 6:1500 8:2048; do
  c=${req%%:*}; m=${req#*:}
  numad -w "$req" > /tmp/w.out 2>&1 &
  N=$!
  numabal advise --live --cpus "$c" --mem-mb "$m" > /tmp/a.out 2>/tmp/a.err
  wait $N
  say "@@ w $req numad=$(tail -1 /tmp/w.out) numabal=$(tail -1 /tmp/a.out)"
done
kill $L1 $L2 2>/dev/null
exit $FAILED
