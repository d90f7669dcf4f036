#!/usr/bin/env bash
# The README's test command: installs whatever is missing (idempotent), builds, runs every test.
#   scripts/test.sh            the format check (scripts/format-check.sh), the dev build (debug)
#                              with g++, all tests; then the robustness stages
#                              (issue #9, docs/reliability.md) on one clang build with ASan + UBSan
#                              (preset asan): every libFuzzer target for a bounded time
#                              (scripts/fuzz.sh), the whole suite under ASan + UBSan, and the
#                              gateway's concurrency tests under TSan (scripts/sanitizers.sh)
# Environment: ANVIL_PRESET (dev|asan|release, default dev), ANVIL_JOBS,
#   ANVIL_PACKAGE_TEST=0 to skip the Debian package stage (tests/install/package_test.sh),
#   ANVIL_PACKAGE_PRESET=release to package a release build there instead of the dev build,
#   ANVIL_ROBUSTNESS=0 to skip every robustness stage (a quick local loop),
#   ANVIL_SANITIZERS=0 to skip the ASan + UBSan (whole suite) and TSan test stages but keep the
#   fuzzers (then only the fuzzers of the asan build are built),
#   ANVIL_FUZZ_SECONDS (per fuzzer).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${ANVIL_PRESET:-dev}"
jobs="${ANVIL_JOBS:-$(nproc)}"

stage() { printf '[test] %s: %s\n' "$1" "$(date -u +%T)"; }
stage deps
scripts/install-deps.sh
# Formatting first: a mis-formatted file fails in seconds, before the build.
scripts/format-check.sh
stage "$preset build"
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"

robustness=0
[[ "$preset" == dev && "${ANVIL_ROBUSTNESS:-1}" != 0 ]] && robustness=1
sanitizers=0
((robustness)) && [[ "${ANVIL_SANITIZERS:-1}" != 0 ]] && sanitizers=1
# The robustness stages' builds (the asan build, then the tsan gateway) start now, in the
# background at the lowest priority (nice 19), while the dev tests and the package stage run:
# those spend much of their time waiting on sandboxes, apt and dpkg, and the builds take only the
# CPU they leave idle. Their output goes to build/background-build.log, shown if one fails; a
# stop of this script stops them (their own process group).
bg_pid=
bg_log=build/background-build.log
stop_background() { [[ -n "$bg_pid" ]] && kill -- "-$bg_pid" 2>/dev/null; bg_pid=; }
trap stop_background EXIT
trap 'exit 130' INT TERM
if ((robustness)); then
  cmake --preset asan >/dev/null
  build_cmds='nice -n 19 cmake --build --preset fuzz -j "$1"'
  if ((sanitizers)); then
    cmake --preset tsan >/dev/null
    build_cmds='nice -n 19 cmake --build --preset asan -j "$1" &&
      nice -n 19 cmake --build --preset tsan -j "$1" --target anvil-gateway anvil-gateway-offline'
  fi
  setsid --wait bash -c "$build_cmds" background-build "$jobs" > "$bg_log" 2>&1 &
  bg_pid=$!
fi

# Tests that need an unprivileged user create it themselves (useradd anviltest).
stage "$preset tests"
ctest --preset "$preset" -j "$jobs" --timeout 300

# The Debian package end to end (tests/install/package_test.sh): made with scripts/package.sh
# from the dev build above (no second build: the release build would add minutes of CI for the
# same install rules; ANVIL_PACKAGE_PRESET=release tests that one), lintian, installed with
# apt-get, the README's main job from the installed binaries as root and as an unprivileged
# user, man and completions, purged without a trace. Root only (it installs system-wide);
# ANVIL_PACKAGE_TEST=0 skips it.
if [[ "$preset" == dev && "${ANVIL_PACKAGE_TEST:-1}" != 0 ]]; then
  if [[ $EUID -eq 0 ]]; then
    stage package
    ANVIL_JOBS="$jobs" ANVIL_SKIP_DEPS=1 ANVIL_PACKAGE_PRESET="${ANVIL_PACKAGE_PRESET:-dev}" \
      tests/install/package_test.sh
  else
    echo "[test] package: SKIPPED (needs root: apt-get install and purge)"
  fi
fi

if ((robustness)); then
  # One build serves the fuzzers and the ASan + UBSan test run (everything, fuzzers included).
  if ((sanitizers)); then
    stage "asan and tsan builds (started in the background after the dev build)"
  else
    stage "fuzz build (the fuzzers of the asan build only, started after the dev build)"
  fi
  if ! wait "$bg_pid"; then
    bg_pid=
    cat "$bg_log"
    echo "[test] the background build failed (its output above, also in $bg_log)" >&2
    exit 1
  fi
  bg_pid=
  tail -n 3 "$bg_log"
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
