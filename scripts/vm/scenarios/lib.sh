# Shared shell functions of the daemon scenarios (busybox sh inside the guest). The driver
# (scripts/vm/daemon-tests.sh) puts this file in front of each scenario.
set -e

say() { echo "$*"; }
fail() { echo "FAIL: $*"; FAILED=1; }
pass() { echo "PASS: $*"; }
FAILED=0
# Hold perf's static keys on for the whole run (perf_sched_events and the page-fault
# software event's: a counting event on a sleeping task enables both): the daemon's perf
# events would otherwise enable them while the workload runs, and the live text patching
# of 6.12 and later meets a stale int3 under multi-threaded TCG (docs/vm-tests.md).
perf stat -e page-faults -o /dev/null -- sleep 100000 > /dev/null 2>&1 &
sleep 1
# Loopback for the daemon's metrics endpoint (the guest's /init leaves lo down).
ifconfig lo 127.0.0.1 up 2>/dev/null || ip link set lo up 2>/dev/null || true

now_s() { awk '{print $1}' /proc/uptime; }
elapsed() { awk -v a="$1" -v b="$(now_s)" 'BEGIN { printf "%.1f", b - a }'; }
vmstat() { awk -v k="$1" '$1 == k { print $2 }' /proc/vmstat; }
online_cpus() { cat /sys/devices/system/cpu/online; }

# "cpu:node " pairs from numactl --hardware (independent of numabal).
CPU_MAP=$(numactl --hardware | awk '/^node [0-9]+ cpus:/ { for (i = 4; i <= NF; i++) printf "%s:%s ", $i, $2 }')
# (Its loop variable is its own: busybox sh functions share their callers' variables.)
node_of_cpu() { for _pair in $CPU_MAP; do [ "${_pair%%:*}" = "$1" ] && { echo "${_pair#*:}"; return; }; done; echo "?"; }

# Worker threads of a process (every task but the main thread, which only waits).
workers() { for t in /proc/$1/task/*; do t=${t##*/}; [ "$t" != "$1" ] && echo "$t"; done; }

# The node each worker of PID last ran on, a line each (/proc/PID/task/TID/stat, field 39).
worker_nodes() {
  for t in $(workers "$1"); do
    # Fields after the comm (which may hold spaces: perf bench names its processes
    # "process 0"): processor, field 39, is the 37th.
    c=$(sed 's/.*) //' "/proc/$1/task/$t/stat" 2>/dev/null | awk '{ print $37 }') || continue
    [ -n "$c" ] || continue
    node_of_cpu "$c"
  done
}

# Distinct nodes the workers of PID last ran on.
thread_nodes() { worker_nodes "$1" | sort -u | tr '\n' ' '; }

# numastat -p PID: "node fraction total_mb" of the node holding most of its memory.
mem_peak() {
  numastat -p "$1" | awk '/^Total/ { best = 0; for (i = 2; i < NF; i++) if ($i > $best || best == 0) best = i;
      printf "%d %.3f %.1f\n", best - 2, ($NF > 0 ? $best / $NF : 0), $NF }'
}

# Fraction of PID's memory (numastat -p) on NODE.
mem_on() {
  numastat -p "$1" | awk -v n="$2" '/^Total/ { printf "%.3f\n", ($NF > 0 ? $(n + 2) / $NF : 0) }'
}

# One process is placed: its workers all on one node holding >= 90% of its memory. Prints
# "pid=P threads=NODES mem=NODE:FRACTION" and returns 0 when placed.
placed() {
  tn=$(thread_nodes "$1")
  set -- "$1" $(mem_peak "$1")
  line="pid=$1 thread_nodes=[${tn% }] mem_node=$2 mem_frac=$3 mem_mb=$4"
  echo "$line"
  [ "${tn% }" = "$2" ] && awk -v f="$3" 'BEGIN { exit !(f >= 0.9) }'
}

# Wait until FILE has N lines matching PATTERN (at most 120 s).
wait_lines() {
  i=0
  # A file not created yet counts 0 lines (grep prints nothing then: a bare test of the
  # empty string is an error, which used to end the wait at once).
  while n=$(grep -c "$3" "$1" 2>/dev/null) || true; [ "${n:-0}" -lt "$2" ]; do
    i=$((i + 1)); [ $i -gt 1200 ] && { cat "$1"; fail "waited 120 s for $2 lines '$3' in $1"; return 1; }
    sleep 0.1
  done
}

# Pids printed as "pid=P" by a test program.
pids_in() { sed -n 's/.*pid=\([0-9]*\) mb=.*/\1/p' "$1"; }

