#!/usr/bin/env bash
# Builds the initramfs of one QEMU guest scenario (docs/vm-tests.md):
#   target/vm/initrd-NAME.gz   (gzipped newc cpio)
# with static busybox and its applet links, the project's release binaries (numabal,
# numa01-like, numa02-like, numa-costs, twin-sample, placement, spawner, page-flags; debug
# info stripped when `strip` exists), numactl, numastat,
# migratepages, perf (the real binary, also when /usr/bin/perf is Debian's wrapper script),
# every shared library `ldd` names for them, the scenario as /scenario.sh, and an /init
# that mounts proc, sysfs, devtmpfs, /tmp, cgroup2, runs the scenario between markers and
# powers off:
#   @@@ numabal-vm: scenario begin @@@
#   ...the scenario's output (stdout and stderr)...
#   @@@ numabal-vm: scenario end: exit status N @@@
#
# Usage: scripts/vm/build-initramfs.sh SCENARIO [NAME]
#   NAME defaults to SCENARIO's file name without .sh. The image is two gzipped cpio
#   archives one after the other, which the kernel unpacks in turn: everything but the
#   scenario, built once and kept as target/vm/initrd-base-KEY.gz until an input changes
#   (a fingerprint of every input file is kept beside it), then /scenario.sh alone, so a
#   new scenario costs a copy, not a build (3.3 s on 2 cores).
# Environment: VM_EXTRA_BINS="prog /path/prog2" adds more host programs (with their
#   libraries) to /usr/bin; FORCE=1 rebuilds regardless.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

die() { printf 'vm/build-initramfs: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'vm/build-initramfs: %s\n' "$*" >&2; }

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
case $1 in -h|--help) usage ;; esac
scenario=$1
[ -f "$scenario" ] || die "no scenario file $scenario"
scenario=$(cd "$(dirname "$scenario")" && pwd)/$(basename "$scenario")
name=${2:-$(basename "$scenario" .sh)}
[[ $name =~ ^[A-Za-z0-9._-]+$ ]] || die "bad name '$name' (letters, digits, . _ - only)"

out_dir=$repo/target/vm
out=$out_dir/initrd-$name.gz
mkdir -p "$out_dir"
# One base per set of extra programs (a few at most).
key=$(echo "extra=${VM_EXTRA_BINS:-}" | sha256sum | cut -c1-12)
base=$out_dir/initrd-base-$key.gz

# --- what goes in ----------------------------------------------------------------------
project_bins=()
for b in numabal numa01-like numa02-like numa-costs twin-sample placement spawner page-flags; do
  p=$repo/target/release/$b
  [ -x "$p" ] || die "$p is missing: scripts/release-build.sh"
  project_bins+=("$p")
done

busybox=$(command -v busybox || true)
[ -n "$busybox" ] || die "busybox not found: run scripts/vm/setup.sh"
if ldd "$busybox" >/dev/null 2>&1; then
  die "$busybox is dynamically linked: install busybox-static (scripts/vm/setup.sh)"
fi

# Debian's /usr/bin/perf is either the binary or a wrapper script that execs
# perf_<major.minor> for the running kernel; the guest needs the binary itself.
real_perf() {
  local p
  p=$(command -v perf) || die "perf not found: run scripts/vm/setup.sh"
  if [ "$(head -c 2 "$p")" != "#!" ]; then echo "$p"; return; fi
  local kver want cand
  kver=$(cat "$repo/target/vm/cache/kernel/release" 2>/dev/null || uname -r)
  want=/usr/bin/perf_$(echo "$kver" | cut -d. -f1,2)
  if [ -x "$want" ]; then echo "$want"; return; fi
  cand=$(ls /usr/bin/perf_* 2>/dev/null | sort -V | tail -1)
  [ -n "$cand" ] || die "$p is a wrapper script and no /usr/bin/perf_* binary exists"
  echo "$cand"
}
perf_bin=$(real_perf)

tool_bins=()
for t in numactl numastat migratepages; do
  p=$(command -v "$t") || die "$t not found: run scripts/vm/setup.sh"
  tool_bins+=("$p")
done
for t in ${VM_EXTRA_BINS:-}; do
  p=$(command -v "$t") || die "VM_EXTRA_BINS: $t not found"
  tool_bins+=("$p")
done

