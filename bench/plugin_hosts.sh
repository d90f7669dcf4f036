#!/usr/bin/env bash
# Plugin host bench (issue 4): installs Deno from npm (the plugin-runtime anchor) into a cache
# outside the repo if it is missing, then runs bench/host_bench.cc from a release build.
#   bash bench/plugin_hosts.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build/release}"
rounds="${2:-30}"
if [[ ! -x "$build/bench/host_bench" ]]; then
  echo "plugin_hosts.sh: $build/bench/host_bench missing; build first:" >&2
  echo "  cmake --preset release && cmake --build --preset release --target host_bench" >&2
  exit 2
fi
cache="${XDG_CACHE_HOME:-$HOME/.cache}/anvil-bench/deno"
deno="$cache/node_modules/.bin/deno"
if [[ ! -x "$deno" ]]; then
  mkdir -p "$cache"
  if ! npm install --silent --no-audit --no-fund --prefix "$cache" deno >/dev/null 2>&1; then
    echo "plugin_hosts.sh: npm install deno failed; running without the Deno anchor" >&2
    deno=""
  fi
fi
if [[ -n "$deno" ]] && ! "$deno" --version >/dev/null 2>&1; then
  echo "plugin_hosts.sh: $deno does not run here; running without the Deno anchor" >&2
  deno=""
fi
exec "$build/bench/host_bench" "$build" "$deno" "$rounds"
