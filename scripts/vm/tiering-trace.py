#!/usr/bin/env python3
"""What a traced tiered guest run's reclaim checked and its hinting faults did.

Reads the output of scripts/vm/scenarios/tiering.sh run with TRACE=1 (its @fref,
@vmemmap_base, @pfns, @hf, @mmp, @mmf and @shmem lines; docs/vm-tests.md, "What eviction
checked") and prints:
  - each node's Shmem before the workloads (the root file system's tmpfs);
  - reclaim's reference checks by class: the hot program's buffer or anything else
    (told apart by frame, from page-flags --pfns before the filler), THP or base page,
    references found or not, and by whom (kswapd or the filler): count, median and mean us;
  - the hot buffer's folios found without references, and how many lie in its first or
    last 4 MiB (a malloc'd buffer's ends, mapped by base pages);
  - with --timeline, the checks per 10 ms of uptime;
  - the hot program's hinting faults: THP faults per thread, THPs faulted more than once
    and the gaps between the faults, and migrate_misplaced_folio_prepare's answers.

Usage: scripts/vm/tiering-trace.py GUEST_OUTPUT [--timeline]
"""
import bisect
import collections
import statistics
import sys

from tiering_out import die, read_text

PG_HEAD = 6  # the flags word's bit of a compound page's head (include/linux/page-flags.h)
STRUCT_PAGE = 64  # bytes of a struct page: a folio's address to its frame via vmemmap_base
PAGES_2M = 512


def parse(path):
    out = {"vb": None, "hot": [], "fref": [], "hf": [], "mmp": [], "shmem": [], "sfl": []}
    for line in read_text(path).splitlines():
        w = line.split()
        if not w:
            continue
        try:
            if w[0] == "@vmemmap_base":
                out["vb"] = int(w[1], 16)
            elif w[0] == "@pfns" and w[1] == "before_filler":
                for run in w[3:]:
                    page, pfn, n = run.split("+")
                    out["hot"].append((int(pfn, 16), int(n), int(page)))
            elif w[0] == "@fref":
                t, task, folio, flags, refs, us = w[1:7]
                out["fref"].append((float(t), task, int(folio, 16), int(flags, 16), int(refs), int(us)))
            elif w[0] == "@hf":
                out["hf"].append((float(w[1]), w[2], w[3], int(w[4], 16)))
            elif w[0] == "@mmp":
                out["mmp"].append((float(w[1]), w[2], w[3], int(w[4])))
            elif w[0] == "@shmem":
                out["shmem"].append((w[1], int(w[2])))
            elif w[0] == "@sfl":
                out["sfl"].append((float(w[1]), w[2], None))
            elif w[0] == "@sfl_ret":
                out["sfl"].append((float(w[1]), w[2], int(w[3])))
        except (ValueError, IndexError):
            die(f"{path}: a malformed {w[0]} line: {line[:80]}")
    return out


def main():
    args = sys.argv[1:]
    timeline = "--timeline" in args
    files = [a for a in args if a != "--timeline"]
    if len(files) != 1 or any(a.startswith("--") for a in files):
        die("usage: tiering-trace.py GUEST_OUTPUT [--timeline]")
    d = parse(files[0])
    if d["shmem"]:
        print("Shmem before the workloads: " + ", ".join(f"{n} {mb} MiB" for n, mb in d["shmem"]))
    checks(d, timeline)
    batches(d)
    faults(d)


def batches(d):
    """Reclaim's batches (shrink_folio_list) by task: how long those that reclaimed nothing
    (each a kept THP, or base pages all kept) and those that reclaimed took, and the time
    from a batch's return to the reclaimer's next batch. Runs with TRACE_PER_FOLIO=0 time
    them without a probe on each reference check."""
    if not d["sfl"]:
        return
    per = collections.defaultdict(lambda: {True: ([], []), False: ([], [])})
    by_task = collections.defaultdict(list)
    for row in d["sfl"]:
        by_task[row[1].rsplit("-", 1)[0]].append(row)
    for task, rows in by_task.items():
        for (t0, _, a), (t1, _, r), (t2, _, b) in zip(rows, rows[1:], rows[2:]):
            if a is None and r is not None and b is None:
                dur, gap = per[task][r == 0]
                dur.append((t1 - t0) * 1e6)
                gap.append((t2 - t1) * 1e6)
    print("reclaim's batches (shrink_folio_list): median us, [quartiles]")
    for task in sorted(per):
        for kept in (True, False):
            dur, gap = per[task][kept]
            if dur:
                what = "kept all " if kept else "reclaimed"
                print(f"  {task:<12} {what} {len(dur):>5}  took {quartiles(dur)}, "
                      f"next batch after {quartiles(gap)}")


