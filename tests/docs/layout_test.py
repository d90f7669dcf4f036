#!/usr/bin/env python3
"""docs/architecture.md's layout block names every folder of src/ and tests/, and no folder that
is gone, so that the page keeps matching the tree. Usage: layout_test.py SOURCE_DIR"""
import os
import re
import subprocess
import sys


def main():
    root = sys.argv[1]
    page = open(os.path.join(root, "docs", "architecture.md"), encoding="utf-8").read()
    m = re.search(r"## Layout\n```\n(.*?)```", page, re.S)
    if not m:
        print("docs/architecture.md: no ```-block under '## Layout'")
        return 1
    block = m.group(1)
    named = set(re.findall(r"^((?:src|tests|editors)/[^\s`]+/)", block, re.M))
    problems = []
    for top in ("src", "tests"):
        for d in sorted(os.listdir(os.path.join(root, top))):
            if os.path.isdir(os.path.join(root, top, d)):
                if f"{top}/{d}/" not in named:
                    problems.append(f"{top}/{d}/ is not in the layout block")
    for n in sorted(named):
        if not os.path.isdir(os.path.join(root, n)):
            problems.append(f"{n} is in the layout block but not in the tree")
    # Only sources live in src/: a patch leftover (.orig, .rej) or an editor's file committed by
    # mistake is named. Tracked files when this is a git checkout, else every file.
    try:
        files = subprocess.run(["git", "-C", root, "ls-files", "--", "src"], check=True,
                               capture_output=True, text=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        files = [os.path.relpath(os.path.join(d, f), root)
                 for d, _, fs in os.walk(os.path.join(root, "src")) for f in fs]
    for f in sorted(files):
        if not (f.endswith((".cc", ".h")) or os.path.basename(f) == "CMakeLists.txt"):
            problems.append(f"{f} is not a source file (.cc, .h, CMakeLists.txt)")
    for p in problems:
        print(p)
    if problems:
        print("fix: describe them in docs/architecture.md's layout (or remove what is gone or stray)")
        return 1
    print(f"layout: {len(named)} folders match the tree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
