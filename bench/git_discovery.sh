#!/usr/bin/env bash
# bench/git_discovery.sh -- what protecting every repository's git metadata costs a sandbox.
#
# `anvil sandbox` (workspace-write) walks the writable roots for repositories before the run
# and again after it (docs/policy.md, "Git metadata"). This measures, with hyperfine -N, the
# median wall time (p10/p90) of `anvil sandbox -- /bin/true` on three generated workspaces:
#   small   one repository, 10 files
#   10k     one repository, 10,000 files in 100 directories (the shape of the rg tree that
#           bench/sandbox_start.sh's workspace holds)
#   100k    one repository, 100,000 files in 1,000 directories
#   nested  one repository holding 50 nested repositories (`git init`), 5,000 files
# beside the same binary with --writable-git (no search, no check after: the baseline of the
# same run) and, when ANVIL_BASE names one, an older anvil binary (the "before" figure). It also
# prints the walks' own times as `--json` reports them (git.scan_ms before the run, the start-up
# part; git.check_ms after it, which lists again only the directories whose entries changed).
# A bench, not a test: it always exits 0 once it has measured something.
#
# Environment:
#   ANVIL        the anvil binary (default: build/release/anvil of this checkout)
#   ANVIL_BASE   optional: another anvil binary to compare with (e.g. a build of main)
#   BENCH_SCALE  multiply the run counts (default 1)
#   BENCH_RT     1 (default when root): hyperfine at SCHED_FIFO 1 (chrt), as sandbox_start.sh
#   BENCH_DIR    where the workspaces go (default /dev/shm when it is a writable tmpfs, else
#                $TMPDIR or /tmp); on a disk the walk of a cold cache costs more than here
#   BENCH_KEEP=1 keep the workspaces and JSON files
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export BENCH_DIR_OF_SCRIPTS=$REPO_ROOT/bench
PYTHON=/usr/bin/python3
SCALE=${BENCH_SCALE:-1}
say() { printf '%s\n' "$*"; }
die() { printf 'bench: %s\n' "$*" >&2; exit 1; }

ANVIL=${ANVIL:-$REPO_ROOT/build/release/anvil}
[[ -x $ANVIL ]] || die "no anvil binary at $ANVIL (cmake --preset release && cmake --build --preset release)"
BASE=${ANVIL_BASE:-}
[[ -z $BASE || -x $BASE ]] || die "ANVIL_BASE=$BASE is not executable"
command -v hyperfine >/dev/null || die "hyperfine not found (scripts/install-deps.sh installs it)"
command -v git >/dev/null || die "git not found"

if [[ -n ${BENCH_DIR:-} ]]; then
    base=$BENCH_DIR
elif [[ -d /dev/shm && -w /dev/shm && $(stat -f -c %T /dev/shm 2>/dev/null) == tmpfs ]]; then
    base=/dev/shm
else
    base=${TMPDIR:-/tmp}
fi
OUT=$(mktemp -d "$base/anvil-git-bench.XXXXXX")
cleanup() { if [[ ${BENCH_KEEP:-0} == 1 ]]; then say "kept: $OUT"; else rm -rf "$OUT"; fi; }
trap cleanup EXIT
RT=()
if [[ ${BENCH_RT:-$([[ $(id -u) == 0 ]] && echo 1 || echo 0)} == 1 ]] && command -v chrt >/dev/null; then
    RT=(chrt -f 1)
fi
runs() { "$PYTHON" -c 'import sys; print(max(3, round(int(sys.argv[1]) * float(sys.argv[2]))))' "$1" "$SCALE"; }

export GIT_CONFIG_NOSYSTEM=1 HOME=$OUT/home
mkdir -p "$HOME"
make_tree() { # make_tree DIR DIRS FILES_PER_DIR
    "$PYTHON" - "$@" <<'EOF'
import os, sys
root, dirs, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for d in range(dirs):
    p = os.path.join(root, "src", f"d{d // 100:02d}", f"s{d % 100:02d}")
    os.makedirs(p, exist_ok=True)
    for f in range(per):
        with open(os.path.join(p, f"f{f:03d}.c"), "w") as fh:
            fh.write("int x;\n")
EOF
}
say "anvil git metadata bench ($(date -u +%FT%TZ))"
say "  anvil: $ANVIL${BASE:+; before: $BASE}"
say "  workspaces under $OUT ($(stat -f -c %T "$OUT")); kernel $(uname -r), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
t0=$SECONDS
for ws in small 10k 100k nested; do
    mkdir -p "$OUT/$ws"
    git -C "$OUT/$ws" init -q
done
make_tree "$OUT/small" 1 10
make_tree "$OUT/10k" 100 100
make_tree "$OUT/100k" 1000 100
make_tree "$OUT/nested" 50 100
for i in $(seq -w 1 50); do
    git init -q "$OUT/nested/vendor/repo$i"
    printf 'int y;\n' >"$OUT/nested/vendor/repo$i/main.c"
done
# A directory whose entries changed in the second before a walk is listed again after the run
# (see GitWalkMemo): let the fresh workspaces age past that, as a real one has.
sleep 2
say "  set-up took $((SECONDS - t0)) s"

