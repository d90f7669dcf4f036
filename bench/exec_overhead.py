#!/usr/bin/python3
"""What the agent-facing front door costs over the sandbox alone, for `/bin/true`.

Usage: bench/exec_overhead.py ANVIL [--rounds N]

Rows, in rotating order per round, each run to exit in one generated workspace:
  sandbox          `anvil sandbox -- /bin/true` (the default policy)
  exec             `anvil exec --approval never -- /bin/true` (no user rules: the admin layer
                   as installed, an empty user directory, no workspace rules)
  exec, 1k rules   the same with a generated 1,000-rule user file (rules over 250 programs,
                   none for `true`: every one is indexed, parsed and checked at load)
  /bin/true        bare, the floor of starting any process
`--approval never` so that nothing can ask; `true` is harmless, so every row runs it.
Prints median, p10, p90 and the ratios exec / sandbox (the front door's own cost: rules,
approval, the report) with 90% bootstrap intervals (bench/summarize.py). A bench, not a test.
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import bootstrap, quantile  # noqa: E402


def timed(argv, cwd, env):
    """(ms until exit, exit status)."""
    t0 = time.perf_counter()
    code = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    return (time.perf_counter() - t0) * 1000, code


def thousand_rules():
    """1,000 rules over 250 programs (four each), with their match examples."""
    out = []
    for p in range(250):
        prog = f"tool{p}"
        out.append(f'[[rule]]\npattern = ["{prog}", "deploy"]\ndecision = "prompt"\n'
                   f'justification = "deploys"\nmatch = [["{prog}", "deploy"]]\n')
        out.append(f'[[rule]]\npattern = ["{prog}", ["build", "test"]]\ndecision = "allow"\n'
                   f'justification = "the usual work"\n'
                   f'match = [["{prog}", "test"]]\nnot_match = [["{prog}", "deploy"]]\n')
        out.append(f'[[rule]]\npattern = ["{prog}", "cache", "clean"]\ndecision = "prompt"\n'
                   f'justification = "deletes the cache"\n')
        out.append(f'[[rule]]\npattern = ["{prog}", "push", ["--force", "-f"]]\n'
                   f'decision = "forbidden"\njustification = "rewrites history"\n')
    return "\n".join(out)


def main():
    args = [a for a in sys.argv[1:]]
    rounds = 30
    if "--rounds" in args:
        i = args.index("--rounds")
        rounds = int(args[i + 1])
        del args[i:i + 2]
    if len(args) != 1:
        sys.exit(__doc__)
    anvil = os.path.abspath(args[0])
    root = tempfile.mkdtemp(prefix="anvil-exec-overhead.")
    try:
        ws = os.path.join(root, "ws")
        os.makedirs(ws)
        rules = os.path.join(root, "rules.toml")
        with open(rules, "w") as f:
            f.write(thousand_rules())
        env = {"PATH": "/usr/bin:/bin", "HOME": root, "XDG_CONFIG_HOME": os.path.join(root, "cfg"),
               "XDG_STATE_HOME": os.path.join(root, "state")}
        rows = {
            "sandbox": [anvil, "sandbox", "--", "/bin/true"],
            "exec": [anvil, "exec", "--approval", "never", "--", "/bin/true"],
            "exec, 1k rules": [anvil, "exec", "--approval", "never", "--rules", rules, "--",
                               "/bin/true"],
            "/bin/true": ["/bin/true"],
        }
        for name, argv in rows.items():
            out = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True)
            if out.returncode != 0:
                sys.exit(f"{name}: exit {out.returncode}: {out.stderr.strip()}")
        names = list(rows)
        times = {n: [] for n in names}
        for _ in range(3):  # warm-up
            for n in names:
                timed(rows[n], ws, env)
        for r in range(rounds):
            for n in names[r % len(names):] + names[:r % len(names)]:
                ms, code = timed(rows[n], ws, env)
                if code != 0:
                    sys.exit(f"{n}: exit {code}")
                times[n].append(ms)
        load = open("/proc/loadavg").read().split()[:3]
        print(f"anvil exec overhead bench: {rounds} rounds, load {load}")
        print(f"{'row':20} {'median':>9} {'p10':>9} {'p90':>9}")
        for n in names:
            s = sorted(times[n])
            print(f"  {n:18} {statistics.median(s):8.2f}ms {quantile(s, .1):8.2f}ms "
                  f"{quantile(s, .9):8.2f}ms")

        def ratio(label, a, b):
            lo, hi = bootstrap(lambda x, y: x / y, [a, b])
            print(f"  {label:34} {statistics.median(a) / statistics.median(b):6.3f} "
                  f"[{lo:.3f}, {hi:.3f}]")

        def diff(label, a, b):
            lo, hi = bootstrap(lambda x, y: x - y, [a, b])
            print(f"  {label:34} {statistics.median(a) - statistics.median(b):+6.2f}ms "
                  f"[{lo:+.2f}, {hi:+.2f}]")

        print("ratios and differences (90% bootstrap interval):")
        ratio("exec / sandbox", times["exec"], times["sandbox"])
        ratio("exec with 1k rules / sandbox", times["exec, 1k rules"], times["sandbox"])
        diff("exec - sandbox", times["exec"], times["sandbox"])
        diff("exec with 1k rules - exec", times["exec, 1k rules"], times["exec"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
