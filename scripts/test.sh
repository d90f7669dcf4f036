#!/usr/bin/env bash
# The README's test command: installs whatever is missing (idempotent), builds, runs every test.
#   scripts/test.sh            dev build (debug) with g++, all tests
# Environment: ANVIL_PRESET (dev|asan|release, default dev), ANVIL_JOBS.
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${ANVIL_PRESET:-dev}"
jobs="${ANVIL_JOBS:-$(nproc)}"

scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$jobs"
# Tests that need an unprivileged user create it themselves (useradd anviltest).
ctest --preset "$preset" -j "$jobs" --timeout 300
