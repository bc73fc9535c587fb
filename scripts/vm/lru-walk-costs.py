#!/usr/bin/env python3
"""MGLRU's aging walk's cost per entry, from outputs of scenarios/lru-walk.sh.

Each output (run.sh --log of a boot) has ten agings of node 0 in order, `@age running|stopped`
with the matching `@walk uptime_s aging_ms program_mm_us` lines, and the program's THPs
(`AnonHugePages` of its smaps_rollup, 2 MiB each). Per boot:
  young: the median walk of the program's mm over the agings with its writers running,
         the first left out (the mm's first walk, which also builds what later walks use);
  old:   the median over the agings after it was stopped, the first left out (it still
         finds the entries young);
both divided by the THPs. Then the median of the boots' figures, and the machine cost
fields they give: costs.lru_walk_line_ns = old (a THP's PMD is one line of entries), and
costs.lru_walk_young_ns = young - old (the young entry's work on top).

Usage: scripts/vm/lru-walk-costs.py LRU_WALK_OUTPUT...
Wall time: instant. Exit status: 0, or 2 on bad input.
"""
import re
import statistics
import sys

from tiering_out import die, read_text


def boot(path):
    """(THPs, young us per THP, old us per THP) of one output."""
    text = read_text(path)
    m = re.search(r"AnonHugePages:\s+(\d+) kB", text)
    if not m or int(m.group(1)) < 2048:
        die(f"{path}: no AnonHugePages line of the program (not an output of scenarios/lru-walk.sh)")
    thps = int(m.group(1)) // 2048
    ages = re.findall(r"^@age (running|stopped) ", text, re.M)
    walks = [float(w) for w in re.findall(r"^@walk \S+ \S+ (\d+)$", text, re.M)]
    if len(ages) != len(walks) or ages.count("running") < 3 or ages.count("stopped") < 3:
        die(f"{path}: {len(ages)} @age and {len(walks)} @walk lines (needs them paired, "
            "at least 3 of each kind)")
    running = [w for a, w in zip(ages, walks) if a == "running"][1:]
    stopped = [w for a, w in zip(ages, walks) if a == "stopped"][1:]
    return thps, statistics.median(running) / thps, statistics.median(stopped) / thps


def main():
    paths = sys.argv[1:]
    if not paths or any(p.startswith("-") for p in paths):
        die("usage: lru-walk-costs.py LRU_WALK_OUTPUT...")
    rows = [boot(p) for p in paths]
    print(f"{'output':<40} {'THPs':>5} {'young us/THP':>13} {'old us/THP':>11}")
    for p, (thps, young, old) in zip(paths, rows):
        print(f"{p:<40} {thps:>5} {young:>13.3f} {old:>11.3f}")
    young = statistics.median(r[1] for r in rows)
    old = statistics.median(r[2] for r in rows)
    print(f"{'median of the boots':<40} {'':>5} {young:>13.3f} {old:>11.3f}")
    print(f"costs.lru_walk_line_ns = {old * 1e3:.0f}")
    print(f"costs.lru_walk_young_ns = {(young - old) * 1e3:.0f}")


if __name__ == "__main__":
    main()
