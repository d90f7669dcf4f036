// `anvil`'s flag tables (common/flag_set.h, rendered by src/cli/command_docs.h): --help, the man
// pages and the three shells' completions all list exactly the table's flags (so they cannot
// drift), and each table is the one its command parses with or documents.
#include "cli/command_docs.h"

#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <sstream>

#include "cli/commands.h"
#include "cli/exec_command.h"
#include "cli/exec_spec.h"
#include "cli/mcp_command.h"
#include "cli/mcp_spec.h"
#include "cli/rules_command.h"
#include "cli/rules_spec.h"
#include "cli/sandbox_command.h"
#include "cli/sandbox_spec.h"
#include "policy/sandbox_policy.h"

namespace anvil::cli {
namespace command_docs_test {
namespace {

// Whether --help has a row for `flag` (its help on the same line or the next).
bool Lists(const std::string& help, const std::string& flag) {
  const std::string row = "\n  " + flag;
  for (size_t at = help.find(row); at != std::string::npos; at = help.find(row, at + 1)) {
    const size_t end = at + row.size();
    if (end < help.size() && (help[end] == ' ' || help[end] == '\n')) return true;
  }
  return false;
}

// Every visible flag of every command is in its --help, its man page and each shell's
// completion; no hidden one is in any of them.
TEST(CommandDocs, HelpManPagesAndCompletionsListExactlyTheTablesFlags) {
  const ToolSpec tool = AnvilTool("9.9.9");
  const std::string bash = RenderBashCompletion(tool), zsh = RenderZshCompletion(tool),
                    fish = RenderFishCompletion(tool);
  ASSERT_EQ(tool.commands.size(), AnvilCommands().size());
  for (const CommandSpec& c : tool.commands) {
    SCOPED_TRACE(c.name);
    const std::string help = RenderHelp(c), man = RenderMan(tool, c);
    EXPECT_EQ(help.rfind("usage: anvil " + c.name + " ", 0), 0u) << help;
    std::string upper = c.name;
    for (char& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    EXPECT_NE(man.find(".TH \"ANVIL\\-" + upper + "\""), std::string::npos) << man;
    EXPECT_NE(man.find("9.9.9"), std::string::npos);
    EXPECT_NE(bash.find("    " + c.name + ") _anvil_"), std::string::npos);
    EXPECT_NE(zsh.find("'" + c.name + ":"), std::string::npos);
    EXPECT_NE(fish.find("-a " + c.name + " -d"), std::string::npos);
    for (const Flag& f : c.flags) {
      std::string roff;
      for (char ch : f.name) roff += ch == '-' ? std::string("\\-") : std::string(1, ch);
      const std::string fish_flag = "-l " + f.name.substr(2);
      if (f.hidden) {
        EXPECT_EQ(help.find(f.name), std::string::npos) << f.name;
        EXPECT_EQ(man.find(roff), std::string::npos) << f.name;
        EXPECT_EQ(bash.find(f.name), std::string::npos) << f.name;
        EXPECT_EQ(zsh.find(f.name), std::string::npos) << f.name;
        EXPECT_EQ(fish.find(fish_flag + " "), std::string::npos) << f.name;
        continue;
      }
      EXPECT_NE(help.find("  " + f.name), std::string::npos) << f.name;
      EXPECT_NE(man.find("\\fB" + roff + "\\fR"), std::string::npos) << f.name;
      EXPECT_NE(bash.find(f.name), std::string::npos) << f.name;
      EXPECT_NE(zsh.find(f.name), std::string::npos) << f.name;
      EXPECT_NE(fish.find("-n '__fish_seen_subcommand_from " + c.name + "' " + fish_flag),
                std::string::npos)
          << f.name;
      for (const auto& choice : f.choices) {
        EXPECT_NE(zsh.find(choice), std::string::npos) << choice;
        EXPECT_NE(fish.find(choice), std::string::npos) << choice;
      }
    }
  }
}

// `anvil sandbox` and anvil-exec-runner parse with the very table their --help, man page and
// completions come from: each knows every flag of its own table and none of the other's own.
TEST(RunnerFlags, SandboxAndRunnerEachParseWithTheirOwnTable) {
  for (SandboxFrontEnd front_end : {SandboxFrontEnd::kAnvilSandbox, SandboxFrontEnd::kExecRunner}) {
    const bool runner = front_end == SandboxFrontEnd::kExecRunner;
    SCOPED_TRACE(runner ? "anvil-exec-runner" : "anvil sandbox");
    const CommandSpec own = SandboxCommandSpec(front_end);
    const CommandSpec other =
        SandboxCommandSpec(runner ? SandboxFrontEnd::kAnvilSandbox : SandboxFrontEnd::kExecRunner);
    auto parse = [front_end](const Flag& f) {
      std::vector<std::string> args = {f.name};
      // A descriptor flag takes over (and closes) the descriptor it names: never this
      // process's stdout; an unused number is refused for itself, not as an unknown option.
      if (f.kind != ValueKind::kNone) {
        args.push_back(f.kind == ValueKind::kDescriptor ? "987654" : "1");
      }
      args.insert(args.end(), {"--", "true"});
      return ParseSandboxArgs(args, {"PATH=/usr/bin:/bin"}, front_end);
    };
    for (const Flag& f : own.flags) {
      if (f.enabled && !f.enabled()) continue;  // a test hook the environment has not enabled
      auto r = parse(f);
      if (!r) {
        EXPECT_EQ(r.error().message.find("unknown option"), std::string::npos) << r.error().message;
      }
    }
    for (const Flag& f : other.flags) {
      if (own.Find(f.name) != nullptr) continue;
      auto r = parse(f);
      ASSERT_FALSE(r) << f.name;
      EXPECT_EQ(r.error().message.rfind(
                    "unknown option " + f.name + " (see " + own.program + " --help)", 0),
                0u)
          << r.error().message;
    }
    // --help is the table's: every visible flag, no hidden one.
    const std::string help = RenderHelp(own);
    for (const Flag& f : own.flags) {
      EXPECT_EQ(Lists(help, f.name), !f.hidden) << f.name;
    }
  }
}

// `anvil rules`'s, `anvil exec`'s and `anvil mcp`'s --help list exactly the flags of the table
// they parse with (their man pages and completions come from it too).
TEST(CommandDocs, RulesTableMatchesItsUsage) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  const int status = RunRulesCommand({"--help"});
  std::cout.rdbuf(old);
  ASSERT_EQ(status, 0);
  std::set<std::string> in_table, in_usage;
  for (const Flag& f : RulesCommandSpec().flags) in_table.insert(f.name);
  std::istringstream usage(captured.str());
  for (std::string line; std::getline(usage, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    in_usage.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  EXPECT_EQ(in_table, in_usage);
}

TEST(CommandDocs, ExecTableMatchesItsUsage) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  const int status = RunExecCommand({"--help"});
  std::cout.rdbuf(old);
  ASSERT_EQ(status, 0);
  std::set<std::string> in_table, in_usage;
  for (const Flag& f : ExecCommandSpec().flags) in_table.insert(f.name);
  std::istringstream usage(captured.str());
  for (std::string line; std::getline(usage, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    in_usage.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  EXPECT_EQ(in_table, in_usage);
}

TEST(CommandDocs, McpTableMatchesItsUsage) {
  std::ostringstream captured;
  std::streambuf* old = std::cout.rdbuf(captured.rdbuf());
  const int status = RunMcpCommand({"--help"});
  std::cout.rdbuf(old);
  ASSERT_EQ(status, 0);
  std::set<std::string> in_table, in_usage;
  for (const Flag& f : McpCommandSpec().flags) in_table.insert(f.name);
  std::istringstream usage(captured.str());
  for (std::string line; std::getline(usage, line);) {
    if (line.rfind("  --", 0) != 0) continue;
    in_usage.insert(line.substr(2, line.find(' ', 2) - 2));
  }
  EXPECT_EQ(in_table, in_usage);
}

// The documented and completed values of --policy, --network and --read-access are exactly the
// ones the parser accepts.
TEST(CommandDocs, SandboxChoicesAreExactlyWhatTheParserAccepts) {
  const CommandSpec spec = SandboxCommandSpec(SandboxFrontEnd::kAnvilSandbox);
  auto choices = [&spec](const char* flag) {
    const Flag* f = spec.Find(flag);
    return f ? f->choices : std::vector<std::string>{};
  };
  std::vector<std::string> expected;
  for (auto k : {PolicyKind::kReadOnly, PolicyKind::kWorkspaceWrite, PolicyKind::kDangerFullAccess,
                 PolicyKind::kExternalSandbox}) {
    expected.push_back(std::string(ToString(k)));
  }
  EXPECT_EQ(choices("--policy"), expected);
  for (const auto& c : choices("--policy")) EXPECT_TRUE(ParsePolicyKind(c)) << c;
  expected.clear();
  for (auto n : {NetworkMode::kNone, NetworkMode::kProxy, NetworkMode::kFull}) {
    expected.push_back(std::string(ToString(n)));
  }
  EXPECT_EQ(choices("--network"), expected);
  for (const auto& c : choices("--network")) EXPECT_TRUE(ParseNetworkMode(c)) << c;
  expected.clear();
  for (auto r : {ReadAccess::kRestricted, ReadAccess::kFull}) {
    expected.push_back(std::string(ToString(r)));
  }
  EXPECT_EQ(choices("--read-access"), expected);
  for (const auto& c : choices("--read-access")) EXPECT_TRUE(ParseReadAccess(c)) << c;
}

}  // namespace
}  // namespace command_docs_test
}  // namespace anvil::cli
