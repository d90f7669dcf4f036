#!/usr/bin/env bash
# Fails when a tracked C or C++ file differs from what clang-format (the repository's
# .clang-format) would make of it; prints the files and the one command that fixes them.
# Part of the README's test command (scripts/test.sh), before the build.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || {
  echo "format-check: clang-format not found; fix: scripts/install-deps.sh" >&2
  exit 2
}
mapfile -d '' -t files < <(git ls-files -z -- '*.cc' '*.h' '*.c' '*.cpp')
count=${#files[@]}
# Batches of files per clang-format process; each violation is reported as FILE:LINE:COL: error.
report=$(printf '%s\0' "${files[@]}" |
  xargs -0 -n 40 -P "$(nproc)" clang-format --dry-run -Werror 2>&1 >/dev/null || true)
mapfile -t bad < <(grep -oE '^[^:[:space:]]+:[0-9]+:[0-9]+: error' <<<"$report" | cut -d: -f1 | sort -u)
if ((${#bad[@]})) || grep -q . <<<"$report"; then
  printf 'format-check: %d file(s) not formatted:\n' "${#bad[@]}" >&2
  printf '  %s\n' "${bad[@]}" >&2
  ((${#bad[@]})) || printf '%s\n' "$report" >&2
  printf 'fix: clang-format -i %s\n' "${bad[*]}" >&2
  exit 1
fi
printf 'format-check: %d files formatted\n' "$count"
