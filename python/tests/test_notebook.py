"""docs/python-study.ipynb runs from top to bottom (nbclient) and draws its figure.

``python python/tests/test_notebook.py`` runs it in docs/ instead, keeping the executed
notebook (its outputs) and docs/python-study.png: how the committed ones are made."""

import shutil
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "docs" / "python-study.ipynb"


def execute(where: Path):
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(where)}}).execute()
    return nb


def test_the_study_notebook_runs_and_draws(tmp_path):
    nb = execute(tmp_path)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors, errors
    png = tmp_path / "python-study.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    # The summary table shows both machines.
    text = "".join(str(o.get("data", {}).get("text/plain", ""))
                   for c in nb.cells for o in c.get("outputs", []))
    assert "autonuma-2n24" in text and "rhel-4n40" in text


if __name__ == "__main__":
    docs = ROOT / "docs"
    results = docs / "python-study.jsonl"
    nb = execute(docs)
    results.unlink(missing_ok=True)  # the runs are the notebook's to make, not to keep
    nbformat.write(nb, NOTEBOOK)
    shutil.rmtree(docs / ".ipynb_checkpoints", ignore_errors=True)
    print(f"{NOTEBOOK.relative_to(ROOT)} and docs/python-study.png written", file=sys.stderr)
