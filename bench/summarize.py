#!/usr/bin/python3
"""Summarise the hyperfine JSON files written by bench/sandbox_start.sh.

Usage: summarize.py OUT_DIR

OUT_DIR holds <group>.<round>.json files (hyperfine --export-json) and labels.tsv
("<command name>\t<row label>\t<group>" per line, in print order). Runs of the same command
from every round are pooled; the table shows median, p10 and p90 wall time per row, then the
ratios the issue sets targets for. Ratios are taken between medians of the same run, so a
slow or busy machine shifts both sides alike. A 90% bootstrap interval is printed next to
each ratio: a target "within 5%" is only meaningful when the interval is narrower than that.
"""

import glob
import json
import os
import random
import statistics
import sys


def load(out_dir):
    times = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "*.json"))):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        for result in data["results"]:
            times.setdefault(result["command"], []).extend(result["times"])
    return times


def quantile(sorted_values, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap(fn, samples, rounds=400, seed=7):
    """90% percentile-bootstrap interval of fn(*resampled medians)."""
    rng = random.Random(seed)
    values = []
    for _ in range(rounds):
        medians = [statistics.median(rng.choices(s, k=len(s))) for s in samples]
        try:
            values.append(fn(*medians))
        except ZeroDivisionError:
            continue
    values.sort()
    if not values:
        return float("nan"), float("nan")
    return quantile(values, 0.05), quantile(values, 0.95)


def main():
    out_dir = sys.argv[1]
    times = load(out_dir)
    rows = []
    with open(os.path.join(out_dir, "labels.tsv"), encoding="utf-8") as f:
        for line in f:
            name, label, group = line.rstrip("\n").split("\t")
            rows.append((name, label, group))

    def ms(name):
        return sorted(t * 1000.0 for t in times.get(name, []))

    print()
    print(f"{'':<46} {'median':>10} {'p10':>10} {'p90':>10} {'runs':>5}")
    last_group = None
    for name, label, group in rows:
        if group != last_group:
            print(f"--- {group} " + "-" * (78 - len(group) - 5))
            last_group = group
        v = ms(name)
        if not v:
            print(f"{label:<46} {'(not measured)':>9}")
            continue
        print(f"{label:<46} {statistics.median(v):8.2f}ms {quantile(v, 0.1):8.2f}ms "
              f"{quantile(v, 0.9):8.2f}ms {len(v):>5}")

    def have(*names):
        return all(ms(n) for n in names)

    def show(label, fn, names, target, why):
        samples = [ms(n) for n in names]
        value = fn(*[statistics.median(s) for s in samples])
        lo, hi = bootstrap(fn, samples)
        verdict = ""
        if target is not None:
            verdict = "meets target" if value <= target else "MISSES target"
            verdict = f"  target <= {target:.2f}: {verdict}"
        print(f"{label:<56} {value:6.3f}  [90% CI {lo:.3f}..{hi:.3f}]{verdict}")
        if why:
            print(f"{'':<6}{why}")

    print()
    print("Ratios (medians of this run)")
    if have("start_anvil", "start_bwrap"):
        show("anvil start / bwrap start", lambda a, b: a / b, ["start_anvil", "start_bwrap"], 0.5,
             "")
    if have("start_anvil", "start_bwrap", "start_bare"):
        show("  same, bare /bin/true subtracted", lambda a, b, t: (a - t) / (b - t),
             ["start_anvil", "start_bwrap", "start_bare"], None,
             "(sandbox overhead only; informational)")
    if have("start_floor", "start_bwrap"):
        show("kernel floor (namespaces + init + exec) / bwrap", lambda a, b: a / b,
             ["start_floor", "start_bwrap"], None,
             "(no sandbox with this isolation starts faster here: a start target below this "
             "is out of reach on this machine)")
    if have("start_floor_noinit", "start_bwrap"):
        show("  same, command as pid 1 (no init) / bwrap", lambda a, b: a / b,
             ["start_floor_noinit", "start_bwrap"], None, "")
    if have("start_floor_layers", "start_bwrap"):
        show("floor + every required layer (minimal C) / bwrap", lambda a, b: a / b,
             ["start_floor_layers", "start_bwrap"], None,
             "(the least a sandbox with Anvil's walls costs here; at or above 0.5 the start "
             "target is a physical limit on this machine)")
    if have("start_anvil", "start_floor_layers"):
        show("anvil start / floor with every layer", lambda a, b: a / b,
             ["start_anvil", "start_floor_layers"], None,
             "(Anvil's own cost beyond the walls: C++ runtime, view checks, report, env)")
    if have("start_anvil", "start_floor"):
        show("anvil start / kernel floor", lambda a, b: a / b, ["start_anvil", "start_floor"], None,
             "(what Anvil's own work costs: mounts, Landlock, seccomp, checks, report)")
    if have("start_firejail", "start_bwrap"):
        show("firejail start / bwrap start", lambda a, b: a / b,
             ["start_firejail", "start_bwrap"], None, "")
    # In-sandbox work: subtract each side's own start-up (/bin/true under the same wrapper), so
    # the ratio compares the work done inside, which is what the 5% target is about. The raw
    # ratio, start-up included, follows on the next line.
    for kind, what in (("loop", "100x /bin/true loop"), ("rg", "rg over 10k files")):
        for box in ("anvil", "bwrap", "firejail"):
            n_s, n_b, t_s, t_b = f"{kind}_{box}", f"{kind}_bare", f"start_{box}", "start_bare"
            if not have(n_s, n_b, t_s, t_b):
                continue
            target = 1.05 if box == "anvil" else None
            show(f"{what}: {box} / bare, start-up excluded",
                 lambda s, b, ts, tb: (s - ts) / (b - tb), [n_s, n_b, t_s, t_b], target, "")
            show(f"{what}: {box} / bare, raw", lambda s, b: s / b, [n_s, n_b], None, "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
