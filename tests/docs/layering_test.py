#!/usr/bin/env python3
"""src/'s folders include only the folders below them (docs/architecture.md, "Layers"), and
libcurl and c-ares appear only in src/net/. The table is read from the page, so the page and the
tree cannot drift apart. src/policy/ makes no syscall itself: no syscall or file I/O header, no
call that reads the file system or the environment (the page's "Layers" names the rule; what
policy/ decides over comes through fs/, or is passed in). Usage: layering_test.py SOURCE_DIR"""
import os
import re
import sys

NETWORK_IO_HEADERS = re.compile(r'#include <(curl/[^>]+|ares[^>]*)>')

# The folders whose files make no syscall themselves (docs/architecture.md, "Layers").
PURE_FOLDERS = ("policy",)
SYSCALL_HEADERS = re.compile(
    r'#include <(fcntl\.h|unistd\.h|dirent\.h|pwd\.h|grp\.h|poll\.h|sched\.h|spawn\.h|'
    r'netdb\.h|fstream|filesystem|cstdio|stdio\.h|(?:sys|linux|arpa|netinet)/[^>]+)>')
# Calls that read or change the file system, the environment or the process, by their C names:
# `::open(`, `std::getenv(`, `realpath(`; members and other namespaces' functions of those
# names (`view.read(`, `fs::open(`) are not these.
IO_CALLS = re.compile(
    r'(?<![\w.>:])(?:::|std::)?(getenv|secure_getenv|setenv|unsetenv|putenv|realpath|fopen|'
    r'popen|system|opendir|fdopendir|readdir|syscall|ioctl)\s*\(|'
    r'(?<![\w.>:])::(open|openat|openat2|read|write|pread|pwrite|readv|writev|close|stat|lstat|'
    r'fstat|fstatat|statx|mkdir|mkdirat|rmdir|unlink|unlinkat|rename|renameat|renameat2|'
    r'readlink|readlinkat|symlink|symlinkat|link|linkat|flock|fcntl|access|faccessat|chmod|'
    r'fchmod|chown|fchown|truncate|ftruncate|fsync|mount|umount2|socket|connect|bind|'
    r'geteuid|getuid|getegid|getgid|getpid|kill|fork|execve|dup|dup2|pipe|pipe2)\s*\(')


def strip_comments_and_strings(text):
    """The code of a C++ file with comments, string and character literals blanked, so that
    prose ("rename", "open(2)") is not taken for a call."""
    text = re.sub(r'R"([^(\s]*)\((?:.|\n)*?\)\1"', '""', text)
    pattern = re.compile(r'//[^\n]*|/\*(?:.|\n)*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'')
    return pattern.sub(lambda m: "" if m.group(0).startswith("/") else '""', text)


def io_problems(rel, text):
    """Why `text` (a file of a pure folder) is not pure: its syscall headers and I/O calls."""
    problems = [f"{rel} includes <{m.group(1)}>: src/policy/ makes no syscall (the I/O goes to "
                f"fs/ or linux/, the decision takes its facts)" for m in SYSCALL_HEADERS.finditer(text)]
    code = strip_comments_and_strings(text)
    for m in IO_CALLS.finditer(code):
        name = m.group(1) or m.group(2)
        problems.append(f"{rel} calls {name}(): src/policy/ makes no syscall and reads no "
                        f"environment itself (read the facts in fs/ or linux/, pass them in)")
    return problems


def check_detector():
    """The purity check itself, on known lines: it must keep refusing what it is for."""
    refused = ['#include <fcntl.h>', '#include <sys/stat.h>', '#include <fstream>',
               'const char* h = std::getenv("HOME");', 'auto v = getenv("X");',
               'int fd = ::open(p.c_str(), O_RDONLY);', 'if (::lstat(p, &st) == 0) {}',
               'char* r = realpath(p, buf);', 'DIR* d = ::opendir(p);']
    allowed = ['#include "fs/file_io.h"', '#include <string>', '// ::open( in a comment',
               'auto s = "getenv(HOME)";', 'view.read(x);', 'ops.open(x);', 'ReadFile(x);',
               'Rename(a, b);', 'host.lstat_kind(p);', 'fs::open(p);']
    wrong = [line for line in refused if not io_problems("t", line)]
    wrong += [line for line in allowed if io_problems("t", line)]
    return [f"layering_test.py's purity check misjudges: {line}" for line in wrong]


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
    problems = check_detector()
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
                if folder in PURE_FOLDERS:
                    problems += io_problems(rel, text)
    for folder in table:
        if folder not in folders:
            problems.append(f"docs/architecture.md's Layers table names src/{folder}/, not in the tree")
    for p in problems:
        print(p)
    if problems:
        print("fix: move the code to the layer it belongs to, or (if the design changed) change "
              "the Layers table in docs/architecture.md")
        return 1
    print(f"layering: {len(folders)} folders include only the layers below them; "
          f"{', '.join(PURE_FOLDERS)} makes no syscall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
