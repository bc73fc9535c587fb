#!/usr/bin/env bash
# The Python package in a virtual environment: target/py-venv (or $NUMABAL_VENV), with what
# its tests, the Ray cluster test and the notebook need (python/requirements-test.txt),
# and numabal itself built by maturin as an abi3 wheel and installed from it.
# Usage: scripts/python-setup.sh            then: target/py-venv/bin/python -c "import numabal"
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NUMABAL_VENV:-target/py-venv}
py=${PYTHON:-python3}
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
  echo "scripts/python-setup.sh: $py is missing or older than Python 3.9" >&2
  exit 2
fi
if [ ! -x "$venv/bin/python" ]; then
  if ! "$py" -m venv "$venv" 2>/dev/null; then
    # Debian's python3 keeps venv in its own package.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      apt-get install -y -qq python3-venv >/dev/null
      rm -rf "$venv"
      "$py" -m venv "$venv"
    else
      echo "scripts/python-setup.sh: $py -m venv failed: install python3-venv" >&2
      exit 2
    fi
  fi
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet -r python/requirements-test.txt
rm -rf target/wheels
"$venv/bin/maturin" build --release --locked --quiet --out target/wheels
"$venv/bin/python" -m pip install --quiet --force-reinstall --no-deps target/wheels/numabal-*.whl
"$venv/bin/python" -c 'import numabal; print(f"numabal {numabal.__version__} in '"$venv"'")'
