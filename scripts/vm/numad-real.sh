#!/usr/bin/env bash
# The real numad in the 4-node guest against numabal's (issue 17, item 7): fetches Debian's
# numad 0.5+20150602 (`apt-get download numad` from the host's package lists into
# target/vm/cache/numad/, unpacked with dpkg-deb; never installed on the host), packs it
# into the guest and runs scripts/vm/scenarios/numad-real.sh (three workloads under numad
# and under `numabal daemon -p numad`, then `numad -w` beside `numabal advise --live`).
# Writes target/vm/logs/numad-real.out; scripts/vm/numad-compare.py compares it with the
# simulated numad. Usage: [NUMAD_WORKLOADS=fit0,spread,big] [NUMAD_TRACE=1]
# scripts/vm/numad-real.sh [--kernel K] (NUMAD_TRACE=1 adds numad's node values at each decision).
# Needs scripts/vm/setup.sh [--kernel K]. Wall time: about 16 minutes (the guest waits until
# it has been up 360 s, past numad's blind spot after boot, then six runs of NUMAD_RUN_S, 90 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo"
kernel=6.1
[ "${1:-}" = --kernel ] && { kernel=${2:?--kernel needs a value}; shift 2; }
dir=target/vm/cache/numad
if [ ! -x "$dir/x/usr/bin/numad" ]; then
  mkdir -p "$dir"
  ( cd "$dir" && apt-get download -q numad 2>&1 | grep -v -e 'unsandboxed' -e '^$' || true )
  deb=$(ls "$dir"/numad_*.deb 2>/dev/null | head -1)
  [ -n "$deb" ] || { echo "numad-real: apt-get download numad gave no .deb" >&2; exit 2; }
  dpkg-deb -x "$deb" "$dir/x"
fi
scripts/release-build.sh -q
mkdir -p target/vm/scen target/vm/logs
cat scripts/vm/scenarios/lib.sh scripts/vm/scenarios/numad-real.sh > target/vm/scen/numad-real.sh
VM_EXTRA_BINS="$repo/$dir/x/usr/bin/numad" scripts/vm/run.sh --nodes 4 --kernel "$kernel" --env "NUMAD_RUN_S=${NUMAD_RUN_S:-90}" --env "NUMAD_WORKLOADS=${NUMAD_WORKLOADS:-fit0,spread,big}" --env "NUMAD_TRACE=${NUMAD_TRACE:-0}" \
  --timeout 1800 --scenario target/vm/scen/numad-real.sh --log target/vm/logs/numad-real.out
