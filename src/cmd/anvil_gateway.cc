// anvil-gateway: the per-session policy enforcement point. Started by the trusted side only.
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "common/std_fds.h"
#include "gateway/gateway.h"
#include "gateway/net_fetch_flags.h"
#include "linux/helper_executable.h"

namespace {

constexpr char kUsage[] = R"(usage: anvil-gateway --workspace DIR --control-fd N [options]

The per-session policy gateway. Started by `anvil run` / `anvil serve` (the trusted side),
which keeps the other end of the control socketpair; not meant to be run by hand.

  --workspace DIR            the workspace root (a symlink is resolved once and pinned)
  --control-fd N             the inherited control channel (required)
  --runtime-dir DIR          per-session directory (0700; default $XDG_RUNTIME_DIR/anvil/<session>)
  --session ID               session id for the audit log
  --audit-log FILE           JSON-lines audit log (default <runtime-dir>/audit.jsonl)
  --pending-writes-fd N      journal of temporary names for the supervisor to sweep
  --no-symlinks              never follow symlinks, even inside the workspace
  --allow-hardlinked-reads   allow reading files with more than one hard link
  --max-frame-bytes N  --max-read-bytes N  --max-write-bytes N  --max-connections N
  --max-inflight N     --max-queued N      --requests-per-second N  --bytes-per-second N
  --workers N          --max-rename-entries N  --hello-timeout-ms N
  --no-harden                skip self-hardening (tests that need to inspect the process)

sys.exec (the tools of the executable policy table, run by anvil-exec-runner):
  --exec-runner PATH         anvil-exec-runner (default: next to this program)
  --no-exec                  refuse every sys.exec
  --exec-timeout SECONDS     per call, default 30; the whole process tree is killed
  --exec-max-stdout N  --exec-max-stderr N  --exec-max-stdin N   bytes (8M, 1M, 8M)
  --exec-max-processes N     processes inside one call's sandbox (64)
  --exec-max-memory N        bytes of heap a tool may allocate (RLIMIT_DATA; 1073741824)
  --exec-concurrency N       calls running at once per session (4); beyond: busy
)";

