# Faults around a running `numabal daemon` (issue 19). Must show:
#  - SIGHUP with a valid file: the change applied and named; with an invalid file: the
#    running configuration kept, the error in one line, the daemon running on;
#  - a managed process's cpuset narrowed by its cgroup (G): dropped within one pass, the
#    skip logged with the reason, never touched again; one thread of another narrowed by
#    `taskset` (H): the same;
#  - CPU 3 offlined and onlined while the daemon manages threads on its node (K, first
#    touched on node 1): no error from sched_setaffinity, no thread with an offline-only
#    mask, K still managed, and after SIGTERM every affinity of K back (restore complete);
#    M, started while CPU 3 is offline, placed then, dropped as narrowed once CPU 3 is back
#    (its own mask, set then, leaves CPU 3 out) and given back what the daemon set on it;
#  - a node filled by another process (F, in a denied cgroup) while the daemon moves a
#    process's pages there (P, its threads pinned to node 2 by its own affinity, managed
#    with manage_narrowed): the daemon's ENOMEM count, its back-off, and at most a few
#    failed attempts a minute.
echo 0 > /proc/sys/kernel/numa_balancing
CG=/sys/fs/cgroup
echo +cpuset > $CG/cgroup.subtree_control
mkdir -p $CG/g $CG/filler
# Actions on PID in the decision log $1 (after line $3, when given).
acts_of() { tail -n +"${3:-1}" "$1" | grep -E "\"pid\":$2[,}]" | grep -E '"sched_setaffinity"|"move_pages"|"migrate_pages"|"interleave_pages"' || true; }
# Wait (at most $3 s) for a line matching $2 in $1; prints the seconds waited.
wait_for() {
  t0w=$(now_s)
  until grep -qE "$2" "$1" 2>/dev/null; do
    awk -v t="$(elapsed "$t0w")" -v m="$3" 'BEGIN { exit !(t > m) }' && { echo never; return 1; }
    sleep 0.2
  done
  elapsed "$t0w"
}
cat > /tmp/nb.toml <<EOT
[daemon]
policy = "home-node"
sensor = "softdirty"
decision_log = "/tmp/dec.jsonl"
[safety]
deny_cgroups = ["/filler"]
EOT
sh -c "echo \$\$ > $CG/g/cgroup.procs && exec numa01-like --procs 1 --threads 2 --mb 96 --seconds 400" > /tmp/g.out 2>&1 &
numa01-like --procs 1 --threads 2 --mb 96 --seconds 400 > /tmp/h.out 2>&1 &
numa01-like --procs 1 --threads 2 --mb 96 --seconds 400 --node 1 > /tmp/k.out 2>&1 &
for f in g h k; do wait_lines /tmp/$f.out 1 'mb='; done
G=$(pids_in /tmp/g.out); H=$(pids_in /tmp/h.out); K=$(pids_in /tmp/k.out)
say "G $G (cgroup /g), H $H, K $K (first touched on node 1)"
numabal daemon --config /tmp/nb.toml > /tmp/daemon.out 2>&1 &
D=$!
for p in $G $H $K; do
  w=$(wait_for /tmp/dec.jsonl "\"pid\":$p[,}].*\"sched_setaffinity\"|\"sched_setaffinity\".*\"pid\":$p[,}]" 90) ||
    fail "the daemon never changed an affinity of $p in 90 s"
done
sleep 2
say "placed: $(for p in $G $H $K; do echo "$p: $(for t in $(workers $p); do awk '/^Cpus_allowed_list:/ { printf "%s ", $2 }' /proc/$p/task/$t/status; done)"; done | tr '\n' ';')"

say "== SIGHUP"
sed -i 's/^sensor = "softdirty"$/sensor = "softdirty"\nmigrate_mb_s = 512/' /tmp/nb.toml
kill -HUP $D
wait_for /tmp/dec.jsonl '"reload":"applied"' 20 > /dev/null || true
l=$(grep '"reload"' /tmp/dec.jsonl | tail -1)
echo "$l" | grep -q '"changed":\["migrate_mb_s"\]' && pass "SIGHUP with a valid file: $l" || fail "SIGHUP with a valid file: $l"
sed -i 's/^migrate_mb_s = 512$/migrate_mb_s = -5/' /tmp/nb.toml
kill -HUP $D
wait_for /tmp/dec.jsonl '"reload":"refused"' 20 > /dev/null || true
l=$(grep '"reload"' /tmp/dec.jsonl | tail -1)
if echo "$l" | grep -q '"reload":"refused"' && echo "$l" | grep -q 'daemon.migrate_mb_s: is -5 (allowed: 0 to 1000000 MiB/s)' && kill -0 $D; then
  pass "SIGHUP with an invalid file: running configuration kept, daemon running: $l"
else
  fail "SIGHUP with an invalid file: $l"
fi
sed -i 's/^migrate_mb_s = -5$/migrate_mb_s = 512/' /tmp/nb.toml

