#!/usr/bin/env bash
# `cmake --install BUILD --prefix P` puts every part where it belongs, and the installed anvil
# works from any directory: it finds its helpers in P/libexec/anvil (never on PATH), man finds
# its pages, each shell its completion, and an example plugin runs.
#   tests/install/install_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/anvil-install-test-XXXXXX)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
# Nothing outside the prefix.
while read -r f; do
  [[ $f == "$prefix"/* ]] || fail "installed outside the prefix: $f"
done <"$build/install_manifest.txt"

anvil=$prefix/bin/anvil
commands=$("$anvil" --help | sed -n '/^Commands:/,/^$/p' | awk 'NR > 1 && $1 != "help" && NF {print $1}')
[[ -n $commands ]] || fail "anvil --help lists no commands"
expect=(
  bin/anvil
  libexec/anvil/anvil-gateway libexec/anvil/anvil-gateway-offline
  libexec/anvil/anvil-plugin-host libexec/anvil/anvil-exec-runner libexec/anvil/anvil-proxy
  share/man/man1/anvil.1.gz
  share/doc/anvil/README.md share/doc/anvil/docs/README.md share/doc/anvil/docs/policy.md
  share/doc/anvil/copyright share/doc/anvil/changelog.gz
  share/anvil/examples/plugins/hello-lua/anvil-plugin.toml
  share/anvil/examples/workspace/README.md
  share/nvim/site/pack/anvil/start/anvil/plugin/anvil.lua
  share/nvim/site/pack/anvil/start/anvil/lua/anvil/init.lua
  share/bash-completion/completions/anvil
  share/zsh/vendor-completions/_anvil
  share/fish/vendor_completions.d/anvil.fish
)
for c in $commands; do expect+=("share/man/man1/anvil-$c.1.gz"); done
for f in "${expect[@]}"; do [[ -f $prefix/$f ]] || fail "missing $prefix/$f"; done
for f in bin/anvil libexec/anvil/anvil-gateway libexec/anvil/anvil-gateway-offline \
  libexec/anvil/anvil-proxy; do
  [[ -x $prefix/$f ]] || fail "$f is not executable"
done

# From another directory, with a PATH that has none of it: helpers from libexec/anvil.
doctor=$(cd / && env -i PATH=/usr/bin:/bin HOME="$work" "$anvil" doctor --json || true)
for h in anvil-gateway anvil-gateway-offline anvil-plugin-host anvil-exec-runner anvil-proxy; do
  python3 -c '
import json, sys
d = json.loads(sys.argv[1])
h = [x for x in d["helpers"] if x["name"] == sys.argv[2]]
assert h and h[0]["ok"] and h[0]["path"] == sys.argv[3], h' \
    "$doctor" "$h" "$prefix/libexec/anvil/$h" || fail "doctor: $h not found in libexec/anvil"
done

# man finds every page, and groff has nothing to say about any of them.
for c in "" $commands; do
  page=anvil${c:+-$c}
  MANPATH=$prefix/share/man man -w "$page" >/dev/null || fail "man -w $page"
  warnings=$(MANPATH=$prefix/share/man MANROFFSEQ='' MANWIDTH=80 \
    man --warnings -E UTF-8 -l -Tutf8 -Z "$prefix/share/man/man1/$page.1.gz" 2>&1 >/dev/null)
  [[ -z $warnings ]] || fail "$page.1: $warnings"
done

# Neovim loads the client from the prefix's share/nvim/site/pack (its package path).
loaded=$(env -i PATH=/usr/bin:/bin HOME="$work" XDG_DATA_DIRS="$prefix/share" timeout 60 \
  nvim --headless --clean \
  -c 'lua io.stdout:write(tostring(pcall(require, "anvil")) .. " " .. vim.fn.exists(":AnvilRun"))' \
  -c 'qa!' 2>&1) || true
[[ $loaded == "true 2" ]] || fail "Neovim did not load the installed client: $loaded"

bash "$here/completions_test.sh" "$prefix/share/bash-completion/completions/anvil" \
  "$prefix/share/zsh/vendor-completions" "$prefix/share/fish/vendor_completions.d/anvil.fish"

# An installed example plugin, from the installed anvil, in a scratch workspace.
mkdir -p "$work/ws" "$work/state"
cp -r "$prefix/share/anvil/examples/workspace/." "$work/ws/"
out=$(cd "$work/ws" && env -i PATH=/usr/bin:/bin HOME="$work" XDG_STATE_HOME="$work/state" \
  "$anvil" run --approve "$prefix/share/anvil/examples/plugins/hello-lua" summary) \
  || fail "anvil run hello-lua: $out"
[[ -n $out ]] || fail "anvil run hello-lua printed nothing"
echo "install: 1 passed, 0 failed"
