#!/usr/bin/env bash
# bench/sandbox_start.sh -- what a sandbox costs: start-up, work inside, rg over a big tree.
#
# Measures, in one run and on the same workspace, median wall time (with p10/p90) of
#   1. /bin/true bare, under `anvil sandbox`, under bubblewrap (a comparable strict config)
#      and under firejail;
#   2. a 100x /bin/true shell loop, bare and inside each sandbox;
#   3. rg over a generated 10,000-file tree, bare, under `anvil sandbox` and under bubblewrap;
# then prints the ratios the sandbox issue sets targets for (see bench/README.md).
# A bench, not a test: it always exits 0 once it has measured something, whatever the ratios.
#
# Builds nothing. Environment:
#   ANVIL          the anvil binary (default: build/release/anvil of this checkout; build it
#                  with `cmake --preset release && cmake --build --preset release`)
#   BENCH_ROUNDS   rounds per group (default 3); rounds interleave the commands so that a
#                  neighbour's load burst hits every row, not only the one running then
#   BENCH_SCALE    multiply every run count (default 1; 0.3 for a quick look, 3 for a quiet box)
#   BENCH_KEEP=1   keep the workspace and the hyperfine JSON files, and print where they are
#   BENCH_RT       1 (default when root): run hyperfine and everything it starts at SCHED_FIFO
#                  priority 1 (chrt), so that builds and tests of other people on a shared box
#                  do not preempt the timed runs; 0: normal scheduling
#   BENCH_DIR      where the temporary workspace goes (default /dev/shm when it is a writable
#                  tmpfs, else $TMPDIR or /tmp): 10,000 files are created and deleted, and on a
#                  disk mounted with `discard` deleting them alone can take half a minute
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PYTHON=/usr/bin/python3
ROUNDS=${BENCH_ROUNDS:-3}
SCALE=${BENCH_SCALE:-1}
NEEDLE=ANVIL_BENCH_NEEDLE_7f3a
# shellcheck disable=SC2016  # expanded by the sh that runs the loop, not here
LOOP='i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i+1)); done'

