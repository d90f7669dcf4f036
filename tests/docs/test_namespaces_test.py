#!/usr/bin/env python3
"""Every test source keeps its file-local helpers in a namespace named after the file.

The test executables compile as unity builds (ANVIL_TEST_UNITY_BATCH in CMakeLists.txt): several
test sources become one translation unit, and their anonymous namespaces would merge into one. A
helper of the same name in two sources would then not compile, or worse, a call would pick the other
source's overload without a word. So every `namespace {` of a test source sits directly inside
`namespace <file stem> {`, and nothing else is declared between the two.

Usage: test_namespaces_test.py <source dir>
"""
import pathlib
import re
import sys

DIRS = ['unit', 'security', 'integration', 'net', 'host', 'reliability', 'authoring']


def problems(path):
    lines = path.read_text(encoding='utf-8', errors='replace').split('\n')
    stem = path.stem
    found = []
    for i, line in enumerate(lines):
        if line.strip() == 'namespace {':
            if i == 0 or lines[i - 1] != 'namespace %s {' % stem:
                found.append('%s:%d: `namespace {` not directly inside `namespace %s {`'
                             % (path, i + 1, stem))
        elif line.strip() == '}  // namespace':
            if i + 1 >= len(lines) or lines[i + 1] != '}  // namespace %s' % stem:
                found.append('%s:%d: the anonymous namespace does not close directly before '
                             '`}  // namespace %s`' % (path, i + 1, stem))
        elif re.match(r'\s*static\s+[^=(]*\(', line) and not line.startswith(' '):
            found.append('%s:%d: a file-scope `static` function outside `namespace %s { '
                         'namespace {`' % (path, i + 1, stem))
    return found


def main():
    root = pathlib.Path(sys.argv[1])
    found = []
    count = 0
    for d in DIRS:
        for path in sorted((root / 'tests' / d).glob('*_test.cc')):
            count += 1
            found += problems(path)
    for p in found:
        print(p)
    if found:
        print('%d problem(s). Wrap a test source\'s file-local code as\n'
              '  namespace <file stem> {\n  namespace {\n  ...\n  }  // namespace\n'
              '  }  // namespace <file stem>\n(tests/CMakeLists.txt: the test executables are '
              'unity builds)' % len(found))
        return 1
    print('%d test sources, each with its helpers in a namespace of its own' % count)
    return 0


if __name__ == '__main__':
    sys.exit(main())