# Shared libraries (resolved paths) and the program interpreter of all dynamic binaries.
libs() {
  ldd "$@" 2>/dev/null | awk '
    $2 == "=>" && $3 ~ /^\// { print $3 }
    $1 ~ /^\// && $1 !~ /:$/ { print $1 }' | sort -u
}
mapfile -t lib_files < <(libs "${project_bins[@]}" "$perf_bin" "${tool_bins[@]}")

# The image: the base, then the scenario's own archive.
with_scenario() {
  local part tmp_out
  part=$(mktemp -d "$out_dir/scenario-$name.XXXXXX")
  cp "$scenario" "$part/scenario.sh"
  chmod 755 "$part/scenario.sh"
  tmp_out=$out.tmp.$$
  { cat "$base"; ( cd "$part" && echo scenario.sh | cpio -o -H newc --owner=0:0 --quiet ) | gzip -6; } > "$tmp_out"
  rm -rf "$part"
  mv "$tmp_out" "$out"
  echo "$out"
}

# --- the base: up to date? ---------------------------------------------------------------
fingerprint=$( {
  sha256sum < "$0"
  stat -L -c '%n %s %Y' "$busybox" "${project_bins[@]}" "$perf_bin" "${tool_bins[@]}" "${lib_files[@]}"
  echo "extra=${VM_EXTRA_BINS:-}"
} | sha256sum | cut -d' ' -f1)
stamp=${base%.gz}.inputs
if [ "${FORCE:-0}" != 1 ] && [ -f "$base" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$fingerprint" ]; then
  with_scenario
  exit 0
fi

# --- the base's tree ---------------------------------------------------------------------
root=$(mktemp -d "$out_dir/root-base-$key.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib64,proc,sys,dev,tmp,run,root,etc,var/tmp}

cp "$busybox" "$root/bin/busybox"
while read -r applet; do
  [ -e "$root/$applet" ] || [ -L "$root/$applet" ] || {
    mkdir -p "$root/$(dirname "$applet")"
    ln -s /bin/busybox "$root/$applet"
  }
done < <("$busybox" --list-full)

for p in "${project_bins[@]}"; do
  dst=$root/usr/bin/$(basename "$p")
  rm -f "$dst"
  if command -v strip >/dev/null 2>&1; then
    strip --strip-debug -o "$dst" "$p"
  else
    cp "$p" "$dst"
  fi
done
for p in "${tool_bins[@]}"; do
  rm -f "$root/usr/bin/$(basename "$p")"
  cp -L "$p" "$root/usr/bin/$(basename "$p")"
done
rm -f "$root/usr/bin/perf"
cp -L "$perf_bin" "$root/usr/bin/perf"

for l in "${lib_files[@]}"; do
  mkdir -p "$root/$(dirname "$l")"
  cp -L "$l" "$root/$l"
done

printf 'root:x:0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"
printf 'root:x:0:\n' > "$root/etc/group"
printf 'numabal-vm\n' > "$root/etc/hostname"

cat > "$root/init" <<'EOF'
#!/bin/sh
# /init of a numabal QEMU guest (scripts/vm/build-initramfs.sh): mount, run /scenario.sh
# between markers, power off. Kernel command-line words KEY=VALUE the kernel does not
# know arrive here as environment variables (run.sh --env).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root TERM=dumb
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mount -t cgroup2 cgroup2 /sys/fs/cgroup
# Kernel messages (RCU stall warnings are common under TCG) stay in dmesg, out of the
# scenario's output; a scenario that wants them runs `dmesg`.
echo 1 > /proc/sys/kernel/printk
hostname numabal-vm
read -r up _ < /proc/uptime
echo   # the firmware's and kernel's last console line may lack its newline
echo "numabal-vm: booted, uptime ${up} s, $(nproc) CPUs, nodes $(cat /sys/devices/system/node/online), numa_balancing=$(cat /proc/sys/kernel/numa_balancing)"
cd /tmp
echo "@@@ numabal-vm: scenario begin @@@"
sh /scenario.sh < /dev/null 2>&1
rc=$?
echo "@@@ numabal-vm: scenario end: exit status $rc @@@"
read -r up _ < /proc/uptime
echo "numabal-vm: powering off, uptime ${up} s"
sync
poweroff -f
EOF
chmod 755 "$root/init"

tmp_base=$base.tmp.$$
( cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --owner=0:0 --quiet ) | gzip -6 > "$tmp_base"
mv "$tmp_base" "$base"
echo "$fingerprint" > "$stamp"
say "built $base ($(du -h "$base" | cut -f1); $(du -sh "$root" | cut -f1) unpacked)"
with_scenario
