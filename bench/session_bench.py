#!/usr/bin/python3
"""`anvil serve` session costs (issue 7). Prints numbers; asserts nothing.

  1. session start -> first command result, for a Lua and a JS plugin: from spawning
     `anvil serve` to the answer of the first anvil/runCommand sent right after initialize
     (gateway start, host start + lockdown + plugin load, one command round trip);
  2. reload time: anvil/reload round trip (T7 sequence: cancel, kill the process group, wait,
     revoke, new host, new token, plugin loaded) — target: median <= 20 ms;
  3. memory of a session with 1, 10 and 50 idle Lua plugins: RSS summed over anvil serve, the
     gateway and every host, and PSS (shared pages split between the processes that share
     them) — target: 50 plugins <= 300 MiB total.

  4. session start -> first command result in a 10,000-file git repository, for a plugin that
     may only read and one that may write (the gateway scans the workspace for what git runs
     only for a session with a writer); with --base-anvil, the same against another build,
     interleaved run by run.

Usage: bench/session_bench.py [--anvil build/release/anvil] [--runs 20] [--reloads 200]
                              [--base-anvil OTHER/build/release/anvil] [--tree-files 10000]

As root it re-runs itself under SCHED_FIFO priority 1 (`chrt -f 1`, inherited by anvil serve,
the gateway and the hosts), as sandbox_start.sh does: on a shared two-core box other people's
compilers otherwise preempt the timed processes. BENCH_RT=0 turns that off. The baseline row,
a bare fork+exec of /bin/true from this script measured the same way, is what to compare across
machines.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def default_anvil():
    for preset in ("release", "dev"):
        path = os.path.join(HERE, "..", "build", preset, "anvil")
        if os.path.exists(path):
            return os.path.abspath(path)
    sys.exit("no build/release/anvil or build/dev/anvil: build first, or pass --anvil")


class Serve:
    """A minimal JSON-RPC client of `anvil serve` (LSP framing on stdio)."""

    def __init__(self, anvil, workspace, plugin_dirs, state):
        args = [anvil, "serve", "--workspace", workspace, "--approve", "--no-default-plugin-path"]
        for d in plugin_dirs:
            args += ["--plugin-dir", d]
        env = {"PATH": "/usr/bin:/bin", "HOME": state, "XDG_STATE_HOME": state}
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.next_id = 1

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def read(self):
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            c = self.proc.stdout.read(1)
            if not c:
                raise RuntimeError("anvil serve closed its output")
            header += c
        length = int(header.split(b":")[1].split(b"\r")[0])
        return json.loads(self.proc.stdout.read(length))

    def request(self, method, params=None):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        while True:
            m = self.read()
            if m.get("id") == rid and "method" not in m:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m["result"]

    def wait_ready(self, count):
        while True:
            plugins = self.request("anvil/listPlugins")["plugins"]
            if sum(p["state"] == "ready" for p in plugins) == count:
                return plugins
            if any(p["state"] == "failed" for p in plugins):
                raise RuntimeError(f"a plugin failed: {plugins}")
            time.sleep(0.01)

    def close(self):
        try:
            self.request("shutdown")
            self.send({"jsonrpc": "2.0", "method": "exit"})
        finally:
            self.proc.wait(timeout=30)


def write_plugin(root, name, runtime, extra_permissions=""):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    entry = "main.js" if runtime == "js" else "main.lua"
    with open(os.path.join(d, "anvil-plugin.toml"), "w") as f:
        f.write(f'id = "bench.{name}"\nversion = "1.0.0"\nruntime = "{runtime}"\n'
                f'entry = "{entry}"\n\n[permissions]\nfs.read = ["src/**"]\n'
                f'{extra_permissions}')
    with open(os.path.join(d, entry), "w") as f:
        if runtime == "js":
            f.write("anvil.command('ping', () => sys.fs.read('src/a.c').length);\n")
        else:
            f.write("anvil.command('ping', function() return #sys.fs.read('src/a.c') end)\n")
    return d


def git_tree(root, files):
    """A git repository of `files` small files (100 a directory), committed."""
    os.makedirs(os.path.join(root, "src"))
    with open(os.path.join(root, "src", "a.c"), "w") as f:
        f.write("int main(void) { return 0; }\n")
    for i in range(files - 1):
        d = os.path.join(root, "tree", f"d{i // 100:03d}")
        if i % 100 == 0:
            os.makedirs(d)
        with open(os.path.join(d, f"f{i % 100:02d}.txt"), "w") as f:
            f.write(f"{i}\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": root, "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tree"]):
        subprocess.run(["git", "-C", root] + args, check=True, env=env)


def start_to_first_result(anvil, ws, d, name, state):
    t0 = time.perf_counter()
    s = Serve(anvil, ws, [d], state)
    s.request("initialize", {"capabilities": {}})
    s.request("anvil/runCommand", {"plugin": f"bench.{name}", "command": "ping"})
    ms = (time.perf_counter() - t0) * 1000
    s.close()
    return ms


def summary(label, samples_ms, target=None):
    s = sorted(samples_ms)
    p = lambda q: s[min(len(s) - 1, int(q * len(s)))]
    line = (f"{label:<44} median {statistics.median(s):7.2f} ms   p10 {p(0.1):7.2f}   "
            f"p90 {p(0.9):7.2f}   (n={len(s)})")
    if target:
        line += f"   target {target}"
    print(line)


def proc_tree(root_pid):
    """root_pid and its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                text = f.read()
        except OSError:
            continue
        ppid = int(text[text.rfind(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root_pid]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def memory_kib(pids):
    rss = pss = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1])
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1])
        except OSError:
            pass
    return rss, pss


