// `anvil audit`: the audit log of a workspace, filtered and followed.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli/audit_view.h"
#include "cli/plugin_cli.h"
#include "cli/plugin_new_command.h"
#include "cli/run_command.h"
#include "cli/run_watch.h"
#include "cli/terminal_progress.h"
#include "common/json_depth.h"
#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "ipc/plugin_trace.h"
#include "policy/consent.h"
#include "policy/display_text.h"
#include "policy/grant_store.h"
#include "policy/lockfile.h"
#include "policy/manifest.h"
#include "policy/manifest_signature.h"
#include "policy/trusted_keys.h"
#include "policy/workspace_config.h"
#include "session/plugin_admission.h"
#include "session/plugin_catalog.h"
#include "session/plugin_session.h"

namespace anvil::cli {

using namespace plugin_cli;  // the terminal helpers these three commands share
using namespace std::chrono_literals;

namespace {

struct AuditArgs {
  std::string workspace_arg = ".", file;
  bool follow = false, json = false;
  AuditFilter filter;
};

CommandSpec AuditSpec(AuditArgs& a) {
  CommandSpec spec;
  spec.echo = SanitizeFlagArgument;
  spec.name = "audit";
  spec.program = "anvil audit";
  spec.summary = "read the audit log of a workspace";
  spec.synopsis =
      "[--workspace DIR | --file FILE] [--follow] [--json]\n"
      "                   [--plugin ID] [--since TIME] [--denied] [--all]";
  spec.description =
      "Print the audit log of the workspace's sessions: one line per decision, with its time\n"
      "(UTC). The session's housekeeping (register, hello, connect, ping, revoke) is hidden\n"
      "unless --all.";
  spec.flags = {
      Text("--workspace", "DIR", "the workspace (default: the current directory)",
           [&a](const std::string& v) {
             a.workspace_arg = v;
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Text("--file", "FILE", "read this audit log file instead",
           [&a](const std::string& v) {
             a.file = v;
             return Ok();
           })
          .Expects("a file")
          .Completes(Completion::kFile),
      Switch("--follow", "keep printing new entries as they are written",
             [&a] { a.follow = true; }),
      Switch("--json", "one JSON object per line, as stored", [&a] { a.json = true; }),
      Text("--plugin", "ID", "only this plugin's entries",
           [&a](const std::string& v) -> Status {
             if (v.empty() || v[0] == '-') {
               return Fail("invalid", "--plugin needs a plugin id (fix: --plugin example.notes)");
             }
             a.filter.plugin = v;
             return Ok();
           })
          .Expects("a plugin id (fix: --plugin example.notes)"),
      Text("--since", "TIME",
           "only entries from TIME on: RFC 3339 (2026-05-01T12:00:00Z) or\n"
           "relative (30s, 10m, 2h, 7d)",
           [&a](const std::string& v) -> Status {
             ANVIL_TRY(since, ParseAuditSince(v, std::chrono::system_clock::now()));
             a.filter.since = *since;
             return Ok();
           })
          .Expects("a time (fix: --since 2026-05-01T12:00:00Z, or relative: --since 10m)"),
      Switch("--denied", "only denials", [&a] { a.filter.denied = true; }),
      Switch("--all", "also the session's housekeeping (register, hello, connect, ping, revoke)",
             [&a] { a.filter.all = true; }),
  };
  spec.examples = {
      "anvil audit                     # what plugins did in this workspace",
      "anvil audit --denied --since 2h # what was refused lately",
      "anvil audit --follow            # watch a session live",
      "anvil audit --json | jq 'select(.verdict == \"deny\")'",
  };
  spec.style.see_help_hint = false;
  return spec;
}

}  // namespace

CommandSpec AuditCommandSpec() {
  static AuditArgs unused;
  return AuditSpec(unused);
}

int RunAuditCommand(const std::vector<std::string>& args) {
  AuditArgs a;
  const CommandSpec spec = AuditSpec(a);
  auto parsed = ParseFlags(spec, args);
  if (!parsed) {
    std::cerr << ErrorLine("anvil audit", parsed.error());
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << RenderHelp(spec);
    return kExitOk;
  }
  const std::string& workspace_arg = a.workspace_arg;
  std::string file = a.file;
  const bool follow = a.follow, json = a.json;
  if (file.empty()) {
    auto path = session::AuditLogPath(Canonical(workspace_arg).empty() ? workspace_arg
                                                                       : Canonical(workspace_arg));
    if (!path) {
      std::cerr << ErrorLine("anvil audit", path.error());
      return kExitUsage;
    }
    file = *path;
  }
  std::ifstream in(file);
  if (!in) {
    std::cerr << "anvil audit: not_found: no audit log at " << Shown(file) << "\n";
    return kExitPluginError;
  }
  auto print = [&](const std::string& line) {
    auto j = ParseBoundedJson(line);
    if (!j.is_object()) return;  // a line torn by a crash, not an entry, or nested too deep
    if (!AuditMatches(j, a.filter)) return;
    if (json) {
      // As stored, re-encoded with every non-ASCII character escaped: same values for jq,
      // nothing that can act on a terminal.
      std::cout << JsonLine(j);
      return;
    }
    std::cout << FormatAuditLine(j) << "\n";
  };
  std::string line;
  while (true) {
    while (std::getline(in, line)) print(line);
    if (!follow) break;
    in.clear();
    std::this_thread::sleep_for(200ms);
  }
  return kExitOk;
}

}  // namespace anvil::cli
