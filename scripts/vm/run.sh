#!/usr/bin/env bash
# Boots Debian's kernel in QEMU (TCG) with emulated NUMA nodes and runs one scenario in it
# (docs/vm-tests.md). Prints the scenario's output (between the guest's markers) and exits
# with the scenario's exit status; 124 on timeout, 125 when the guest stopped without
# reporting one (kernel panic, /init failure, QEMU error).
#
# Usage: scripts/vm/run.sh --scenario FILE [--nodes 2|4] [--timeout SECONDS] [--log FILE]
#                          [--mem-mb N] [--cpus-per-node N] [--dist flat|ring]
#                          [--env KEY=VALUE]... [--append "KERNEL ARGS"] [--kernel K]
#                          [--tcg multi|single] [--cpu MODEL] [--cxl-mb N]
#   --nodes          emulated nodes (default 2)
#   --cpus-per-node  vCPUs per node (default 2; 2 nodes = 4 vCPUs, 4 nodes = 8 vCPUs)
#   --mem-mb         guest memory in MiB, split evenly over the nodes (default 1024 per
#                    node: 2048 with 2 nodes, 4096 with 4)
#   --dist           4 nodes: `flat` (every remote distance 20, default) or `ring`
#                    (0-1-2-3-0 at 20, opposite nodes 0-2 and 1-3 at 30); 2 nodes: 10/20
#   --timeout        wall-clock seconds before QEMU is killed (default 600)
#   --log FILE       write the scenario's output to FILE instead of stdout
#   --env KEY=VALUE  environment variable for the scenario (through the kernel command
#                    line: KEY is [A-Za-z_][A-Za-z0-9_]*, VALUE has no spaces)
#   --append ARGS    more kernel command-line arguments
#   --kernel K       the guest kernel: 6.1 or bookworm (default), 6.12 or trixie, 7.2 or sid
#                    (scripts/vm/setup.sh --kernel K fetches it first)
#   --tcg multi|single  TCG with a host thread per vCPU (the default) or one thread for all
#                    (slower: perf bench under the daemon does not converge in its 40 s).
#                    Under multi, a static key flipped while other vCPUs run its code (live
#                    text patching) can meet an int3 that TCG still executes after the patch
#                    is done, and the guest panics: 6.12 and 7.2 patch where 6.1 did not.
#                    The scenarios hold perf's keys on from the start (scenarios/lib.sh) and
#                    set kernel.numa_balancing before any load; a boot that panics so before
#                    the scenario begins, or that has not begun it after 90 s
#                    (NUMABAL_VM_BOOT_LIMIT), is booted again (at most twice, said)
#   --cpu MODEL      QEMU's CPU model (default `max,-erms,-fsrm`, or NUMABAL_VM_CPU):
#                    `max` without the fast string moves. TCG emulates `rep movsb` one
#                    byte at a time, two software-TLB lookups a byte, and 5x slower again
#                    when source and destination pages lie a multiple of 4 MiB apart (they
#                    evict each other from QEMU's 1024-entry TLB). With ERMS, 7.2 copies
#                    every migrating page so (copy_mc_enhanced_fast_string): a 160 MiB
#                    move took 0.9-1.3 s, or 4.8-6.6 s when aliased (8 of 12 moves); 0.2-0.6
#                    s without ERMS and FSRM (8-byte moves). docs/vm-tests.md, "How fast
#                    memory moves". Real CPUs pay neither cost.
#   --cxl-mb N       a tiered guest: one more node (id = --nodes, so 2 or 4) of N MiB
#                    (at least 256) without CPUs, slower than DRAM in ACPI HMAT and SLIT,
#                    like CXL memory attached to node 0's socket (`-machine pc,hmat=on`;
#                    docs/vm-tests.md, "A tiered guest"). Latency 10 ns per SLIT unit,
#                    bandwidth 200 GiB/s / SLIT: DRAM local 10 = 100 ns, 20 GiB/s;
#                    remote 20 (30) = 200 (300) ns, 10 (6.7) GiB/s; the slow node 25 from
#                    node 0 = 250 ns, 8 GiB/s, from node n 15 more than node 0 is.
#                    The kernel puts it in a lower memory tier only since 6.10 (a CPU-less
#                    node's tier from HMAT at boot): --kernel 6.1 is refused, no --kernel
#                    means 7.2. --mem-mb stays the CPU nodes' memory; the guest also gets
#                    NUMABAL_VM_CXL_NODE=<id>; logs are NAME-<N>n+cxl-SUITE.*
# 6.12 and 7.2 also boot with `mitigations=off`: under `-cpu max` they turn on speculation
# mitigations whose emulation makes system calls and page migrations several times slower
# than 6.1's (the daemon's passes took seconds, too slow for perf bench's 40 s).
# The whole serial console goes to target/vm/logs/NAME-<N>n.console.log, QEMU's own
# messages to NAME-<N>n.qemu-stderr, its command line to NAME-<N>n.qemu-cmdline (with
# another kernel than the default, NAME-<N>n-SUITE.*). The
# guest always gets NUMABAL_VM_NODES and NUMABAL_VM_CPUS_PER_NODE in its environment.
# Needs scripts/vm/setup.sh once and the release binaries (scripts/release-build.sh); the
# initramfs is (re)built as needed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

