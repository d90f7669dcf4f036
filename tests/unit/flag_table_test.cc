// The flag tables (src/cli/flag_table.h): parsing keeps each command's layout and wording, an
// unknown option or command gets the closest real one, and --help, the man pages and the three
// shells' completions all list exactly the table's flags (so they cannot drift).
#include "cli/flag_table.h"

#include <gtest/gtest.h>

#include <iostream>
#include <set>
#include <sstream>

#include "cli/command_docs.h"
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
namespace {

struct Seen {
  bool json = false;
  std::string dir;
  double seconds = 0;
  int fd = -1;
  std::vector<std::string> hosts;
};

CommandSpec Spec(Seen& s, ParseStyle style) {
  CommandSpec spec;
  spec.name = "test";
  spec.program = "anvil test";
  spec.flags = {
      Switch("--json", "JSON", [&s] { s.json = true; }),
      Text("--dir", "DIR", "a directory",
           [&s](const std::string& v) {
             s.dir = v;
             return Ok();
           })
          .Expects("a directory")
          .Completes(Completion::kDirectory),
      Number("--timeout", "SECONDS", "a deadline", Above(0, 100), [&s](double v) { s.seconds = v; })
          .Expects("a positive number of seconds"),
      Descriptor("--fd", "N", "a descriptor", Between(3, 1000),
                 [&s](int fd) {
                   s.fd = fd;
                   return Ok();
                 })
          .Expects("a descriptor number >= 3"),
      Text("--allow-host", "HOST", "repeatable",
           [&s](const std::string& v) -> Status {
             if (v.empty()) return Fail("invalid", "--allow-host: empty host");
             s.hosts.push_back(v);
             return Ok();
           })
          .Repeatable(),
      Switch("--secret", "", [] {}).Hidden(),
  };
  spec.style = style;
  return spec;
}

ParseStyle Style(ParseStyle::Operands operands,
                 ParseStyle::Wording wording = ParseStyle::Wording::kNeeds) {
  ParseStyle s;
  s.operands = operands;
  s.wording = wording;
  return s;
}

using Operands = ParseStyle::Operands;
using Wording = ParseStyle::Wording;
using Args = std::vector<std::string>;

TEST(ParseFlags, EachKindOfValueWithItsBounds) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone));
  auto r = ParseFlags(spec, {"--json", "--dir", "/x", "--timeout", "2.5", "--fd", "7",
                             "--allow-host", "a", "--allow-host", "b"});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_TRUE(s.json);
  EXPECT_EQ(s.dir, "/x");
  EXPECT_EQ(s.seconds, 2.5);
  EXPECT_EQ(s.fd, 7);
  EXPECT_EQ(s.hosts, (Args{"a", "b"}));
  struct Row {
    Args args;
    const char* needs;    // Wording::kNeeds
    const char* expects;  // Wording::kExpectsGot
  };
  const Row rows[] = {
      {{"--timeout", "0"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got 0"},
      {{"--timeout", "101"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got 101"},
      {{"--timeout", "1x"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got 1x"},
      {{"--timeout", "nan"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got nan"},
      {{"--timeout", "inf"},
       "--timeout needs a positive number of seconds",
       "--timeout expects a positive number of seconds, got inf"},
      {{"--fd", "2"},
       "--fd needs a descriptor number >= 3",
       "--fd expects a descriptor number >= 3, got 2"},
      {{"--fd", "3.5"},
       "--fd needs a descriptor number >= 3",
       "--fd expects a descriptor number >= 3, got 3.5"},
      {{"--fd", "99999999999999999999"},
       "--fd needs a descriptor number >= 3",
       "--fd expects a descriptor number >= 3, got 99999999999999999999"},
      {{"--timeout"}, "--timeout needs a positive number of seconds", "--timeout needs a value"},
      {{"--dir"}, "--dir needs a directory", "--dir needs a value"},
      {{"--allow-host", ""}, "--allow-host: empty host", "--allow-host: empty host"},
  };
  for (const Row& row : rows) {
    for (Wording w : {Wording::kNeeds, Wording::kExpectsGot}) {
      Seen t;
      auto bad = ParseFlags(Spec(t, Style(Operands::kNone, w)), row.args);
      ASSERT_FALSE(bad) << row.args[0];
      EXPECT_EQ(bad.error().code, "invalid");
      EXPECT_EQ(bad.error().message, w == Wording::kNeeds ? row.needs : row.expects);
    }
  }
}

TEST(ParseFlags, OperandsAsEachCommandAlwaysLaidThemOut) {
  {  // sandbox: the first non-flag, or `--`, starts the command; --flag=value works.
    Seen s;
    ParseStyle style = Style(Operands::kFirstEndsFlags, Wording::kExpectsGot);
    style.equals_value = true;
    auto spec = Spec(s, style);
    auto r = ParseFlags(spec, {"--dir=/w", "make", "--json", "-h"});
    ASSERT_TRUE(r);
    EXPECT_EQ(s.dir, "/w");
    EXPECT_FALSE(s.json);
    EXPECT_EQ(r->operands, (Args{"make", "--json", "-h"}));
    r = ParseFlags(spec, {"--json", "--", "--dir", "x"});
    ASSERT_TRUE(r);
    EXPECT_TRUE(s.json);
    EXPECT_EQ(r->operands, (Args{"--dir", "x"}));
    r = ParseFlags(spec, {"", "x"});  // an empty argument is the command, as before
    ASSERT_TRUE(r);
    EXPECT_EQ(r->operands, (Args{"", "x"}));
  }
  {  // run: after the first operand everything is the plugin's; `--` before it is skipped.
    Seen s;
    ParseStyle style = Style(Operands::kFirstThenAll);
    style.dash_dash_ends = false;
    auto spec = Spec(s, style);
    auto r = ParseFlags(spec, {"--", "--json", "plugin", "cmd", "--dir", "-h"});
    ASSERT_TRUE(r);
    EXPECT_TRUE(s.json);
    EXPECT_TRUE(s.dir.empty());
    EXPECT_EQ(r->operands, (Args{"plugin", "cmd", "--dir", "-h"}));
    EXPECT_FALSE(ParseFlags(spec, {"--nope", "plugin"}));
  }
  {  // plugin: flags and operands mixed; an unknown dash word is an operand.
    Seen s;
    ParseStyle style = Style(Operands::kAnywhere);
    style.dash_is_operand = true;
    auto r = ParseFlags(Spec(s, style), {"inspect", "--dir", "/w", "-x", "p"});
    ASSERT_TRUE(r);
    EXPECT_EQ(s.dir, "/w");
    EXPECT_EQ(r->operands, (Args{"inspect", "-x", "p"}));
  }
  {  // serve, doctor, audit: no operands at all, `--` included.
    Seen s;
    auto spec = Spec(s, Style(Operands::kNone));
    for (const Args& args : {Args{"stray"}, Args{"--"}, Args{"--json", "--", "x"}}) {
      auto r = ParseFlags(spec, args);
      ASSERT_FALSE(r) << args[0];
      EXPECT_EQ(r.error().message.rfind("unknown option ", 0), 0u) << r.error().message;
    }
  }
}

TEST(ParseFlags, HelpHiddenGatedAndExtraFlags) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone));
  auto r = ParseFlags(spec, {"--json", "-h", "--nope"});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->help);
  EXPECT_TRUE(ParseFlags(spec, {"--secret"}));  // hidden: parsed, never shown
  bool gate = false;
  spec.flags.push_back(Switch("--fault", "", [] {}).Hidden().EnabledWhen([&gate] { return gate; }));
  EXPECT_FALSE(ParseFlags(spec, {"--fault"}));
  gate = true;
  EXPECT_TRUE(ParseFlags(spec, {"--fault"}));
  std::string taken;
  spec.extra = [&taken](const Args& args, size_t& i, std::string& error) {
    if (args[i] != "--extra") return false;
    if (i + 1 >= args.size()) {
      error = "invalid: --extra needs a value";
      return true;
    }
    taken = args[++i];
    return true;
  };
  EXPECT_TRUE(ParseFlags(spec, {"--extra", "v", "--json"}));
  EXPECT_EQ(taken, "v");
  auto bad = ParseFlags(spec, {"--extra"});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().ToString(), "invalid: --extra needs a value");
}

// The caller's own bytes come back in an error (an unknown option, a bad value, an extra
// option's complaint): shown sanitized, so a pasted escape sequence cannot act on the terminal.
TEST(ParseFlags, EchoedArgumentsCannotDriveTheTerminal) {
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone, Wording::kExpectsGot));
  auto unknown = ParseFlags(spec, {"--x\x1b[2J\x9b"});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "unknown option --x\\u{1b}[2J\\x{9b} (see anvil test --help)");
  auto value = ParseFlags(spec, {"--timeout", "\x1b]52;c;eA==\x07"});
  ASSERT_FALSE(value);
  EXPECT_EQ(value.error().message,
            "--timeout expects a positive number of seconds, got \\u{1b}]52;c;eA==\\u{7}");
  spec.extra = [](const Args& args, size_t& i, std::string& error) {
    if (args[i].rfind("--extra=", 0) != 0) return false;
    error = "invalid: bad address " + args[i].substr(8);
    return true;
  };
  auto extra = ParseFlags(spec, {"--extra=\x1b[31m\u202e"});
  ASSERT_FALSE(extra);
  EXPECT_EQ(extra.error().message, "bad address \\u{1b}[31m\\u{202e}");
  // Benign: printable text comes back as it was given.
  auto plain = ParseFlags(spec, {"--jsno"});
  ASSERT_FALSE(plain);
  EXPECT_EQ(plain.error().message,
            "unknown option --jsno (see anvil test --help); did you mean --json?");
}

