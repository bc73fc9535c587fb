#!/usr/bin/env python3
"""Exit 0 if some doc comment under crates/ opens a Rust code block (a doc test), else 1.

scripts/test.sh runs `cargo test --doc` only then: with none, rustdoc takes about 25 s of
a CI run to find that out. A fence opens a doc test when it has no language or one of
rust's (`rust`, `no_run`, `should_panic`, `compile_fail`, `edition20xx`), not `text`,
`toml`, `sh`... and not `ignore`.
Usage: scripts/has-doctests.py [--list]
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = re.compile(r"^\s*//[/!]\s?(.*)$")
RUSTY = {"", "rust", "no_run", "should_panic", "compile_fail"}


def doctests(path):
    found, inside = [], False
    for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = DOC.match(line)
        if not m:
            continue
        text = m.group(1).strip()
        if not text.startswith("```"):
            continue
        if inside:
            inside = False
            continue
        inside = True
        tags = {t.strip() for t in text[3:].split(",")}
        if all(t in RUSTY or t.startswith("edition") for t in tags):
            found.append(n)
    return found


def main():
    hits = [(p, n) for p in sorted((ROOT / "crates").rglob("*.rs")) for n in doctests(p)]
    if "--list" in sys.argv:
        for p, n in hits:
            print(f"{p.relative_to(ROOT)}:{n}")
    return 0 if hits else 1


if __name__ == "__main__":
    sys.exit(main())
