# Issue 18's "never harms a host", live: numabal's daemon (home-node unless DAEMON_POLICY
# says another; softdirty, numa_balancing=0) under three loads started with every page on
# node 0, each for LOAD_S seconds (default 40):
#   sharers   numa01-like --procs 3 --threads 2 --mb 96: threads writing their process's
#             whole buffer
#   singles   six numa02-like --threads 1 --mb 64
#   per-cpu   one numa02-like --mb 256 with a thread per CPU
# (the programs run 30 s longer and are stopped after the last look).
# Checked on each (the simulator's twin: crates/numabal-sim/tests/it/harm.rs):
# - no node runs more worker threads than it has CPUs while another node runs fewer, at
#   any poll (about one a second) from 12 s on;
# - no process has more than 1.5x its largest resident memory (VmRSS) moved by the daemon
#   (its decision log's `moved`, per process);
# - the daemon counts no page as failed (addresses without a page, pages the process cannot
#   own and busy pages are counted apart, and printed), and the C library's pages the
#   workers share stay on their nodes (numa_maps lines with mapmax, of every worker).
LOAD_S=${LOAD_S:-40}
POLICY=${DAEMON_POLICY:-home-node}
sysctl -qw kernel.numa_balancing=0

# Shared libc pages of each process in $PIDS (numa_maps lines several processes map).
shared_libc() {
  for p in $PIDS; do
    grep 'libc\.so' "/proc/$p/numa_maps" 2>/dev/null | grep 'mapmax=' | tr ' ' '\n' | grep '^N[0-9]*=' | tr '\n' ' '
    printf '/'
  done
}

# Worker threads per node now, "c0 c1 c2 c3": the CPU each last ran on (stat field 39,
# the 37th after the comm), read by one awk for every worker of $PIDS.
per_node() {
  files=""
  for p in $PIDS; do
    for t in "/proc/$p/task/"*; do [ "${t##*/}" != "$p" ] && files="$files $t/stat"; done
  done
  # shellcheck disable=SC2086
  cat $files 2>/dev/null | sed 's/.*) //' | awk -v map="$CPU_MAP" '
    BEGIN { n = split(map, m, " "); for (i = 1; i <= n; i++) { split(m[i], kv, ":"); node[kv[1]] = kv[2] } }
    { c[node[$37]]++ }
    END { print c[0] + 0, c[1] + 0, c[2] + 0, c[3] + 0 }'
}