die() { printf 'vm/run: error: %s\n' "$*" >&2; exit 2; }
# shellcheck source=kernels.sh
. "$here/kernels.sh"
say() { printf 'vm/run: %s\n' "$*" >&2; }
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }

nodes=2 cpn=2 mem="" dist=flat timeout=600 log="" scenario="" append="" kernel_arg=6.1 tcg="" cpu_model=${NUMABAL_VM_CPU:-max,-erms,-fsrm}
cxl="" kernel_given=""
envs=()
while [ $# -gt 0 ]; do
  case $1 in
    --nodes|--cpus-per-node|--mem-mb|--dist|--timeout|--log|--scenario|--env|--append|--kernel|--tcg|--cpu|--cxl-mb)
      [ $# -ge 2 ] || die "$1 needs a value" ;;
  esac
  case $1 in
    --nodes) nodes=${2:-}; shift 2 ;;
    --cpus-per-node) cpn=${2:-}; shift 2 ;;
    --mem-mb) mem=${2:-}; shift 2 ;;
    --dist) dist=${2:-}; shift 2 ;;
    --timeout) timeout=${2:-}; shift 2 ;;
    --log) log=${2:-}; shift 2 ;;
    --scenario) scenario=${2:-}; shift 2 ;;
    --env) envs+=("${2:-}"); shift 2 ;;
    --append) append=${2:-}; shift 2 ;;
    --kernel) kernel_arg=${2:-} kernel_given=1; shift 2 ;;
    --tcg) tcg=${2:-}; shift 2 ;;
    --cpu) cpu_model=${2:-}; shift 2 ;;
    --cxl-mb) cxl=${2:-}; shift 2 ;;
    -h|--help) usage ;;
    *) printf 'vm/run: error: unknown argument %s\n' "$1" >&2; usage ;;
  esac
done
[ -n "$scenario" ] || die "--scenario FILE is required"
[ -f "$scenario" ] || die "no scenario file $scenario"
[[ $nodes =~ ^[24]$ ]] || die "--nodes must be 2 or 4, got '$nodes'"
[[ $cpn =~ ^[1-9][0-9]*$ ]] && [ "$cpn" -le 16 ] || die "--cpus-per-node must be 1..16, got '$cpn'"
mem=${mem:-$((nodes * 1024))}
[[ $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout must be a whole number of seconds, got '$timeout'"
[[ $mem =~ ^[1-9][0-9]*$ ]] || die "--mem-mb must be a whole number, got '$mem'"
[ $((mem / nodes)) -ge 256 ] || die "--mem-mb $mem leaves less than 256 MiB per node"
[ $((mem % nodes)) -eq 0 ] || die "--mem-mb $mem does not split evenly over $nodes nodes"
[[ $cpu_model =~ ^[a-zA-Z0-9][a-zA-Z0-9_.,=+-]*$ ]] || die "--cpu must be a QEMU CPU model with its flags (like max,-erms), got '$cpu_model'"
case $dist in flat|ring) ;; *) die "--dist must be flat or ring, got '$dist'" ;; esac
for e in ${envs[@]+"${envs[@]}"}; do
  [[ $e =~ ^[A-Za-z_][A-Za-z0-9_]*=[^[:space:]]*$ ]] || die "--env '$e' is not KEY=VALUE without spaces"
done
if [ -n "$cxl" ]; then
  [[ $cxl =~ ^[1-9][0-9]*$ ]] && [ "$cxl" -ge 256 ] || die "--cxl-mb must be a whole number of MiB, at least 256, got '$cxl'"
  [ -n "$kernel_given" ] || kernel_arg=7.2
fi

suite=$(kernel_suite "$kernel_arg")
[ -n "$suite" ] || die "--kernel must be one of $KERNEL_NAMES, got '$kernel_arg'"
# 6.1 builds memory tiers but puts every node present at boot in the DRAM tier; a
# CPU-less node's tier from its HMAT figures came with 6.10 (HMAT-based abstract distance
# in 6.7, for dax/kmem memory only).
[ -z "$cxl" ] || [ "$suite" != bookworm ] ||
  die "--cxl-mb needs a kernel that tiers a CPU-less node by HMAT (6.10 or later): --kernel 7.2 (or 6.12), not $kernel_arg"