TEST(Suggest, ATypoOrAUniquePrefixGetsTheRealName) {
  const std::vector<std::string> flags = {"--json", "--policy", "--cwd", "--network", "--help"};
  EXPECT_EQ(Suggest("--jsno", flags), "--json");
  EXPECT_EQ(Suggest("--polcy", flags), "--policy");
  EXPECT_EQ(Suggest("--pol", flags), "--policy");
  EXPECT_EQ(Suggest("--netwrk", flags), "--network");
  EXPECT_EQ(Suggest("--frobnicate", flags), std::nullopt);
  EXPECT_EQ(Suggest("--x", flags), std::nullopt);
  EXPECT_EQ(Suggest("", flags), std::nullopt);
  const std::vector<std::string> commands = {"sandbox", "run",    "serve", "plugin",
                                             "audit",   "doctor", "help"};
  EXPECT_EQ(Suggest("sandbx", commands), "sandbox");
  EXPECT_EQ(Suggest("docter", commands), "doctor");
  EXPECT_EQ(Suggest("plugins", commands), "plugin");
  EXPECT_EQ(Suggest("frob", commands), std::nullopt);
  Seen s;
  auto spec = Spec(s, Style(Operands::kNone));
  EXPECT_EQ(UnknownOption(spec, "--jsno"),
            "unknown option --jsno (see anvil test --help); did you mean --json?");
  // Hidden flags are never suggested.
  EXPECT_EQ(UnknownOption(spec, "--secre"), "unknown option --secre (see anvil test --help)");
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

// `anvil sandbox`'s table (its man page and completions) lists exactly the flags its --help lists
// and its parser knows, for both front ends.
TEST(CommandDocs, SandboxTableMatchesItsParserAndUsage) {
  for (SandboxFrontEnd front_end : {SandboxFrontEnd::kAnvilSandbox, SandboxFrontEnd::kExecRunner}) {
    const CommandSpec spec = SandboxCommandSpec(front_end);
    std::set<std::string> in_table, in_usage;
    for (const Flag& f : spec.flags) {
      if (!f.hidden) in_table.insert(f.name);
    }
    std::istringstream usage(SandboxUsage(front_end));
    for (std::string line; std::getline(usage, line);) {
      if (line.rfind("  --", 0) != 0) continue;
      in_usage.insert(line.substr(2, line.find(' ', 2) - 2));
    }
    EXPECT_EQ(in_table, in_usage);
    for (const Flag& f : spec.flags) {
      if (f.hidden) continue;  // test hooks, some gated by the environment
      // --help prints and ends the process: the usage comparison above covers it.
      if (f.name == "--help" || f.name == "-h") continue;
      std::vector<std::string> args = {f.name};
      // A descriptor flag takes over (and closes) the descriptor it names: never this
      // process's stdout; an unused number is refused for itself, not as an unknown option.
      if (f.kind != ValueKind::kNone) {
        args.push_back(f.kind == ValueKind::kDescriptor ? "987654" : "1");
      }
      args.insert(args.end(), {"--", "true"});
      auto r = ParseSandboxArgs(args, {"PATH=/usr/bin:/bin"}, front_end);
      if (!r) {
        EXPECT_EQ(r.error().message.find("unknown option"), std::string::npos) << r.error().message;
      }
    }
  }
}

// `anvil rules`'s table (its man page and completions) lists exactly the flags its own --help
// lists (rules check parses them itself).
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
}  // namespace anvil::cli
