#!/usr/bin/env python3
"""Anvil against its peers, in one run on this machine (issue 11). Writes docs/performance.md.

Run through bench/peers.sh, which installs the peers and builds Anvil first. This script only
measures and writes:

    bench/peers.py --build build/release --cache ~/.cache/anvil-bench [--quick] [--budget 600]
    bench/peers.py --from-json results.json          # rewrite the doc from a saved run

Method (hyperfine-like, in-process): every command is started with posix_spawn (no shell in
between), waited with wait4 (wall time and the ru_maxrss of the tree's largest process). Each
figure is measured in rounds; every round runs each peer in turn, the order reversed every
round, so a load burst from other work lands on every peer rather than on one. Warm-up runs
first. A peer that cannot run, or fails or times out mid-way, gets a row saying why; the rest
goes on. Nothing here connects anywhere but loopback: every peer runs with network off.
"""
import argparse
import ctypes
import datetime
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
NEEDLE = "ANVIL_BENCH_NEEDLE_7f3a"
LOOP = "for i in $(seq 100); do /bin/true; done"
START_T0 = time.monotonic()


def log(*a):
    print("peers:", *a, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- running one command
class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


signal.signal(signal.SIGALRM, _alarm)
DEVNULL = os.open(os.devnull, os.O_RDWR)


def run_once(argv, env=None, cwd=None, timeout=60.0, capture=False):
    """(seconds, exit status, maxrss KiB, stderr text or '') for one run of argv."""
    err_path = None
    fa = [(os.POSIX_SPAWN_DUP2, DEVNULL, 0), (os.POSIX_SPAWN_DUP2, DEVNULL, 1)]
    if capture:
        fd, err_path = tempfile.mkstemp(prefix="peers-err.")
        fa.append((os.POSIX_SPAWN_DUP2, fd, 2))
    else:
        fa.append((os.POSIX_SPAWN_DUP2, DEVNULL, 2))
    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    t0 = time.perf_counter()
    try:
        pid = os.posix_spawn(argv[0], argv, env if env is not None else os.environ,
                             file_actions=fa, setsid=True)
    except OSError as e:
        os.chdir(old)
        return None, 127, 0, str(e)
    finally:
        if capture:
            os.close(fd)
    os.chdir(old)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    timed_out = False
    try:
        _, status, ru = os.wait4(pid, 0)
    except Timeout:
        timed_out = True
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
        _, status, ru = os.wait4(pid, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    dt = time.perf_counter() - t0
    text = ""
    if err_path:
        with open(err_path, errors="replace") as f:
            text = f.read()
        os.unlink(err_path)
    if timed_out:
        return None, 124, ru.ru_maxrss, "timed out after %.0f s" % timeout
    code = os.waitstatus_to_exitcode(status)
    return dt, code, ru.ru_maxrss, text


def stats(xs):
    if not xs:
        return None
    v = sorted(xs)

    def pct(p):
        k = p * (len(v) - 1)
        lo = int(k)
        hi = min(lo + 1, len(v) - 1)
        return v[lo] + (v[hi] - v[lo]) * (k - lo)

    return {"n": len(v), "median": pct(0.5), "p10": pct(0.1), "p90": pct(0.9)}


# ---------------------------------------------------------------- the sandbox peers
class Peer:
    def __init__(self, key, label, wrap, env=None, note=""):
        self.key, self.label, self.wrap, self.env, self.note = key, label, wrap, env, note
        self.reason = None  # why it could not run
        self.start_only = False  # a reference row of the start figure, not a sandbox

    def argv(self, cmd):
        return self.wrap(cmd)


def make_peers(a, ws):
    cache = a.cache
    peers = []
    env = dict(os.environ)
    peers.append(Peer("bare", "bare (no sandbox)", lambda c: c))
    # The kernel floor (bench/sandbox_floor.c): new user/mount/pid/ipc/net namespaces, a pid-1
    # init and the exec, nothing else. Not a sandbox (no mount view, Landlock or seccomp): the
    # least any sandbox with this isolation can cost on this machine. Start figure only. With
    # --layers, the same plus every layer Anvil's default policy requires, in its cheapest C form.
    floor = os.path.join(a.build, "bench", "sandbox_floor")
    for key, label, flags, note in (
            ("floor", "kernel floor (namespaces + init + exec)", [],
             "bench/sandbox_floor.c: clone3 with new user/mount/pid/ipc/net namespaces, "
             "uid/gid map, init vforks the command; no mounts, Landlock or seccomp. "
             "Start-up figure only: what the kernel and this machine charge before any "
             "sandbox does its own work"),
            ("floor_layers", "floor + every required layer (minimal C)", ["--layers", ws],
             "bench/sandbox_floor.c --layers: the floor plus a pids cgroup (root), the mount "
             "view (tmpfs root, runtime roots and .git read-only, workspace read-write, "
             "/dev, /proc, /tmp, pivot_root), setsid, rlimits, no_new_privs, Landlock "
             "(files, TCP, scoping) and the default seccomp filter's verdicts; no checks or report. "
             "Start-up figure only: the least a sandbox with Anvil's walls costs here")):
        p = Peer(key, label, lambda c, flags=flags: [floor] + flags + c, note=note)
        p.start_only = True
        if not os.access(floor, os.X_OK):
            p.reason = "%s not built (cmake --build --preset release --target sandbox_floor)" % floor
        peers.append(p)
    anvil = os.path.join(a.build, "anvil")
    peers.append(Peer("anvil", "anvil sandbox", lambda c: [anvil, "sandbox", "--cwd", ws, "--"] + c,
                      note="workspace-write, network none: mount view, Landlock, seccomp, "
                           "user/pid/net/ipc namespaces, no_new_privs, rlimits"))
    bwrap = shutil.which("bwrap")
    p = Peer("bwrap", "bubblewrap", lambda c: [bwrap, "--ro-bind", "/", "/", "--dev", "/dev",
                                               "--proc", "/proc", "--bind", ws, ws,
                                               "--unshare-all", "--die-with-parent",
                                               "--new-session", "--chdir", ws] + c,
             note="--ro-bind / / --bind WS WS --unshare-all --die-with-parent --new-session "
                  "(namespaces only: no Landlock, no seccomp filter)")
    if not bwrap:
        p.reason = "bwrap not installed (Debian package bubblewrap)"
    peers.append(p)
    fj = shutil.which("firejail")
    p = Peer("firejail", "firejail", lambda c: [fj, "--quiet", "--noprofile", "--read-only=/",
                                                "--read-write=" + ws, "--net=none", "--"] + c,
             note="--noprofile --read-only=/ --read-write=WS --net=none")
    if not fj:
        p.reason = "firejail not installed (Debian package firejail)"
    peers.append(p)
    npm_bin = os.path.join(cache, "npm", "node_modules", ".bin")
    codex_env = dict(env, CODEX_HOME=os.path.join(cache, "codex-home"))
    codex = os.path.join(npm_bin, "codex")
    p = Peer("codex", "codex sandbox -P :workspace",
             lambda c: [codex, "sandbox", "-P", ":workspace", "-C", ws, "--"] + c, env=codex_env,
             note="the npm launcher (node) + codex + codex-linux-sandbox + bwrap; profile "
                  ":workspace (writable WS, /tmp and $TMPDIR; .git/.codex/.agents read-only; "
                  "network restricted)")
    if not os.access(codex, os.X_OK):
        p.reason = "npm package @openai/codex not installed (npm failed; see the install log)"
    peers.append(p)
    native = os.path.join(cache, "npm", "node_modules", "@openai", "codex-linux-x64", "vendor",
                          "x86_64-unknown-linux-musl", "bin", "codex")
    helper = os.path.join(cache, "codex-linux-sandbox", "codex-linux-sandbox")
    profile = json.dumps({
        "type": "managed",
        "file_system": {"type": "restricted", "entries": [
            {"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"},
            {"path": {"type": "path", "path": ws}, "access": "write"},
            {"path": {"type": "path", "path": ws + "/.git"}, "access": "read",
             "missing_path_behavior": "skip"},
            {"path": {"type": "path", "path": ws + "/.codex"}, "access": "read",
             "missing_path_behavior": "skip"}]},
        "network": "restricted"})
    p = Peer("codex_helper", "codex-linux-sandbox (direct)",
             lambda c: [helper, "--sandbox-policy-cwd", ws, "--command-cwd", ws,
                        "--permission-profile", profile, "--"] + c, env=codex_env,
             note="the helper codex ships (the codex binary run as argv[0] codex-linux-sandbox) "
                  "with the :workspace profile's JSON minus /tmp: bwrap + seccomp")
    if not os.access(native, os.X_OK):
        p.reason = "codex native binary not found (npm optional dependency @openai/codex-linux-x64)"
    else:
        os.makedirs(os.path.dirname(helper), exist_ok=True)
        if not os.path.islink(helper) or os.readlink(helper) != native:
            if os.path.lexists(helper):
                os.unlink(helper)
            os.symlink(native, helper)
    peers.append(p)
    srt = os.path.join(npm_bin, "srt")
    settings = os.path.join(a.tmp, "srt-settings.%08x.json" % (hash(ws) & 0xffffffff))
    with open(settings, "w") as f:
        json.dump({"filesystem": {"denyRead": [], "allowWrite": [ws], "denyWrite": []},
                   "network": {"allowedDomains": [], "deniedDomains": []}}, f)
    p = Peer("srt", "srt (sandbox-runtime)", lambda c: [srt, "-s", settings, "--"] + c,
             note="-s settings.json: allowWrite [WS], allowedDomains [] (node + bwrap + socat "
                  "bridges + its HTTP/SOCKS proxy)")
    if not os.access(srt, os.X_OK):
        p.reason = "npm package @anthropic-ai/sandbox-runtime not installed"
    peers.append(p)
    return peers


def probe(peer, ws, timeout):
    """Checks that the peer runs, writes the workspace, and cannot write /etc."""
    if peer.reason:
        return
    marker = os.path.join(ws, ".peers-probe")
    script = ("touch %s || exit 41; if touch /etc/.anvil-peers-probe 2>/dev/null; then "
              "rm -f /etc/.anvil-peers-probe; exit 42; fi; exit 0" % marker)
    dt, code, _, err = run_once(peer.argv(["/bin/sh", "-c", script]), env=peer.env, cwd=ws,
                                timeout=timeout, capture=True)
    tail = " ".join(err.strip().splitlines()[-3:])[:300]
    if os.path.exists(marker):
        os.unlink(marker)
    if peer.key in ("bare", "floor"):
        if code not in (0, 41, 42):
            peer.reason = "exit status %d%s" % (code, ": " + tail if tail else "")
        return
    if code == 41:
        peer.reason = "ran, but could not write the workspace: " + tail
    elif code == 42:
        peer.reason = "ran, but /etc was writable inside (not the same policy)"
    elif code != 0:
        peer.reason = "exit status %d%s" % (code, ": " + tail if tail else "")


def measure(peers, cmd, a, label, runs, warmup, ws):
    """Interleaved rounds; returns {key: {"times": [...], "maxrss": [...], "error": str}}."""
    live = [p for p in peers if not p.reason]
    res = {p.key: {"times": [], "maxrss": [], "error": None} for p in live}
    rounds = a.rounds
    per_round = max(1, -(-runs // rounds))
    cost = {}
    for p in live:  # warm-up; the last warm-up run is the peer's cost estimate
        for _ in range(max(1, warmup)):
            dt, code, _, err = run_once(p.argv(cmd), env=p.env, cwd=ws, timeout=a.timeout,
                                        capture=True)
            if code != 0:
                res[p.key]["error"] = "exit status %d: %s" % (code, " ".join(
                    err.strip().splitlines()[-2:])[:300])
                break
            cost[p.key] = dt
    order = [p for p in live if not res[p.key]["error"]]
    # Slow peers get fewer runs per round so that the figure stays within its budget: each
    # peer gets an equal share of the time (at least one run per round).
    share = a.figure_budget / max(1, len(order)) / rounds
    n_round = {p.key: max(1, min(per_round, int(share / cost[p.key]))) for p in order}
    deadline = time.monotonic() + a.figure_budget
    for r in range(rounds):
        seq = order if r % 2 == 0 else list(reversed(order))
        for p in seq:
            if res[p.key]["error"]:
                continue
            for _ in range(n_round[p.key]):
                dt, code, rss, err = run_once(p.argv(cmd), env=p.env, cwd=ws, timeout=a.timeout,
                                              capture=False)
                if code != 0:
                    res[p.key]["error"] = "exit status %d in round %d%s" % (
                        code, r + 1, " (" + err + ")" if err else "")
                    break
                res[p.key]["times"].append(dt)
                res[p.key]["maxrss"].append(rss)
        log("  %s: round %d/%d done (%.0f s)" % (label, r + 1, rounds,
                                                 time.monotonic() - START_T0))
        if time.monotonic() > deadline and r + 1 < rounds:
            log("  %s: over its time budget, stopping after %d rounds" % (label, r + 1))
            res["_note"] = "stopped after %d of %d rounds (time budget)" % (r + 1, rounds)
            break
    out = {}
    for k, v in res.items():
        if k == "_note":
            out[k] = v
            continue
        out[k] = {"stats": stats(v["times"]), "error": v["error"]}
    return out


# ---------------------------------------------------------------- memory (cgroup v1/v2 peak)
def cgroup_base():
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return None, None
    for line in lines:
        hid, ctrls, path = line.split(":", 2)
        if "memory" in ctrls.split(","):
            base = "/sys/fs/cgroup/memory" + path
            if os.path.exists(base + "/memory.max_usage_in_bytes"):
                return base, "v1"
    for line in lines:
        if line.startswith("0::"):
            for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
                base = root + line[3:]
                if os.path.exists(base + "/cgroup.subtree_control"):
                    return base, "v2"
    return None, None


def cgroup_peak(argv, env, cwd, timeout):
    """Peak memory (KiB) of every process the command starts, from a fresh memory cgroup."""
    base, kind = cgroup_base()
    if not base:
        return None, "no writable memory cgroup"
    cg = os.path.join(base, "anvil-peers-%d" % os.getpid())
    try:
        os.mkdir(cg)
    except OSError as e:
        return None, "cannot create a memory cgroup: %s" % e
    try:
        procs = os.path.join(cg, "cgroup.procs")

        def enter():
            with open(procs, "w") as f:
                f.write(str(os.getpid()))

        try:
            subprocess.run(argv, env=env, cwd=cwd, timeout=timeout, preexec_fn=enter,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
        except subprocess.TimeoutExpired:
            return None, "timed out"
        f = "memory.max_usage_in_bytes" if kind == "v1" else "memory.peak"
        with open(os.path.join(cg, f)) as fh:
            return int(fh.read()) // 1024, None
    finally:
        for _ in range(50):
            try:
                os.rmdir(cg)
                break
            except OSError:
                time.sleep(0.1)


# ---------------------------------------------------------------- leftovers
LEFTOVER_CHILD = r'''
import ctypes, os, subprocess, sys, time, json
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans of the peer come to us
if libc.unshare(0x00020000) != 0:  # CLONE_NEWNS
    print(json.dumps({"error": "unshare(CLONE_NEWNS) failed"})); sys.exit()
subprocess.run(["mount", "--make-rprivate", "/"], check=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=1777", "peers-tmp", "/tmp"], check=True)
ws, home = sys.argv[1], "/tmp/.peers-home"
os.makedirs(home)
os.makedirs(ws)
os.environ["HOME"] = home
os.environ.pop("TMPDIR", None)
def snap(root):
    out = {}
    for d, dirs, files in os.walk(root):
        for n in dirs + files:
            p = os.path.join(d, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            out[p] = "socket" if (st.st_mode & 0o170000) == 0o140000 else (
                "dir" if os.path.isdir(p) and not os.path.islink(p) else "file")
    return out
before = {**snap("/tmp"), **snap(ws)}
argv = json.loads(sys.argv[2])
env = dict(os.environ)
env.update(json.loads(sys.argv[3]))
r = subprocess.run(argv, env=env, cwd=ws, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                   timeout=60)
time.sleep(0.5)
me = str(os.getpid())
procs = []
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        with open("/proc/%s/stat" % pid) as f:
            st = f.read()
        ppid = st.rsplit(")", 1)[1].split()[1]
        state = st.rsplit(")", 1)[1].split()[0]
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        if not cmd:
            with open("/proc/%s/comm" % pid) as f:
                cmd = "[" + f.read().strip() + "]"
    except OSError:
        continue
    if ppid == me:
        procs.append({"pid": int(pid), "state": state, "cmd": cmd[:120]})
after = {**snap("/tmp"), **snap(ws)}
new = sorted((p, t) for p, t in after.items() if p not in before)
for p in procs:
    try:
        os.kill(p["pid"], 9)
    except OSError:
        pass
print(json.dumps({"exit": r.returncode, "stderr": r.stderr.decode(errors="replace")[-300:],
                  "processes": procs,
                  "files": [{"path": p, "type": t} for p, t in new if not p.startswith(home + "/")],
                  "home": [p[len(home) + 1:] for p, t in new if p.startswith(home + "/")]}))
'''


def leftovers(peer, a):
    """Runs the peer once in a private /tmp (its own mount namespace) as a child subreaper with
    an empty HOME; reports processes alive after it returned and files it left in /tmp, the
    workspace or HOME. Two commands: /bin/true, and a shell that starts `sleep 30 &`."""
    if peer.reason:
        return None
    out = {}
    for tag, cmd in (("true", ["/bin/true"]),
                     ("background", ["/bin/sh", "-c", "sleep 30 & exit 0"])):
        ws = "/tmp/anvil-peers-left-ws"  # exists only in the child's private /tmp
        p = make_peers_for_ws(a, ws)[peer.key]
        env_over = {}
        if p.env:
            env_over = {k: v for k, v in p.env.items() if os.environ.get(k) != v}
        try:
            r = subprocess.run([sys.executable, "-c", LEFTOVER_CHILD, ws, json.dumps(p.argv(cmd)),
                                json.dumps(env_over)], capture_output=True, timeout=90)
            try:
                out[tag] = json.loads(r.stdout.decode().strip().splitlines()[-1])
            except (ValueError, IndexError):
                out[tag] = {"error": (r.stderr.decode(errors="replace")[-300:] or "no output")}
        except subprocess.TimeoutExpired:
            out[tag] = {"error": "timed out"}
    return out


_peer_cache = {}


def make_peers_for_ws(a, ws):
    if ws not in _peer_cache:
        _peer_cache[ws] = {p.key: p for p in make_peers(a, ws)}
    return _peer_cache[ws]


# ---------------------------------------------------------------- concurrency (scale)
def fcntl_append(fd):
    import fcntl
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)


def concurrent_start(peer, n, ws, timeout):
    """Wall time (s) for n concurrent `peer /bin/true` to all finish; None + reason on failure."""
    pids = []
    errfd, errpath = tempfile.mkstemp(prefix="peers-conc.")
    os.set_blocking(errfd, True)
    fcntl_append(errfd)
    t0 = time.perf_counter()
    for _ in range(n):
        pids.append(os.posix_spawn(peer.argv(["/bin/true"])[0], peer.argv(["/bin/true"]),
                                   peer.env or os.environ,
                                   file_actions=[(os.POSIX_SPAWN_DUP2, DEVNULL, 0),
                                                 (os.POSIX_SPAWN_DUP2, DEVNULL, 1),
                                                 (os.POSIX_SPAWN_DUP2, errfd, 2)],
                                   setsid=True))
    os.close(errfd)
    bad = 0
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        for pid in pids:
            _, st, _ = os.wait4(pid, 0)
            if os.waitstatus_to_exitcode(st) != 0:
                bad += 1
    except Timeout:
        for pid in pids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in pids:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        return None, "timed out after %.0f s" % timeout
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    dt = time.perf_counter() - t0
    with open(errpath, errors="replace") as f:
        errs = [l.strip() for l in f if l.strip()]
    os.unlink(errpath)
    if bad:
        # The most frequent error line, with the workspace path shortened.
        common = max(set(errs), key=errs.count) if errs else ""
        return None, "%d of %d failed%s" % (bad, n, ("; most often: " + common.replace(
            ws, "WS"))[:200] if common else "")
    return dt, None


# ---------------------------------------------------------------- Deno (the plugin peer)
DENO_HOST = r'''
// A Deno "plugin host": answers one line per request on stdin, like an editor talking to a
// plugin process. Requests: noop | read N | rg N.
const ws = Deno.args[0];
const dec = new TextDecoder(), enc = new TextEncoder();
let buf = "";
for await (const chunk of Deno.stdin.readable) {
  buf += dec.decode(chunk);
  let i;
  while ((i = buf.indexOf("\n")) >= 0) {
    const [op, arg] = buf.slice(0, i).split(" ");
    buf = buf.slice(i + 1);
    let out = "ok";
    if (op === "read") {
      let n = 0;
      for (let k = 0; k < Number(arg); k++) n += Deno.readTextFileSync(ws + "/file4k.txt").length;
      out = String(n);
    } else if (op === "rg") {
      for (let k = 0; k < Number(arg); k++) {
        const r = new Deno.Command("rg", {args: ["-c", "NEEDLE", "tree"], cwd: ws,
                                          stdout: "piped", stderr: "piped"}).outputSync();
        if (r.code !== 0) throw new Error("rg exit " + r.code);
      }
      out = "done";
    }
    Deno.stdout.writeSync(enc.encode(out + "\n"));
  }
}
'''


def deno_rows(a, ws, quick):
    deno = a.deno
    if not deno or not os.access(deno, os.X_OK):
        return {"error": "deno not installed (npm package deno into %s failed)" % a.cache}
    env = dict(os.environ, DENO_DIR=os.path.join(a.cache, "deno-dir"), NO_COLOR="1",
               DENO_NO_UPDATE_CHECK="1")
    d = os.path.join(a.tmp, "deno")
    os.makedirs(d, exist_ok=True)
    empty = os.path.join(d, "empty.js")
    open(empty, "w").close()
    host = os.path.join(d, "host.js")
    with open(host, "w") as f:
        f.write(DENO_HOST)
    flags = ["--no-prompt", "--allow-read=" + ws, "--allow-run=rg"]
    res = {"flags": " ".join(flags).replace(ws, "WS")}
    colds = 8 if quick else 30
    cold = []
    for i in range(colds + 2):
        dt, code, _, err = run_once([deno, "run"] + flags + [empty], env=env, timeout=a.timeout,
                                    capture=True)
        if code != 0:
            return {"error": "deno run empty.js: exit %d: %s" % (code, err.strip()[-300:])}
        if i >= 2:
            cold.append(dt * 1000)
    res["cold_ms"] = stats(cold)
    p = subprocess.Popen([deno, "run"] + flags + [host, ws], env=env, cwd=ws,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def call(line):
        p.stdin.write((line + "\n").encode())
        p.stdin.flush()
        r = p.stdout.readline()
        if not r:
            raise RuntimeError(p.stderr.read().decode(errors="replace")[-300:])
        return r.decode().strip()

    try:
        call("noop")
        calls = 300 if quick else 2000
        noop = []
        for _ in range(calls):
            t0 = time.perf_counter()
            call("noop")
            noop.append((time.perf_counter() - t0) * 1e6)
        res["noop_us"] = stats(noop)
        rd, rg = [], []
        execs = 5 if quick else 20
        for _ in range(3 if quick else 7):
            t0 = time.perf_counter()
            got = call("read %d" % calls)
            rd.append((time.perf_counter() - t0) * 1e6 / calls)
            if got != str(4096 * calls):
                raise RuntimeError("read returned " + got)
        for _ in range(execs):  # one rg per request, as on Anvil's side
            t0 = time.perf_counter()
            call("rg 1")
            rg.append((time.perf_counter() - t0) * 1000)
        res["read4k_us"] = stats(rd)
        res["exec_rg_ms"] = stats(rg)
    except (RuntimeError, BrokenPipeError) as e:
        res["error"] = "deno host: %s" % e
    finally:
        p.kill()
        p.wait()
    # Idle memory of N Deno processes (the host script waiting on stdin), for the scale plot.
    scale = []
    for n in a.scale:
        procs = [subprocess.Popen([deno, "run"] + flags + [host, ws], env=env, cwd=ws,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL) for _ in range(n)]
        t0 = time.perf_counter()
        ok = 0
        for q in procs:
            try:
                q.stdin.write(b"noop\n")
                q.stdin.flush()
                ok += q.stdout.readline().strip() == b"ok"
            except BrokenPipeError:
                pass
        start_ms = (time.perf_counter() - t0) * 1000
        time.sleep(0.2)
        rss = pss = 0
        for q in procs:
            rss += proc_kib(q.pid, "Rss:")
            pss += proc_kib(q.pid, "Pss:")
        for q in procs:
            q.kill()
        for q in procs:
            q.wait()
        scale.append({"n": n, "ok": ok, "rss_kib": rss, "pss_kib": pss, "start_ms": start_ms})
    res["scale"] = scale
    return res


def proc_kib(pid, field):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# ---------------------------------------------------------------- the workspace
def make_tree(ws):
    import random as rnd
    rng = rnd.Random(20261201)
    words = ("alpha beta gamma delta sandbox anvil kernel mount landlock seccomp namespace "
             "workspace plugin editor buffer cursor").split()
    n = 0
    for x in range(10):
        for y in range(10):
            d = os.path.join(ws, "tree", "d%02d" % x, "s%02d" % y)
            os.makedirs(d)
            for c in range(100):
                lines = [" ".join(rng.choice(words) for _ in range(8))
                         for _ in range(rng.randint(3, 12))]
                if n % 50 == 7:
                    lines.insert(rng.randrange(len(lines) + 1), "found: %s NEEDLE here" % NEEDLE)
                with open(os.path.join(d, "f%03d.txt" % c), "w") as f:
                    f.write("\n".join(lines) + "\n")
                n += 1
    with open(os.path.join(ws, "file4k.txt"), "w") as f:
        f.write("d" * 4096)
    return n


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                mem = int(line.split()[1]) // 1024
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    virt = subprocess.run(["systemd-detect-virt"], capture_output=True, text=True).stdout.strip() \
        if shutil.which("systemd-detect-virt") else ""
    return {"kernel": platform.release(), "cpu": cpu, "cores": os.cpu_count(), "mem_mib": mem,
            "load_start": load, "virt": virt,
            "os": subprocess.run(["sh", "-c", ". /etc/os-release; echo $PRETTY_NAME"],
                                 capture_output=True, text=True).stdout.strip(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def versions(a):
    v = {}

    def ver(key, argv, env=None):
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
            v[key] = (r.stdout or r.stderr).strip().splitlines()[0][:80]
        except (OSError, IndexError, subprocess.TimeoutExpired):
            pass

    ver("bwrap", ["bwrap", "--version"])
    ver("firejail", ["firejail", "--version"])
    ver("rg", ["rg", "--version"])
    npm_bin = os.path.join(a.cache, "npm", "node_modules", ".bin")
    ver("codex", [os.path.join(npm_bin, "codex"), "--version"],
        env=dict(os.environ, CODEX_HOME=os.path.join(a.cache, "codex-home")))
    ver("srt", [os.path.join(npm_bin, "srt"), "--version"])
    if a.deno:
        ver("deno", [a.deno, "--version"])
    ver("node", ["node", "--version"])
    try:
        v["anvil"] = subprocess.run(["git", "-C", REPO, "describe", "--always", "--dirty"],
                                    capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    return v


# ---------------------------------------------------------------- profile
def profile(a, ws):
    """Where `anvil sandbox -- /bin/true` spends its time: callgrind of the supervising process
    and, since callgrind cannot see the kernel (and older valgrind cannot run Landlock at all),
    a syscall summary from `strace -f -c -w` (wall time per syscall, children included)."""
    res = {}
    anvil = os.path.join(a.build, "anvil")
    cmd = [anvil, "sandbox", "--cwd", ws, "--", "/bin/true"]
    if shutil.which("valgrind"):
        out = os.path.join(a.tmp, "callgrind.out")
        try:
            r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out] + cmd,
                               cwd=ws, capture_output=True, text=True, timeout=240)
            if r.returncode != 0:
                lines = [l for l in r.stderr.splitlines() if "anvil" in l or "unhandled" in l]
                res["callgrind_error"] = "exit %d under valgrind: %s" % (
                    r.returncode, " / ".join(lines[-3:])[:400])
            if os.path.exists(out):
                ann = subprocess.run(["callgrind_annotate", "--inclusive=no", out],
                                     capture_output=True, text=True).stdout
                top = []
                for line in ann.splitlines():
                    t = line.strip()
                    if "PROGRAM TOTALS" in t:
                        res["callgrind_total_ir"] = t.split()[0]
                    elif t[:1].isdigit() and "(" in t and len(top) < 8:
                        top.append(t[:150])
                res["callgrind_top"] = top
        except subprocess.TimeoutExpired:
            res["callgrind_error"] = "valgrind timed out"
    else:
        res["callgrind_error"] = "valgrind not installed"
    if shutil.which("strace"):
        out = os.path.join(a.tmp, "strace.txt")
        try:
            r = subprocess.run(["strace", "-f", "-c", "-w", "-o", out] + cmd, cwd=ws,
                               capture_output=True, text=True, timeout=120)
            waits = {"poll", "ppoll", "wait4", "waitid", "epoll_wait", "epoll_pwait", "select",
                     "pselect6", "read", "futex", "clock_nanosleep", "nanosleep", "total"}
            rows = []
            with open(out) as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] not in waits:
                        calls = parts[3]
                        rows.append((float(parts[1]), parts[-1], calls))
            rows.sort(reverse=True)
            res["strace_top"] = ["%-16s %8.2f ms  %s calls" % (n, t * 1000, c)
                                 for t, n, c in rows[:10]]
            res["strace_exit"] = r.returncode
        except (subprocess.TimeoutExpired, OSError) as e:
            res["strace_error"] = str(e)
    return res


def peer_litter():
    """Files the peers are known to leave in /tmp (see the doc's leftovers table)."""
    import glob
    out = []
    for pat in ("srt-mux-*.sock", "claude-*.sock", "codex-daemon-*",
                "codex-bwrap-synthetic-mount-targets-*"):
        out += glob.glob(os.path.join("/tmp", pat))
    return out


def memory(peers, a, ws, reps):
    """Peak memory of a sandboxed /bin/true: every process (cgroup) and the largest one."""
    mem = {}
    for p in peers:
        if p.reason:
            continue
        vals, why = [], None
        for _ in range(reps):
            kib, why = cgroup_peak(p.argv(["/bin/true"]), p.env, ws, a.timeout)
            if kib is None:
                break
            vals.append(kib)
        mem[p.key] = {"cgroup_peak_kib": stats(vals), "error": why if not vals else None}
        if os.access("/usr/bin/time", os.X_OK):
            mx = []
            for _ in range(reps):
                fd, fn = tempfile.mkstemp(prefix="peers-time.")
                os.close(fd)
                _, code, _, _ = run_once(["/usr/bin/time", "-o", fn, "-f", "%M"] +
                                         p.argv(["/bin/true"]), env=p.env, cwd=ws,
                                         timeout=a.timeout)
                with open(fn) as f:
                    txt = f.read().strip().splitlines()
                os.unlink(fn)
                if code == 0 and txt and txt[-1].isdigit():
                    mx.append(int(txt[-1]))
            mem[p.key]["max_rss_kib"] = stats(mx)
    return mem


def scale_start(peers, a, ws):
    sc = {}
    for p in peers:
        # srt and the codex launcher take seconds each: 100 of them would eat the whole budget.
        if p.reason or p.key not in ("anvil", "bwrap", "firejail", "codex_helper"):
            continue
        rows = []
        for n in a.scale:
            dt, why = concurrent_start(p, n, ws, max(a.timeout, n * 2.0))
            rows.append({"n": n, "wall_s": dt, "error": why})
        sc[p.key] = rows
    return sc


def anvil_plugins(a, ws):
    pp = os.path.join(a.build, "bench", "plugin_peers")
    if not os.access(pp, os.X_OK):
        return {"error": "%s not built" % pp}
    argv = [pp, a.build, ws, "--scale", ",".join(map(str, a.scale))]
    if a.quick:
        argv.append("--quick")
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=max(120, a.budget / 3))
    except subprocess.TimeoutExpired:
        return {"error": "plugin_peers timed out"}
    if r.returncode != 0:
        return {"error": "plugin_peers exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])}
    return json.loads(r.stdout)


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(REPO, "build", "release"))
    ap.add_argument("--cache", default=os.path.expanduser("~/.cache/anvil-bench"))
    ap.add_argument("--deno", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--budget", type=float, default=600, help="whole run, seconds")
    ap.add_argument("--timeout", type=float, default=30, help="one command, seconds")
    ap.add_argument("--out", default=os.path.join(REPO, "docs", "performance.md"))
    ap.add_argument("--json", default=None, help="also save the raw results here")
    ap.add_argument("--from-json", default=None, help="only rewrite the doc from saved results")
    ap.add_argument("--notes", default=None, help="install notes (one per line) from peers.sh")
    ap.add_argument("--scale", default="1,10,100")
    ap.add_argument("--no-profile", action="store_true")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.scale = [int(x) for x in a.scale.split(",")]
    if a.from_json:
        with open(a.from_json) as f:
            R = json.load(f)
        write_doc(R, a.out)
        return
    if a.deno is None:
        d = os.path.join(a.cache, "deno", "node_modules", ".bin", "deno")
        a.deno = d if os.access(d, os.X_OK) else None
    a.rounds = 3 if a.quick else 5
    # Figures share the budget: start-up and the plugin rows are cheap, rg and srt are not.
    a.figure_budget = a.budget * (0.12 if a.quick else 0.15)
    # The workspace: a tmpfs of its own when root (10,000 files are made and deleted; on a disk
    # mounted with `discard` deleting them takes half a minute), under /tmp, not /dev/shm: srt
    # mounts a fresh /dev and Deno refuses --allow-read for paths under /dev.
    base = tempfile.mkdtemp(prefix="anvil-peers-ws.")
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256m,mode=755", "anvil-peers-ws", base],
        capture_output=True).returncode == 0
    ws = os.path.join(base, "ws")
    os.mkdir(ws)
    os.makedirs(a.cache, exist_ok=True)
    a.tmp = tempfile.mkdtemp(prefix="run.", dir=a.cache)
    R = {"machine": machine(), "quick": a.quick, "rounds": a.rounds, "notes": [],
         "budget_s": a.budget}
    if a.notes and os.path.exists(a.notes):
        with open(a.notes) as f:
            R["notes"] = [l.strip() for l in f if l.strip()]
    log("machine:", R["machine"])
    litter0 = set(peer_litter())
    deadline = START_T0 + a.budget
    skipped = R.setdefault("skipped", [])

    def stop(signum, frame):
        raise KeyboardInterrupt()

    signal.signal(signal.SIGTERM, stop)
    try:
        R["versions"] = versions(a)
        nfiles = make_tree(ws)
        R["tree_files"] = nfiles
        peers = make_peers(a, ws)
        _peer_cache[ws] = {p.key: p for p in peers}
        for p in peers:
            probe(p, ws, a.timeout)
            log("peer %-13s %s" % (p.key, "ok" if not p.reason else "could not run: " + p.reason))
        R["peers"] = [{"key": p.key, "label": p.label, "note": p.note, "reason": p.reason}
                      for p in peers]
        q = a.quick
        R["figures"] = {}
        rg = ["/usr/bin/rg", "--no-config", "-c", NEEDLE, os.path.join(ws, "tree")]

        def fig(name, cmd, runs, warmup, share):
            a.figure_budget = a.budget * share
            ps = peers if name == "start" else [p for p in peers if not p.start_only]
            R["figures"][name] = measure(ps, cmd, a, name, runs, warmup, ws)

        # In order of importance: whatever does not fit in the budget is skipped, and the doc
        # says so.
        phases = [
            ("sandbox start", lambda: fig("start", ["/bin/true"], 15 if q else 60,
                                          2 if q else 5, 0.10 if q else 0.15)),
            ("fork/exec loop", lambda: fig("loop", ["/bin/sh", "-c", LOOP], 3 if q else 10, 1,
                                           0.12 if q else 0.18)),
            ("rg", lambda: fig("rg", rg, 3 if q else 10, 1, 0.10 if q else 0.15)),
            ("leftovers", lambda: R.__setitem__("leftovers", {
                p.key: leftovers(p, a) for p in peers
                if p.key != "bare" and not p.start_only and not p.reason})),
            ("memory", lambda: R.__setitem__("memory", memory(
                [p for p in peers if not p.start_only], a, ws, 1 if q else 3))),
            ("Anvil plugins", lambda: R.__setitem__("anvil_plugins", anvil_plugins(a, ws))),
            ("Deno", lambda: R.__setitem__("deno", deno_rows(a, ws, q))),
            ("scale", lambda: R.__setitem__("scale_start", scale_start(peers, a, ws))),
        ]
        if not a.no_profile:
            phases.append(("profile", lambda: R.__setitem__("profile", profile(a, ws))))
        for name, fn in phases:
            if time.monotonic() > deadline:
                skipped.append(name)
                log("skipping %s: the budget of %.0f s is used up" % (name, a.budget))
                continue
            fn()
            log("%s done (%.0f s)" % (name, time.monotonic() - START_T0))
    except KeyboardInterrupt:
        skipped.append("the rest (interrupted)")
        log("interrupted: writing what was measured")
    finally:
        # What the peers left in the real /tmp during the timed runs (the leftover check above
        # reports it): remove only what appeared during this run.
        for path in set(peer_litter()) - litter0:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass
        with open("/proc/loadavg") as f:
            R["machine"]["load_end"] = f.read().split()[:3]
        R["elapsed_s"] = time.monotonic() - START_T0
        if mounted:
            subprocess.run(["umount", "-l", base])
        shutil.rmtree(base, ignore_errors=True)
        if a.json:
            with open(a.json, "w") as f:
                json.dump(R, f, indent=1)
        shutil.rmtree(a.tmp, ignore_errors=True)
    write_doc(R, a.out)
    log("wrote %s in %.0f s" % (a.out, time.monotonic() - START_T0))


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    from peers_doc import write_doc  # noqa: E402
    main()