tag=$(kernel_tag "$suite")
[ -n "$tcg" ] || tcg=multi
case $tcg in multi|single) ;; *) die "--tcg must be multi or single, got '$tcg'" ;; esac

# The ELF kernel boots through its PVH entry (faster); the bzImage is the fallback.
kdir=$repo/target/vm/cache/kernel-$suite
kernel=$kdir/vmlinux
[ -f "$kernel" ] || kernel=$kdir/vmlinuz
[ -f "$kernel" ] || die "no $suite kernel in target/vm/cache/: run scripts/vm/setup.sh --kernel $kernel_arg"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 not found: run scripts/vm/setup.sh"

name=$(basename "$scenario" .sh)
initrd=$("$here/build-initramfs.sh" "$scenario" "$name" | tail -1)

# --- the machine -------------------------------------------------------------------------
per=$((mem / nodes))
vcpus=$((nodes * cpn))
numa=()
for ((n = 0; n < nodes; n++)); do
  first=$((n * cpn)) last=$((n * cpn + cpn - 1))
  cpus=$first; [ "$last" -gt "$first" ] && cpus=$first-$last
  numa+=(-object "memory-backend-ram,id=m$n,size=${per}M"
         -numa "node,nodeid=$n,cpus=$cpus,memdev=m$n")
done
for ((a = 0; a < nodes; a++)); do
  for ((b = a + 1; b < nodes; b++)); do
    d=20
    if [ "$dist" = ring ] && [ "$nodes" = 4 ] && [ $((b - a)) = 2 ]; then d=30; fi
    numa+=(-numa "dist,src=$a,dst=$b,val=$d")
  done
done
machine=pc
if [ -n "$cxl" ]; then
  # The slow node: CPU-less, its memory "attached" to node 0 (HMAT's initiator), 15 SLIT
  # units beyond DRAM. HMAT from the SLIT: 10 ns a unit, 200 GiB/s / SLIT (in MiB/s).
  machine=pc,hmat=on
  slow=$nodes
  slit() {  # the distance between nodes $1 and $2 (either may be the slow node)
    local a=$1 b=$2
    if [ "$a" = "$b" ]; then echo 10; return; fi
    [ "$a" = "$slow" ] && { a=$b b=$slow; }
    if [ "$b" = "$slow" ]; then
      [ "$a" = 0 ] && { echo 25; return; }
      echo $(( $(slit 0 "$a") + 15 )); return
    fi
    if [ "$dist" = ring ] && [ "$nodes" = 4 ] && [ $(( (b - a + 4) % 4 )) = 2 ]; then echo 30; else echo 20; fi
  }
  numa+=(-object "memory-backend-ram,id=m$slow,size=${cxl}M"
         -numa "node,nodeid=$slow,memdev=m$slow,initiator=0")
  for ((a = 0; a < nodes; a++)); do numa+=(-numa "dist,src=$a,dst=$slow,val=$(slit "$a" "$slow")"); done
  for ((i = 0; i < nodes; i++)); do
    for ((t = 0; t <= slow; t++)); do
      d=$(slit "$i" "$t")
      numa+=(-numa "hmat-lb,initiator=$i,target=$t,hierarchy=memory,data-type=access-latency,latency=$((d * 10))"
             -numa "hmat-lb,initiator=$i,target=$t,hierarchy=memory,data-type=access-bandwidth,bandwidth=$((204800 / d))M")
    done
  done
fi

cmdline="console=ttyS0 rdinit=/init quiet loglevel=3 panic=-1 NUMABAL_VM_NODES=$nodes NUMABAL_VM_CPUS_PER_NODE=$cpn"
[ "$suite" = bookworm ] || cmdline+=" mitigations=off"
for e in ${envs[@]+"${envs[@]}"}; do cmdline+=" $e"; done
[ -n "$cxl" ] && cmdline+=" NUMABAL_VM_CXL_NODE=$nodes"
[ -n "$append" ] && cmdline+=" $append"

qemu=(qemu-system-x86_64 -nodefaults -no-user-config -machine "$machine"
      -accel "tcg,thread=$tcg" -cpu "$cpu_model"
      -smp "$vcpus,sockets=$nodes,cores=$cpn,threads=1" -m "$((mem + ${cxl:-0}))M"
      "${numa[@]}"
      -kernel "$kernel" -initrd "$initrd" -append "$cmdline"
      -nographic -serial stdio -no-reboot)

