#include "cli/serve_command.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "fs/workspace_path.h"
#include "policy/display_text.h"
#include "session/plugin_catalog.h"
#include "session/rpc_trace.h"
#include "session/serve_session.h"
#include "session/unsafe_net_test_options.h"

namespace anvil::cli {
namespace {

constexpr int kExitUsage = 2;

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

// What the flags set; the spec's handlers write here.
struct ServeArgs {
  session::ServeOptions o;
  session::UnsafeNetTestOptions unsafe_net_test;
  std::string workspace, trace_file;
  bool default_path = true;
};

CommandSpec ServeSpec(ServeArgs& a) {
  CommandSpec spec;
  spec.echo = SanitizeFlagArgument;
  spec.name = "serve";
  spec.program = "anvil serve";
  spec.summary = "JSON-RPC sidecar for editors and agents";
  spec.synopsis =
      "--workspace DIR [--plugin-dir DIR]... [--plugin-path DIR]...\n"
      "                   [--approve] [--require-signed] [--timeout SECONDS] "
      "[--cancel-grace-ms MS]\n"
      "                   [--max-message-bytes N] [--trace FILE] [--no-watch] [--approval MODE]\n"
      "                   [--max-plugin-write-bytes N] [--max-plugin-new-entries N]";
  spec.description =
      "The sidecar an editor or agent talks to: JSON-RPC 2.0 with LSP framing (Content-Length) on\n"
      "stdin/stdout (docs/protocol.md). One session: one policy gateway, one sandboxed host per\n"
      "enabled and granted plugin, the editor's versioned buffers.";
  spec.flags = {
      Text("--workspace", "DIR", "the workspace (required)",
           [&a](const std::string& v) {
             a.workspace = v;
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Text("--plugin-dir", "DIR", "load this plugin (enabled; repeatable)",
           [&a](const std::string& v) {
             a.o.plugin_dirs.push_back(v);
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kPluginDirectory)
          .Repeatable(),
      Text("--plugin-path", "DIR",
           "each subdirectory is an installed plugin, enabled when the workspace's\n"
           "Anvil.toml names it (repeatable; default search path:\n"
           "${XDG_DATA_HOME:-~/.local/share}/anvil/plugins)",
           [&a](const std::string& v) -> Status {
             std::string dir = Canonical(v);
             if (dir.empty()) return Fail("invalid", "plugin path " + v + " does not exist");
             a.o.search_paths.push_back(dir);
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory)
          .Repeatable(),
      Switch("--no-default-plugin-path", "do not look in the default search path",
             [&a] { a.default_path = false; }),
      Switch("--approve", "grant exactly what each enabled plugin requests, without asking",
             [&a] { a.o.approve = true; }),
      Switch("--require-signed", "refuse plugins whose manifest is not signed by a key you trust",
             [&a] { a.o.require_signed = true; }),
      Number("--timeout", "SECONDS",
             "wall-clock deadline of a command (default 10; the host is killed)", Above(0, 86400),
             [&a](double v) {
               a.o.command_timeout = std::chrono::milliseconds(static_cast<int64_t>(v * 1000));
             })
          .Expects("a positive number of seconds"),
      Number(
          "--cancel-grace-ms", "MS",
          "after $/cancelRequest, how long a plugin may take to stop before\n"
          "its process group is killed (default 250)",
          Above(0, 600000),
          [&a](double v) { a.o.cancel_grace = std::chrono::milliseconds(static_cast<int64_t>(v)); })
          .Expects("a positive number of milliseconds"),
      Number("--max-message-bytes", "N", "largest JSON-RPC message accepted (default 16 MiB)",
             Between(1024, 1u << 30),
             [&a](double v) { a.o.max_message_bytes = static_cast<size_t>(v); })
          .Expects("a number of bytes between 1024 and 1 GiB"),
      Text("--trace", "FILE",
           "append every JSON-RPC message, both ways, to FILE: one JSON line\n"
           "each {\"time\",\"dir\":\"in\"|\"out\",\"message\"} (0600; never a symlink)",
           [&a](const std::string& v) {
             a.trace_file = v;
             return Ok();
           })
          .Expects("a file")
          .Completes(Completion::kFile),
      Switch("--no-watch",
             "do not reload a --plugin-dir plugin when its files change (by\n"
             "default it is reloaded as by anvil/reload; a manifest that asks for\n"
             "more then needs consent, even with --approve)",
             [&a] { a.o.watch_plugin_dirs = false; }),
      ByteSize("--max-plugin-write-bytes", "N",
               "bytes one plugin's fs.write calls may write in the session, across\n"
               "host and gateway restarts (default 4 GiB)",
               Between(1, 1ull << 50),
               [&a](uint64_t v) {
                 a.o.gateway_args.insert(a.o.gateway_args.end(),
                                         {"--max-plugin-write-bytes", std::to_string(v)});
               })
          .Expects("a number of bytes (suffixes K, M, G)"),
      Count("--max-plugin-new-entries", "N",
            "files and directories one plugin may make in the session, across\n"
            "host and gateway restarts (default 100000)",
            Between(1, 1e9),
            [&a](uint64_t v) {
              a.o.gateway_args.insert(a.o.gateway_args.end(),
                                      {"--max-plugin-new-entries", std::to_string(v)});
            })
          .Expects("a positive number"),
      Text("--approval", "MODE",
           "approval mode of an anvil/exec request that names none: untrusted |\n"
           "on-failure | on-request (default) | never (as anvil exec --approval;\n"
           "questions go to the editor as anvil/approve)",
           [&a](const std::string& v) -> Status {
             auto mode = ParseApprovalMode(v);
             if (!mode) {
               return Fail("invalid", "--approval " + SanitizeForDisplay(v, 40) +
                                          " (fix: untrusted, on-failure, on-request or never)");
             }
             a.o.exec_approval = *mode;
             return Ok();
           })
          .Choices({"untrusted", "on-failure", "on-request", "never"}),
  };
  spec.sections = {
      {"",
       "The workspace's Anvil.toml is untrusted: it may enable installed plugins, never widen a "
       "grant.\n"
       "Plugins without a grant for their exact manifest are listed as needs_consent; the "
       "editor asks\n"
       "the user with anvil/requestConsent. Exit: 0 after shutdown+exit, 1 when the input "
       "ended or the\n"
       "editor went away without shutdown, 2 on usage errors.\n"
       "\n"
       "Editors start it themselves: the Neovim client is in editors/nvim (README.md there).",
       false},
  };
  spec.examples = {
      "anvil serve --workspace . --plugin-dir examples/plugins/fmt-js   # an editor starts this",
      "anvil serve --workspace ~/proj    # the installed plugins that ~/proj/Anvil.toml enables",
  };
  // Trusted-side test options, passed to the gateway (INTERFACES.md); never from a plugin.
  spec.extra = [&a](const std::vector<std::string>& args, size_t& i, std::string& error) {
    return a.unsafe_net_test.Take(args, i, error);
  };
  return spec;
}

}  // namespace

CommandSpec ServeCommandSpec() {
  static ServeArgs unused;
  return ServeSpec(unused);
}

int RunServeCommand(const std::vector<std::string>& args) {
  ServeArgs a;
  const CommandSpec spec = ServeSpec(a);
  auto parsed = ParseFlags(spec, args);
  if (!parsed) {
    std::cerr << "anvil serve: " << parsed.error().ToString() << "\n";
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << RenderHelp(spec);
    return 0;
  }
  session::ServeOptions& o = a.o;
  session::UnsafeNetTestOptions& unsafe_net_test = a.unsafe_net_test;
  const std::string& workspace = a.workspace;
  const bool default_path = a.default_path;
  for (std::string& arg : unsafe_net_test.ToGatewayArgs()) o.gateway_args.push_back(std::move(arg));
  if (workspace.empty()) {
    std::cerr << "anvil serve: invalid: --workspace DIR is required\n";
    return kExitUsage;
  }
  o.workspace = Canonical(workspace);
  if (o.workspace.empty()) {
    std::cerr << "anvil serve: invalid: workspace " << SanitizeForDisplay(workspace, 400)
              << " does not exist\n";
    return kExitUsage;
  }
  // The workspace path travels in JSON (the gateway's control channel, every reply that names
  // it): a path that is not UTF-8 is refused here, by name, not replaced.
  if (!IsValidUtf8(o.workspace)) {
    std::cerr << "anvil serve: invalid: the workspace path " << SanitizeForDisplay(o.workspace, 400)
              << " is not valid UTF-8 (fix: serve a directory whose path is UTF-8)\n";
    return kExitUsage;
  }
  if (default_path) {
    const std::string dir =
        session::DefaultPluginSearchPath(std::getenv("XDG_DATA_HOME"), std::getenv("HOME"));
    if (!dir.empty()) o.search_paths.push_back(dir);
  }
  if (!a.trace_file.empty()) {
    auto opened = session::OpenRpcTrace(a.trace_file);
    if (!opened) {
      std::cerr << "anvil serve: " << opened.error().ToString() << "\n";
      return kExitUsage;
    }
    o.trace_fd = opened->Release();  // the session owns it from here
  }
  if (isatty(o.in_fd)) {
    std::cerr << "anvil serve: speaking JSON-RPC 2.0 (LSP framing) on stdin/stdout; "
                 "see docs/protocol.md\n";
  }
  return session::RunServe(o);
}

}  // namespace anvil::cli
