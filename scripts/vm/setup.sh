#!/usr/bin/env bash
# Prepares the QEMU NUMA test guests (docs/vm-tests.md). Idempotent.
#
#  * installs with apt-get, only what is missing: qemu-system-x86, busybox-static, cpio,
#    linux-perf, numactl, xz-utils (`apt-get update` only when something has to be installed);
#  * downloads Debian's current kernel package (the linux-image-*-amd64 that
#    linux-image-amd64 depends on) into target/vm/cache/ with `apt-get download` and
#    extracts its vmlinuz and config with `dpkg-deb -x`. The kernel is never installed on
#    this host. Every driver the guest needs (8250 serial console, ACPI SRAT/SLIT NUMA,
#    devtmpfs, tmpfs, cgroup2, NUMA balancing, page migration) is built into Debian's
#    kernel; the script checks the config for them, so the guest needs no modules;
#  * also decompresses the kernel's ELF image (vmlinux) out of vmlinuz: with CONFIG_PVH QEMU
#    boots it directly (PVH entry), which skips the firmware's bzImage loader and the
#    in-guest XZ decompression, about 4 s per boot under TCG. run.sh falls back to
#    vmlinuz when there is no vmlinux.
#
# Usage: scripts/vm/setup.sh        (prints what it did; the kernel's path is in
#                                    target/vm/cache/vmlinuz, a symlink)
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=target/vm/cache
mkdir -p "$CACHE"

say() { printf 'vm/setup: %s\n' "$*"; }
die() { printf 'vm/setup: error: %s\n' "$*" >&2; exit 1; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "not root and no sudo: cannot install packages"
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# --- host packages -------------------------------------------------------------------
pkgs=(qemu-system-x86 busybox-static cpio linux-perf numactl xz-utils)
missing=()
for p in "${pkgs[@]}"; do
  if [ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)" != installed ]; then
    missing+=("$p")
  fi
done
updated=0
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  $SUDO apt-get update -qq
  updated=1
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  say "packages present: ${pkgs[*]}"
fi

# --- the guest kernel ----------------------------------------------------------------
kpkg() { apt-cache depends linux-image-amd64 2>/dev/null |
           awk '$1 == "Depends:" && $2 ~ /^linux-image-.*-amd64$/ { print $2; exit }'; }
kernel_pkg=$(kpkg)
if [ -z "$kernel_pkg" ] && [ $updated = 0 ]; then
  # A fresh machine may have no package lists yet.
  say "no package lists for linux-image-amd64: apt-get update"
  $SUDO apt-get update -qq
  updated=1
  kernel_pkg=$(kpkg)
fi
[ -n "$kernel_pkg" ] || die "cannot resolve the kernel package linux-image-amd64 depends on"

kdir="$CACHE/$kernel_pkg"
if [ -f "$kdir/vmlinuz" ] && [ -f "$kdir/config" ]; then
  say "kernel $kernel_pkg already in $kdir"
else
  rm -rf "$kdir" "$CACHE/extract.$$"
  mkdir -p "$kdir"
  # apt-get download writes into the current directory; as root it warns that the
  # _apt sandbox cannot write there, harmless.
  ( cd "$kdir" && apt-get download -q "$kernel_pkg" 2>&1 | grep -v -e '^W: Download is performed unsandboxed' -e '^$' || true )
  deb=$(ls "$kdir"/"${kernel_pkg}"_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || die "apt-get download $kernel_pkg produced no .deb in $kdir"
  mkdir -p "$CACHE/extract.$$"
  dpkg-deb -x "$deb" "$CACHE/extract.$$"
  vmlinuz=$(ls "$CACHE/extract.$$"/boot/vmlinuz-* | head -1)
  config=$(ls "$CACHE/extract.$$"/boot/config-* | head -1)
  [ -f "$vmlinuz" ] && [ -f "$config" ] || die "no boot/vmlinuz-* or boot/config-* in $deb"
  cp "$vmlinuz" "$kdir/vmlinuz"
  cp "$config" "$kdir/config"
  basename "$vmlinuz" | sed 's/^vmlinuz-//' > "$kdir/release"
  rm -rf "$CACHE/extract.$$" "$deb"
  say "kernel $kernel_pkg: extracted vmlinuz ($(du -h "$kdir/vmlinuz" | cut -f1)) into $kdir (not installed on the host)"
fi
ln -sfn "$kernel_pkg" "$CACHE/kernel"
ln -sfn "$kernel_pkg/vmlinuz" "$CACHE/vmlinuz"

# The uncompressed ELF kernel for a PVH boot: the XZ stream inside the bzImage (what the
# kernel's scripts/extract-vmlinux does). xz complains about the bytes after the stream;
# the ELF check below decides.
is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
if [ -f "$kdir/vmlinux" ] && is_elf "$kdir/vmlinux"; then
  say "vmlinux (PVH boot) already in $kdir"
elif ! grep -qx 'CONFIG_PVH=y' "$kdir/config" || ! grep -qx 'CONFIG_KERNEL_XZ=y' "$kdir/config"; then
  say "kernel is not XZ-compressed with CONFIG_PVH: guests boot the bzImage (slower)"
else
  off=$(LC_ALL=C grep -obUa $'\xfd7zXZ' "$kdir/vmlinuz" | head -1 | cut -d: -f1 || true)
  if [ -n "$off" ]; then
    tail -c +$((off + 1)) "$kdir/vmlinuz" | xz -dc 2>/dev/null > "$kdir/vmlinux.tmp" || true
  fi
  if [ -n "$off" ] && is_elf "$kdir/vmlinux.tmp"; then
    mv "$kdir/vmlinux.tmp" "$kdir/vmlinux"
    say "extracted vmlinux ($(du -h "$kdir/vmlinux" | cut -f1)) for a PVH boot"
  else
    rm -f "$kdir/vmlinux.tmp"
    say "could not extract vmlinux from vmlinuz: guests boot the bzImage (slower)"
  fi
fi
ln -sfn "$kernel_pkg/vmlinux" "$CACHE/vmlinux"

# Everything the guest relies on must be built in (=y): the initramfs carries no modules.
need=(CONFIG_NUMA CONFIG_NUMA_BALANCING CONFIG_ACPI_NUMA CONFIG_X86_64_ACPI_NUMA
      CONFIG_MIGRATION CONFIG_SERIAL_8250 CONFIG_SERIAL_8250_CONSOLE CONFIG_DEVTMPFS
      CONFIG_TMPFS CONFIG_CGROUPS CONFIG_CPUSETS CONFIG_BLK_DEV_INITRD CONFIG_RD_GZIP
      CONFIG_PROC_FS CONFIG_SYSFS CONFIG_PERF_EVENTS CONFIG_MEM_SOFT_DIRTY)
bad=()
for c in "${need[@]}"; do
  grep -qx "$c=y" "$kdir/config" || bad+=("$c")
done
[ ${#bad[@]} -eq 0 ] || die "the guest kernel lacks built-in ${bad[*]} (would need modules)"
say "kernel config has ${#need[@]} required options built in: no modules needed"
say "ready: kernel $(cat "$kdir/release") in $kdir ($(ls "$kdir" | grep -x -e vmlinux -e vmlinuz | tr "\n" " " | sed "s/ $//")), qemu $(qemu-system-x86_64 --version | head -1 | awk '{print $4}')"
