#!/usr/bin/env bash
# bench/peers.sh -- Anvil beside its peers, measured in one run on this machine (issue 11).
#
#   bash bench/peers.sh [--quick] [--budget SECONDS] [--no-install] [--no-build] [--out FILE]
#
# 1. installs the peers it needs, idempotently: Debian packages bubblewrap, firejail, socat,
#    gnuplot-nox, hyperfine, ripgrep, time, strace (apt, as root); npm: @openai/codex,
#    @anthropic-ai/sandbox-runtime and deno into ~/.cache/anvil-bench (never globally);
# 2. builds the release preset if the binaries are missing (cmake --preset release);
# 3. runs bench/peers.py: every peer under the same policy (read-only system, writable
#    workspace, no network), interleaved rounds, each command with a timeout; a peer that
#    cannot run gets a row saying why;
# 4. writes docs/performance.md, docs/performance-scale.png and docs/performance.json.
#
# A bench, not a test: it never fails on a ratio. The whole run is bounded by --budget
# (default 600 s; --quick: 300 s and fewer runs). Nothing connects outside loopback: the
# only network use is the package installs of step 1 (skip them with --no-install).
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${ANVIL_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/anvil-bench}
BUILD=${ANVIL_BUILD:-$REPO/build/release}
QUICK=0 INSTALL=1 BUILD_IT=1 BUDGET="" OUT=$REPO/docs/performance.md
while (($#)); do
    case $1 in
        --quick) QUICK=1 ;;
        --budget) BUDGET=$2; shift ;;
        --no-install) INSTALL=0 ;;
        --no-build) BUILD_IT=0 ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
        *) echo "peers.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
[[ -n $BUDGET ]] || BUDGET=$((QUICK ? 300 : 600))
say() { printf 'peers.sh: %s\n' "$*" >&2; }
NOTES=$(mktemp "${TMPDIR:-/tmp}/anvil-peers-notes.XXXXXX")
trap 'rm -f "$NOTES"' EXIT
note() { say "$*"; printf '%s\n' "$*" >>"$NOTES"; }

# --- 1. peers -------------------------------------------------------------------------------
install_apt() {
    local missing=() pkg
    for pkg in bubblewrap firejail socat gnuplot-nox hyperfine ripgrep time strace; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' ||
            missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    if [[ $EUID -ne 0 ]]; then
        note "not root: cannot apt-get install ${missing[*]}; those peers are left out"
        return 0
    fi
    say "apt-get install ${missing[*]}"
    if ! timeout 300 apt-get install -y -q -o DPkg::Lock::Timeout=120 "${missing[@]}" >/dev/null 2>&1; then
        timeout 300 apt-get update -q -o DPkg::Lock::Timeout=120 >/dev/null 2>&1
        timeout 300 apt-get install -y -q -o DPkg::Lock::Timeout=120 "${missing[@]}" >/dev/null 2>&1 ||
            note "apt-get install ${missing[*]} failed; the peers it provides are left out"
    fi
}

install_npm() { # install_npm DIR PACKAGE... (into DIR/node_modules; idempotent)
    local dir=$1
    shift
    local pkg need=0
    for pkg in "$@"; do [[ -f $dir/node_modules/$pkg/package.json ]] || need=1; done
    ((need)) || return 0
    if ! command -v npm >/dev/null; then
        note "npm not found: cannot install $*; those peers are left out"
        return 0
    fi
    mkdir -p "$dir"
    say "npm install $* into $dir"
    timeout 600 npm install --silent --no-audit --no-fund --prefix "$dir" "$@" >/dev/null 2>&1 ||
        note "npm install $* failed; those peers are left out"
}

if ((INSTALL)); then
    install_apt
    install_npm "$CACHE/npm" @openai/codex @anthropic-ai/sandbox-runtime
    install_npm "$CACHE/deno" deno
fi

# --- 2. Anvil -----------------------------------------------------------------------------
targets=(anvil anvil-gateway anvil-plugin-host anvil-exec-runner plugin_peers)
need_build=0
for t in anvil anvil-gateway anvil-plugin-host anvil-exec-runner bench/plugin_peers; do
    [[ -x $BUILD/$t ]] || need_build=1
done
if ((BUILD_IT)); then
    if [[ ! -f $BUILD/build.ninja ]]; then
        say "configuring the release preset"
        (cd "$REPO" && cmake --preset release >/dev/null) || { say "cmake --preset release failed"; exit 1; }
    fi
    # Always let ninja decide (a no-op when up to date): stale binaries would be measured otherwise.
    say "building ${targets[*]} (release)"
    cmake --build "$BUILD" -j "$(nproc)" --target "${targets[@]}" >/dev/null ||
        { say "build failed: cmake --build $BUILD"; exit 1; }
elif ((need_build)); then
    say "binaries missing in $BUILD and --no-build given"
    exit 1
fi

# --- 3 + 4. measure and write ----------------------------------------------------------------
args=(--build "$BUILD" --cache "$CACHE" --budget "$BUDGET" --out "$OUT" --notes "$NOTES"
    --json "$(dirname "$OUT")/performance.json")
((QUICK)) && args+=(--quick)
# The whole run is bounded: the budget plus a margin for the installs already done.
timeout --kill-after=30 $((BUDGET + 120)) python3 "$REPO/bench/peers.py" "${args[@]}"
rc=$?
((rc == 124)) && say "peers.py passed the budget of ${BUDGET}s and was stopped"
exit $rc