say() { printf '%s\n' "$*"; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

ANVIL=${ANVIL:-$REPO_ROOT/build/release/anvil}
[[ -x $ANVIL ]] || die "no anvil binary at $ANVIL
  build it: cmake --preset release && cmake --build --preset release   (or set ANVIL=...)"
ANVIL=$(cd "$(dirname "$ANVIL")" && pwd)/$(basename "$ANVIL")
command -v hyperfine >/dev/null || die "hyperfine not found (Debian package hyperfine; scripts/install-deps.sh installs it)"
[[ -x $PYTHON ]] || die "$PYTHON not found"

if [[ -n ${BENCH_DIR:-} ]]; then
    base=$BENCH_DIR
elif [[ -d /dev/shm && -w /dev/shm && $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]]; then
    base=/dev/shm
else
    base=${TMPDIR:-/tmp}
fi
WS=$(mktemp -d "$base/anvil-bench.XXXXXX")
OUT=$(mktemp -d "${TMPDIR:-/tmp}/anvil-bench-json.XXXXXX")
cleanup() {
    if [[ ${BENCH_KEEP:-0} == 1 ]]; then
        say "kept: workspace $WS, hyperfine JSON in $OUT"
    else
        rm -rf "$WS" "$OUT"
    fi
}
trap cleanup EXIT
cd "$WS"

RT=()
if [[ ${BENCH_RT:-1} == 1 && $EUID -eq 0 ]] && command -v chrt >/dev/null; then
    RT=(chrt -f 1)
fi

runs() { # runs BASE -> BASE * SCALE, at least 3
    "$PYTHON" -c 'import sys; print(max(3, round(int(sys.argv[1]) * float(sys.argv[2]))))' "$1" "$SCALE"
}

# --- the commands ------------------------------------------------------------------------
# Each row: a name (for the JSON), a label (for the table), and argv. A row is checked once
# before it is timed; a wrapper that cannot run here is reported with its own error and left out.
BWRAP=(bwrap --ro-bind / / --dev /dev --proc /proc --bind "$WS" "$WS" --unshare-all
    --die-with-parent --new-session --chdir "$WS")
# As root, firejail's --private=DIR makes DIR the home directory; --noprofile so that no
# distribution profile changes the set of walls between runs or machines.
FIREJAIL=(firejail --quiet --noprofile "--private=$WS" --net=none)
ANVIL_SB=("$ANVIL" sandbox --cwd "$WS" --)

declare -A CMD=()    # name -> command line for hyperfine -N (shell-word quoted)
declare -A GROUP_NAMES=()
: >"$OUT/labels.tsv"
NOTES=()

quote_argv() {
    local out='' a
    for a in "$@"; do out+="${out:+ }$(printf '%q' "$a")"; done
    printf '%s' "$out"
}

# add GROUP NAME LABEL ARGV...
add() {
    local group=$1 name=$2 label=$3
    shift 3
    local err rc=0
    err=$("${RT[@]}" "$@" 2>&1 >/dev/null) || rc=$?
    if ((rc != 0)); then
        err="exit status $rc${err:+: $err}"
        NOTES+=("$label: could not run here, left out: $(tail -n 3 <<<"$err" | tr '\n' ' ')")
        printf '%s\t%s\t%s\n' "$name" "$label  [could not run]" "$group" >>"$OUT/labels.tsv"
        return 0
    fi
    CMD[$name]=$(quote_argv "$@")
    GROUP_NAMES[$group]+=" $name"
    printf '%s\t%s\t%s\n' "$name" "$label" "$group" >>"$OUT/labels.tsv"
}

have() { command -v "$1" >/dev/null 2>&1; }
missing() { # missing GROUP NAME LABEL WHY
    NOTES+=("$3: not measured: $4")
    printf '%s\t%s\t%s\n' "$2" "$3  [not installed]" "$1" >>"$OUT/labels.tsv"
}

say "anvil sandbox start-up bench ($(date -u +%FT%TZ))"
say "  anvil:   $ANVIL"
say "  workspace: $WS ($(stat -f -c %T "$WS"))"
say "  kernel:  $(uname -r), $(nproc) CPUs; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
if ((${#RT[@]})); then
    say "  timing:  hyperfine -N at SCHED_FIFO 1 (${RT[*]}); BENCH_RT=0 for normal scheduling"
else
    say "  timing:  hyperfine -N, normal scheduling"
fi
layers=$("${ANVIL_SB[@]:0:2}" --cwd "$WS" --json -- /bin/true 2>&1 >/dev/null | tail -n1 || true)
layers=$("$PYTHON" -c '
import json, sys
try:
    r = json.loads(sys.argv[1])
except ValueError:
    print("(no JSON report: " + sys.argv[1][:200] + ")"); sys.exit()
print(r.get("policy"), "network", r.get("network"), "|",
      " ".join(k for k, v in r.get("layers", {}).items() if v is True),
      "landlock_abi=%s" % r.get("layers", {}).get("landlock_abi"))' "$layers")
say "  anvil sandbox layers in force: $layers"
for tool in bwrap firejail rg; do
    if have "$tool"; then
        say "  $tool: $(command -v "$tool") ($("$tool" --version 2>&1 | head -n1))"
    fi
done

# --- 1. start-up --------------------------------------------------------------------------
G1="1. /bin/true start-up"
add "$G1" start_bare "/bin/true bare" /bin/true
add "$G1" start_anvil "anvil sandbox -- /bin/true" "${ANVIL_SB[@]}" /bin/true
if have bwrap; then
    add "$G1" start_bwrap "bwrap (strict) /bin/true" "${BWRAP[@]}" /bin/true
else
    missing "$G1" start_bwrap "bwrap (strict) /bin/true" "bwrap is not installed (Debian package bubblewrap)"
fi
if have firejail; then
    add "$G1" start_firejail "firejail /bin/true" "${FIREJAIL[@]}" /bin/true
else
    missing "$G1" start_firejail "firejail /bin/true" "firejail is not installed (Debian package firejail)"
fi
# The kernel floor (bench/sandbox_floor.c): the same namespaces, an init and the exec, and
# nothing else -- no mount, Landlock, seccomp or report. No sandbox with this isolation can
# start faster on this machine; the start target is reachable only well above it.
FLOOR=${FLOOR:-$(dirname "$ANVIL")/bench/sandbox_floor}
if [[ -x $FLOOR ]]; then
    add "$G1" start_floor "  (floor) namespaces + init + exec only" "$FLOOR" /bin/true
    add "$G1" start_floor_noinit "  (floor) namespaces + exec, no init" "$FLOOR" --no-init /bin/true
    # The same plus every layer Anvil's default policy requires, each in its cheapest C form
    # (pids cgroup as root, mount view, session, rlimits, no_new_privs, Landlock, seccomp).
    add "$G1" start_floor_layers "  (floor) + every required layer, minimal C" "$FLOOR" \
        --layers "$WS" /bin/true
else
    missing "$G1" start_floor "  (floor) namespaces + init + exec only" \
        "no $FLOOR (cmake --build --preset release --target sandbox_floor)"
fi
# Diagnostics for the breakdown: without the network namespace, and with no namespace,
# Landlock or seccomp at all (the cost of anvil's own processes).
add "$G1" start_anvil_netfull "  (diag) anvil --network full" "$ANVIL" sandbox --cwd "$WS" \
    --network full -- /bin/true
add "$G1" start_anvil_dfa "  (diag) anvil --policy danger-full-access" "$ANVIL" sandbox \
    --cwd "$WS" --policy danger-full-access -- /bin/true

# --- 2. a loop of 100 /bin/true inside ------------------------------------------------------
G2="2. 100x /bin/true loop inside"
add "$G2" loop_bare "sh loop bare" /bin/sh -c "$LOOP"
add "$G2" loop_anvil "sh loop in anvil sandbox" "${ANVIL_SB[@]}" /bin/sh -c "$LOOP"
have bwrap && add "$G2" loop_bwrap "sh loop in bwrap" "${BWRAP[@]}" /bin/sh -c "$LOOP"
have firejail && add "$G2" loop_firejail "sh loop in firejail" "${FIREJAIL[@]}" /bin/sh -c "$LOOP"

# --- 3. rg over a 10,000-file tree -----------------------------------------------------------
G3="3. rg over 10,000 files"
if [[ -x /usr/bin/rg ]]; then
    # 10 x 10 directories x 100 files of 3..12 short lines; every 50th file holds the needle.
    # Setup, not timed: at the bench's priority too, so a busy box does not stretch it.
    made=$("${RT[@]}" "$PYTHON" - "$WS/tree" "$NEEDLE" <<'EOF'
import os, random, sys
root, needle = sys.argv[1], sys.argv[2]
rng = random.Random(20261201)
words = ("alpha beta gamma delta sandbox anvil kernel mount landlock seccomp namespace "
         "workspace plugin editor buffer cursor").split()
n = 0
for a in range(10):
    for b in range(10):
        d = os.path.join(root, f"d{a:02d}", f"s{b:02d}")
        os.makedirs(d)
        for c in range(100):
            lines = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(rng.randint(3, 12))]
            if n % 50 == 7:
                lines.insert(rng.randrange(len(lines) + 1), f"found: {needle} here")
            with open(os.path.join(d, f"f{c:03d}.txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
            n += 1
print(n)
EOF
)
    RG=(/usr/bin/rg --no-config -c "$NEEDLE" "$WS/tree")
    found=$("${RT[@]}" "${RG[@]}" | wc -l)
    say "  rg tree: $made files under $WS/tree, needle in $found of them"
    add "$G3" rg_bare "rg bare" "${RG[@]}"
    add "$G3" rg_anvil "rg in anvil sandbox" "${ANVIL_SB[@]}" "${RG[@]}"
    have bwrap && add "$G3" rg_bwrap "rg in bwrap" "${BWRAP[@]}" "${RG[@]}"
else
    missing "$G3" rg_bare "rg bare" "/usr/bin/rg is not installed (Debian package ripgrep)"
fi

# --- measure ----------------------------------------------------------------------------------
# measure GROUP FILE_TAG WARMUP RUNS
measure() {
    local group=$1 tag=$2 warmup=$3 n=$4 round
    local names=()
    read -r -a names <<<"${GROUP_NAMES[$group]:-}"
    ((${#names[@]})) || return 0
    local args=() name
    for name in "${names[@]}"; do args+=(-n "$name" "${CMD[$name]}"); done
    for ((round = 1; round <= ROUNDS; round++)); do
        printf '  %s: round %d/%d, %d runs each of %d commands\n' "$group" "$round" "$ROUNDS" "$n" "${#names[@]}"
        # hyperfine's own warnings (outliers on a busy box) go to a log; the table says it better.
        if ! "${RT[@]}" hyperfine -N --style none --warmup "$warmup" --runs "$n" \
            --export-json "$OUT/$tag.$round.json" "${args[@]}" >/dev/null 2>"$OUT/hyperfine.log"; then
            cat "$OUT/hyperfine.log" >&2
            die "hyperfine failed in group '$group'"
        fi
        # Next round in reverse order: neither the first nor the last slot is always the same row.
        local rev=() i
        for ((i = ${#names[@]} - 1; i >= 0; i--)); do rev+=("${names[i]}"); done
        names=("${rev[@]}")
        args=()
        for name in "${names[@]}"; do args+=(-n "$name" "${CMD[$name]}"); done
    done
}

say "  set-up took $SECONDS s"
say ""
say "measuring (about a minute and a half; a busy machine stretches it)..."
t0=$SECONDS
measure "$G1" start 5 "$(runs 35)"
measure "$G2" loop 1 "$(runs 5)"
measure "$G3" rg 2 "$(runs 8)"
say "  done in $((SECONDS - t0)) s; load average at end: $(cut -d' ' -f1-3 /proc/loadavg)"

"$PYTHON" "$REPO_ROOT/bench/summarize.py" "$OUT"

if ((${#NOTES[@]})); then
    say ""
    for n in "${NOTES[@]}"; do say "note: $n"; done
fi
load=$(cut -d' ' -f1 /proc/loadavg)
if "$PYTHON" -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0.5 * int(sys.argv[2]) else 1)' "$load" "$(nproc)"; then
    say "note: load average $load on $(nproc) CPUs -- other work was running; trust the ratios"
    say "      more than the absolute times, and re-run on a quiet machine before drawing lines."
fi
