#!/usr/bin/env bash
# Builds the libFuzzer targets (preset `asan`: clang, ASan + UBSan, the same build the ASan test
# stage uses) and runs each for a bounded time, seeded from tests/fuzz/corpus/<name>/ (the repo
# corpus is read-only here: new inputs go to build/asan/corpus/<name>/, crashes to
# build/asan/artifacts/). Any crash, leak, UB report,
# timeout or failed invariant fails the script. docs/reliability.md says how to keep a crash as a
# regression seed.
#
#   scripts/fuzz.sh                 every fuzzer, ANVIL_FUZZ_SECONDS each (default 20)
#   scripts/fuzz.sh frame_fuzzer    only the named ones
# Environment: ANVIL_FUZZ_SECONDS, ANVIL_FUZZ_SKIP (targets left out of the default run), ANVIL_FUZZ_PARALLEL (fuzzers run at once, default nproc),
#              ANVIL_JOBS (build jobs), ANVIL_FUZZ_SKIP_BUILD=1.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${ANVIL_FUZZ_SECONDS:-20}"
parallel="${ANVIL_FUZZ_PARALLEL:-$(nproc)}"
jobs="${ANVIL_JOBS:-$(nproc)}"
build=build/asan

if [[ "${ANVIL_FUZZ_SKIP_BUILD:-0}" != 1 ]]; then
  cmake --preset asan >/dev/null
  cmake --build --preset fuzz -j "$jobs"
fi

if (($# > 0)); then
  names=("$@")
else
  names=()
  # ANVIL_FUZZ_SKIP: targets left out of the default run (none by default).
  skip=" ${ANVIL_FUZZ_SKIP-} "
  for dir in tests/fuzz/corpus/*/; do
    name="$(basename "$dir")_fuzzer"
    [[ "$skip" == *" $name "* ]] || names+=("$name")
  done
fi

mkdir -p "$build/artifacts" "$build/logs"
run_one() {
  local fuzzer=$1 name=${1%_fuzzer}
  local work="$build/corpus/$name" log="$build/logs/$name.log"
  mkdir -p "$work"
  # -timeout: one input over 10 s is a hang; -rss_limit_mb bounds a parser's memory.
  if ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/$name-" \
    "$work" "tests/fuzz/corpus/$name" >"$log" 2>&1; then
    local runs secs cov
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    secs=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
    printf '[fuzz] %-24s ok  %10s runs  %7s exec/s  cov %s\n' "$fuzzer" "$runs" "$secs" "$cov"
  else
    printf '[fuzz] %-24s FAILED (log: %s)\n' "$fuzzer" "$log"
    grep -E 'ERROR|INVARIANT|SUMMARY|Test unit written' "$log" | head -20 || true
    return 1
  fi
}

status=0
pids=()
for fuzzer in "${names[@]}"; do
  run_one "$fuzzer" &
  pids+=($!)
  if ((${#pids[@]} >= parallel)); then
    wait "${pids[0]}" || status=1
    pids=("${pids[@]:1}")
  fi
done
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status