bool ParseNumber(const std::string& text, uint64_t& out) {
  if (text.empty() || text[0] == '-') return false;
  char* end = nullptr;
  out = std::strtoull(text.c_str(), &end, 10);
  return end && *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens a descriptor (common/std_fds.h).
  if (!anvil::EnsureStandardDescriptors()) return 125;
  anvil::gateway::GatewayOptions o;
  // Beside this program (libexec/anvil/, or the build tree), never through PATH.
  if (auto runner = anvil::FindHelper("anvil-exec-runner")) {
    o.exec_runner = runner->path;
  } else {
    o.exec_unavailable = runner.error().ToString();
  }
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    auto number = [&](auto& field) {
      const std::string* v = value();
      uint64_t n;
      if (!v || !ParseNumber(*v, n)) return false;
      field = static_cast<std::remove_reference_t<decltype(field)>>(n);
      return true;
    };
    bool ok = true;
    if (std::string net_error; anvil::gateway::TakeNetFetchFlag(args, i, o.net, net_error)) {
      if (!net_error.empty()) return std::cerr << "anvil-gateway: " << net_error << "\n", 2;
      continue;
    }
    if (a == "--help" || a == "-h") {
      std::cout << kUsage << anvil::gateway::kNetFetchFlagsUsage;
      return 0;
    } else if (a == "--workspace") {
      const std::string* v = value();
      ok = v != nullptr;
      if (ok) o.workspace = *v;
    } else if (a == "--runtime-dir") {
      const std::string* v = value();
      ok = v != nullptr;
      if (ok) o.runtime_dir = *v;
    } else if (a == "--session") {
      const std::string* v = value();
      ok = v != nullptr;
      if (ok) o.session_id = *v;
    } else if (a == "--audit-log") {
      const std::string* v = value();
      ok = v != nullptr;
      if (ok) o.audit_log = *v;
    } else if (a == "--control-fd") {
      ok = number(o.control_fd);
    } else if (a == "--pending-writes-fd") {
      ok = number(o.pending_writes_fd);
    } else if (a == "--no-symlinks") {
      o.no_symlinks = true;
    } else if (a == "--allow-hardlinked-reads") {
      o.allow_hardlinked_reads = true;
    } else if (a == "--no-harden") {
      o.harden = false;
    } else if (a == "--max-frame-bytes") {
      ok = number(o.limits.max_frame_bytes);
    } else if (a == "--max-read-bytes") {
      ok = number(o.limits.max_read_bytes);
    } else if (a == "--max-write-bytes") {
      ok = number(o.limits.max_write_bytes);
    } else if (a == "--max-connections") {
      ok = number(o.limits.max_connections);
    } else if (a == "--hello-timeout-ms") {
      ok = number(o.limits.hello_timeout_ms) && o.limits.hello_timeout_ms > 0;
    } else if (a == "--max-rename-entries") {
      ok = number(o.limits.max_rename_entries);
    } else if (a == "--max-inflight") {
      ok = number(o.limits.max_inflight_per_connection);
    } else if (a == "--max-queued") {
      ok = number(o.limits.max_queued_jobs);
    } else if (a == "--requests-per-second") {
      ok = number(o.limits.plugin_requests_per_second);
    } else if (a == "--bytes-per-second") {
      ok = number(o.limits.plugin_bytes_per_second);
    } else if (a == "--workers") {
      ok = number(o.limits.worker_threads);
    } else if (a == "--exec-runner") {
      const std::string* v = value();
      ok = v != nullptr && !v->empty();
      if (ok) o.exec_runner = *v;
      if (ok) o.exec_unavailable.clear();
    } else if (a == "--no-exec") {
      o.exec_runner.clear();
      o.exec_unavailable.clear();
    } else if (a == "--exec-timeout") {
      const std::string* v = value();
      char* end = nullptr;
      double secs = v ? std::strtod(v->c_str(), &end) : 0;
      ok = v && end != v->c_str() && *end == '\0' && secs > 0 && secs <= 86400;
      if (ok) o.exec_limits.timeout = std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
    } else if (a == "--exec-max-stdout") {
      ok = number(o.exec_limits.max_stdout_bytes);
    } else if (a == "--exec-max-stderr") {
      ok = number(o.exec_limits.max_stderr_bytes);
    } else if (a == "--exec-max-stdin") {
      ok = number(o.exec_limits.max_stdin_bytes);
    } else if (a == "--exec-max-processes") {
      ok = number(o.exec_limits.max_processes) && o.exec_limits.max_processes > 0;
    } else if (a == "--exec-max-memory") {
      ok = number(o.exec_limits.max_memory_bytes) && o.exec_limits.max_memory_bytes >= (1u << 20);
    } else if (a == "--exec-concurrency") {
      ok = number(o.exec_limits.max_concurrent) && o.exec_limits.max_concurrent > 0;
#ifdef ANVIL_TEST_HOOKS
    } else if (a == "--unsafe-test-exec-fail-layer") {
      const std::string* v = value();
      ok = v != nullptr;
      if (ok) o.exec_fail_layer_for_testing = *v;
#endif
    } else {
      std::cerr << "anvil-gateway: invalid: unknown option " << a << "\n";
      return 2;
    }
    if (!ok) {
      std::cerr << "anvil-gateway: invalid: " << a << " needs a valid value\n";
      return 2;
    }
  }
  if (o.workspace.empty() || o.control_fd < 0) {
    std::cerr << "anvil-gateway: invalid: --workspace and --control-fd are required\n" << kUsage;
    return 2;
  }
  if (o.exec_runner.empty() && !o.exec_unavailable.empty()) {
    std::cerr << "anvil-gateway: sys.exec unavailable: " << o.exec_unavailable << "\n";
  }
  return anvil::gateway::RunGateway(o);
}
