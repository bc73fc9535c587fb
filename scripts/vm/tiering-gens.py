#!/usr/bin/env python3
"""Node 0's MGLRU generations in a traced tiered guest run and in its model, side by side.

The guest's come from the output of scripts/vm/scenarios/tiering.sh run with TRACE=1 (its
"== MGLRU's generations of node 0" lines, /sys/kernel/debug/lru_gen every 0.23 s or so
from the filler's start); the model's from the `lru_gen` of its `proc_samples` (the twin's
model with `sim.proc_every_s` short enough, e.g. 0.05):

    scripts/vm/tiering-twin.sh --guest GUEST --set sim.proc_every_s=0.05
    scripts/vm/tiering-gens.py GUEST target/twin/tiering-7.2.sim.json

Both timelines start at their first aging (the first sample with a generation newer than
the first sample's), one line per guest sample: the time since that aging, then each
generation as seq/age ms/pages, oldest first, for the guest and for the model's sample at
the same time since its own first aging. Sequence numbers differ by where each started.

Usage: scripts/vm/tiering-gens.py GUEST_OUTPUT SIM_JSON [--seconds S]   (S: 3)
Exit status: 0, or 2 on bad input.
"""
import json
import sys

from tiering_out import die, read_text

HEADER = "== MGLRU's generations of node 0"


def guest_gens(path):
    """[(uptime s, [(seq, age_ms, pages)])] from the guest's generation lines."""
    out, inside = [], False
    for line in read_text(path).splitlines():
        if line.startswith("== "):
            inside = line.startswith(HEADER)
            continue
        if not inside or ":" not in line:
            continue
        t, _, rest = line.partition(":")
        try:
            gens = [tuple(int(v) for v in tok.split("/")) for tok in rest.split("|")[0].split()]
            out.append((float(t), gens))
        except ValueError:
            continue  # a line the trace's own output broke into (TRACE=1 prints beside it)
    if not out:
        die(f"{path} has no generation lines (run scenarios/tiering.sh with TRACE=1)")
    return out


def model_gens(path):
    text = read_text(path)
    try:
        r = json.loads(text)
    except ValueError:
        die(f"{path} is not JSON")
    out = [(s["t_s"], [(g["seq"], g["age_ms"], g["pages"]) for g in s["lru_gen"][0]["gens"]])
           for s in r.get("proc_samples", []) if s.get("lru_gen")]
    if not out:
        die(f"{path} has no generations in its proc_samples (run the model with sim.lru_gen "
            "and sim.proc_every_s, as tiering-twin.sh --set sim.proc_every_s=0.05 does)")
    return out


def first_aging(series):
    newest = series[0][1][-1][0]
    for i, (_, gens) in enumerate(series):
        if gens[-1][0] > newest:
            return i
    return None


def fmt(gens):
    return " ".join(f"{s}/{a}/{p}" for s, a, p in gens)


def main(argv):
    args, seconds = argv[1:], 3.0
    if "--seconds" in args:
        i = args.index("--seconds")
        try:
            seconds = float(args[i + 1])
        except (IndexError, ValueError):
            die("--seconds needs a number of seconds")
        del args[i:i + 2]
    if len(args) != 2:
        die("usage: tiering-gens.py GUEST_OUTPUT SIM_JSON [--seconds S]")
    guest, model = guest_gens(args[0]), model_gens(args[1])
    gi, mi = first_aging(guest), first_aging(model)
    if gi is None or mi is None:
        die("no aging in " + ("the guest's" if gi is None else "the model's") + " generations")
    g0, m0 = guest[gi][0], model[mi][0]
    print(f"first aging: guest by {g0:.2f} s of uptime, model by {m0:.2f} s of the run")
    print(f"{'after s':>8}  {'guest: seq/age ms/pages, oldest first':<52} model")
    start = max(gi - 1, 0)
    for t, gens in guest[start:]:
        dt = t - g0
        if dt > seconds:
            break
        at = [m for m in model if m[0] <= m0 + dt + 1e-9]
        mg = fmt(at[-1][1]) if at else "-"
        print(f"{dt:>8.2f}  {fmt(gens):<52} {mg}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
