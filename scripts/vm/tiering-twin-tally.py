#!/usr/bin/env python3
"""The tiered twin over many guest runs: each run judged, then each figure's tally.

Runs scripts/vm/tiering-twin.sh --guest F on each guest output F (earlier runs of
scenarios/tiering.sh, run.sh --log) and prints a line per run: where the root tmpfs sat,
the hot program's CPUs at placement, each judged figure's ratio (model / guest; ! when
outside +-30 %) and how many passed. Then, per figure: in how many runs it passed, the
median and range of its ratio, and the guest's own median and range over the runs (the
kernel's scatter from boot to boot, which no single prediction can cover when it is wider
than the band), with the runs its median would pass as a prediction (the most a model
that gave the same figure in every run could expect, near enough). Each run keeps its
own verdict: the tally adds nothing to it.

Usage: scripts/vm/tiering-twin-tally.py GUEST_OUTPUT... [--kernel K] [--host-cpus N] [--json OUT]
  --kernel: the guests' kernel, 7.2 (default) or 6.12, as tiering-twin.sh takes it (outputs
    that name their kernel, "== kernel: ..." since 2026-11-30, must name that one)
  --host-cpus: the cores of the host that ran the guests (tiering-twin.sh's default: nproc)
  --json OUT: also write every run's figures and the tally
Wall time: about 2 s a run (the model; no guest is booted).
Exit status: 0 when every run passed every figure, 1 when one did not, 2 on bad input.
"""
import json
import os
import statistics
import subprocess
import sys

from tiering_out import die, read_text

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SHORT = {
    "pgpromote_success": "promoted",
    "pgdemote_kswapd + pgdemote_direct": "demoted",
    "numa_hint_faults": "hint faults",
    "hot set on the top tier at the end": "hot set on top",
}


def parse_args(argv):
    files, host_cpus, out, kernel = [], None, None, "7.2"
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--host-cpus", "--json", "--kernel"):
            if i + 1 >= len(argv):
                die(f"{a} needs a value")
            if a == "--host-cpus":
                host_cpus = argv[i + 1]
                if not host_cpus.isdigit() or int(host_cpus) < 1:
                    die(f"--host-cpus must be a whole number of 1 or more, got '{host_cpus}'")
            elif a == "--kernel":
                kernel = argv[i + 1]
                if kernel not in ("7.2", "6.12"):
                    die(f"--kernel must be 7.2 or 6.12 (the kernels that tier a CPU-less node), got '{kernel}'")
            else:
                out = argv[i + 1]
            i += 2
        elif a.startswith("--"):
            die(f"unknown option '{a}' (allowed: --kernel K, --host-cpus N, --json OUT)")
        else:
            files.append(a)
            i += 1
    if not files:
        die("no guest outputs given (usage: tiering-twin-tally.py GUEST_OUTPUT... [--host-cpus N] [--json OUT])")
    # Checked before any model runs.
    for f in files:
        text = read_text(f)
        if "\n@counter pgpromote_success " not in text:
            die(f"{f} has no @counter lines: not a finished run of scenarios/tiering.sh")
        named = [l[len("== kernel: "):] for l in text.splitlines() if l.startswith("== kernel: ")]
        if named and not named[0].startswith(kernel + "."):
            die(f"{f} ran kernel {named[0]}, not {kernel} (give --kernel)")
    return files, host_cpus, out, kernel


def judge(f, host_cpus, kernel):
    judged = os.path.join(REPO, "target", "twin", f"tiering-{kernel}.judged.json")
    cmd = [os.path.join(HERE, "tiering-twin.sh"), "--kernel", kernel, "--guest", f]
    if host_cpus:
        cmd += ["--host-cpus", host_cpus]
    if os.path.exists(judged):
        os.remove(judged)
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    if p.returncode not in (0, 1) or not os.path.exists(judged):
        die(f"tiering-twin.sh --guest {f} failed (exit {p.returncode}): {p.stderr.strip()}")
    return json.load(open(judged))


def tmpfs(doc):
    on = [f"{n[4:]}:{v:.0f}" for n, v in sorted(doc["tmpfs_mib"].items()) if v >= 1]
    return ",".join(on) or "-"


def main(argv):
    files, host_cpus, out, kernel = parse_args(argv[1:])
    runs = []
    for k, f in enumerate(files, 1):
        print(f"tiering-twin-tally: {k} of {len(files)}: {f}", file=sys.stderr)
        runs.append(judge(f, host_cpus, kernel))
    names = [j["figure"] for j in runs[0]["judged"]]
    head = "".join(f" {SHORT.get(n, n):>15}" for n in names)
    print(f"{'guest output':<24} {'tmpfs MiB':>13} {'hot CPUs':>8}{head}  passed")
    for d in runs:
        cells = ""
        for j in d["judged"]:
            ratio = j["model"] / j["guest"] if j["guest"] else float("nan")
            cells += f" {ratio:>14.3f}{' ' if j['pass'] else '!'}"
        ok = sum(j["pass"] for j in d["judged"])
        print(f"{os.path.basename(d['guest']):<24} {tmpfs(d):>13} {d['hot_cpus'] or '-':>8}{cells}  {ok} of {len(names)}")
    tally = []
    print(f"\n{'figure':<36} {'passed':>9} {'ratio median':>13} {'ratio range':>15} {'guest median':>13} {'guest range':>19} {'max/min':>7} {'median passes':>13}")
    for i, n in enumerate(names):
        ratios = [d["judged"][i]["model"] / d["judged"][i]["guest"] for d in runs if d["judged"][i]["guest"]]
        guest = [d["judged"][i]["guest"] for d in runs]
        ok = sum(d["judged"][i]["pass"] for d in runs)
        spread = max(guest) / min(guest) if min(guest) > 0 else float("inf")
        mid = statistics.median(guest)
        mid_ok = sum(1 for g in guest if g > 0 and abs(mid / g - 1) <= 0.3)
        tally.append({"figure": n, "passed": ok, "runs": len(runs), "ratio_median": statistics.median(ratios),
                      "ratio_min": min(ratios), "ratio_max": max(ratios), "guest_median": mid,
                      "guest_min": min(guest), "guest_max": max(guest), "guest_median_passes": mid_ok})
        print(f"{n:<36} {ok:>4} of {len(runs):<2} {statistics.median(ratios):>13.3f} "
              f"{min(ratios):>7.3f}-{max(ratios):<7.3f} {mid:>13,.0f} "
              f"{min(guest):>9,.0f}-{max(guest):<9,.0f} {spread:>7.2f} {mid_ok:>13}")
    every = sum(all(j["pass"] for j in d["judged"]) for d in runs)
    print(f"\nall {len(names)} figures within 30 %: {every} of {len(runs)} runs")
    if out:
        with open(out, "w") as fh:
            json.dump({"runs": runs, "tally": tally, "all_passed": every}, fh, indent=1)
            fh.write("\n")
    return 0 if every == len(runs) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
