// `anvil mcp`'s argument handling (mcp_server.h): its own flags, every other option kept for
// `anvil sandbox`, and `anvil exec`'s command line for one call.
#include <limits.h>
#include <stdlib.h>

#include "cli/exec_command.h"
#include "cli/mcp_server.h"
#include "fs/workspace_path.h"
#include "policy/display_text.h"

namespace anvil::cli::mcp_server {

std::string Canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : std::string();
}

Result<McpOptions> ParseMcpArgs(const std::vector<std::string>& args) {
  McpOptions o;
  std::string workspace = ".";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string flag = a.substr(0, a.find('='));
    auto value = [&]() -> Result<std::string> {
      if (a.size() > flag.size()) return a.substr(flag.size() + 1);
      if (i + 1 >= args.size()) return Fail("invalid", flag + " needs a value (see --help)");
      return args[++i];
    };
    if (flag == "--workspace" || flag == "--approval" || flag == "--rules" ||
        flag == "--plugin-dir" || flag == "--plugin-path") {
      auto v = value();
      if (!v) return tl::unexpected(v.error());
      if (flag == "--workspace") {
        workspace = *v;
      } else if (flag == "--approval") {
        auto mode = ParseApprovalMode(*v);
        if (!mode) {
          return Fail("invalid", "--approval " + SanitizeForDisplay(*v, 40) +
                                     " (fix: untrusted, on-failure, on-request or never)");
        }
        o.mode = *mode;
      } else if (flag == "--rules") {
        o.rules_files.push_back(*v);
      } else if (flag == "--plugin-dir") {
        const std::string c = Canonical(*v);
        if (c.empty()) {
          return Fail("invalid",
                      "--plugin-dir " + SanitizeForDisplay(*v, 400) + ": no such directory");
        }
        o.plugin_dirs.push_back(c);
      } else {
        const std::string c = Canonical(*v);
        if (c.empty()) {
          return Fail("invalid",
                      "--plugin-path " + SanitizeForDisplay(*v, 400) + ": no such directory");
        }
        o.search_paths.push_back(c);
        o.default_path = false;
      }
    } else if (a == "--no-plugins") {
      o.plugins = false;
    } else if (flag == "--cwd" || flag == "--workdir") {
      return Fail("invalid", flag +
                                 " is not an option of anvil mcp (fix: --workspace DIR; a call "
                                 "picks its directory with run_command's cwd)");
    } else if (flag == "--json" || flag == "--report-fd" || flag == "--widen" ||
               flag == "--reason") {
      return Fail("invalid", flag +
                                 " is not an option of anvil mcp (it is per call: run_command's "
                                 "arguments)");
    } else if (!a.empty() && a[0] == '-' && a != "-" && a != "--") {
      o.sandbox_flags.push_back(a);
      if (SandboxValueFlags().contains(flag) && a.size() == flag.size()) {
        if (i + 1 >= args.size()) return Fail("invalid", flag + " needs a value (see --help)");
        o.sandbox_flags.push_back(args[++i]);
      }
    } else {
      return Fail("invalid", "unexpected argument '" + SanitizeForDisplay(a, 100) +
                                 "' (anvil mcp takes options only; the commands come from the "
                                 "client)");
    }
  }
  o.workspace = Canonical(workspace);
  if (o.workspace.empty() || !IsRealDirectory(o.workspace)) {
    return Fail("invalid",
                "--workspace " + SanitizeForDisplay(workspace, 400) + ": no such directory");
  }
  if (!IsValidUtf8(o.workspace)) {
    return Fail("invalid", "the workspace path " + SanitizeForDisplay(o.workspace, 400) +
                               " is not valid UTF-8 (fix: serve a directory whose path is UTF-8)");
  }
  return o;
}

// `anvil exec`'s command line for one call.
std::vector<std::string> ExecArgs(const McpOptions& o, const std::string& workdir,
                                  const mcp::RunCommandArgs& call) {
  std::vector<std::string> args = {"--approval", std::string(ToString(o.mode))};
  for (const auto& f : o.rules_files) {
    args.push_back("--rules");
    args.push_back(f);
  }
  args.insert(args.end(), o.sandbox_flags.begin(), o.sandbox_flags.end());
  args.push_back("--cwd");
  args.push_back(o.workspace);
  if (!workdir.empty() && workdir != o.workspace) {
    args.push_back("--workdir");
    args.push_back(workdir);
  }
  if (!call.widen.empty()) {
    args.push_back("--widen");
    args.push_back(call.widen);
    args.push_back("--reason");
    args.push_back(call.reason);
  }
  args.push_back("--");
  args.insert(args.end(), call.argv.begin(), call.argv.end());
  return args;
}

}  // namespace anvil::cli::mcp_server
