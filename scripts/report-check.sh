#!/usr/bin/env bash
# Renders the demo's HTML report in headless Chromium and checks that every figure is
# there, drawn and legible (issue 7's and issue 15's must-show); the screenshot is
# OUT_DIR/demo.png. Installs Debian's `chromium` with apt when it is
# missing (as root, or with sudo). Needs the release build (scripts/test.sh builds it).
#
# Usage: scripts/report-check.sh [OUT_DIR]     (default: target/report)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-target/report}
mkdir -p "$out"
say() { echo "report-check: $*"; }

if ! command -v chromium >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  say "installing chromium"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
[ -x target/release/numabal ] || scripts/release-build.sh

say "numabal demo --html $out/demo.html --svg-dir $out/svg"
rm -rf "$out/svg"
target/release/numabal demo --quiet --html "$out/demo.html" --svg-dir "$out/svg" > "$out/demo.txt"
python3 scripts/check_report.py "$out/demo.html" --svg-dir "$out/svg" --shot "$out/demo.png"

# The check can fail: the same report with the first figure's colours turned white (its
# marks still there, nothing visible but axes and text) must be refused.
python3 - "$out/demo.html" "$out/whited.html" <<'PY'
import re, sys
h = open(sys.argv[1], encoding="utf-8").read()
i = h.index("<figure id=")
e = h.index("</figure>", i)
body = re.sub(r"#[0-9A-Fa-f]{6}", "#FFFFFF", h[i:e])
open(sys.argv[2], "w", encoding="utf-8").write(h[:i] + body + h[e:])
PY
if python3 scripts/check_report.py "$out/whited.html" > "$out/whited.txt" 2>&1; then
  cat "$out/whited.txt"
  say "FAIL: a report whose first figure is blank passed the check"
  exit 1
fi
say "the check refuses a blank figure: $(grep -m1 FAIL "$out/whited.txt")"

# And a report whose figure text is 8 px must be refused too.
python3 - "$out/demo.html" "$out/small.html" <<'PY'
import re, sys
h = open(sys.argv[1], encoding="utf-8").read()
open(sys.argv[2], "w", encoding="utf-8").write(re.sub(r'font-size="[0-9.]+"', 'font-size="8"', h))
PY
if python3 scripts/check_report.py "$out/small.html" > "$out/small.txt" 2>&1; then
  cat "$out/small.txt"
  say "FAIL: a report with 8 px text passed the check"
  exit 1
fi
say "the check refuses small text: $(grep -m1 FAIL "$out/small.txt")"
say "screenshot: $out/demo.png"
