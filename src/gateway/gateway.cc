#include "gateway/gateway.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/unique_fd.h"
#include "fs/pending_writes.h"
#include "fs/workspace_path.h"
#include "fs/workspace_root.h"
#include "gateway/audit_log.h"
#include "gateway/exec_broker.h"
#include "gateway/runtime_dir.h"
#include "gateway/self_hardening.h"
#include "gateway/server.h"
#include "ipc/capability_token.h"
#include "ipc/frame.h"
#include "ipc/peer_credentials.h"
#include "linux/git_run_guard.h"
#include "linux/trust_shield.h"
#include "policy/display_text.h"

namespace anvil::gateway {

int RunGateway(const GatewayOptions& input) {
  GatewayOptions options = input;
  // Its stderr is the user's terminal (`anvil run`) or an editor's log (`anvil serve`): what it
  // says there (paths, reasons) passes the display sanitizer.
  auto fail = [](const Error& e) {
    std::cerr << "anvil-gateway: " << SanitizeForDisplay(e.ToString(), 2000) << "\n";
    return 1;
  };
  // First of all, before any token or grant arrives: another process of the user may not
  // ptrace this one or read its memory (/proc/PID/mem, environ, fds), as for the plugin host,
  // the exec broker and every sandbox. Inherited by the broker; reset for the runner by its exec.
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
    return fail(
        Error{"sandbox", "cannot make the gateway non-dumpable (prctl PR_SET_DUMPABLE)", errno});
  }
  signal(SIGPIPE, SIG_IGN);
  if (options.control_fd < 0) return fail(Error{"invalid", "--control-fd is required", 0});
  // The trusted side made the control socketpair, so it is the peer the kernel names for it:
  // the one process whose connections are always admitted (GatewayLimits, admission).
  auto control_peer = ipc::GetPeerCredentials(options.control_fd);
  if (!control_peer || control_peer->pid <= 0) {
    return fail(Error{"invalid",
                      "--control-fd is not a Unix socket naming its peer (fix: start the gateway "
                      "through anvil run / anvil serve, which pass one end of a socketpair)",
                      0});
  }
  options.trusted_pid = control_peer->pid;
  if (options.session_id.empty()) {
    auto t = ipc::CapabilityToken::Generate();
    if (!t) return fail(t.error());
    options.session_id = t->Hex().substr(0, 16);
  }
  WorkspaceOptions ws_options;
  ws_options.no_symlinks = options.no_symlinks;
  ws_options.allow_hardlinked_reads = options.allow_hardlinked_reads;
  ws_options.max_read_bytes = options.limits.max_read_bytes;
  ws_options.max_write_bytes = options.limits.max_write_bytes;
  ws_options.max_list_entries = options.limits.max_list_entries;
  std::unique_ptr<PendingWrites> pending_writes;
  if (options.pending_writes_fd >= 0) {
    struct stat journal {};
    if (::fstat(options.pending_writes_fd, &journal) != 0 || !S_ISREG(journal.st_mode)) {
      return fail(Error{"invalid", "--pending-writes-fd is not an open journal file", 0});
    }
    // Not for the exec broker's children: only this process writes workspace files.
    ::fcntl(options.pending_writes_fd, F_SETFD, FD_CLOEXEC);
    pending_writes = std::make_unique<PendingWrites>(UniqueFd(options.pending_writes_fd));
    ws_options.pending_writes = pending_writes.get();
  }
  std::optional<ipc::WriteUsageTable> write_usage;
  if (options.write_usage_fd >= 0) {
    ::fcntl(options.write_usage_fd, F_SETFD, FD_CLOEXEC);  // not for the exec broker's children
    auto table = ipc::WriteUsageTable::Map(UniqueFd(options.write_usage_fd));
    if (!table) return fail(Error{"invalid", "--write-usage-fd: " + table.error().message, 0});
    write_usage = std::move(*table);
    options.write_usage = &*write_usage;
  }
  auto root = WorkspaceRoot::Open(options.workspace, ws_options);
  if (!root) return fail(root.error());
  options.workspace = root->path();  // canonical, pinned
  // The workspace path travels as a JSON string (the ready event, registrations): it must be
  // text, or the trusted side would see a different path than the one served.
  if (!IsValidUtf8(options.workspace)) {
    return fail(Error{"invalid", "the workspace path is not valid UTF-8", 0});
  }
  // Before hardening: where Anvil's trust state is or would be made, in this environment, which
  // is the trusted side's.
  options.trust_state_paths = AnvilTrustStateInWorkspace(options.workspace);
  UniqueFd runtime_dir_held;
  auto socket_path = PrepareRuntimeDir(options, &runtime_dir_held);
  if (!socket_path) return fail(socket_path.error());
  if (options.audit_log.empty()) options.audit_log = options.runtime_dir + "/audit.jsonl";
  auto audit = AuditLog::Open(options.audit_log, options.session_id, options.audit_log_max_bytes);
  if (!audit) return fail(audit.error());
  std::unique_ptr<AuditLog> audit_owner(*audit);
  // The exec broker is forked now, while this process has one thread and no Landlock domain:
  // the runner it starts needs namespaces and mounts that the hardened gateway may not make.
  std::unique_ptr<ExecBroker> exec;
  if (!options.exec_runner.empty()) {
    ExecBrokerConfig config;
    config.workspace = options.workspace;
    config.runner_path = options.exec_runner;
    config.limits = options.exec_limits;
    config.fail_layer_for_testing = options.exec_fail_layer_for_testing;
    auto broker = ExecBroker::Start(config);
    if (broker) {
      exec = std::move(*broker);
    } else {
      // The gateway still serves sys.fs; every sys.exec is refused with this reason.
      options.exec_unavailable = broker.error().ToString();
      std::cerr << "anvil-gateway: sys.exec unavailable: "
                << SanitizeForDisplay(options.exec_unavailable, 2000) << "\n";
    }
  } else if (options.exec_unavailable.empty()) {
    options.exec_unavailable = "disabled for this session (--no-exec)";
  }
  // A fetch holds a worker for up to its time caps: keep one worker free of fetches, so slow
  // servers cannot stall every other request of the session.
  const uint32_t workers = std::max<uint32_t>(1, options.limits.worker_threads);
  options.net.max_fetches_per_session =
      std::max<uint32_t>(1, std::min(options.net.max_fetches_per_session, workers - 1));
  // Before hardening: reads the --unsafe-test-ca file, initialises libcurl single-threaded
  // (anvil-gateway-offline: none, and every net.fetch is refused).
  auto net = MakeNetService(options.net);
  if (!net) return fail(net.error());
  // Before hardening: the user's git config lies outside the workspace. Only when a plugin may
  // write: the scan walks the whole workspace, most of a no-op session's start in a large one.
  std::unique_ptr<GitRunGuard> git_run =
      options.no_fs_write ? nullptr : GitRunGuard::Start(options.workspace);
  Server server(options, std::move(*root), audit_owner.get(), exec.get(), std::move(*net),
                git_run.get());
  if (auto s = server.Start(*socket_path); !s) return fail(s.error());
  if (options.harden) {
    if (auto s = HardenGateway(options.workspace, options.runtime_dir, options.audit_log); !s) {
      ::unlink(socket_path->c_str());
      return fail(s.error());
    }
  }
  nlohmann::json ready = {{"event", "ready"},
                          {"socket", *socket_path},
                          {"session", options.session_id},
                          {"workspace", options.workspace},
                          {"audit_log", options.audit_log},
                          {"hardened", options.harden}};
  std::string frame =
      ipc::EncodeControl(ready.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (::send(options.control_fd, frame.data(), frame.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(frame.size())) {
    ::unlink(socket_path->c_str());
    return fail(Error{"internal", "control channel closed before ready", errno});
  }
  int status = server.Loop();
  ::unlink(socket_path->c_str());
  ::rmdir(options.runtime_dir.c_str());
  return status;
}

}  // namespace anvil::gateway
