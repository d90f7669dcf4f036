// `anvil mcp`'s argument handling (mcp_server.h): its flags from its table (cli/mcp_spec.h),
// every other option kept for `anvil sandbox`, and `anvil exec`'s command line for one call.
#include <limits.h>
#include <stdlib.h>

#include "cli/exec_command.h"
#include "cli/mcp_server.h"
#include "cli/mcp_spec.h"
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
  ANVIL_TRY(parsed, ParseFlags(McpFlags(o, workspace), args));
  if (parsed->help) return Fail("invalid", "--help goes alone");
  o.sandbox_flags = std::move(parsed->forwarded);
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
