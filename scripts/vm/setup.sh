#!/usr/bin/env bash
# Prepares the QEMU NUMA test guests (docs/vm-tests.md). Idempotent.
#
#  * installs with apt-get, only what is missing: qemu-system-x86, busybox-static, cpio,
#    linux-perf, numactl, xz-utils, zstd (`apt-get update` only when something has to be installed);
#  * downloads a Debian suite's current kernel package (the linux-image-*-amd64 that its
#    linux-image-amd64 depends on, resolved now) into target/vm/cache/ with `apt-get
#    download` and extracts its vmlinuz and config with `dpkg-deb -x`: bookworm's 6.1 by
#    default (the host's own package lists), trixie's 6.12 or sid's 7.2 with --kernel
#    (package lists of their own under target/vm/apt/SUITE/, from the host's Debian mirror:
#    the host's apt configuration is never changed). The kernel is never installed on
#    this host. Every driver the guest needs (8250 serial console, ACPI SRAT/SLIT NUMA,
#    devtmpfs, tmpfs, cgroup2, NUMA balancing, page migration) is built into Debian's
#    kernel; the script checks the config for them, so the guest needs no modules;
#  * also decompresses the kernel's ELF image (vmlinux) out of vmlinuz: with CONFIG_PVH QEMU
#    boots it directly (PVH entry), which skips the firmware's bzImage loader and the
#    in-guest XZ decompression, about 4 s per boot under TCG. run.sh falls back to
#    vmlinuz when there is no vmlinux.
#
# Usage: scripts/vm/setup.sh [--kernel K]   K: 6.1 or bookworm (default), 6.12 or trixie,
#        7.2 or sid. Prints what it did; the kernel is in target/vm/cache/kernel-SUITE/ (a
#        symlink to the package's directory; target/vm/cache/kernel is the default's).
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=target/vm/cache
mkdir -p "$CACHE"

say() { printf 'vm/setup: %s\n' "$*"; }
die() { printf 'vm/setup: error: %s\n' "$*" >&2; exit 1; }
# shellcheck source=kernels.sh
. scripts/vm/kernels.sh

kernel_arg=6.1
case ${1:-} in
  --kernel) [ $# -ge 2 ] || die "--kernel needs a value ($KERNEL_NAMES)"; kernel_arg=$2 ;;
  "") ;;
  *) die "unknown argument $1 (usage: scripts/vm/setup.sh [--kernel K])" ;;
esac
suite=$(kernel_suite "$kernel_arg")
[ -n "$suite" ] || die "--kernel must be one of $KERNEL_NAMES, got '$kernel_arg'"

SUDO=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "not root and no sudo: cannot install packages"
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# --- host packages -------------------------------------------------------------------
pkgs=(qemu-system-x86 busybox-static cpio linux-perf numactl xz-utils zstd)
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
# APT: the host's apt with, for another suite than bookworm, package lists of its own.
APT=()
if [ "$suite" != bookworm ]; then
  adir=$PWD/target/vm/apt/$suite
  mkdir -p "$adir/lists/partial" "$adir/cache/archives/partial"
  # The host's Debian mirror (its sources, deb822 or one-line), with this suite.
  mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
             awk '$1 == "URIs:" && $2 ~ /\/debian\/?$/ { print $2; exit }')
  [ -n "$mirror" ] || mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
             awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^(http|https|file):.*\/debian\/?$/) { print $i; exit } }')
  [ -n "$mirror" ] || die "no Debian mirror in the host's apt sources to fetch $suite's kernel from"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  echo "deb [signed-by=$keyring] $mirror $suite main" > "$adir/sources.list"
  APT=(-o "Dir::Etc::sourcelist=$adir/sources.list" -o Dir::Etc::sourceparts=-
       -o "Dir::State::Lists=$adir/lists" -o "Dir::Cache=$adir/cache")
  if [ ! -s "$adir/resolved" ] || [ -n "$(find "$adir/resolved" -mtime +0 2>/dev/null)" ]; then
    say "package lists of $suite into $adir (a day at most old)"
    apt-get -qq "${APT[@]}" update || die "apt-get update of $suite's lists failed"
    touch "$adir/resolved"
  fi
fi
kpkg() { apt-cache "${APT[@]}" depends linux-image-amd64 2>/dev/null |
           awk '$1 == "Depends:" && $2 ~ /^linux-image-.*-amd64$/ { print $2; exit }'; }
kernel_pkg=$(kpkg)
if [ -z "$kernel_pkg" ] && [ $updated = 0 ] && [ "$suite" = bookworm ]; then
  # A fresh machine may have no package lists yet.
  say "no package lists for linux-image-amd64: apt-get update"
  $SUDO apt-get update -qq
  updated=1
  kernel_pkg=$(kpkg)
fi
[ -n "$kernel_pkg" ] || die "cannot resolve the kernel package $suite's linux-image-amd64 depends on"

