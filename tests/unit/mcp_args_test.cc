// `anvil mcp`'s command line (cli/mcp_spec.h, ParseMcpArgs): its own flags from its table, every
// other option kept for `anvil sandbox` with its value, the options a call decides refused by
// name, and no operands.
#include <gtest/gtest.h>

#include "cli/mcp_server.h"

namespace anvil::cli::mcp_server {
namespace mcp_args_test {
namespace {

using Args = std::vector<std::string>;

TEST(McpArgs, OwnFlagsAreAppliedAndTheRestKeptForTheSandbox) {
  const std::string ws = Canonical("/tmp");
  auto r = ParseMcpArgs({"--workspace", ws, "--approval=untrusted", "--network", "proxy",
                         "--allow-host=crates.io", "--rules", "a.toml", "--plugin-dir", ws,
                         "--plugin-path", ws, "--no-plugins", "--clear-env"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->workspace, ws);
  EXPECT_EQ(r->mode, ApprovalMode::kUntrusted);
  EXPECT_EQ(r->rules_files, (Args{"a.toml"}));
  EXPECT_EQ(r->plugin_dirs, (Args{ws}));
  EXPECT_EQ(r->search_paths, (Args{ws}));
  EXPECT_FALSE(r->default_path);
  EXPECT_FALSE(r->plugins);
  EXPECT_EQ(r->sandbox_flags,
            (Args{"--network", "proxy", "--allow-host=crates.io", "--clear-env"}));
  // Benign: nothing given is the current directory, on-request, the default plugin path.
  auto none = ParseMcpArgs({});
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_EQ(none->mode, ApprovalMode::kOnRequest);
  EXPECT_TRUE(none->default_path);
  EXPECT_TRUE(none->plugins);
  EXPECT_TRUE(none->sandbox_flags.empty());
}

TEST(McpArgs, EachRefusalNamesTheFix) {
  struct Row {
    Args args;
    const char* message;
  };
  const Row rows[] = {
      {{"--approval", "sometimes"},
       "invalid: --approval sometimes (fix: untrusted, on-failure, on-request or never)"},
      {{"--workspace"}, "invalid: --workspace needs a value (see --help)"},
      {{"--network"}, "invalid: --network needs a value (see --help)"},
      {{"--workspace", "/nonexistent/x"}, "invalid: --workspace /nonexistent/x: no such directory"},
      {{"--plugin-dir", "/nonexistent/x"},
       "invalid: --plugin-dir /nonexistent/x: no such directory"},
      {{"--plugin-path=/nonexistent/x"},
       "invalid: --plugin-path /nonexistent/x: no such directory"},
      {{"--cwd", "/tmp"},
       "invalid: --cwd is not an option of anvil mcp (fix: --workspace DIR; a call picks its "
       "directory with run_command's cwd)"},
      {{"--workdir=x"},
       "invalid: --workdir is not an option of anvil mcp (fix: --workspace DIR; a call picks its "
       "directory with run_command's cwd)"},
      {{"--widen", "writable-git"},
       "invalid: --widen is not an option of anvil mcp (it is per call: run_command's "
       "arguments)"},
      {{"--json"},
       "invalid: --json is not an option of anvil mcp (it is per call: run_command's arguments)"},
      {{"--ask-fd", "5"},
       "invalid: --ask-fd is not an option of anvil mcp (questions go to the client as MCP "
       "elicitation/create; a client without it gets the refusal and the line that would allow "
       "the command)"},
      {{"--ask-fd=5"},
       "invalid: --ask-fd is not an option of anvil mcp (questions go to the client as MCP "
       "elicitation/create; a client without it gets the refusal and the line that would allow "
       "the command)"},
      {{"--requester="}, "invalid: --requester needs a name of 1 to 64 characters"},
      {{"--requester"}, "invalid: --requester needs a value (see --help)"},
      {{"ls"},
       "invalid: unexpected argument 'ls' (anvil mcp takes options only; the commands come from "
       "the client)"},
      {{"--", "ls"},
       "invalid: unexpected argument '--' (anvil mcp takes options only; the commands come from "
       "the client)"},
      {{"-"},
       "invalid: unexpected argument '-' (anvil mcp takes options only; the commands come from "
       "the client)"},
  };
  for (const Row& row : rows) {
    auto r = ParseMcpArgs(row.args);
    ASSERT_FALSE(r) << row.args[0];
    EXPECT_EQ(r.error().ToString(), row.message) << row.args[0];
  }
}

// A typo is refused at startup with the closest option of anvil mcp's, anvil exec's or anvil
// sandbox's table, as the other subcommands do; their options still go through.
TEST(McpArgs, AnUnknownOptionSuggestsFromEveryTableItReaches) {
  const std::pair<Args, const char*> rows[] = {
      {{"--plugin-dri", "x"},
       "invalid: unknown option --plugin-dri (see anvil mcp --help); did you mean --plugin-dir?"},
      {{"--netwrok", "proxy"},
       "invalid: unknown option --netwrok (see anvil mcp --help); did you mean --network?"},
      {{"--bogus"}, "invalid: unknown option --bogus (see anvil mcp --help)"},
  };
  for (const auto& [args, message] : rows) {
    auto r = ParseMcpArgs(args);
    ASSERT_FALSE(r) << args[0];
    EXPECT_EQ(r.error().ToString(), message) << args[0];
  }
  auto benign =
      ParseMcpArgs({"--network", "proxy", "--allow-host=crates.io", "--rules-workspace", "/"});
  ASSERT_TRUE(benign) << benign.error().ToString();
  EXPECT_EQ(benign->sandbox_flags,
            (Args{"--network", "proxy", "--allow-host=crates.io", "--rules-workspace", "/"}));
}

// `anvil exec`'s options that apply to a call of anvil mcp's: --requester names the requester
// of every call in the audit log (anvil mcp's own, default "anvil mcp"), --rules-workspace goes
// on to each call, with its value in either spelling.
TEST(McpArgs, TheExecOptionsThatApplyAreKept) {
  auto r = ParseMcpArgs({"--requester", "claude-code", "--rules-workspace=/"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_EQ(r->requester, "claude-code");
  EXPECT_EQ(r->sandbox_flags, (Args{"--rules-workspace=/"}));
  auto none = ParseMcpArgs({});
  ASSERT_TRUE(none) << none.error().ToString();
  EXPECT_EQ(none->requester, "anvil mcp");
  const std::string ws = Canonical("/tmp");
  mcp::RunCommandArgs call;
  call.argv = {"true"};
  auto with = ParseMcpArgs({"--workspace", ws, "--rules-workspace", "/"});
  ASSERT_TRUE(with) << with.error().ToString();
  EXPECT_EQ(ExecArgs(*with, "", call), (Args{"--approval", "on-request", "--rules-workspace", "/",
                                             "--cwd", ws, "--", "true"}));
}

}  // namespace
}  // namespace mcp_args_test
}  // namespace anvil::cli::mcp_server