def quartiles(v):
    v = sorted(v)
    return f"{statistics.median(v):.0f} [{v[len(v) // 4]:.0f}-{v[3 * len(v) // 4]:.0f}]"


def checks(d, timeline):
    if not d["fref"]:
        print("no reference checks (@fref): not a TRACE=1 output of this scenario, or one with TRACE_PER_FOLIO=0")
        return
    if d["vb"] is None or not d["hot"]:
        die("reference checks without @vmemmap_base or the hot buffer's @pfns")
    hot = sorted(d["hot"])
    starts = [h[0] for h in hot]
    size = max(page + n for _, n, page in hot)

    def hot_page(pfn):
        i = bisect.bisect_right(starts, pfn) - 1
        if i >= 0 and hot[i][0] <= pfn < hot[i][0] + hot[i][1]:
            return hot[i][2] + pfn - hot[i][0]
        return None

    classes = collections.defaultdict(list)
    unreferenced_hot = []
    buckets = collections.Counter()
    for t, task, folio, flags, refs, us in d["fref"]:
        page = hot_page((folio - d["vb"]) // STRUCT_PAGE)
        owner = "hot" if page is not None else "other"
        kind = "THP" if flags >> PG_HEAD & 1 else "page"
        who = "kswapd" if task.startswith("kswapd") else "filler"
        classes[(owner, kind, refs > 0, who)].append(us)
        if owner == "hot" and refs == 0:
            unreferenced_hot.append(page)
        buckets[(int(t * 100), owner, refs > 0)] += 1
    print(f"reference checks: {len(d['fref'])}")
    print(f"  {'folio':<6} {'kind':<5} {'found':<11} {'by':<7} {'checks':>7} {'median us':>10} {'mean us':>9}")
    for (owner, kind, ref, who), us in sorted(classes.items()):
        found = "references" if ref else "none"
        print(f"  {owner:<6} {kind:<5} {found:<11} {who:<7} {len(us):>7} "
              f"{statistics.median(us):>10.0f} {statistics.mean(us):>9.0f}")
    edge = sum(1 for p in unreferenced_hot if p < PAGES_2M * 2 or p >= size - PAGES_2M * 2)
    print(f"hot folios found without references: {len(unreferenced_hot)}, "
          f"{edge} of them in the buffer's first or last 4 MiB")
    if timeline:
        print("checks per 10 ms (uptime s: other none/references, hot none/references)")
        for b in sorted({k[0] for k in buckets}):
            c = [buckets[(b, o, r)] for o in ("other", "hot") for r in (False, True)]
            print(f"  {b / 100:.2f}: {c[0]:>5} {c[1]:>4}  {c[2]:>4} {c[3]:>4}")


def faults(d):
    if not d["hf"]:
        return
    by_thread = collections.Counter((task, kind) for _, task, kind, _ in d["hf"])
    print("hinting faults traced: " + ", ".join(f"{t} {k} {n}" for (t, k), n in sorted(by_thread.items())))
    per = collections.defaultdict(list)
    for t, _, kind, addr in d["hf"]:
        per[(kind, addr >> (21 if kind == "thp" else 12))].append(t)
    thps = [v for (kind, _), v in per.items() if kind == "thp"]
    twice = [sorted(v) for v in thps if len(v) > 1]
    line = f"THPs faulted: {len(thps)}, more than once: {len(twice)}"
    if twice:
        gaps = sorted((v[1] - v[0]) * 1e6 for v in twice)
        line += f" (first two faults {gaps[0]:.0f}-{gaps[-1]:.0f} us apart, median {statistics.median(gaps):.0f})"
    print(line)
    answers = collections.Counter(r for *_, r in d["mmp"])
    print("migrate_misplaced_folio_prepare: " + ", ".join(f"{r}: {n}" for r, n in sorted(answers.items())))


if __name__ == "__main__":
    main()