def maybe_realtime():
    if os.geteuid() != 0 or os.environ.get("BENCH_RT", "1") == "0":
        return
    if os.sched_getscheduler(0) == os.SCHED_FIFO:
        return
    try:
        os.execvp("chrt", ["chrt", "-f", "1", sys.executable] + sys.argv)
    except OSError:
        print("note: chrt not available; running at normal priority")


def main():
    maybe_realtime()
    ap = argparse.ArgumentParser()
    ap.add_argument("--anvil", default=None)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--reloads", type=int, default=200)
    ap.add_argument("--base-anvil", default=None, help="another build, interleaved in 4.")
    ap.add_argument("--tree-files", type=int, default=10000)
    ap.add_argument("--only-tree", action="store_true", help="run 4. alone")
    a = ap.parse_args()
    anvil = os.path.abspath(a.anvil) if a.anvil else default_anvil()
    print(f"anvil: {anvil}")
    rt = os.sched_getscheduler(0) == os.SCHED_FIFO
    print(f"scheduling: {'SCHED_FIFO 1' if rt else 'normal'}; load average at start: "
          f"{os.getloadavg()[0]:.2f}")
    baseline = []
    for _ in range(50):
        t0 = time.perf_counter()
        subprocess.run(["/bin/true"], check=True)
        baseline.append((time.perf_counter() - t0) * 1000)
    base = statistics.median(baseline)
    summary("baseline: fork+exec /bin/true", baseline)
    with tempfile.TemporaryDirectory(prefix="anvil-session-bench-") as tmp:
        ws = os.path.join(tmp, "ws")
        os.makedirs(os.path.join(ws, "src"))
        with open(os.path.join(ws, "src", "a.c"), "w") as f:
            f.write("int main(void) { return 0; }\n")
        state = os.path.join(tmp, "state")
        plugins = os.path.join(tmp, "plugins")
        lua = write_plugin(plugins, "lua", "lua")
        js = write_plugin(plugins, "js", "js")

        if a.only_tree:
            tree_start(a, anvil, tmp, state)
            return
        print("\n1. session start -> first command result")
        for name, d in (("lua", lua), ("js", js)):
            samples = []
            for _ in range(a.runs):
                t0 = time.perf_counter()
                s = Serve(anvil, ws, [d], state)
                s.request("initialize", {"capabilities": {}})
                s.request("anvil/runCommand", {"plugin": f"bench.{name}", "command": "ping"})
                samples.append((time.perf_counter() - t0) * 1000)
                s.close()
            summary(f"  {name} plugin", samples)
            print(f"{'':<46}= {statistics.median(samples) / base:.1f} x baseline")

        print("\n2. reload (anvil/reload round trip, new host ready)")
        for name, d in (("lua", lua), ("js", js)):
            s = Serve(anvil, ws, [d], state)
            s.request("initialize", {"capabilities": {}})
            s.wait_ready(1)
            for _ in range(10):  # warm-up
                s.request("anvil/reload", {"plugin": f"bench.{name}"})
            samples = []
            for _ in range(a.reloads):
                t0 = time.perf_counter()
                r = s.request("anvil/reload", {"plugin": f"bench.{name}"})
                samples.append((time.perf_counter() - t0) * 1000)
                assert r["state"] == "ready", r
            summary(f"  {name} plugin", samples, "<= 20 ms median")
            print(f"{'':<46}= {statistics.median(samples) / base:.1f} x baseline")
            s.close()

        print("\n3. memory of a session with N idle Lua plugins (serve + gateway + hosts)")
        dirs = [write_plugin(plugins, f"idle{i}", "lua") for i in range(50)]
        for n in (1, 10, 50):
            s = Serve(anvil, ws, dirs[:n], state)
            s.request("initialize", {"capabilities": {}})
            s.wait_ready(n)
            time.sleep(0.2)
            pids = proc_tree(s.proc.pid)
            rss, pss = memory_kib(pids)
            target = "   target: <= 300 MiB" if n == 50 else ""
            print(f"  {n:>2} plugins: {len(pids):>3} processes   RSS sum {rss / 1024:7.1f} MiB   "
                  f"PSS sum {pss / 1024:7.1f} MiB   per host ~{pss / 1024 / max(n, 1):5.2f} MiB PSS"
                  f"{target}")
            s.close()
        tree_start(a, anvil, tmp, state)
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")


def tree_start(a, anvil, tmp, state):
    print(f"\n4. session start -> first command result in a {a.tree_files}-file git repository")
    ws = os.path.join(tmp, "tree-ws")
    git_tree(ws, a.tree_files)
    plugins = os.path.join(tmp, "tree-plugins")
    cases = (("reader", write_plugin(plugins, "reader", "lua")),
             ("writer", write_plugin(plugins, "writer", "lua", 'fs.write = ["notes/**"]\n')))
    builds = [("this", anvil)] + ([("base", os.path.abspath(a.base_anvil))] if a.base_anvil else [])
    for label, build in builds:
        print(f"  {label}: {build}")
    samples = {(b, n): [] for b, _ in builds for n, _ in cases}
    for _ in range(2):  # warm-up: page cache, grants stored
        for _, build in builds:
            for name, d in cases:
                start_to_first_result(build, ws, d, name, state)
    for i in range(a.runs):
        # Interleaved, and which build goes first alternates.
        order = builds if i % 2 == 0 else list(reversed(builds))
        for name, d in cases:
            for b, build in order:
                samples[(b, name)].append(start_to_first_result(build, ws, d, name, state))
    for name, _ in cases:
        for b, _ in builds:
            summary(f"  {name} plugin, {b}", samples[(b, name)])
        if a.base_anvil:
            this = statistics.median(samples[("this", name)])
            base = statistics.median(samples[("base", name)])
            print(f"{'':<46}this / base = {this / base:.2f} ({this - base:+.1f} ms)")


if __name__ == "__main__":
    main()