# The daemon scenarios' numa01-like (2 processes x 2 threads, 128 MiB each, 150 s, first
# touch on node 0), output in /tmp/w.out: notes the kernel's migration counters before it
# (mig0, pg0), waits for both processes, sets P to their pids.
start_numa01_like() {
  mig0=$(vmstat numa_pages_migrated)
  pg0=$(vmstat pgmigrate_success)
  numa01-like --procs 2 --threads 2 --mb 128 --seconds 150 > /tmp/w.out 2>&1 &
  wait_lines /tmp/w.out 2 'mb='
  P=$(pids_in /tmp/w.out)
}

# The JSON object after "placement": in a line of FILE matching PATTERN.
placement_in() { grep "$2" "$1" | tail -1 | sed -n 's/.*"placement":\({[^}]*}\).*/\1/p'; }

# Every worker of PID allowed on every online CPU again.
affinity_restored() {
  all=$(online_cpus); ok=0
  for t in $(workers "$1"); do
    a=$(awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$1/task/$t/status" 2>/dev/null) || continue
    [ "$a" = "$all" ] || { echo "pid $1 tid $t Cpus_allowed_list $a (online $all)"; ok=1; }
  done
  return $ok
}

# The daemon's own CPU seconds so far (utime + stime of /proc/PID/stat, USER_HZ 100).
cpu_s() { sed 's/.*) //' "/proc/$1/stat" | awk '{ printf "%.2f\n", ($12 + $13) / 100 }'; }

# Poll every 5 s for SECONDS (after T0, a /proc/uptime reading) whether every process of
# PIDS is placed and no two share a node; prints each poll; sets CONV to the first time all
# held (empty if never).
watch_placement() {
  pids=$1; secs=$2; t0w=$3; CONV=""
  while :; do
    sleep 5
    t=$(elapsed "$t0w"); ok=1; nodes=""
    for p in $pids; do
      line=$(placed "$p") || ok=0
      say "t=${t}s $line"
      nodes="$nodes $(echo "$line" | sed -n 's/.*mem_node=\([0-9]*\).*/\1/p')"
    done
    [ "$(echo $nodes | tr ' ' '\n' | sort -u | wc -l)" -lt "$(echo $pids | wc -w)" ] && ok=0
    if [ $ok = 1 ] && [ -z "$CONV" ]; then CONV=$t; fi
    awk -v t="$t" -v s="$secs" 'BEGIN { exit !(t >= s) }' && break
  done
  true
}

# When the placement a poll found at T s was reached, at the finest the daemon's decision
# log FILE tells: the end of its last decision or move that ended before T (a move still
# running then was not needed for what the poll found; polls are seconds apart, and
# scripts/sim_predicts_live.py compares this time with the twin's). A pass logs its moves
# with the pass's time, one process's one after another and different processes' at
# once, so a move ends at the pass's time plus its own and its process's earlier
# `took_s` in that pass.
acted_by() {
  grep -E '"decision"|"move_pages"|"migrate_pages"' "$1" | sed -n 's/.*"t_s":\([0-9.]*\).*/\1 &/p' |
    awk -v c="$2" '{ k = $1; if (match($0, /"pid":[0-9]+/)) k = k " " substr($0, RSTART, RLENGTH)
        if (match($0, /"took_s":[0-9.]+/)) took[k] += substr($0, RSTART + 9, RLENGTH - 9)
        e = $1 + took[k] } e < c && e > m { m = e } END { printf "%.1f", m }'
}

# The line scripts/sim_predicts_live.py reads: when the placement the first placed poll
# found at CONV s was reached (`acted_by` of the decision log FILE); nothing if never placed.
say_placed_by() {
  [ -n "$2" ] || return 0
  say "placed by the daemon's actions that ended at $(acted_by "$1" "$2") s after it started (the last ended before the first placed poll)"
}

# A number of the daemon's last decision-log line in FILE (its stop line): KEY's value.
stop_field() { tail -1 "$1" | sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p"; }

# The figures scripts/twin.sh sets beside the simulated twin's: one line "twin: k=v ...".
twin_line() {  # sensor placed_s pgmigrate_delta numa_pages_migrated_delta decision_log
  echo "twin: sensor=$1 placed_s=$2 pgmigrate_success=$3 numa_pages_migrated=$4" \
    "daemon_pages_moved=$(stop_field "$5" pages_moved) daemon_cpu_s=$(stop_field "$5" cpu_s)" \
    "daemon_wall_s=$(stop_field "$5" wall_s)"
}