say "== G's cpuset narrowed by its cgroup"
n0=$(numactl --hardware | awk '/^node 0 cpus:/ { printf "%s-%s", $4, $NF }')
echo "$n0" > $CG/g/cpuset.cpus
w=$(wait_for /tmp/dec.jsonl "\"pid\":$G[,}].*\"skip\"|\"skip\".*\"pid\":$G[,}]" 30) || true
say "skip after $w s"
at=$(grep -nE "\"pid\":$G[,}].*\"skip\"|\"skip\".*\"pid\":$G[,}]" /tmp/dec.jsonl | head -1 | cut -d: -f1)
say "$(sed -n "${at:-1}p" /tmp/dec.jsonl)"
say "== one thread of H narrowed by taskset"
tH=$(workers $H | head -1)
taskset -p 01 "$tH" > /dev/null
wH=$(wait_for /tmp/dec.jsonl "\"pid\":$H[,}].*\"skip\"|\"skip\".*\"pid\":$H[,}]" 30) || true
atH=$(grep -nE "\"pid\":$H[,}].*\"skip\"|\"skip\".*\"pid\":$H[,}]" /tmp/dec.jsonl | head -1 | cut -d: -f1)
say "$(sed -n "${atH:-1}p" /tmp/dec.jsonl)"

say "== CPU 3 offline and online"
say "K's workers before: $(for t in $(workers $K); do awk '/^Cpus_allowed_list:/ { printf "%s ", $2 }' /proc/$K/task/$t/status; done)"
echo 0 > /sys/devices/system/cpu/cpu3/online
# M starts while CPU 3 is offline, first touched on node 1: placed there, its mask is kept
# by the kernel without the offline CPU.
numa01-like --procs 1 --threads 1 --mb 64 --seconds 400 --node 1 > /tmp/m.out 2>&1 &
wait_lines /tmp/m.out 1 'mb='
M=$(pids_in /tmp/m.out)
sleep 12
say "M $M (started with CPU 3 offline): $(grep -E "\"pid\":$M[,}]" /tmp/dec.jsonl | grep -c '"sched_setaffinity"') affinities set, workers $(for t in $(workers $M); do awk '/^Cpus_allowed_list:/ { printf "%s ", $2 }' /proc/$M/task/$t/status; done)"
offline_only=""
for p in $G $H $K $M; do
  for t in /proc/$p/task/*; do
    m=$(awk '/^Cpus_allowed_list:/ { print $2 }' "$t/status")
    [ "$m" = 3 ] && offline_only="$offline_only ${t##*/}:$m"
  done
done
say "online $(online_cpus); K's workers: $(for t in $(workers $K); do awk '/^Cpus_allowed_list:/ { printf "%s ", $2 }' /proc/$K/task/$t/status; done)"
echo 1 > /sys/devices/system/cpu/cpu3/online
sleep 5
say "online $(online_cpus)"
sleep 10
kill -TERM $D; wait $D || true
tail -1 /tmp/dec.jsonl

if [ "$w" != never ] && [ -n "$at" ] && awk -v w="$w" 'BEGIN { exit !(w <= 3) }'; then
  pass "G's cpuset narrowed to $n0 by its cgroup: skip logged ${w} s later (passes 1 s apart)"
else
  fail "G's narrowing: skip after ${w:-?} s"
fi
[ -z "$(acts_of /tmp/dec.jsonl "$G" "$((at + 1))")" ] && pass "G never touched after the skip" ||
  fail "G touched after the skip: $(acts_of /tmp/dec.jsonl "$G" "$((at + 1))" | head -2)"
if [ "$wH" != never ] && [ -n "$atH" ] && awk -v w="$wH" 'BEGIN { exit !(w <= 3) }'; then
  pass "H's thread $tH narrowed by taskset: skip logged ${wH} s later"
else
  fail "H's narrowing: skip after ${wH:-?} s"
fi
[ -z "$(acts_of /tmp/dec.jsonl "$H" "$((atH + 1))")" ] && pass "H never touched after the skip" ||
  fail "H touched after the skip: $(acts_of /tmp/dec.jsonl "$H" "$((atH + 1))" | head -2)"
errs=$(grep '"sched_setaffinity"' /tmp/dec.jsonl | grep -c '"error"' || true)
[ "$errs" = 0 ] && pass "no error from sched_setaffinity through the hotplug" ||
  fail "$errs sched_setaffinity errors: $(grep '"sched_setaffinity"' /tmp/dec.jsonl | grep '"error"' | head -2)"
[ -z "$offline_only" ] && pass "no thread with an offline-only mask while CPU 3 was offline" ||
  fail "threads with an offline-only mask:$offline_only"
grep -qE "\"pid\":$K[,}].*\"skip\"|\"skip\".*\"pid\":$K[,}]" /tmp/dec.jsonl &&
  fail "K dropped: $(grep -E "\"pid\":$K[,}].*\"skip\"|\"skip\".*\"pid\":$K[,}]" /tmp/dec.jsonl | head -1)" ||
  pass "K still managed through the hotplug"