kdir="$CACHE/$kernel_pkg"
if [ -f "$kdir/vmlinuz" ] && [ -f "$kdir/config" ]; then
  say "kernel $kernel_pkg already in $kdir"
else
  rm -rf "$kdir" "$CACHE/extract.$$"
  mkdir -p "$kdir"
  # Since 7.x Debian splits the image: linux-image-R depends on linux-binary-R (vmlinuz)
  # and linux-base-R (config), both under usr/lib/modules/R/. Earlier: boot/vmlinuz-R and
  # boot/config-R in linux-image-R itself.
  parts=$(apt-cache "${APT[@]}" depends "$kernel_pkg" 2>/dev/null |
            awk '$1 == "Depends:" && $2 ~ /^linux-(binary|base)-.*-amd64$/ { print $2 }')
  # apt-get download writes into the current directory; as root it warns that the
  # _apt sandbox cannot write there, harmless.
  # shellcheck disable=SC2086
  ( cd "$kdir" && apt-get download -q "${APT[@]}" "$kernel_pkg" $parts 2>&1 | grep -v -e '^W: Download is performed unsandboxed' -e '^$' || true )
  debs=$(ls "$kdir"/*.deb 2>/dev/null || true)
  [ -n "$debs" ] || die "apt-get download $kernel_pkg produced no .deb in $kdir"
  mkdir -p "$CACHE/extract.$$"
  for deb in $debs; do dpkg-deb -x "$deb" "$CACHE/extract.$$"; done
  x=$CACHE/extract.$$
  vmlinuz=$(ls "$x"/boot/vmlinuz-* "$x"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -1 || true)
  config=$(ls "$x"/boot/config-* "$x"/usr/lib/modules/*/config 2>/dev/null | head -1 || true)
  [ -n "$vmlinuz" ] && [ -n "$config" ] || die "no vmlinuz or config (boot/ or usr/lib/modules/R/) in $kernel_pkg $parts"
  cp "$vmlinuz" "$kdir/vmlinuz"
  cp "$config" "$kdir/config"
  case $vmlinuz in
    */boot/vmlinuz-*) basename "$vmlinuz" | sed 's/^vmlinuz-//' > "$kdir/release" ;;
    *) basename "$(dirname "$vmlinuz")" > "$kdir/release" ;;
  esac
  rm -rf "$x" "$kdir"/*.deb
  say "kernel $kernel_pkg: extracted vmlinuz ($(du -h "$kdir/vmlinuz" | cut -f1)) into $kdir (not installed on the host)"
fi
ln -sfn "$kernel_pkg" "$CACHE/kernel-$suite"
if [ "$suite" = bookworm ]; then
  # The default kernel (build-initramfs.sh picks perf for its release).
  ln -sfn "$kernel_pkg" "$CACHE/kernel"
  ln -sfn "$kernel_pkg/vmlinuz" "$CACHE/vmlinuz"
fi

# The uncompressed ELF kernel for a PVH boot: the XZ stream inside the bzImage (what the
# kernel's scripts/extract-vmlinux does). xz complains about the bytes after the stream;
# the ELF check below decides.
is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
if [ -f "$kdir/vmlinux" ] && is_elf "$kdir/vmlinux"; then
  say "vmlinux (PVH boot) already in $kdir"
elif ! grep -qx 'CONFIG_PVH=y' "$kdir/config" ||
     ! grep -qxE 'CONFIG_KERNEL_(XZ|ZSTD)=y' "$kdir/config"; then
  say "kernel is not XZ- or zstd-compressed with CONFIG_PVH: guests boot the bzImage (slower)"
else
  # The compressed stream's magic: XZ's FD 37 7A 58 5A, zstd's 28 B5 2F FD.
  if grep -qx 'CONFIG_KERNEL_XZ=y' "$kdir/config"; then
    magic=$'\xfd7zXZ' unpack=(xz -dc)
  else
    magic=$'\x28\xb5\x2f\xfd' unpack=(zstd -dcq)
  fi
  off=$(LC_ALL=C grep -obUa "$magic" "$kdir/vmlinuz" | head -1 | cut -d: -f1 || true)
  if [ -n "$off" ]; then
    tail -c +$((off + 1)) "$kdir/vmlinuz" | "${unpack[@]}" 2>/dev/null > "$kdir/vmlinux.tmp" || true
  fi
  if [ -n "$off" ] && is_elf "$kdir/vmlinux.tmp"; then
    mv "$kdir/vmlinux.tmp" "$kdir/vmlinux"
    say "extracted vmlinux ($(du -h "$kdir/vmlinux" | cut -f1)) for a PVH boot"
  else
    rm -f "$kdir/vmlinux.tmp"
    say "could not extract vmlinux from vmlinuz: guests boot the bzImage (slower)"
  fi
fi
[ "$suite" = bookworm ] && ln -sfn "$kernel_pkg/vmlinux" "$CACHE/vmlinux"

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
