#!/usr/bin/python3
"""`anvil run` of a no-op Lua command, end to end, against a baseline of the same run.

Usage: bench/run_noop.py ANVIL [BASE_ANVIL] [--rounds N]

Each anvil binary runs with the anvil-gateway / anvil-plugin-host / anvil-exec-runner beside it
(as `anvil run` finds them). A generated plugin (one command that returns "ok", a grant of
fs.read only: no exec, no net) in a generated workspace, approved once. Per round, in rotating
order: `ANVIL run`, `BASE_ANVIL run` when given, `deno run` of an empty script when `deno` is on
PATH (the issue's anchor), and the host's own cold start of a process (`/bin/true`) as the floor.
Two times per `anvil run`: until its answer is on stdout (what a caller reading the output
waits for) and until the process has exited (what a shell waits for). Prints median, p10, p90 and
the ratios with 90% bootstrap intervals (bench/summarize.py). A bench, not a test.
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
    """(ms until the first line on stdout, ms until exit, exit status)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    p.stdout.readline()
    t_answer = time.perf_counter()
    p.stdout.read()
    p.wait()
    t_exit = time.perf_counter()
    return (t_answer - t0) * 1000, (t_exit - t0) * 1000, p.returncode


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    rounds = 30
    if "--rounds" in sys.argv:
        rounds = int(sys.argv[sys.argv.index("--rounds") + 1])
        args = [a for a in args if a != str(rounds)]
    anvils = {"after": os.path.abspath(args[0])}
    if len(args) > 1:
        anvils["before"] = os.path.abspath(args[1])
    root = tempfile.mkdtemp(prefix="anvil-run-noop.")
    try:
        ws = os.path.join(root, "ws")
        plugin = os.path.join(root, "noop")
        os.makedirs(ws)
        os.makedirs(plugin)
        with open(os.path.join(plugin, "anvil-plugin.toml"), "w") as f:
            f.write('id = "bench.noop"\nversion = "0.1.0"\nruntime = "lua"\nentry = "main.lua"\n\n'
                    '[permissions]\nfs.read = ["*.txt"]\n')
        with open(os.path.join(plugin, "main.lua"), "w") as f:
            f.write('anvil.command("noop", function(args) return "ok" end)\n')
        env = {"PATH": "/usr/bin:/bin", "HOME": root, "XDG_STATE_HOME": os.path.join(root, "state")}
        rows = {}
        for name, anvil in anvils.items():
            argv = [anvil, "run", "--workspace", ws, "--approve", plugin, "noop"]
            out = subprocess.run(argv, env=env, capture_output=True, text=True)
            if out.returncode != 0 or out.stdout.strip() != "ok":
                sys.exit(f"{name}: anvil run failed ({out.returncode}): {out.stderr.strip()}")
            rows[name] = [a for a in argv if a != "--approve"]
        deno = shutil.which("deno")
        if deno:
            empty = os.path.join(root, "empty.js")
            open(empty, "w").close()
            rows["deno run"] = [deno, "run", empty]
        rows["/bin/true"] = ["/bin/true"]
        names = list(rows)
        answer = {n: [] for n in names}
        exit_ = {n: [] for n in names}
        for r in range(3):  # warm-up
            for n in names:
                timed(rows[n], ws, env)
        for r in range(rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                a, e, code = timed(rows[n], ws, env)
                if code != 0:
                    sys.exit(f"{n}: exit {code}")
                answer[n].append(a)
                exit_[n].append(e)
        print(f"anvil run no-op bench: {rounds} rounds, load {open('/proc/loadavg').read().split()[:3]}")
        print(f"{'row':34} {'median':>9} {'p10':>9} {'p90':>9}")
        for n in names:
            for label, data in (("answer", answer[n]), ("exit", exit_[n])):
                if n == "/bin/true" and label == "answer":
                    continue
                s = sorted(data)
                print(f"  {n + ' (' + label + ')':32} {statistics.median(s):8.2f}ms "
                      f"{quantile(s, .1):8.2f}ms {quantile(s, .9):8.2f}ms")
        anchor = "deno run" if deno else "/bin/true"

        def ratio(label, a, b):
            lo, hi = bootstrap(lambda x, y: x / y, [a, b])
            print(f"  {label:52} {statistics.median(a) / statistics.median(b):6.2f} [{lo:.2f}, {hi:.2f}]")

        print("ratios (90% bootstrap interval):")
        for n in anvils:
            ratio(f"{n}: exit / {anchor}", exit_[n], exit_[anchor])
        if "before" in anvils:
            ratio("after / before, until the answer", answer["after"], answer["before"])
            ratio("after / before, until exit", exit_["after"], exit_["before"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
