#include "cli/serve_command.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "session/serve_session.h"
#include "session/unsafe_net_test_options.h"

namespace anvil::cli {
namespace {

constexpr int kExitUsage = 2;

constexpr char kUsage[] =
    R"(usage: anvil serve --workspace DIR [--plugin-dir DIR]... [--plugin-path DIR]...
                   [--approve] [--require-signed] [--timeout SECONDS] [--cancel-grace-ms MS]
                   [--max-message-bytes N]

The sidecar an editor or agent talks to: JSON-RPC 2.0 with LSP framing (Content-Length) on
stdin/stdout (docs/protocol.md). One session: one policy gateway, one sandboxed host per
enabled and granted plugin, the editor's versioned buffers.

  --workspace DIR         the workspace (required)
  --plugin-dir DIR        load this plugin (enabled; repeatable)
  --plugin-path DIR       each subdirectory is an installed plugin, enabled when the workspace's
                          Anvil.toml names it (repeatable; default search path:
                          ${XDG_DATA_HOME:-~/.local/share}/anvil/plugins)
  --no-default-plugin-path  do not look in the default search path
  --approve               grant exactly what each enabled plugin requests, without asking
  --require-signed        refuse plugins whose manifest is not signed by a key you trust
  --timeout SECONDS       wall-clock deadline of a command (default 10; the host is killed)
  --cancel-grace-ms MS    after $/cancelRequest, how long a plugin may take to stop before
                          its process group is killed (default 250)
  --max-message-bytes N   largest JSON-RPC message accepted (default 16 MiB)

The workspace's Anvil.toml is untrusted: it may enable installed plugins, never widen a grant.
Plugins without a grant for their exact manifest are listed as needs_consent; the editor asks
the user with anvil/requestConsent. Exit: 0 after shutdown+exit, 1 when the input ended or the
editor went away without shutdown, 2 on usage errors.

Examples:
  anvil serve --workspace . --plugin-dir examples/plugins/fmt-js   # an editor starts this
  anvil serve --workspace ~/proj    # the installed plugins that ~/proj/Anvil.toml enables

Editors start it themselves: the Neovim client is in editors/nvim (README.md there).
)";

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

bool ParsePositive(const std::string* v, double max, double& out) {
  if (!v) return false;
  char* end = nullptr;
  out = std::strtod(v->c_str(), &end);
  return !v->empty() && *end == '\0' && out > 0 && std::isfinite(out) && out <= max;
}

}  // namespace

int RunServeCommand(const std::vector<std::string>& args) {
  session::ServeOptions o;
  session::UnsafeNetTestOptions unsafe_net_test;
  std::string workspace;
  bool default_path = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string* v = i + 1 < args.size() ? &args[i + 1] : nullptr;
    auto need = [&](const char* what) {
      std::cerr << "anvil serve: invalid: " << a << " needs " << what << "\n";
      return kExitUsage;
    };
    double number = 0;
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--workspace") {
      if (!v) return need("a directory");
      workspace = *v;
      ++i;
    } else if (a == "--plugin-dir") {
      if (!v) return need("a directory");
      o.plugin_dirs.push_back(*v);
      ++i;
    } else if (a == "--plugin-path") {
      if (!v) return need("a directory");
      std::string dir = Canonical(*v);
      if (dir.empty()) {
        std::cerr << "anvil serve: invalid: plugin path " << *v << " does not exist\n";
        return kExitUsage;
      }
      o.search_paths.push_back(dir);
      ++i;
    } else if (a == "--no-default-plugin-path") {
      default_path = false;
    } else if (a == "--approve") {
      o.approve = true;
    } else if (a == "--require-signed") {
      o.require_signed = true;
    } else if (a == "--timeout") {
      if (!ParsePositive(v, 86400, number)) return need("a positive number of seconds");
      o.command_timeout = std::chrono::milliseconds(static_cast<int64_t>(number * 1000));
      ++i;
    } else if (a == "--cancel-grace-ms") {
      if (!ParsePositive(v, 600000, number)) return need("a positive number of milliseconds");
      o.cancel_grace = std::chrono::milliseconds(static_cast<int64_t>(number));
      ++i;
    } else if (a == "--max-message-bytes") {
      if (!ParsePositive(v, 1u << 30, number) || number < 1024) {
        return need("a number of bytes between 1024 and 1 GiB");
      }
      o.max_message_bytes = static_cast<size_t>(number);
      ++i;
    } else if (std::string error; unsafe_net_test.Take(args, i, error)) {
      // Trusted-side test options, passed to the gateway (INTERFACES.md); never from a plugin.
      if (!error.empty()) {
        std::cerr << "anvil serve: " << error << "\n";
        return kExitUsage;
      }
    } else {
      std::cerr << "anvil serve: invalid: unknown option " << a << " (see anvil serve --help)\n";
      return kExitUsage;
    }
  }
  for (std::string& arg : unsafe_net_test.ToGatewayArgs()) o.gateway_args.push_back(std::move(arg));
  if (workspace.empty()) {
    std::cerr << "anvil serve: invalid: --workspace DIR is required\n";
    return kExitUsage;
  }
  o.workspace = Canonical(workspace);
  if (o.workspace.empty()) {
    std::cerr << "anvil serve: invalid: workspace " << workspace << " does not exist\n";
    return kExitUsage;
  }
  if (default_path) {
    const char* data = std::getenv("XDG_DATA_HOME");
    const char* home = std::getenv("HOME");
    std::string base = data && data[0] == '/'   ? std::string(data)
                       : home && home[0] == '/' ? std::string(home) + "/.local/share"
                                                : std::string();
    if (!base.empty()) {
      std::string dir = Canonical(base + "/anvil/plugins");
      if (!dir.empty()) o.search_paths.push_back(dir);
    }
  }
  if (isatty(o.in_fd)) {
    std::cerr << "anvil serve: speaking JSON-RPC 2.0 (LSP framing) on stdin/stdout; "
                 "see docs/protocol.md\n";
  }
  return session::RunServe(o);
}

}  // namespace anvil::cli
