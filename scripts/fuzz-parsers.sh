#!/usr/bin/env bash
# Fuzz the /proc and /sys readers (issue 19): mutated corpus files and fixture trees
# (crates/numabal-live/src/fuzz.rs, corpus in crates/numabal-live/fuzz-corpus/) for
# MINUTES (default 10), from SEED (default: the clock's, printed). Every input that panicked
# is kept under target/fuzz-crashes/; exits 1 if there was one. Wall time: MINUTES plus the
# test build (about a minute from a warm target/).
#
# Usage: scripts/fuzz-parsers.sh [MINUTES] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
case $minutes in ''|*[!0-9]*) echo "fuzz-parsers: MINUTES must be a whole number, got '$minutes'" >&2; exit 2 ;; esac
seed=${2:-$(date +%s)}
case $seed in *[!0-9]*) echo "fuzz-parsers: SEED must be a whole number, got '$seed'" >&2; exit 2 ;; esac
echo "fuzz-parsers: $minutes min from seed $seed (again: scripts/fuzz-parsers.sh $minutes $seed)"
NUMABAL_FUZZ_SECONDS=$((minutes * 60)) NUMABAL_FUZZ_SEED=$seed \
  cargo test --locked -q -p numabal-live --lib fuzz::fuzz_for_a_while -- --ignored --nocapture
