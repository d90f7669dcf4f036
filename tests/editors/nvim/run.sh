#!/usr/bin/env bash
# Runs one Neovim client test case (cases/CASE.lua) in headless Neovim against the real
# `anvil serve`, on a copy of examples/workspace, with its own HOME and XDG dirs (grants and the
# audit log land there), then checks that no process of the session outlived Neovim.
# Usage: ANVIL_BIN=build/dev/anvil run.sh CASE      Exit 77 (skipped) when nvim is missing.
set -euo pipefail
case_name=$1
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
: "${ANVIL_BIN:?set ANVIL_BIN to the anvil binary}"

if ! command -v nvim >/dev/null 2>&1; then
  echo "SKIPPED: nvim is not installed (scripts/install-deps.sh installs the neovim package)"
  exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/anvil-nvim-$case_name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
cp -a "$repo/examples/workspace" "$tmp/ws"
mkdir -p "$tmp/home" "$tmp/state" "$tmp/data" "$tmp/config" "$tmp/cache"
: >"$tmp/pids"

status=0
(
  cd "$tmp/ws"
  export HOME="$tmp/home" XDG_STATE_HOME="$tmp/state" XDG_DATA_HOME="$tmp/data" \
    XDG_CONFIG_HOME="$tmp/config" XDG_CACHE_HOME="$tmp/cache" \
    ANVIL_BIN ANVIL_TEST_REPO="$repo" ANVIL_TEST_WS="$tmp/ws" ANVIL_TEST_PIDS="$tmp/pids"
  # The bound only stops a hung run; every wait inside is on a condition.
  exec timeout -s KILL 240 nvim --headless --clean --cmd "set runtimepath^=$repo/editors/nvim" \
    -c "luafile $here/cases/$case_name.lua" </dev/null
) || status=$?

# Neovim waited for anvil serve to exit, and anvil serve reaps its hosts and gateway before
# exiting: every pid the case saw must be gone now.
leaked=0
while read -r pid; do
  [[ -n $pid ]] || continue
  if [[ -e /proc/$pid ]]; then
    echo "FAIL: process $pid ($(tr '\0' ' ' </proc/"$pid"/cmdline 2>/dev/null)) outlived Neovim"
    leaked=1
  fi
done <"$tmp/pids"
if ((status != 0)); then
  echo "FAIL: case $case_name exited with status $status"
  exit 1
fi
if ((leaked)); then exit 1; fi
if [[ ! -s $tmp/pids ]]; then
  echo "FAIL: case $case_name recorded no processes"
  exit 1
fi
echo "ok: $case_name"