# One load: $1 its name, $2 its processes, $3 their worker threads, $4 its command lines
# joined by ';'.
load() {
  name=$1 nprocs=$2 nworkers=$3 cmds=$4
  say "== $name under numabal daemon -p $POLICY"
  : > /tmp/w.out
  jobs=""
  IFS=';'
  for c in $cmds; do
    unset IFS
    # shellcheck disable=SC2086
    $c >> /tmp/w.out 2>&1 &
    jobs="$jobs $!"
    IFS=';'
  done
  unset IFS
  wait_lines /tmp/w.out "$nprocs" 'pid=' || return
  PIDS=$(pids_in /tmp/w.out)
  shared0=$(shared_libc)
  rm -f /tmp/dec.jsonl; : > /tmp/rss.max
  numabal daemon -p "$POLICY" --sensor softdirty --decision-log /tmp/dec.jsonl > /tmp/daemon.out 2>&1 &
  D=$!
  t0=$(now_s) bad=0 polls=0
  while [ "$(awk -v a="$t0" -v b="$(now_s)" -v s="$LOAD_S" 'BEGIN { print (b - a < s - 4) }')" = 1 ]; do
    sleep 1
    # Each process's largest resident size so far (VmRSS, MiB), one awk for all.
    # shellcheck disable=SC2086
    awk '/^VmRSS:/ { split(FILENAME, f, "/"); printf "%s %.2f\n", f[3], $2 / 1024 }' \
      $(for p in $PIDS; do echo "/proc/$p/status"; done) 2>/dev/null > /tmp/rss.now || true
    awk 'FILENAME == ARGV[1] { old[$1] = $2; next } { if ($2 > old[$1]) old[$1] = $2 }
      END { for (p in old) print p, old[p] }' /tmp/rss.max /tmp/rss.now > /tmp/rss.new 2>/dev/null || true
    mv /tmp/rss.new /tmp/rss.max
    [ "$(awk -v a="$t0" -v b="$(now_s)" 'BEGIN { print (b - a >= 12) }')" = 1 ] || continue
    counts=$(per_node)
    if [ "$(echo $counts | awk '{ print $1 + $2 + $3 + $4 }')" != "$nworkers" ]; then
      say "  t=$(elapsed "$t0")s worker threads per node: $counts, not all $nworkers seen"
      continue
    fi
    polls=$((polls + 1))
    if echo $counts | awk -v c="$CPUS_PER_NODE_VM" '{ o = 0; i = 0; for (k = 1; k <= 4; k++) { if ($k > c) o = 1; if ($k < c) i = 1 } exit !(o && i) }'; then
      bad=$((bad + 1))
      say "  t=$(elapsed "$t0")s worker threads per node: $counts (over its CPUs while another node idles)"
    fi
  done
  shared1=$(shared_libc)
  kill -TERM $D; wait $D || true
  # shellcheck disable=SC2086
  kill $PIDS 2>/dev/null || true
  for j in $jobs; do wait "$j" 2>/dev/null || true; done
  say "  decisions: $(grep -c '"decision"' /tmp/dec.jsonl); pages moved $(stop_field /tmp/dec.jsonl pages_moved)," \
    "failed $(stop_field /tmp/dec.jsonl pages_failed), absent $(stop_field /tmp/dec.jsonl pages_absent)," \
    "not owned (left alone) $(stop_field /tmp/dec.jsonl pages_not_owned), busy $(stop_field /tmp/dec.jsonl pages_busy)"
  # The decisions themselves (a handful per load): what moved each process, and why.
  grep '"decision"' /tmp/dec.jsonl | sed 's/^/    /' | head -12 || true
  [ "$polls" -gt 0 ] || fail "$name: no poll saw every worker"
  [ "$bad" = 0 ] && pass "$name: no node over its CPUs while another idled ($polls polls)" \
    || fail "$name: a node over its CPUs while another idled at $bad of $polls polls"
  worst=0
  for p in $PIDS; do
    moved=$(sed -n 's/.*"moved":\([0-9]*\).*"pid":\([0-9]*\).*/\2 \1/p' /tmp/dec.jsonl | awk -v p="$p" '$1 == p { s += $2 } END { print s + 0 }')
    mb=$(awk -v p="$p" '$1 == p { print $2 }' /tmp/rss.max); mb=${mb:-0}
    r=$(awk -v m="$moved" -v mb="$mb" 'BEGIN { printf "%.2f", (mb > 0 ? m * 4096 / (mb * 1048576) : 0) }')
    say "  pid $p: moved $moved pages, largest resident $mb MiB: ${r}x"
    awk -v a="$r" -v b="$worst" 'BEGIN { exit !(a > b) }' && worst=$r
  done
  awk -v r="$worst" 'BEGIN { exit !(r <= 1.5) }' && pass "$name: at most ${worst}x a process's resident memory moved" \
    || fail "$name: ${worst}x a process's resident memory moved (at most 1.5x)"
  failed=$(stop_field /tmp/dec.jsonl pages_failed)
  if [ "${failed:-x}" = 0 ] && ! grep -q page_errors /tmp/dec.jsonl; then
    pass "$name: no page counted as failed"
  else
    fail "$name: pages counted as failed: ${failed:-?}"
    grep page_errors /tmp/dec.jsonl | head -5 || true
  fi
  [ "$shared0" = "$shared1" ] && pass "$name: the C library's shared pages stayed where they were" \
    || fail "$name: shared pages moved: before $shared0 after $shared1"
}

CPUS_PER_NODE_VM=${NUMABAL_VM_CPUS_PER_NODE:-2}
load sharers 3 6 "numa01-like --procs 3 --threads 2 --mb 96 --seconds $((LOAD_S + 30)) --node 0"
singles=""
for i in 1 2 3 4 5 6; do singles="$singles;numa02-like --node 0 --threads 1 --mb 64 --seconds $((LOAD_S + 30))"; done
load singles 6 6 "${singles#;}"
load per-cpu 1 8 "numa02-like --node 0 --mb 256 --seconds $((LOAD_S + 30))"
exit $FAILED
