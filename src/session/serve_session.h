// `anvil serve`: the long-lived trusted side an editor or agent talks to, JSON-RPC 2.0 with LSP
// framing on stdin/stdout (docs/protocol.md, section 4). One session owns one anvil-gateway and
// one anvil-plugin-host per enabled, granted plugin; it keeps the editor's versioned buffers,
// runs commands with deadlines, cancels, reloads (T7) and restarts crashed processes with
// bounded retries; anvil/exec runs an agent's command as a child `anvil exec --ask-fd` whose
// questions go to the editor (session/exec_request.h). Single-threaded: one poll loop over
// stdin, the gateway's pidfd, each host's channel, pidfd and stderr and each exec child's
// question channel, output pipes and pidfd, plus timers — so a request is answered exactly once
// and nothing races with a reload.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "policy/approval.h"
#include "session/lsp_framing.h"

namespace anvil::session {

struct ServeOptions {
  std::string workspace;                  // canonical
  std::vector<std::string> plugin_dirs;   // --plugin-dir: enabled
  std::vector<std::string> search_paths;  // --plugin-path and the default search path
  bool approve = false;                   // grant exactly what is requested, without asking
  bool require_signed = false;            // refuse manifests not signed by a trusted key
  std::chrono::milliseconds command_timeout{10000};
  std::chrono::milliseconds cancel_grace{250};  // after $/cancelRequest, then the group is killed
  std::size_t max_message_bytes = kDefaultMaxMessageBytes;
  std::size_t max_queued_runs = 16;  // per plugin, beyond: "busy"
  int max_host_restarts = 3;         // crashes per restart window before a plugin is "failed"
  int max_gateway_restarts = 3;
  std::chrono::seconds restart_window{60};
  // Flags for every gateway of the session: the write caps (--max-plugin-write-bytes,
  // --max-plugin-new-entries) and the trusted-side test options.
  std::vector<std::string> gateway_args;
  std::vector<std::string> host_args;
  int in_fd = 0;
  int out_fd = 1;
  // --trace FILE: an open descriptor (OpenRpcTrace) the session takes over, or -1.
  int trace_fd = -1;
  // A --plugin-dir plugin is reloaded (the T7 reload of anvil/reload) when its files change,
  // after `watch_debounce` without further changes. --no-watch turns it off.
  bool watch_plugin_dirs = true;
  std::chrono::milliseconds watch_debounce{200};
  // anvil/exec: the approval mode of a request that names none (--approval), and how many run
  // at once (beyond: "busy").
  ApprovalMode exec_approval = ApprovalMode::kOnRequest;
  std::size_t max_exec_jobs = 8;
};

// Serves until `exit`, end of input, a closed output or SIGTERM/SIGINT/SIGHUP; every host and
// the gateway are stopped before it returns. Returns 0 after a `shutdown` request, else 1.
int RunServe(const ServeOptions& options);

}  // namespace anvil::session
