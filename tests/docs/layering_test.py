#!/usr/bin/env python3
"""src/'s folders include only the folders below them (docs/architecture.md, "Layers"), and
libcurl and c-ares appear only in src/net/. The table is read from the page, so the page and the
tree cannot drift apart. Usage: layering_test.py SOURCE_DIR"""
import os
import re
import sys

NETWORK_IO_HEADERS = re.compile(r'#include <(curl/[^>]+|ares[^>]*)>')


def read_table(page):
    m = re.search(r"## Layers\n(.*?)\n## ", page, re.S)
    if not m:
        return None
    table = {}
    for folder, allowed in re.findall(r"^\| (\w+) \| ([^|]+) \|$", m.group(1), re.M):
        if folder == "folder":
            continue
        allowed = allowed.strip()
        table[folder] = None if allowed == "any" else (
            set() if allowed == "—" else {a.strip() for a in allowed.split(",")})
    return table


def main():
    root = sys.argv[1]
    page = open(os.path.join(root, "docs", "architecture.md"), encoding="utf-8").read()
    table = read_table(page)
    if not table:
        print("docs/architecture.md: no table under '## Layers'")
        return 1
    src = os.path.join(root, "src")
    problems = []
    folders = sorted(d for d in os.listdir(src) if os.path.isdir(os.path.join(src, d)))
    for folder in folders:
        if folder == "sanitizer":
            continue  # compiled into sanitizer builds only; includes nothing of Anvil's
        if folder not in table:
            problems.append(f"src/{folder}/ has no row in docs/architecture.md's Layers table")
            continue
        allowed = table[folder]
        for dirpath, _, files in os.walk(os.path.join(src, folder)):
            for name in sorted(files):
                if not name.endswith((".cc", ".h")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                text = open(path, encoding="utf-8").read()
                for target in re.findall(r'#include "(\w+)/', text):
                    if target == folder or allowed is None:
                        continue
                    if target not in allowed:
                        problems.append(f"{rel} includes {target}/ (src/{folder}/ may include "
                                        f"only {', '.join(sorted(allowed)) or 'nothing of Anvil'})")
                if folder != "net" and NETWORK_IO_HEADERS.search(text) and folder != "cmd":
                    problems.append(f"{rel} includes libcurl or c-ares: only src/net/ may")
    for folder in table:
        if folder not in folders:
            problems.append(f"docs/architecture.md's Layers table names src/{folder}/, not in the tree")
    for p in problems:
        print(p)
    if problems:
        print("fix: move the code to the layer it belongs to, or (if the design changed) change "
              "the Layers table in docs/architecture.md")
        return 1
    print(f"layering: {len(folders)} folders include only the layers below them")
    return 0


if __name__ == "__main__":
    sys.exit(main())