# M set its own mask while CPU 3 was offline (numa01-like gives itself back its mask after
# the first touch), and the kernel keeps a mask within the online CPUs: once CPU 3 is back,
# M is narrowed, dropped, and what the daemon set on its workers given back.
nM=$(grep -E "\"pid\":$M[,}]" /tmp/dec.jsonl | grep '"sched_setaffinity"' | grep -vc '"error"\|"refused"' || true)
skipM=$(grep -E "\"pid\":$M[,}].*\"skip\"|\"skip\".*\"pid\":$M[,}]" /tmp/dec.jsonl | head -1)
say "M: $nM affinities set; $skipM"
own=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/$M/status)
mw=$(for t in $(workers $M); do awk '/^Cpus_allowed_list:/ { printf "%s ", $2 }' /proc/$M/task/$t/status; done)
if [ "$nM" -ge 1 ] && echo "$skipM" | grep -q narrowed && [ "$mw" = "$(for t in $(workers $M); do printf '%s ' "$own"; done)" ]; then
  pass "M placed while CPU 3 was offline ($nM masks set, no error), dropped as narrowed once it came back (its own mask $own), its workers given their own back ($mw)"
else
  fail "M: $nM masks set, skip: ${skipM:-none}, workers $mw, own $own"
fi
changedK=$(grep -E "\"pid\":$K[,}]" /tmp/dec.jsonl | grep -c '"sched_setaffinity"' || true)
if affinity_restored "$K"; then pass "after SIGTERM K's $changedK changed affinities are back to $(online_cpus): restore complete"; else fail "K's affinities not restored"; fi
[ "$changedK" -gt 0 ] || fail "the daemon never changed K's affinity"
restore_errs=$(grep '"restore"' /tmp/dec.jsonl | grep -c '"error"\|"left"' || true)
say "restore lines: $(grep -c '"restore"' /tmp/dec.jsonl), with an error or left: $restore_errs"
kill $G $H $K $M 2>/dev/null || true
sleep 1

say "== a full node"
sh -c "echo \$\$ > $CG/filler/cgroup.procs && exec numa02-like --node 2 --threads 1 --mb 1000 --seconds 400" > /tmp/f.out 2>&1 &
wait_lines /tmp/f.out 1 'mb='
F=$(pids_in /tmp/f.out)
free2() { awk '/MemFree:/ { print int($4 / 1024) }' /sys/devices/system/node/node2/meminfo; }
numa02-like --node 0 --threads 2 --mb 64 --seconds 400 > /tmp/p.out 2>&1 &
wait_lines /tmp/p.out 1 'mb='
P=$(pids_in /tmp/p.out)
for t in $(workers $P); do taskset -p 30 "$t" > /dev/null; done
say "F $F holds $(mem_on $F 2) of its memory on node 2, node 2 has $(free2) MiB free; P $P (64 MiB on node 0, threads on node 2's CPUs)"
cat > /tmp/full.toml <<EOT
[daemon]
policy = "stable-daemon"
sensor = "softdirty"
decision_log = "/tmp/full.jsonl"
[safety]
deny_cgroups = ["/filler"]
manage_narrowed = true
EOT
numabal daemon --config /tmp/full.toml > /tmp/daemon2.out 2>&1 &
D2=$!
t0=$(now_s)
sleep 75
kill -TERM $D2; wait $D2 || true
tail -1 /tmp/full.jsonl
made=$(grep -E "\"pid\":$P[,}]" /tmp/full.jsonl | grep '"to":2' | grep -v '"held_back"' | grep -c '"moved"' || true)
refused=$(grep -E "\"pid\":$P[,}]" /tmp/full.jsonl | grep -c '"node_full"' || true)
held=$(grep -E "\"pid\":$P[,}]" /tmp/full.jsonl | grep -c '"held_back"' || true)
enomem=$(grep -E "\"pid\":$P[,}]" /tmp/full.jsonl | grep -o '"ENOMEM":[0-9]*' | awk -F: '{ s += $2 } END { print s + 0 }')
nf=$(stop_field /tmp/full.jsonl node_full)
say "P's moves to node 2 made: $made, refused for memory: $refused (pages ENOMEM: $enomem), held back: $held; stop line node_full $nf; node 2 free $(free2) MiB; P on node 2: $(mem_on $P 2)"
grep -E "\"pid\":$P[,}]" /tmp/full.jsonl | grep '"node_full"' | head -2
grep -E "\"pid\":$P[,}]" /tmp/full.jsonl | grep '"held_back"' | tail -1
[ "$refused" -ge 1 ] && pass "the full node refused pages for want of memory ($refused moves, $enomem pages ENOMEM, node_full $nf)" ||
  fail "no move refused for want of memory (made $made)"
# 75 s: at most 5 failed attempts (0, 5, 15, 35 and 75 s with the back-off).
[ "$refused" -le 5 ] && pass "at most a few failed attempts: $refused in 75 s, $held moves held back" ||
  fail "$refused failed attempts in 75 s"
kill $F $P 2>/dev/null || true
exit $FAILED