logs=$repo/target/vm/logs
mkdir -p "$logs"
base=$logs/$name-${nodes}n${cxl:++cxl}$tag
console=$base.console.log
say "booting $nodes nodes x $cpn vCPUs, ${per} MiB per node${cxl:+, CPU-less slow node $nodes of $cxl MiB (HMAT)}, dist $dist, kernel $(cat "$kdir/release" 2>/dev/null || echo "$suite"), TCG $tcg, CPU $cpu_model, timeout ${timeout}s: $(basename "$scenario")"
say "console: $console"
printf '%q ' "${qemu[@]}" > "$base.qemu-cmdline"
echo >> "$base.qemu-cmdline"

start=$(date +%s.%N)
qemu_err=$base.qemu-stderr
# A boot that fails before the scenario begins is booted again, at most twice, and said:
# - a panic on a stale int3 (a static key the kernel flips while it brings its CPUs up,
#   under multi-threaded TCG: 7.2 does so in about one boot in four);
# - a boot that has not reached the scenario after $boot_limit s (a guest boots in 4-8 s;
#   once on CI a 6.1 guest's kworker spun in a soft lockup from boot until the timeout).
# A panic or a hang after the scenario began is the scenario's failure.
boot_limit=${NUMABAL_VM_BOOT_LIMIT:-90}
for try in 1 2 3; do
  timeout --kill-after=10 "$timeout" "${qemu[@]}" < /dev/null > "$console" 2> "$qemu_err" &
  qpid=$!
  t0=$SECONDS hung=""
  while kill -0 "$qpid" 2>/dev/null; do
    grep -q 'numabal-vm: scenario begin' "$console" && break
    if [ $((SECONDS - t0)) -ge "$boot_limit" ]; then
      hung="had not reached the scenario after ${boot_limit}s"
      grep -q 'soft lockup' "$console" && hung+=" (soft lockup)"
      kill -TERM "$qpid" 2>/dev/null || true
      break
    fi
    sleep 1
  done
  set +e
  wait "$qpid"
  qrc=$?
  set -e
  grep -q 'numabal-vm: scenario begin' "$console" && break
  if [ -z "$hung" ]; then
    grep -q 'Oops: int3' "$console" || break
    hung="panicked on an int3 before the scenario began"
  fi
  [ $try = 3 ] && break
  cp "$console" "$base.boot-fail-$try.console.log"
  say "boot $try $hung ($base.boot-fail-$try.console.log): booting again"
done
wall=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')

# --- the scenario's result -----------------------------------------------------------------
# The serial line ends lines with CR LF; a lone CR (a program redrawing a status line, as
# perf bench does) becomes a line break. Terminal escapes go (SeaBIOS and the kernel clear
# the screen).
clean=$(sed -e 's/\r$//' "$console" | tr '\r' '\n' | sed -E 's/\x1b(\[[0-9;?]*[A-Za-z]|c)//g')
output=$(printf '%s\n' "$clean" | awk '
  /^@@@ numabal-vm: scenario end: exit status [0-9]+ @@@$/ { on = 0 }
  on { print }
  /^@@@ numabal-vm: scenario begin @@@$/ { on = 1 }')
status=$(printf '%s\n' "$clean" | sed -n 's/^@@@ numabal-vm: scenario end: exit status \([0-9]*\) @@@$/\1/p' | tail -1)
booted=$(printf '%s\n' "$clean" | sed -n 's/.*numabal-vm: booted, uptime \([0-9.]*\) s.*/\1/p' | head -1)
ended=$(printf '%s\n' "$clean" | sed -n 's/^numabal-vm: powering off, uptime \([0-9.]*\) s$/\1/p' | head -1)

if [ -n "$log" ]; then
  printf '%s\n' "$output" > "$log"
elif [ -n "$output" ]; then
  printf '%s\n' "$output"
fi

if [ -z "$status" ]; then
  if [ -n "$hung" ]; then
    say "every boot failed; the last $hung (wall ${wall}s). Console tail:"
    rc=125
  elif [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
    say "TIMEOUT after ${timeout}s (wall ${wall}s): QEMU killed; no end marker. Console tail:"
    rc=124
  else
    say "the guest stopped without an end marker (QEMU exit $qrc, wall ${wall}s). Console tail:"
    rc=125
  fi
  printf '%s\n' "$clean" | tail -n 30 | sed 's/^/  | /' >&2
  if [ -s "$qemu_err" ]; then
    say "QEMU's stderr:"
    sed 's/^/  | /' "$qemu_err" >&2
  fi
  exit $rc
fi
say "scenario exit status $status; guest boot ${booted:-?}s, scenario $(awk -v a="${booted:-0}" -v b="${ended:-0}" 'BEGIN{printf "%.1f", b-a}')s (guest uptime); wall ${wall}s"
exit "$status"
