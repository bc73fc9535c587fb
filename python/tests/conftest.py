"""Shared fixtures: the command line to compare against (``NUMABAL_BIN``, else the
workspace's release build, as scripts/test.sh builds it)."""

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def cli():
    binary = os.environ.get("NUMABAL_BIN", str(ROOT / "target" / "release" / "numabal"))
    if not os.access(binary, os.X_OK):
        pytest.fail(f"{binary}: no numabal binary (cargo build --release -p numabal-cli)")

    def call(*args, check=True):
        r = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
        if check and r.returncode != 0:
            raise AssertionError(f"numabal {' '.join(map(str, args))}: {r.stderr}")
        return r

    return call
