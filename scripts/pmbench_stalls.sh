#!/usr/bin/env bash
# The async-scan RFC on the simulator (issue 3): pmbench's latency outliers from NUMA scanning.
#  1. one simulated hour of pmbench on xeon-2n104: stalls over 1 ms with the scan in the
#     task (published: more than 20000) and with scan_async (idle CPUs: at least 95% fewer);
#  2. the trade-off of the async-scan RFC's alternative (scan_delay_ms and scan_size_mb halved, then
#     quartered): longest stall versus scan CPU, one hour each;
#  3. what async costs when CPUs are scarce (pmbench_cpuset: idle CPUs only outside the
#     cpuset; pmbench_busy: plus a 128-thread batch job, no idle CPU), SECONDS each.
# Usage: scripts/pmbench_stalls.sh [--short] [--seed N] [--part 1|2|3]
#   --short: 600 s instead of 3600 (and 300 s for part 3); --part: only that part.
set -euo pipefail
cd "$(dirname "$0")/.."
HOUR=3600 SECONDS_BUSY=900 SEED=1 PART=all
while [ $# -gt 0 ]; do
  case "$1" in
    --short) HOUR=600; SECONDS_BUSY=300 ;;
    --seed) SEED="$2"; shift ;;
    --part) PART="$2"; shift ;;
    *) echo "usage: $0 [--short] [--seed N] [--part 1|2|3]" >&2; exit 2 ;;
  esac
  shift
done
scripts/release-build.sh -q
BIN=target/release/numabal
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pol() { # name, then TOML lines
  local f="$tmp/$1.toml"; shift
  printf 'kind = "autonuma"\n' >"$f"
  for l in "$@"; do printf '%s\n' "$l" >>"$f"; done
}
pol sync
pol async "scan_async = true"
pol backcharge "scan_async = true" "scan_async_backcharge = true"
pol half "scan_delay_ms = 500" "scan_size_mb = 128"
pol quarter "scan_delay_ms = 250" "scan_size_mb = 64"
# part name workload policy seconds
runs="1 hour_sync pmbench sync $HOUR
1 hour_async pmbench async $HOUR
2 hour_half pmbench half $HOUR
2 hour_quarter pmbench quarter $HOUR
3 cpuset_sync pmbench_cpuset sync $SECONDS_BUSY
3 cpuset_async pmbench_cpuset async $SECONDS_BUSY
3 busy_none pmbench_busy none $SECONDS_BUSY
3 busy_sync pmbench_busy sync $SECONDS_BUSY
3 busy_async pmbench_busy async $SECONDS_BUSY
3 busy_backcharge pmbench_busy backcharge $SECONDS_BUSY"
jobs=$(nproc)
while read -r part name w p secs; do
  # Part 2 compares with the default setting of part 1.
  case "$PART" in all) ;; 2) [ "$part" = 2 ] || [ "$name" = hour_sync ] || continue ;; *) [ "$part" = "$PART" ] || continue ;; esac
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  pf="$tmp/$p.toml"; [ "$p" = none ] && pf=none
  echo "running $name ($w, $p, $secs s simulated)" >&2
  "$BIN" sim -m xeon-2n104 -w "$w" -p "$pf" --seed "$SEED" --set "sim.max_time_s=$secs" \
    --json "$tmp/$name.json" >/dev/null &
done <<<"$runs"
wait
python3 - "$tmp" "$HOUR" "$SECONDS_BUSY" "$PART" <<'PY'
import json, sys
d, hour, busy, part = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
R = {}
import glob, os
for f in glob.glob(f"{d}/*.json"):
    R[os.path.basename(f)[:-5]] = json.load(open(f))
def m(n): return R[n]["metrics"]
def st(n): return (R[n].get("numa_balancing") or {}).get("stats", {})
def part1():
    print(f"\n1. pmbench, {hour} simulated s on xeon-2n104 (published: > 20000 outliers > 1 ms in 3600 s)")
    print(f"{'mode':<12} {'stalls>1ms':>11} {'longest ms':>11} {'scans':>7} {'scan CPU s':>11} {'hidden s':>9}")
    for n, label in [("hour_sync", "sync"), ("hour_async", "scan_async")]:
        x = m(n)
        print(f"{label:<12} {x['stall_events_over_1ms']:>11} {x['stall_max_ms']:>11.3f} {st(n).get('scans',0):>7} {x['scan_cpu_s']:>11.2f} {x['scan_cpu_hidden_s']:>9.2f}")
    s, a = m("hour_sync")["stall_events_over_1ms"], m("hour_async")["stall_events_over_1ms"]
    if s:
        print(f"scan_async: {100.0 * (s - a) / s:.1f}% fewer stalls over 1 ms (target: at least 95%)")

def part2():
    print(f"\n2. Trade-off (async-scan RFC, Peter Zijlstra): scan delay and size halved, quartered; {hour} s")
    print(f"{'setting':<24} {'longest ms':>11} {'stalls>1ms':>11} {'scan CPU s':>11} {'pte updates':>12}")
    for n, label in [("hour_sync", "1000 ms / 256 MB"), ("hour_half", "500 ms / 128 MB"), ("hour_quarter", "250 ms / 64 MB")]:
        x = m(n)
        print(f"{label:<24} {x['stall_max_ms']:>11.3f} {x['stall_events_over_1ms']:>11} {x['scan_cpu_s']:>11.2f} {x['numa_pte_updates']:>12}")

def part3():
    print(f"\n3. Async when CPUs are scarce, {busy} s each")
    print(f"{'scenario':<34} {'stalls>1ms':>10} {'hidden s':>9} {'worker':>7} {'idle CPU':>9} {'outside':>8} {'batch s':>8} {'pmbench GiB/s':>14}")
    for n, label in [("cpuset_sync", "pmbench_cpuset, sync"), ("cpuset_async", "pmbench_cpuset, scan_async"),
                     ("busy_none", "pmbench_busy, no balancing"), ("busy_sync", "pmbench_busy, sync"),
                     ("busy_async", "pmbench_busy, scan_async"), ("busy_backcharge", "pmbench_busy, async+backcharge")]:
        x, s_ = m(n), st(n)
        procs = {p["name"]: p for p in R[n]["processes"]}
        b = procs.get("batch")
        # A batch job still running at the end has no runtime to show (its runtime_s is
        # the window less its start jitter, under a millisecond).
        bs = f"{b['runtime_s']:8.2f}" if b and b["runtime_s"] < float(busy) - 0.01 else f"{'-':>8}"
        print(f"{label:<34} {x['stall_events_over_1ms']:>10} {x['scan_cpu_hidden_s']:>9.2f} {s_.get('async_scans',0):>7} {s_.get('async_scans_idle_cpu',0):>9} {s_.get('async_scans_outside_cpuset',0):>8} {bs} {x['access_gib_per_s']:>14.2f}")
    print("(batch s: the batch job's runtime for its fixed CPU work; worker: scans run by a worker;")
    print(" idle CPU: of them, on an idle CPU; outside: on a CPU outside the task's cpuset)")

for k, f in [("1", part1), ("2", part2), ("3", part3)]:
    if part in ("all", k):
        f()
PY
