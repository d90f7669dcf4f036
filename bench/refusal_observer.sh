#!/usr/bin/env bash
# bench/refusal_observer.sh -- what the refusal observer (src/linux/refusal_observer.h) costs.
#
# The observer stops every write-intent syscall of the command (open* with a write mode, O_CREAT
# or O_TRUNC, mkdir, unlink, rename, ...) until the sandbox's init has copied its path and
# answered "continue". Measured, median wall time (hyperfine -N), observer on (the default)
# against off (--quiet, which does not load it):
#   1. /bin/true: the start-up cost of loading it;
#   2. write-heavy: a Python loop creating, writing and closing N files (default 10,000) in the
#      workspace, i.e. one stop per file — the worst case per unit of work;
#   3. a build: `make -j2` of 40 small C files (each compile opens a handful of files for
#      writing between much more work).
# A bench, not a test: it exits 0 once it has measured something.
#
# Environment: ANVIL (default build/release/anvil), BENCH_FILES (10000), BENCH_RUNS (10),
# BENCH_RT (1 when root: SCHED_FIFO 1 via chrt, as bench/sandbox_start.sh), BENCH_DIR (default
# /dev/shm when it is a writable tmpfs).
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ANVIL=${ANVIL:-$REPO_ROOT/build/release/anvil}
FILES=${BENCH_FILES:-10000}
RUNS=${BENCH_RUNS:-10}
PYTHON=/usr/bin/python3
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }
[[ -x $ANVIL ]] || die "no anvil binary at $ANVIL (cmake --preset release && cmake --build --preset release)"
command -v hyperfine >/dev/null || die "hyperfine not found (Debian package hyperfine)"
RT=()
if [[ ${BENCH_RT:-$([[ $(id -u) == 0 ]] && echo 1 || echo 0)} == 1 ]] && command -v chrt >/dev/null; then
    RT=(chrt -f 1)
fi
base=${BENCH_DIR:-}
if [[ -z $base ]]; then
    if [[ -w /dev/shm && $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]]; then base=/dev/shm; else base=${TMPDIR:-/tmp}; fi
fi
WS=$(mktemp -d "$base/anvil-observer-bench.XXXXXX")
OUT=$(mktemp -d "${TMPDIR:-/tmp}/anvil-observer-json.XXXXXX")
trap 'rm -rf "$WS" "$OUT"' EXIT

cat >"$WS/write_files.py" <<'EOF'
import os, shutil, sys
d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "out")
shutil.rmtree(d, ignore_errors=True)
os.mkdir(d)
for i in range(int(sys.argv[1])):
    with open(os.path.join(d, "f%d" % i), "w") as f:
        f.write("x")
EOF
mkdir -p "$WS/build"
for i in $(seq 1 40); do
    printf 'int f%d(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * %d; return s; }\n' "$i" "$i" >"$WS/build/f$i.c"
done
printf 'int main(void) { return 0; }\n' >"$WS/build/main.c"
cat >"$WS/build/Makefile" <<'EOF'
SRCS := $(wildcard *.c)
app: $(SRCS:.c=.o)
	cc -o $@ $^
%.o: %.c
	cc -O1 -c -o $@ $<
clean:
	rm -f *.o app
EOF

SB=("$ANVIL" sandbox --cwd "$WS" --)
SBQ=("$ANVIL" sandbox --quiet --cwd "$WS" --)
q() { printf '%q ' "$@"; }
printf 'refusal observer bench: %s, %s files, load %s\n' "$ANVIL" "$FILES" "$(cut -d' ' -f1-3 /proc/loadavg)"
run() { # name, then commands
    local name=$1
    shift
    "${RT[@]}" hyperfine -N --style none --warmup 2 --runs "$RUNS" --export-json "$OUT/$name.json" "$@" >/dev/null
    "$PYTHON" - "$OUT/$name.json" "$name" <<'EOF'
import json, statistics, sys
r = json.load(open(sys.argv[1]))["results"]
med = [statistics.median(x["times"]) * 1000 for x in r]
print("%-12s observer on %9.1f ms   off (--quiet) %9.1f ms   ratio %.2f" % (sys.argv[2], med[0], med[1], med[0] / med[1]))
EOF
}
run start "$(q "${SB[@]}" /bin/true)" "$(q "${SBQ[@]}" /bin/true)"
run write "$(q "${SB[@]}" "$PYTHON" "$WS/write_files.py" "$FILES")" \
    "$(q "${SBQ[@]}" "$PYTHON" "$WS/write_files.py" "$FILES")"
run make "$(q "${SB[@]}" sh -c 'cd build && make -s clean && make -s -j2')" \
    "$(q "${SBQ[@]}" sh -c 'cd build && make -s clean && make -s -j2')"