declare -A ENTRIES SCAN
for ws in small 10k 100k nested; do
    # The walks' own times, as --json reports them (median of 5), under the bench's priority.
    SCAN[$ws]=$("${RT[@]}" "$PYTHON" - "$ANVIL" "$OUT/$ws" <<'EOF'
import glob, json, os, statistics, subprocess, sys
anvil, ws = sys.argv[1], sys.argv[2]
ms, check = [], []
cold = None
# The first start with no walk cache (linux/git_walk_cache.h), then the cached ones.
for f in glob.glob(f"/tmp/anvil-cache-{os.geteuid()}/walk-*"):
    os.unlink(f)
for i in range(6):
    r = subprocess.run([anvil, "sandbox", "--cwd", ws, "--json", "--", "/bin/true"],
                       capture_output=True, text=True)
    git = json.loads(r.stderr.strip().splitlines()[-1])["git"]
    if i == 0:
        cold = git
        continue
    ms.append(git["scan_ms"])
    check.append(git.get("check_ms", float("nan")))
print(f"before the run: first start {cold['scan_ms']:.2f} ms ({cold.get('entries_listed', cold['entries_scanned'])} "
      f"entries listed), later starts {statistics.median(ms):.2f} ms ({git.get('entries_listed', '?')} of "
      f"{git['entries_scanned']} entries listed, {git.get('dirs_from_cache', 0)} directories from the walk cache; "
      f"{git['repositories']} repositories, {git['read_only_paths']} read-only paths); after it "
      f"{statistics.median(check):.2f} ms ({git.get('check_entries_listed', '?')} entries listed again)")
EOF
)
done

# Rounds (BENCH_ROUNDS, default 3) whose row order alternates, pooled: a burst of load on the
# shared machine lands on every row, as in sandbox_start.sh.
ROUNDS=${BENCH_ROUNDS:-3}
n=$(runs $(( (20 + ROUNDS - 1) / ROUNDS )))
for ws in small 10k 100k nested; do
    for ((r = 0; r < ROUNDS; r++)); do
        rows=(-n "${ws}_writable_git" "$ANVIL sandbox --cwd $OUT/$ws --writable-git -- /bin/true"
              -n "${ws}_protected" "$ANVIL sandbox --cwd $OUT/$ws -- /bin/true")
        [[ -n $BASE ]] && rows+=(-n "${ws}_before" "$BASE sandbox --cwd $OUT/$ws -- /bin/true")
        args=()
        if (( r % 2 )); then
            for ((i = ${#rows[@]} - 3; i >= 0; i -= 3)); do args+=("${rows[@]:i:3}"); done
        else
            args=("${rows[@]}")
        fi
        "${RT[@]}" hyperfine -N --style none --warmup 3 --runs "$n" --export-json "$OUT/$ws.$r.json" \
            "${args[@]}" >/dev/null 2>"$OUT/hyperfine.log" || { cat "$OUT/hyperfine.log" >&2; die "hyperfine failed on $ws"; }
    done
done

"$PYTHON" - "$OUT" "${SCAN[small]}" "${SCAN[10k]}" "${SCAN[100k]}" "${SCAN[nested]}" <<'EOF'
import glob, json, os, statistics, sys
sys.path.insert(0, os.environ["BENCH_DIR_OF_SCRIPTS"])
from summarize import bootstrap
out = sys.argv[1]
scan = dict(zip(["small", "10k", "100k", "nested"], sys.argv[2:6]))
def q(v, p):
    v = sorted(v); i = p * (len(v) - 1); lo = int(i); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (i - lo)
print()
print(f"{'workspace / row':44} {'median':>9} {'p10':>9} {'p90':>9}")
for ws in ["small", "10k", "100k", "nested"]:
    results = {}
    for path in sorted(glob.glob(os.path.join(out, ws + ".*.json"))):
        with open(path) as f:
            for r in json.load(f)["results"]:
                results.setdefault(r["command"], []).extend(t * 1000 for t in r["times"])
    med = {k: statistics.median(v) for k, v in results.items()}
    for name, times in results.items():
        print(f"  {name:42} {med[name]:8.2f}ms {q(times, .1):8.2f}ms {q(times, .9):8.2f}ms")
    base = med[f"{ws}_writable_git"]
    prot = med[f"{ws}_protected"]
    lo, hi = bootstrap(lambda a, b: a / b, [results[f"{ws}_protected"], results[f"{ws}_writable_git"]])
    line = (f"  -> {ws}: protected / --writable-git = {prot / base:.2f} [{lo:.2f}, {hi:.2f}] "
            f"(+{prot - base:.2f} ms)")
    if f"{ws}_before" in med:
        before = med[f"{ws}_before"]
        lo, hi = bootstrap(lambda a, b: a / b, [results[f"{ws}_protected"], results[f"{ws}_before"]])
        line += f"; protected / before = {prot / before:.2f} [{lo:.2f}, {hi:.2f}] ({prot - before:+.2f} ms)"
    print(line)
    print(f"     the walks (--json git.scan_ms, git.check_ms): {scan[ws]}")
EOF
load=$(cut -d' ' -f1 /proc/loadavg)
say ""
say "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs; trust the ratios more than absolute times when it is high"
