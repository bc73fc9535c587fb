# The daemon killed mid-run (issue 19): `kill -9` of `numabal daemon -p home-node` once it
# has changed affinities, then `numabal daemon --restore`; again, then a restarted daemon.
# Must show: every affinity the first one changed reads as before (from /proc), except a
# thread someone else changed after the kill (left as they set it); `--restore` is refused
# while a daemon runs; nothing logged as an error.
echo 0 > /proc/sys/kernel/numa_balancing
ST=/run/numabal/state.json
# "tid:Cpus_allowed_list" of every task of the processes, sorted.
affs() {
  for p in "$@"; do
    for t in /proc/$p/task/*; do
      echo "${t##*/}:$(awk '/^Cpus_allowed_list:/ { print $2 }' "$t/status")"
    done
  done | sort
}
numa01-like --procs 2 --threads 2 --mb 96 --seconds 400 > /tmp/w.out 2>&1 &
wait_lines /tmp/w.out 2 'mb='
PS=$(pids_in /tmp/w.out | tr '\n' ' ')
before=$(affs $PS)
say "processes $PS; affinities before: $(echo $before)"
# Start a daemon logging to $1, wait until it has changed at least 2 affinities (at most
# 90 s), then kill -9 it.
run_and_kill() {
  numabal daemon -p home-node --sensor softdirty --decision-log "$1" > /tmp/daemon.out 2>&1 &
  D=$!
  i=0
  until [ "$(cat "$1" 2>/dev/null | grep -c '"sched_setaffinity"')" -ge 2 ] || [ $i -ge 90 ]; do
    sleep 1; i=$((i + 1))
  done
  sleep 1
  kill -9 $D
  wait $D 2>/dev/null || true
  changed=$(grep -c '"sched_setaffinity"' "$1" 2>/dev/null || true)
  kept=$(grep -o '"tid":' "$ST" 2>/dev/null | wc -l)
  say "killed the daemon (pid $D) after $i s: $changed affinities changed, $kept threads in $ST"
  [ "$changed" -ge 2 ] || fail "the daemon changed $changed affinities in 90 s (nothing to restore)"
  [ "$kept" -ge 1 ] || fail "no state file left by the killed daemon"
  [ "$(affs $PS)" != "$before" ] || fail "no affinity reads changed after the kill"
}

say "== 1: kill -9, then numabal daemon --restore"
run_and_kill /tmp/dec1.jsonl
# `--restore` is refused while a daemon holds the state file's lock: checked on another
# state file (a daemon on the default one would first give back what the killed one left).
mkdir -p /tmp/st2 && numabal daemon -p home-node --sensor softdirty --state-file /tmp/st2/state.json \
  --decision-log /tmp/dec-lock.jsonl > /dev/null 2>&1 &
L=$!
sleep 3
r=0; numabal daemon --restore --state-file /tmp/st2/state.json > /tmp/refused.out 2>&1 || r=$?
if [ $r = 2 ] && grep -q "another numabal daemon (pid $L) keeps its state here" /tmp/refused.out; then
  pass "--restore is refused while a daemon runs: $(cat /tmp/refused.out)"
else
  fail "--restore beside a running daemon: exit $r, $(cat /tmp/refused.out)"
fi
kill -TERM $L; wait $L 2>/dev/null || true
# Someone else changes one of the changed threads after the kill: it is theirs now.
T=$(sed 's/.*"threads":\[{"tid":\([0-9]*\),.*/\1/' "$ST")
taskset -p 1 "$T" > /dev/null
numabal daemon --restore --decision-log /tmp/restore1.jsonl 2> /tmp/restore1.err || fail "--restore exited $?"
cat /tmp/restore1.err
after=$(affs $PS)
want=$(echo "$before" | sed "s/^$T:.*/$T:0/")
if [ "$after" = "$want" ]; then
  pass "after kill -9 and --restore every changed affinity reads as before ($(echo $after)), thread $T left at CPU 0 as someone else set it"
else
  fail "after --restore: $(echo $after), want $(echo $want)"
fi
grep -E "\"tid\":$T[,}]" /tmp/restore1.jsonl | grep -q '"left"' && pass "thread $T's restore line says it was left: $(grep -E "\"tid\":$T[,}]" /tmp/restore1.jsonl)" ||
  fail "no 'left' line for thread $T: $(cat /tmp/restore1.jsonl)"
[ ! -e "$ST" ] && pass "the state file is removed after the restore" || fail "$ST still there"
r=0; numabal daemon --restore 2> /tmp/restore0.err || r=$?
[ $r = 0 ] && grep -q "0 affinities given back" /tmp/restore0.err && pass "--restore with nothing left: $(cat /tmp/restore0.err)" ||
  fail "--restore with nothing left: exit $r, $(cat /tmp/restore0.err)"
taskset -p ff "$T" > /dev/null

say "== 2: kill -9, then a restarted daemon (one pass, then SIGTERM's restore at its stop)"
run_and_kill /tmp/dec2.jsonl
numabal daemon -p home-node --sensor softdirty --passes 1 --decision-log /tmp/dec3.jsonl > /dev/null 2>&1 ||
  fail "the restarted daemon exited $?"
grep '"state_file"' /tmp/dec3.jsonl
n=$(grep '"left_by"' /tmp/dec3.jsonl | grep -c '"restore"' || true)
[ "$n" -ge 2 ] && pass "the restarted daemon gave back $n affinities the killed one left" ||
  fail "the restarted daemon gave back $n affinities"
after=$(affs $PS)
[ "$after" = "$before" ] && pass "after kill -9 and a restarted daemon every affinity reads as before" ||
  fail "after the restarted daemon: $(echo $after), want $(echo $before)"
errs=$(cat /tmp/dec1.jsonl /tmp/dec2.jsonl /tmp/dec3.jsonl /tmp/restore1.jsonl | grep -c '"error"' || true)
[ "$errs" = 0 ] && pass "no error logged" || fail "$errs errors logged: $(cat /tmp/dec*.jsonl /tmp/restore1.jsonl | grep '"error"' | head -3)"
kill $PS 2>/dev/null || true
exit $FAILED
