#!/usr/bin/env bash
# The README's test command: installs whatever is missing (idempotent), builds, runs every test.
#   scripts/test.sh            the format check (scripts/format-check.sh), the dev build (debug)
#                              with g++, all tests; then the robustness stages
#                              (issue #9, docs/reliability.md) on one clang build with ASan + UBSan
#                              (preset asan): every libFuzzer target for a bounded time
#                              (scripts/fuzz.sh), the whole suite under ASan + UBSan, and the
#                              gateway's concurrency tests under TSan (scripts/sanitizers.sh)
# Environment: ANVIL_PRESET (dev|asan|release, default dev), ANVIL_JOBS,
#   ANVIL_ROBUSTNESS=0 to skip every robustness stage (a quick local loop),
#   ANVIL_SANITIZERS=0 to skip the ASan + UBSan (whole suite) and TSan test stages but keep the
#   fuzzers (then only the fuzzers of the asan build are built),
#   ANVIL_FUZZ_SECONDS (per fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${ANVIL_PRESET:-dev}"
jobs="${ANVIL_JOBS:-$(nproc)}"

scripts/install-deps.sh
# Formatting first: a mis-formatted file fails in seconds, before the build.
scripts/format-check.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
# Tests that need an unprivileged user create it themselves (useradd anviltest).
ctest --preset "$preset" -j "$jobs" --timeout 300

if [[ "$preset" == dev && "${ANVIL_ROBUSTNESS:-1}" != 0 ]]; then
  # One build serves the fuzzers and the ASan + UBSan test run (everything, fuzzers included).
  stage() { printf '[test] %s: %s\n' "$1" "$(date -u +%T)"; }
  cmake --preset asan >/dev/null
  if [[ "${ANVIL_SANITIZERS:-1}" != 0 ]]; then
    stage "asan build"
    cmake --build --preset asan -j "$jobs"
  else
    stage "fuzz build (the fuzzers of the asan build only)"
    cmake --build --preset fuzz -j "$jobs"
  fi
  stage fuzz
  ANVIL_JOBS="$jobs" ANVIL_FUZZ_SKIP_BUILD=1 scripts/fuzz.sh
  if [[ "${ANVIL_SANITIZERS:-1}" != 0 ]]; then
    stage "asan tests"
    ANVIL_JOBS="$jobs" ANVIL_ASAN_SKIP_BUILD=1 scripts/sanitizers.sh asan
    stage tsan
    ANVIL_JOBS="$jobs" scripts/sanitizers.sh tsan
  fi
  stage done
fi
