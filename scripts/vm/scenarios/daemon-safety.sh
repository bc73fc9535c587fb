# Safety of `numabal daemon` (stable, softdirty, numa_balancing=0). Must show: a process
# pinned to one node by a cpuset is never touched (no affinity change, no page moved); a
# denied process (here by cgroup) is never touched; a managed process killed mid-migration
# is logged and the daemon carries on; after SIGTERM every changed affinity is back.
echo 0 > /proc/sys/kernel/numa_balancing
CG=/sys/fs/cgroup
echo +cpuset > $CG/cgroup.subtree_control
mkdir -p $CG/pinned $CG/denied
n1cpus=$(numactl --hardware | awk '/^node 1 cpus:/ { printf "%s-%s", $4, $NF }')
echo "$n1cpus" > $CG/pinned/cpuset.cpus
echo 1 > $CG/pinned/cpuset.mems
# A: pinned by its cpuset to node 1. B: denied by cgroup. C: managed, killed mid-migration.
# D: managed, alive at SIGTERM.
sh -c "echo \$\$ > $CG/pinned/cgroup.procs && exec numa02-like --node 1 --threads 2 --mb 96 --seconds 200" > /tmp/a.out 2>&1 &
sh -c "echo \$\$ > $CG/denied/cgroup.procs && exec numa01-like --procs 1 --threads 2 --mb 96 --seconds 200" > /tmp/b.out 2>&1 &
# C's memory is first-touched on node 1, whose 2 CPUs A keeps busy: its threads run
# elsewhere, so the daemon has C's pages to move (first-touched on node 0, C's threads could
# both run there and need nothing moved).
numa02-like --threads 2 --mb 128 --seconds 200 --node 1 > /tmp/c.out 2>&1 &
numa01-like --procs 1 --threads 2 --mb 96 --seconds 200 > /tmp/d.out 2>&1 &
for f in a b c d; do wait_lines /tmp/$f.out 1 'mb='; done
A=$(pids_in /tmp/a.out); B=$(pids_in /tmp/b.out); C=$(pids_in /tmp/c.out); DP=$(pids_in /tmp/d.out)
say "A (cpuset $n1cpus, mems 1) $A; B (cgroup /denied) $B; C $C; D $DP"
affA=$(for t in $(workers $A); do awk '/^Cpus_allowed_list:/ { print $2 }' /proc/$A/task/$t/status; done | tr '\n' ' ')
memA0=$(mem_on $A 1)
cat > /tmp/numabal.toml <<EOT
[daemon]
policy = "stable-daemon"
sensor = "softdirty"
migrate_mb_s = 2
decision_log = "/tmp/dec.jsonl"
[safety]
deny_cgroups = ["/denied"]
EOT
numabal daemon --config /tmp/numabal.toml &
D=$!
# C is killed while the daemon is moving its pages (2 MiB/s keeps that going for a while).
# (At most 60 s of the guest's time: each poll's greps are slow under TCG.)
t0c=$(now_s)
until grep '"move_pages"' /tmp/dec.jsonl 2>/dev/null | grep -q "\"pid\":$C,"; do
  awk -v t="$(elapsed "$t0c")" 'BEGIN { exit !(t > 60) }' && { fail "the daemon never moved pages of C"; break; }
  sleep 0.1
done
kill -9 $C
say "killed C ($C) at $(grep -c . /tmp/dec.jsonl) decision-log lines"
# The exit is logged by the pass after the kill; a pass takes 1-3 s under TCG beside the
# workers (wait up to 30 s for it).
i=0
until grep "\"pid\":$C," /tmp/dec.jsonl | grep -qE '"exited"|"gone"' || [ $i -ge 30 ]; do
  sleep 1; i=$((i + 1))
done
[ $i -lt 6 ] && sleep $((6 - i))
if kill -0 $D 2>/dev/null; then pass "the daemon carries on after C was killed"; else fail "the daemon died"; fi
grep "\"pid\":$C," /tmp/dec.jsonl | grep -E '"exited"|"gone"' | head -3
grep "\"pid\":$C," /tmp/dec.jsonl | grep -qE '"exited"|"gone"' && pass "C's exit is logged" || fail "C's exit is not logged"
sleep 10
kill -TERM $D; wait $D || true
tail -1 /tmp/dec.jsonl
acts() { grep "\"pid\":$1," /tmp/dec.jsonl | grep -E '"sched_setaffinity"|"move_pages"|"migrate_pages"' || true; }
grep "\"pid\":$A," /tmp/dec.jsonl | grep skip | head -1
if [ -z "$(acts $A)" ]; then pass "A (cpuset-pinned) never touched: no affinity change, no page moved"; else fail "A was touched: $(acts $A | head -2)"; fi
affA1=$(for t in $(workers $A); do awk '/^Cpus_allowed_list:/ { print $2 }' /proc/$A/task/$t/status; done | tr '\n' ' ')
[ "$affA" = "$affA1" ] && pass "A's affinities unchanged ($affA)" || fail "A's affinities $affA -> $affA1"
say "A's memory on node 1: $memA0 -> $(mem_on $A 1)"
grep "\"pid\":$B," /tmp/dec.jsonl | grep skip | head -1
if [ -z "$(acts $B)" ]; then pass "B (denied) never touched"; else fail "B was touched: $(acts $B | head -2)"; fi
changedD=$(grep "\"pid\":$DP," /tmp/dec.jsonl | grep -c '"sched_setaffinity"' || true)
if affinity_restored $DP; then pass "after SIGTERM D's $changedD changed affinities are back to $(online_cpus)"; else fail "D's affinities not restored"; fi
[ "$changedD" -gt 0 ] || fail "the daemon never changed D's affinity (nothing to restore)"
kill $A $B $DP 2>/dev/null || true
exit $FAILED
