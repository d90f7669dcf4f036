#!/usr/bin/env python3
"""Executes docs/tutorial.md step by step, as a reader would.

Every ```sh block runs in order (bash -euo pipefail) in a fresh directory, with the build's
`anvil` first on PATH and a private HOME/XDG_STATE_HOME (grants and the audit log land there).
The working directory carries over from one block to the next (the tutorial `cd`s). When a
```text block follows a ```sh block, each of its non-empty lines must appear in that block's
output (stdout and stderr), in order; an RFC 3339 time there stands for any time. ```console
blocks are shown, not run.

Usage: tutorial_test.py BIN_DIR [TUTORIAL]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile


def blocks(markdown):
    """[(lang, text)] of the fenced blocks, in order."""
    return [(m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```\s*$", markdown, re.S | re.M)]


# A time in the docs' sample output (`anvil audit`) stands for any time.
TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


def same(line, want):
    return TIME.sub("<time>", line) == TIME.sub("<time>", want)


def contains_in_order(output_lines, expected_lines):
    at = 0
    for want in expected_lines:
        while at < len(output_lines) and not same(output_lines[at], want):
            at += 1
        if at == len(output_lines):
            return want
        at += 1
    return None


def main():
    bin_dir = os.path.abspath(sys.argv[1])
    here = os.path.dirname(os.path.abspath(__file__))
    tutorial = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "../../docs/tutorial.md")
    with open(tutorial, encoding="utf-8") as f:
        steps = blocks(f.read())
    root = tempfile.mkdtemp(prefix="anvil-tutorial-")
    try:
        home = os.path.join(root, "home")
        os.makedirs(home)
        env = {"PATH": bin_dir + ":/usr/bin:/bin", "HOME": home, "LANG": "C.UTF-8",
               "XDG_STATE_HOME": os.path.join(home, ".local/state"),
               "XDG_DATA_HOME": os.path.join(home, ".local/share")}
        cwd = os.path.join(root, "work")
        os.makedirs(cwd)
        cwd_file = os.path.join(root, ".cwd")
        ran = 0
        for i, (lang, text) in enumerate(steps):
            if lang != "sh":
                continue
            ran += 1
            script = "set -euo pipefail\n" + text + '\npwd > "$ANVIL_TUTORIAL_CWD"\n'
            proc = subprocess.run(["bash", "-c", script], cwd=cwd,
                                  env=dict(env, ANVIL_TUTORIAL_CWD=cwd_file),
                                  stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, timeout=120)
            output = proc.stdout.decode("utf-8", "replace")
            print("$ " + text.rstrip().replace("\n", "\n$ "))
            print(output, end="")
            if proc.returncode != 0:
                print(f"FAIL: step {ran} exited with status {proc.returncode}")
                return 1
            with open(cwd_file, encoding="utf-8") as f:
                cwd = f.read().strip()
            if i + 1 < len(steps) and steps[i + 1][0] == "text":
                expected = [l.rstrip() for l in steps[i + 1][1].splitlines() if l.strip()]
                missing = contains_in_order([l.rstrip() for l in output.splitlines()], expected)
                if missing is not None:
                    print(f"FAIL: step {ran}: expected line not in the output (in order): "
                          f"{missing!r}")
                    return 1
        if ran == 0:
            print("FAIL: no sh blocks in " + tutorial)
            return 1
        print(f"ok: {ran} steps of {tutorial}")
        return 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
