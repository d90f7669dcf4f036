#!/usr/bin/env bash
# The sanitizer stages of the README's test command (issue #9, docs/reliability.md):
#   asan  the whole test suite built with clang, ASan + UBSan (preset asan, the same build as the
#         fuzzers) and run with ctest.
#   tsan  anvil-gateway built with ThreadSanitizer (preset tsan); the dev build's gateway test
#         binary runs its concurrency tests against it (ANVIL_TEST_BIN_DIR). The gateway is the
#         only multi-threaded trust component, and a race report makes it exit 66, which the
#         fixture's clean-exit check turns into a failed test.
#   scripts/sanitizers.sh [asan] [tsan]     default: both
# Environment: ANVIL_JOBS; ANVIL_ASAN_SKIP_BUILD=1 (build/asan is already built);
#   ANVIL_ASAN_TESTS (ctest -R regex of the ASan run, default every test);
#   ANVIL_TSAN_FILTER, ANVIL_TSAN_RELIABILITY_FILTER (gtest filters of the TSan run).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${ANVIL_JOBS:-$(nproc)}"
stages=("$@")
((${#stages[@]})) || stages=(asan tsan)

run_asan() {
  local asan_env=(
    # detect_leaks=0: LeakSanitizer stops the world with ptrace, which the hardened gateway's
    # and hosts' seccomp filters refuse ("LeakSanitizer has encountered a fatal error", exit 1
    # at every shutdown). Every binary of the build has it as its default too
    # (src/sanitizer/default_options.cc), for the processes started with a fixed environment.
    # Leaks in the parsers are what the fuzzers (scripts/fuzz.sh) check.
    # A small quarantine keeps the tests' RSS bounds meaningful (the same 4 MiB as
    # src/sanitizer/default_options.cc, for the processes started with a fixed environment).
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0:quarantine_size_mb=4:abort_on_error=1}"
    UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
  )
  if [[ "${ANVIL_ASAN_SKIP_BUILD:-0}" != 1 ]]; then
    cmake --preset asan >/dev/null
    cmake --build --preset asan -j "$jobs"
  fi
  echo "[sanitizers] asan: the whole suite under ASan + UBSan"
  env "${asan_env[@]}" ctest --preset asan -j "$jobs" --timeout 600 \
    ${ANVIL_ASAN_TESTS:+-R "$ANVIL_ASAN_TESTS"}
}

# Concurrency-relevant gateway tests: worker pool, queue and busy limits, backpressure,
# concurrent cancel, exec cancel/timeout (security_gateway_tests); load, fd exhaustion, a host
# killed mid-write (reliability_gateway_tests).
default_filter='T6GatewayLimits.*:T5GatewayIpc.ConcurrentCancel*'
default_filter+=':T5GatewayIpc.HostExitRevokesItsToken:ExecGateway.CancelKills*'
default_filter+=':ExecGateway.TimeoutKills*'
# Several I/O threads serve the connections: revocation against reads in flight, concurrent
# readers and their audit lines.
default_filter+=':T5GatewayIpc.RevokeDuring*:T5GatewayIpc.ConcurrentClients*'
default_filter+=':T5GatewayIpc.Shutdown*:T5GatewayRevokeInFlight.*'
default_reliability_filter='GatewayLoad.*:GatewayFaults.OutOfFileDescriptors*'
default_reliability_filter+=':GatewayFaults.HostKilled*'

run_tsan() {
  echo "[sanitizers] tsan: anvil-gateway under ThreadSanitizer"
  [[ -x build/dev/tests/security/security_gateway_tests ]] || {
    echo "[sanitizers] tsan needs the dev build first (scripts/test.sh)" >&2
    return 1
  }
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$jobs" --target anvil-gateway anvil-gateway-offline
  local bin=build/tsan/mixed-bin
  rm -rf "$bin"
  mkdir -p "$bin"
  local b
  for b in anvil anvil-plugin-host anvil-exec-runner; do ln -s "$PWD/build/dev/$b" "$bin/$b"; done
  # A copy, not a link: the gateway finds anvil-exec-runner next to its own /proc/self/exe.
  cp "build/tsan/anvil-gateway" "$bin/anvil-gateway"
  cp "build/tsan/anvil-gateway-offline" "$bin/anvil-gateway-offline"
  # ANVIL_TEST_GATEWAY_TSAN=1: the few wall-clock bounds on the gateway's answers widen (TSan
  # makes it 5-15x slower; tests/security/sandbox_harness.h GatewayUnderTsan).
  ANVIL_TEST_BIN_DIR="$PWD/$bin" ANVIL_TEST_GATEWAY_TSAN=1 \
    TSAN_OPTIONS="${TSAN_OPTIONS:-second_deadlock_stack=1:exitcode=66}" \
    build/dev/tests/security/security_gateway_tests \
    --gtest_filter="${ANVIL_TSAN_FILTER:-$default_filter}"
  ANVIL_TEST_BIN_DIR="$PWD/$bin" ANVIL_TEST_GATEWAY_TSAN=1 \
    TSAN_OPTIONS="${TSAN_OPTIONS:-second_deadlock_stack=1:exitcode=66}" \
    build/dev/tests/reliability/reliability_gateway_tests \
    --gtest_filter="${ANVIL_TSAN_RELIABILITY_FILTER:-$default_reliability_filter}"
  ANVIL_TEST_BIN_DIR="$PWD/$bin" ANVIL_TEST_GATEWAY_TSAN=1 TSAN_OPTIONS="${TSAN_OPTIONS:-exitcode=66}" \
    build/dev/tests/integration/integration_tests --gtest_filter='GatewayFs.*'
}

for stage in "${stages[@]}"; do
  case "$stage" in
    asan) run_asan ;;
    tsan) run_tsan ;;
    *) echo "unknown stage: $stage" >&2; exit 2 ;;
  esac
done
