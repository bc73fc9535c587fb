"""Type stubs of the native module (crates/numabal-py/src/lib.rs). Use the package's
functions (``numabal.run`` ...) rather than these: they return tables and results."""

from typing import Optional

__version__: str

class InputError(ValueError):
    """Bad input: the command line's one-line message."""

def run(
    machine: Optional[str] = None,
    workload: Optional[str] = None,
    policy: Optional[str] = None,
    seed: Optional[int] = None,
    sets: list[str] = ...,
    scenario: Optional[str] = None,
) -> tuple[str, str]: ...
def compare(
    policies: list[str],
    machine: Optional[str] = None,
    workload: Optional[str] = None,
    seeds: int = 5,
    first_seed: int = 1,
    jobs: Optional[int] = None,
    sets: list[str] = ...,
    scenario: Optional[str] = None,
) -> tuple[str, str]: ...
def suite(
    suite: str,
    machine: str,
    policies: list[str] = ...,
    seeds: Optional[int] = None,
    sets: list[str] = ...,
    jobs: Optional[int] = None,
) -> tuple[str, str]: ...
def sweep_local(
    kind: str,
    grid_text: str,
    label: str,
    out: str,
    jobs: Optional[int] = None,
    max_runs: Optional[int] = None,
    quiet: bool = True,
) -> None: ...
def results_done(out: str) -> list[str]: ...
def presets() -> dict[str, list[dict]]: ...

class Sweep:
    def __init__(self, kind: str, grid_text: str, label: str = "grid") -> None: ...
    def keys(self) -> list[str]: ...
    def run(self, indices: list[int]) -> list[str]: ...
