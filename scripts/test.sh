#!/usr/bin/env bash
# Every test of the project, as CI runs it (.ci/run calls this). Installs what it needs.
set -euo pipefail
cd "$(dirname "$0")/.."

need_rust="1.88"
if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "scripts/test.sh: cargo not found: install Rust >= $need_rust (https://rustup.rs)" >&2
    exit 2
  fi
fi
have=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$need_rust" "$have" | sort -V | head -1)" != "$need_rust" ]; then
  echo "scripts/test.sh: rustc $have is older than the required $need_rust" >&2
  exit 2
fi
if command -v rustup >/dev/null 2>&1; then
  for c in rustfmt clippy; do
    rustup component list --installed 2>/dev/null | grep -q "^$c" || rustup component add "$c"
  done
fi

# Each step's wall time is printed when the next starts, and all of them at the end, so a
# CI log says where its minutes went.
t_start=$(date +%s) t_step=$t_start step_name="" times=""
lap() {
  local now; now=$(date +%s)
  [ -z "$step_name" ] || times+="  $(printf '%5d s' $((now - t_step)))  $step_name"$'\n'
  t_step=$now
}
step() { lap; step_name=$1; printf '\n== %s\n' "$*"; }

# A fresh clone builds everything once: incremental compilation's caches only cost time
# there (the optimised test build from scratch, 2026-11-30: 3 min 22 s without, 3 min 34 s
# with).
export CARGO_INCREMENTAL=0

step "format"
cargo fmt --all -- --check

step "lint"
cargo clippy --locked --all-targets -- -D warnings

step "policy core stays free of I/O, threads and backends"
deps=$(cargo tree --locked -p numabal-policy -e normal --prefix none | awk '{print $1}' | sort -u)
for banned in rayon libc procfs perf-event-open numabal-sim numabal-live; do
  if printf '%s\n' "$deps" | grep -qx "$banned"; then
    echo "numabal-policy depends on $banned" >&2
    exit 1
  fi
done

step "all unsafe code in one module (crates/numabal-live/src/sys.rs)"
others=$(grep -rln 'allow(unsafe_code)' crates --include='*.rs' | grep -vx 'crates/numabal-live/src/sys.rs' || true)
if [ -n "$others" ]; then
  echo "unsafe code allowed outside numabal-live's sys.rs: $others" >&2
  exit 1
fi

step "structure: no simulator file over 900 lines, no function over 150 (scripts/structure-check.py)"
python3 scripts/structure-check.py --self-test
python3 scripts/structure-check.py

step "tests"
# numabal-py's tests are the Python package's (below); its lib is linted above.
cargo test --locked --workspace --exclude numabal-py --all-targets
if python3 scripts/has-doctests.py; then
  cargo test --locked --workspace --exclude numabal-py --doc
else
  echo "no doc tests in crates/ (scripts/has-doctests.py): cargo test --doc not run"
fi

step "the demo's HTML report in headless Chromium, every figure drawn (scripts/report-check.sh)"
# The binaries and the Python module in one build, which maturin's build of the module
# below and every script's build reuse (scripts/release-build.sh says why one set).
scripts/release-build.sh
scripts/report-check.sh

step "the Python package: its wheel in a fresh virtual environment, its tests against the CLI, a two-node Ray cluster losing a node mid-sweep, the notebook (python/tests)"
rm -rf target/py-venv
scripts/python-setup.sh
NUMABAL_BIN="$PWD/target/release/numabal" target/py-venv/bin/python -m pytest -q -p no:cacheprovider python/tests

step "a real kernel: QEMU TCG guests with 2 and 4 emulated NUMA nodes (scripts/vm/test.sh)"
if [ "${NUMABAL_SKIP_VM:-0}" = 1 ]; then
  echo "NUMABAL_SKIP_VM=1: the real-kernel tests were NOT run" >&2
else
  scripts/vm/test.sh
fi

lap
printf '\n== wall time by step (%d s in all)\n%s' $(($(date +%s) - t_start)) "$times"
printf '\n== all tests passed\n'
