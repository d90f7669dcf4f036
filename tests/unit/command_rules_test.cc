// Command rules (src/policy/command_rules.h): table tests per semantic — prefix, alternatives,
// strictest wins, layers, the workspace can only narrow, the admin layer can only forbid or
// prompt, examples checked at load, malformed files — and the attacks a rule must survive (a
// path, a shell script, a wrapper), each beside the benign command that must keep its verdict.
#include "policy/command_rules.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "policy/command_segments.h"
#include "policy/shell_words.h"

namespace anvil {
namespace command_rules_test {
namespace {

using Argv = std::vector<std::string>;

CommandRules Rules(const std::string& text, RuleLayer layer = RuleLayer::kUser,
                   const std::string& name = "rules.toml") {
  auto parsed = ParseRulesFile(text, name, layer);
  EXPECT_TRUE(parsed) << parsed.error().ToString();
  CommandRules rules;
  if (parsed) rules.Add(std::move(*parsed));
  return rules;
}

void AddLayer(CommandRules& rules, const std::string& text, RuleLayer layer,
              const std::string& name) {
  auto parsed = ParseRulesFile(text, name, layer);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  rules.Add(std::move(*parsed));
}

std::string Rule(const std::string& pattern, const std::string& decision,
                 const std::string& extra = "") {
  return "[[rule]]\npattern = " + pattern + "\ndecision = \"" + decision +
         "\"\njustification = \"because\"\n" + extra + "\n";
}

RulesOutcome Outcome(const CommandRules& rules, const Argv& argv) {
  return EvaluateCommand(rules, argv).outcome;
}

std::string Error(const std::string& text, RuleLayer layer = RuleLayer::kUser) {
  auto parsed = ParseRulesFile(text, "rules.toml", layer);
  EXPECT_FALSE(parsed) << "accepted:\n" << text;
  return parsed ? std::string() : parsed.error().ToString();
}

struct Case {
  Argv argv;
  RulesOutcome expected;
};

void ExpectOutcomes(const CommandRules& rules, const std::vector<Case>& cases) {
  for (const auto& c : cases) {
    const CommandVerdict verdict = EvaluateCommand(rules, c.argv);
    EXPECT_EQ(verdict.outcome, c.expected)
        << JoinShellWords(c.argv) << ": got " << ToString(verdict.outcome) << " (" << verdict.reason
        << ")";
  }
}

TEST(CommandRules, APatternMatchesCommandsThatStartWithIt) {
  const CommandRules rules = Rules(Rule(R"(["git", "push"])", "prompt"));
  ExpectOutcomes(rules, {
                            {{"git", "push"}, RulesOutcome::kPrompt},
                            {{"git", "push", "origin", "main"}, RulesOutcome::kPrompt},
                            {{"git"}, RulesOutcome::kNoRule},
                            {{"git", "pus"}, RulesOutcome::kNoRule},
                            {{"git", "pushx"}, RulesOutcome::kNoRule},
                            {{"git", "fetch", "push"}, RulesOutcome::kNoRule},
                            {{"gitpush"}, RulesOutcome::kNoRule},
                            {{"Git", "push"}, RulesOutcome::kNoRule},
                        });
}

// The attack: a prefix rule for `git fetch` (or `env`, `make`) allows every longer command,
// `git fetch --upload-pack=CMD` included. An exact rule allows only its own words; a hand-written
// rule without `exact` keeps its prefix meaning.
TEST(CommandRules, AnExactRuleMatchesOnlyTheWholeCommand) {
  const CommandRules rules = Rules(
      Rule(R"(["git", "fetch"])", "allow", "exact = true") +
      Rule(R"(["env"])", "allow", "exact = true\nmatch = [\"env\"]\nnot_match = [\"env sh\"]") +
      Rule(R"(["cargo", "build"])", "allow", "exact = false"));
  ExpectOutcomes(rules, {
                            {{"git", "fetch"}, RulesOutcome::kAllow},
                            {{"git", "fetch", "--upload-pack=touch x"}, RulesOutcome::kNoRule},
                            {{"env"}, RulesOutcome::kAllow},
                            {{"env", "sh", "-c", "curl x"}, RulesOutcome::kNoRule},
                            {{"cargo", "build"}, RulesOutcome::kAllow},
                            {{"cargo", "build", "--release"}, RulesOutcome::kAllow},
                        });
  // The examples are checked against the end anchor too.
  EXPECT_FALSE(ParseRulesFile(
      Rule(R"(["git", "fetch"])", "allow", "exact = true\nmatch = [\"git fetch origin\"]"),
      "rules.toml", RuleLayer::kUser));
  const auto bad = ParseRulesFile(Rule(R"(["git"])", "prompt", "exact = \"yes\""), "rules.toml",
                                  RuleLayer::kUser);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("rules.toml:5:1: exact must be true or false, not a string"),
            std::string::npos)
      << bad.error().message;
}

TEST(CommandRules, AListInAPatternIsASetOfAlternatives) {
  const CommandRules rules =
      Rules(Rule(R"([["python3", "python"], "-m", ["pip", "venv"]])", "prompt"));
  ExpectOutcomes(rules, {
                            {{"python3", "-m", "pip", "install", "x"}, RulesOutcome::kPrompt},
                            {{"python", "-m", "venv", ".venv"}, RulesOutcome::kPrompt},
                            {{"python3", "-m", "http.server"}, RulesOutcome::kNoRule},
                            {{"python2", "-m", "pip"}, RulesOutcome::kNoRule},
                            {{"python3", "-c", "pip"}, RulesOutcome::kNoRule},
                        });
}

TEST(CommandRules, TheStrictestMatchingDecisionWinsInAnyOrder) {
  const std::string allow = Rule(R"(["git"])", "allow");
  const std::string prompt = Rule(R"(["git", "push"])", "prompt");
  const std::string forbid = Rule(R"(["git", "push", "--force"])", "forbidden");
  for (const std::string& text :
       {allow + prompt + forbid, forbid + prompt + allow, prompt + forbid + allow}) {
    const CommandRules rules = Rules(text);
    ExpectOutcomes(rules, {
                              {{"git", "status"}, RulesOutcome::kAllow},
                              {{"git", "push"}, RulesOutcome::kPrompt},
                              {{"git", "push", "--force"}, RulesOutcome::kForbidden},
                              {{"git", "push", "origin", "--force"}, RulesOutcome::kPrompt},
                          });
    const CommandVerdict verdict = EvaluateCommand(rules, {"git", "push", "--force", "x"});
    ASSERT_NE(verdict.rule, nullptr);
    EXPECT_EQ(verdict.rule->decision, Decision::kForbidden);
    EXPECT_EQ(verdict.segments.front().matched.size(), 3u);
    EXPECT_NE(verdict.reason.find("because"), std::string::npos) << verdict.reason;
  }
}

TEST(CommandRules, TheDecidingRuleIsNamedByFileLineAndColumn) {
  const CommandRules rules =
      Rules("# header\n\n" + Rule(R"(["rm"])", "forbidden"), RuleLayer::kUser, "user/default.toml");
  const CommandVerdict verdict = EvaluateCommand(rules, {"rm", "-rf", "x"});
  ASSERT_NE(verdict.rule, nullptr);
  EXPECT_EQ(verdict.rule->Where(), "user/default.toml:3:1");
  EXPECT_EQ(verdict.rule->PatternText(), R"(["rm"])");
  EXPECT_NE(verdict.reason.find("user/default.toml:3:1 (user): because"), std::string::npos)
      << verdict.reason;
}

TEST(CommandRules, LayersCombineAndTheStrictestWinsWhateverTheLayer) {
  CommandRules rules;
  AddLayer(rules, Rule(R"(["curl"])", "forbidden") + Rule(R"(["npm", "publish"])", "prompt"),
           RuleLayer::kAdmin, "/etc/anvil/rules/site.toml");
  AddLayer(
      rules,
      Rule(R"(["curl"])", "allow") + Rule(R"(["npm"])", "allow") + Rule(R"(["make"])", "allow"),
      RuleLayer::kUser, "user.toml");
  AddLayer(rules, Rule(R"(["make", "deploy"])", "prompt"), RuleLayer::kWorkspace,
           "ws/.anvil/rules.toml");
  ExpectOutcomes(rules, {
                            {{"curl", "https://example.com"}, RulesOutcome::kForbidden},
                            {{"npm", "publish"}, RulesOutcome::kPrompt},
                            {{"npm", "test"}, RulesOutcome::kAllow},
                            {{"make", "deploy"}, RulesOutcome::kPrompt},
                            {{"make", "test"}, RulesOutcome::kAllow},
                        });
  EXPECT_EQ(EvaluateCommand(rules, {"curl", "x"}).rule->layer, RuleLayer::kAdmin);
  EXPECT_EQ(EvaluateCommand(rules, {"make", "deploy"}).rule->layer, RuleLayer::kWorkspace);
}

TEST(CommandRules, WorkspaceRulesThatAllowAreRefusedWithLineAndFix) {
  // Attack: a cloned repository's .anvil/rules.toml tries to allow itself a command.
  const std::string error =
      Error(Rule(R"(["make"])", "prompt") + Rule(R"(["curl"])", "allow"), RuleLayer::kWorkspace);
  EXPECT_NE(error.find("invalid: rules.toml:8:1: decision = \"allow\" is not allowed here"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("(fix: "), std::string::npos) << error;
  // Benign: the workspace may prompt and forbid, and that narrows the user's allow.
  CommandRules rules;
  AddLayer(rules, Rule(R"(["make"])", "allow"), RuleLayer::kUser, "user.toml");
  AddLayer(rules, Rule(R"(["make", "deploy"])", "forbidden") + Rule(R"(["make"])", "prompt"),
           RuleLayer::kWorkspace, "ws.toml");
  ExpectOutcomes(rules, {{{"make", "deploy"}, RulesOutcome::kForbidden},
                         {{"make", "test"}, RulesOutcome::kPrompt}});
}

TEST(CommandRules, WorkspaceRulesCanNeverMakeACommandRunWithoutAQuestion) {
  // Whatever a workspace writes, alone it can only produce prompt or forbidden (or nothing).
  CommandRules rules;
  AddLayer(rules,
           Rule(R"(["ls"])", "prompt") + Rule(R"([["git", "cargo"]])", "forbidden") +
               Rule(R"(["bash"])", "prompt"),
           RuleLayer::kWorkspace, "ws.toml");
  for (const Argv& argv : std::vector<Argv>{
           {"ls"}, {"git", "status"}, {"cargo", "build"}, {"bash", "-c", "ls"}, {"env", "ls"}}) {
    const RulesOutcome outcome = Outcome(rules, argv);
    EXPECT_NE(outcome, RulesOutcome::kAllow) << JoinShellWords(argv);
    EXPECT_NE(outcome, RulesOutcome::kHarmless) << JoinShellWords(argv);
  }
}

TEST(CommandRules, AdminRulesThatAllowAreRefused) {
  const std::string error = Error(Rule(R"(["git"])", "allow"), RuleLayer::kAdmin);
  EXPECT_NE(error.find("not allowed in the admin layer"), std::string::npos) << error;
  EXPECT_NE(error.find("(fix: "), std::string::npos) << error;
  EXPECT_TRUE(ParseRulesFile(Rule(R"(["git"])", "prompt") + Rule(R"(["rm"])", "forbidden"),
                             "admin.toml", RuleLayer::kAdmin));
}

TEST(CommandRules, ExamplesAreCheckedWhenTheFileIsLoaded) {
  const std::string good = Rule(R"(["git", ["push", "fetch"]])", "prompt",
                                "match = [\"git push origin main\", [\"git\", \"fetch\"]]\n"
                                "not_match = [\"git pull\", [\"git\"], \"gh push\"]");
  auto parsed = ParseRulesFile(good, "rules.toml", RuleLayer::kUser);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ((*parsed)[0].match[0], (Argv{"git", "push", "origin", "main"}));

  struct Bad {
    std::string extra;
    std::string expected;
  };
  const std::vector<Bad> cases = {
      {"match = [\"git push\", \"git pull --rebase\"]",
       "rules.toml:5:22: the match example 'git pull --rebase' does not match this rule's "
       "pattern [\"git\", [\"push\", \"fetch\"]]"},
      {"not_match = [[\"git\", \"fetch\", \"--all\"]]",
       "rules.toml:5:14: the not_match example 'git fetch --all' matches this rule's pattern"},
      {"match = [\"git push && rm -rf /\"]", "holds 2 commands"},
      {"match = [\"git push $((remote))\"]", "is not one plain command"},
      {"match = [\"git push $(remote)\"]", "holds 2 commands"},
      {"match = [\"git push $REMOTE\"]", "expands, redirects to a file or assigns"},
      {"match = [\"git push > log\"]", "expands, redirects to a file or assigns"},
      {"match = [[]]", "an example is an empty list"},
      {"match = [[\"git\", 1]]", "an example's words must be strings"},
      {"match = [3]", "an example must be a string or a list of words"},
      {"match = \"git push\"", "match must be an array of examples"},
  };
  for (const auto& c : cases) {
    const std::string error = Error(Rule(R"(["git", ["push", "fetch"]])", "prompt", c.extra));
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.extra << "\n" << error;
    EXPECT_NE(error.find("(fix: "), std::string::npos) << error;
  }
}

TEST(CommandRules, MalformedFilesAreRefusedWithLineColumnAndFix) {
  struct Bad {
    std::string text;
    std::string expected;  // includes line:column
  };
  const std::vector<Bad> cases = {
      {"[[rule]\npattern = [\"x\"]", "rules.toml:1:"},  // not TOML
      {"version = 1\n", "rules.toml:1:1: unknown key 'version'"},
      {"[rule]\npattern = [\"x\"]\n", "rules.toml:1:2: rule must be an array of tables"},
      {"rule = [\"x\"]\n", "rules.toml:1:1: rule must be an array of tables"},
      {"[[rule]]\ndecision = \"allow\"\njustification = \"j\"\n",
       "rules.toml:1:1: the rule has no pattern"},
      {"[[rule]]\npattern = [\"x\"]\njustification = \"j\"\n",
       "rules.toml:1:1: the rule has no decision"},
      {"[[rule]]\npattern = [\"x\"]\ndecision = \"allow\"\n",
       "rules.toml:1:1: the rule has no justification"},
      {"[[rule]]\npattern = \"git\"\n", "rules.toml:2:1: pattern must be an array, not a string"},
      {"[[rule]]\npattern = []\n", "rules.toml:2:1: pattern is empty"},
      {"[[rule]]\npattern = [\"git\", []]\n", "rules.toml:2:19: a list of alternatives is empty"},
      {"[[rule]]\npattern = [\"git\", [\"a\", 2]]\n",
       "rules.toml:2:25: an alternative must be a string, not an integer"},
      {"[[rule]]\npattern = [\"git\", 2]\n",
       "rules.toml:2:19: a pattern element must be a string or a list of strings"},
      {"[[rule]]\npattern = [\"\"]\n",
       "rules.toml:2:12: the program (the first pattern element) "
       "is empty"},
      {"[[rule]]\npattern = [\"a\\u0000b\"]\n", "holds a NUL byte"},
      {"[[rule]]\npattern = [\"x\"]\ndecision = \"deny\"\n",
       "rules.toml:3:1: decision must be \"allow\", \"prompt\" or \"forbidden\", not 'deny'"},
      {"[[rule]]\npattern = [\"x\"]\ndecision = true\n",
       "rules.toml:3:1: decision must be \"allow\", \"prompt\" or \"forbidden\", not a boolean"},
      {"[[rule]]\npattern = [\"x\"]\ndecision = \"allow\"\njustification = \"  \"\n",
       "rules.toml:4:1: justification is empty"},
      {"[[rule]]\npattern = [\"x\"]\ndecision = \"allow\"\njustification = \"a\\nb\"\n",
       "rules.toml:4:1: justification holds a control character or a line break"},
      {"[[rule]]\npattern = [\"x\"]\ndecision = \"allow\"\njustification = \"\\u001b[31mred\"\n",
       "rules.toml:4:1: justification holds a control character"},
      {"[[rule]]\npattern = [\"x\"]\ndecision = \"allow\"\njustification = \"j\"\nwhen = 1\n",
       "rules.toml:5:1: unknown key 'when' in a rule"},
      {"[[rule]]\npattern = [\"x\"]\nx.y.z = 1\n", "rules.toml:3:1: unknown key 'x' in a rule"},
  };
  for (const auto& c : cases) {
    const std::string error = Error(c.text);
    EXPECT_NE(error.find("invalid: "), std::string::npos) << c.text << "\n" << error;
    EXPECT_NE(error.find(c.expected), std::string::npos) << c.text << "\n" << error;
    EXPECT_NE(error.find("(fix: "), std::string::npos) << c.text << "\n" << error;
  }
  // Size bounds: the workspace's file is smaller than the user's.
  std::string big(kMaxWorkspaceRulesFileBytes + 1, '#');
  EXPECT_NE(Error(big, RuleLayer::kWorkspace).find("larger than"), std::string::npos);
  EXPECT_TRUE(ParseRulesFile(big, "rules.toml", RuleLayer::kUser));
  std::string huge(kMaxRulesFileBytes + 1, '#');
  EXPECT_NE(Error(huge).find("larger than"), std::string::npos);
  // An empty file is no rules.
  auto empty = ParseRulesFile("", "rules.toml", RuleLayer::kWorkspace);
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(CommandRules, ForbiddenProgramNamedByAPathIsStillForbidden) {
  // Attack: step around `rm` forbidden by naming it through a path.
  const CommandRules rules =
      Rules(Rule(R"(["rm"])", "forbidden") + Rule(R"(["git", "push"])", "prompt"));
  ExpectOutcomes(rules, {
                            {{"/bin/rm", "-rf", "x"}, RulesOutcome::kForbidden},
                            {{"/usr/bin/rm", "x"}, RulesOutcome::kForbidden},
                            {{"./rm", "x"}, RulesOutcome::kForbidden},
                            {{"/usr/bin/git", "push"}, RulesOutcome::kPrompt},
                            // Benign: other programs, and a name that only ends like it.
                            {{"/bin/rmdir", "x"}, RulesOutcome::kNoRule},
                            {{"/usr/bin/git", "status"}, RulesOutcome::kNoRule},
                        });
}

TEST(CommandRules, RepositoryBinaryNamedLikeAnAllowedProgramIsNotAllowed) {
  // Attack: the user allowed `make`; the repository ships ./make and bin/make.
  const CommandRules rules =
      Rules(Rule(R"(["make"])", "allow") + Rule(R"(["/usr/bin/cmake"])", "allow"));
  ExpectOutcomes(rules, {
                            {{"./make", "all"}, RulesOutcome::kNoRule},
                            {{"bin/make"}, RulesOutcome::kNoRule},
                            {{"/tmp/x/make"}, RulesOutcome::kNoRule},
                            {{"cmake", "."}, RulesOutcome::kNoRule},
                            // Benign: the program by the name or path the rule gives.
                            {{"make", "all"}, RulesOutcome::kAllow},
                            {{"/usr/bin/cmake", "."}, RulesOutcome::kAllow},
                        });
}

// Attack (red team): answering "always" to `./build.sh` in one repository wrote an allow rule
// `["./build.sh"]` that then ran every other repository's ./build.sh, after any `cd`, without a
// question. A program named by a relative path is whatever file is there where it runs: an
// allow rule for one (written by "always" before, or by hand) does not apply, and neither does
// one for a program named by its path inside a writable root (the workspace).
TEST(CommandRules, AnAllowRuleForAProgramTheWorkspaceHoldsDoesNotApply) {
  const CommandRules rules =
      Rules(Rule(R"(["./build.sh"])", "allow") + Rule(R"(["tools/gen"])", "allow") +
            Rule(R"(["/w/ws/build.sh"])", "allow") + Rule(R"(["/opt/tools/build"])", "allow") +
            Rule(R"(["make"])", "allow"));
  ExpectOutcomes(rules, {
                            {{"./build.sh"}, RulesOutcome::kNoRule},
                            {{"tools/gen"}, RulesOutcome::kNoRule},
                            {{"bash", "-c", "cd anywhere && ./build.sh"}, RulesOutcome::kNoRule},
                            {{"sh", "-c", "cd sub; tools/gen"}, RulesOutcome::kNoRule},
                            // Benign: an absolute path outside any writable root, a bare name.
                            {{"/opt/tools/build"}, RulesOutcome::kAllow},
                            // (allowed and harmless: the script is harmless as a whole)
                            {{"bash", "-c", "cd sub && make"}, RulesOutcome::kHarmless},
                        });
  const CommandVerdict relative = EvaluateCommand(rules, {"./build.sh"});
  EXPECT_NE(relative.reason.find("relative path"), std::string::npos) << relative.reason;
  EXPECT_NE(relative.reason.find("does not apply"), std::string::npos) << relative.reason;
  // With the command's environment known: a path inside the workspace is the workspace's file.
  ProgramSearch search;
  search.paths = {LookupPath{"/usr/bin:/bin", {"/w/ws"}, {}}};
  search.facts.holds = [](const std::string& dir, const std::string&) {
    return dir == "/usr/bin" || dir == "/bin";
  };
  search.facts.canonical = [](const std::string& dir) { return dir; };
  const CommandVerdict inside = EvaluateCommand(rules, {"/w/ws/build.sh"}, &search);
  EXPECT_EQ(inside.outcome, RulesOutcome::kNoRule) << inside.reason;
  EXPECT_NE(inside.reason.find("writable root"), std::string::npos) << inside.reason;
  EXPECT_EQ(EvaluateCommand(rules, {"/opt/tools/build"}, &search).outcome, RulesOutcome::kAllow);
  EXPECT_EQ(EvaluateCommand(rules, {"./build.sh"}, &search).outcome, RulesOutcome::kNoRule);
  // A restriction still applies to such a program (a path never steps around one).
  const CommandRules forbidding = Rules(Rule(R"(["./build.sh"])", "forbidden"));
  EXPECT_EQ(EvaluateCommand(forbidding, {"./build.sh"}).outcome, RulesOutcome::kForbidden);
}

TEST(CommandRules, ForbiddenCommandInsideAShellScriptIsForbidden) {
  const CommandRules rules = Rules(Rule(R"(["rm"])", "forbidden") + Rule(R"(["cargo"])", "allow") +
                                   Rule(R"(["curl"])", "prompt"));
  ExpectOutcomes(
      rules, {
                 {{"bash", "-lc", "cargo build && rm -rf target"}, RulesOutcome::kForbidden},
                 {{"sh", "-c", "cargo test; /bin/rm x"}, RulesOutcome::kForbidden},
                 {{"/bin/bash", "-c", "cargo test | rm x"}, RulesOutcome::kForbidden},
                 {{"zsh", "-c", "cargo test\nrm x"}, RulesOutcome::kForbidden},
                 {{"bash", "-e", "-c", "r\\m x"}, RulesOutcome::kForbidden},
                 {{"bash", "-c", "bash -c 'rm -rf /'"}, RulesOutcome::kForbidden},
                 {{"dash", "-c", "curl x && cargo build"}, RulesOutcome::kPrompt},
                 // Benign: every command of the script allowed or harmless.
                 {{"bash", "-lc", "cargo build && cargo test"}, RulesOutcome::kAllow},
                 {{"bash", "-lc", "cargo build && ls -la"}, RulesOutcome::kHarmless},
                 {{"sh", "-c", "ls | wc -l"}, RulesOutcome::kHarmless},
                 {{"bash", "-lc", "make"}, RulesOutcome::kNoRule},
                 // A shell reading a file or its stdin: only its own command line can be judged.
                 {{"bash", "build.sh"}, RulesOutcome::kNoRule},
             });
}

// Attack: a shell reading its commands from standard input runs commands nobody judged.
TEST(CommandRules, AShellReadingItsStandardInputNeedsAQuestion) {
  const CommandRules rules = Rules(Rule(R"(["git", "push"])", "forbidden") +
                                   Rule(R"(["echo"])", "allow") + Rule(R"(["bash"])", "allow"));
  ExpectOutcomes(rules, {
                            {{"bash", "-c", "echo 'git push --force' | sh"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo 'git push' | bash"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo 'git push' | /bin/dash"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo 'git push' | zsh -e"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "sh < cmds.txt"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo x | bash -"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo x | bash --"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo x | busybox sh"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo x | env sh"}, RulesOutcome::kPrompt},
                            {{"bash", "-s"}, RulesOutcome::kPrompt},
                            {{"bash", "-i"}, RulesOutcome::kPrompt},
                            {{"bash"}, RulesOutcome::kPrompt},
                            {{"sh", "-l"}, RulesOutcome::kPrompt},
                            // Benign: a script file, and -c, as before.
                            {{"bash", "build.sh"}, RulesOutcome::kAllow},
                            {{"bash", "-c", "echo x | sh x.sh"}, RulesOutcome::kNoRule},
                            {{"sh", "-c", "echo hi"}, RulesOutcome::kAllow},
                        });
  const CommandVerdict verdict = EvaluateCommand(rules, {"bash", "-c", "echo x | sh"});
  EXPECT_FALSE(verdict.understood);
  EXPECT_NE(verdict.reason.find("standard input"), std::string::npos) << verdict.reason;
}

// Attack: global options before the subcommand step around a rule on the subcommand.
TEST(CommandRules, GlobalOptionsBeforeTheSubcommandDoNotHideIt) {
  const CommandRules rules =
      Rules(Rule(R"(["git", "push"])", "forbidden") + Rule(R"(["git", "fetch"])", "prompt") +
            Rule(R"(["git", "commit"])", "prompt", "exact = true"));
  ExpectOutcomes(
      rules,
      {
          {{"git", "-c", "x=y", "push", "--force"}, RulesOutcome::kForbidden},
          {{"git", "-cx=y", "push"}, RulesOutcome::kForbidden},
          {{"git", "-C", ".", "push"}, RulesOutcome::kForbidden},
          {{"git", "-C.", "push"}, RulesOutcome::kForbidden},
          {{"git", "--git-dir=.git", "push"}, RulesOutcome::kForbidden},
          {{"git", "--git-dir", ".git", "--work-tree", ".", "push"}, RulesOutcome::kForbidden},
          {{"git", "--no-pager", "push"}, RulesOutcome::kForbidden},
          {{"git", "-p", "-P", "--bare", "--no-replace-objects", "push"}, RulesOutcome::kForbidden},
          {{"git", "--config-env", "a.b=V", "--config-env=c.d=W", "push"},
           RulesOutcome::kForbidden},
          {{"git", "--exec-path=/x", "--namespace", "n", "--literal-pathspecs", "push"},
           RulesOutcome::kForbidden},
          {{"/usr/bin/git", "-C", "sub", "push"}, RulesOutcome::kForbidden},
          {{"env", "git", "-C", "sub", "push"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "git -C sub push origin"}, RulesOutcome::kForbidden},
          {{"git", "-C", "sub", "fetch"}, RulesOutcome::kPrompt},
          {{"git", "-c", "a=b", "commit"}, RulesOutcome::kPrompt},
          // An alias defined on the command line is a new subcommand: any restriction could
          // match, as with an option the table does not know or an expansion among them.
          {{"git", "-c", "alias.p=push", "p"}, RulesOutcome::kForbidden},
          {{"git", "-c", "Alias.p=!sh", "p"}, RulesOutcome::kForbidden},
          {{"git", "--config-env=alias.p=V", "p"}, RulesOutcome::kForbidden},
          {{"git", "--frobnicate", "x", "status"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "git $OPTS status"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "git -c \"$K\" status"}, RulesOutcome::kForbidden},
          // Benign: the subcommand as written, and other subcommands with global options.
          {{"git", "push"}, RulesOutcome::kForbidden},
          {{"git", "log", "--grep", "push"}, RulesOutcome::kHarmless},
          {{"git", "-C", "sub", "log", "--grep", "push"}, RulesOutcome::kNoRule},
          {{"git", "-C", "sub", "status"}, RulesOutcome::kNoRule},
          {{"git", "-c", "a=b", "commit", "-m", "x"}, RulesOutcome::kNoRule},
          {{"git", "--help", "push"}, RulesOutcome::kNoRule},
          {{"git", "-C", "push", "status"}, RulesOutcome::kNoRule},
          {{"git", "status"}, RulesOutcome::kHarmless},
      });
  // An allow rule matches only as written: allowing `git push` allows no global option.
  const CommandRules allow = Rules(Rule(R"(["git", "push"])", "allow"));
  ExpectOutcomes(allow, {
                            {{"git", "push"}, RulesOutcome::kAllow},
                            {{"git", "-c", "core.sshCommand=evil", "push"}, RulesOutcome::kNoRule},
                            {{"git", "-C", ".", "push"}, RulesOutcome::kNoRule},
                        });
  // The same for the other programs with a table: cargo, docker, kubectl, npm.
  const CommandRules others = Rules(
      Rule(R"(["kubectl", "delete"])", "forbidden") + Rule(R"(["docker", "push"])", "prompt") +
      Rule(R"(["cargo", "publish"])", "prompt") + Rule(R"(["npm", "publish"])", "forbidden"));
  ExpectOutcomes(others,
                 {
                     {{"kubectl", "-n", "prod", "delete", "pod", "x"}, RulesOutcome::kForbidden},
                     {{"kubectl", "--context=prod", "delete"}, RulesOutcome::kForbidden},
                     {{"docker", "--context", "prod", "push", "img"}, RulesOutcome::kPrompt},
                     {{"cargo", "+nightly", "-C", "crate", "publish"}, RulesOutcome::kPrompt},
                     {{"cargo", "--config", "alias.b=publish", "b"}, RulesOutcome::kPrompt},
                     {{"npm", "--prefix", "pkg", "publish"}, RulesOutcome::kForbidden},
                     {{"npm", "--tag", "x", "-ws", "publish"}, RulesOutcome::kForbidden},
                     // Benign: other commands with the same options.
                     {{"kubectl", "-n", "prod", "get", "pods"}, RulesOutcome::kNoRule},
                     {{"docker", "--context", "prod", "ps"}, RulesOutcome::kNoRule},
                     {{"cargo", "+nightly", "build"}, RulesOutcome::kNoRule},
                     {{"npm", "--prefix", "pkg", "test"}, RulesOutcome::kNoRule},
                 });
  // The harmless set still refuses a global option.
  EXPECT_EQ(FindHarmless({"git", "-C", "sub", "status"}), nullptr);
  EXPECT_NE(FindHarmless({"git", "status"}), nullptr);
  // A rule's examples are checked the same way.
  EXPECT_TRUE(
      ParseRulesFile(Rule(R"(["git", "push"])", "forbidden",
                          "match = [\"git -C . push\"]\nnot_match = [\"git -C push status\"]"),
                     "rules.toml", RuleLayer::kUser));
}

TEST(CommandRules, AScriptTheParserDoesNotUnderstandNeedsAQuestion) {
  const CommandRules rules = Rules(Rule(R"(["echo"])", "allow") + Rule(R"(["rm"])", "forbidden"));
  ExpectOutcomes(
      rules, {
                 {{"bash", "-c", "echo `id`"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "PATH=. echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "eval echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "source ./x"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "read PATH; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "read -p x y; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "read $V; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "read -d $D PATH; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "command read x; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "export PATH=.; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "export A=$X; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "export -f x; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "export; echo"}, RulesOutcome::kPrompt},
                 // zsh changes the process's ids on an assignment to USERNAME, GID or
                 // EGID (as UID and EUID), and reads ZDOTDIR's startup files.
                 {{"zsh", "-c", "export USERNAME=nobody; echo"}, RulesOutcome::kPrompt},
                 {{"zsh", "-c", "read GID; echo"}, RulesOutcome::kPrompt},
                 {{"zsh", "-c", "EGID=0 echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "ZDOTDIR=. zsh -c echo"}, RulesOutcome::kPrompt},
                 // A line continuation inside a word joins it (`A=1 rm x`).
                 {{"bash", "-c", "A\\\nB=1 rm -rf x"}, RulesOutcome::kForbidden},
                 // Inert builtins in the forms that are not: bash's `jobs -x CMD` runs
                 // CMD, `[ -v 'a[$(CMD)]' ]` runs CMD (a subscript), `wait -p NAME`
                 // assigns NAME; a word that expands may become any of these.
                 {{"bash", "-c", "jobs -x rm -rf x"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "command jobs -lx rm x"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "jobs $X"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "[ -v 'a[$(rm -rf x)]' ]"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "test x -o -R y"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "o=-v; y='a[$(rm x)]'; [ \"$o\" \"$y\" ]"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "o=-v; [ \"$o\" 'a[$(rm x)]' ]"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "x='-v a[$(rm${IFS:0:1}x)]'; [ $x ]"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "wait -p PATH; echo"}, RulesOutcome::kPrompt},
                 {{"sh", "-c", "x=1; echo $(\\\n(x))"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "set -k; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "set -o posix; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "set -- rm; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "set -e $X; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "set -o; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "printf -v PATH x; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "hash -p ./x echo; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "alias echo=rm; echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c", "echo $((x))"}, RulesOutcome::kPrompt},
                 {{"bash", "-i", "-c", "echo"}, RulesOutcome::kPrompt},
                 {{"bash", "--rcfile", "x", "-c", "echo"}, RulesOutcome::kPrompt},
                 {{"bash", "-c"}, RulesOutcome::kPrompt},
                 // A script that cannot be read is asked about as a whole, whatever
                 // it holds: the question shows all of it.
                 {{"bash", "-c", "rm x; echo ${HOME:-x}"}, RulesOutcome::kPrompt},
                 // bash's `&>` is a background job in sh/dash: `ls &` then
                 // `>/dev/null rm -rf victim`.
                 {{"sh", "-c", "echo &>/dev/null rm -rf victim"}, RulesOutcome::kPrompt},
                 {{"dash", "-c", "echo &>/dev/null"}, RulesOutcome::kPrompt},
                 {{"/bin/sh", "-c", "echo 10>/dev/null rm x"}, RulesOutcome::kPrompt},
                 // bash reads it as `echo rm -rf victim`.
                 {{"bash", "-c", "echo &>/dev/null rm -rf victim"}, RulesOutcome::kAllow},
                 {{"bash", "-c", "echo &>/dev/null"}, RulesOutcome::kAllow},
                 {{"sh", "-c", "echo hi >/dev/null 2>&1"}, RulesOutcome::kAllow},
                 // Benign: the same without the construct.
                 {{"bash", "-c", "echo hi"}, RulesOutcome::kAllow},
                 {{"bash", "-c", "echo hi 2>/dev/null"}, RulesOutcome::kAllow},
             });
  const CommandVerdict verdict = EvaluateCommand(rules, {"bash", "-c", "echo $((x))"});
  EXPECT_FALSE(verdict.understood);
  EXPECT_NE(verdict.reason.find("not fully understood"), std::string::npos) << verdict.reason;
}

// "Not understood" exists so that a script cannot hide a command from a prompt or forbidden
// rule. With none in any layer there is nothing to hide from: the command is `none` (the approval
// mode decides, as for any command no rule decides), never allow or harmless however many allow
// rules match what was read, and it still says what was not understood. One prompt or forbidden
// rule in any layer, about any program, makes it `prompt` again.
TEST(CommandRules, NotUnderstoodIsPromptOnlyWhileSomeLayerRestricts) {
  const std::vector<Argv> unreadable = {
      {"bash", "-c", "[[ $n -eq 1 ]] && echo y"},
      {"bash", "-c", "echo $((n+1))"},
      {"bash", "-c", "echo ${VAR:-default}"},
      {"bash", "-c", "case $1 in a) echo a;; esac"},
      {"bash", "-c", "source .venv/bin/activate && pytest"},
      {"bash", "-c", ". venv/bin/activate"},
      {"bash", "-c", "f() { echo; }; f"},
      {"bash", "-c", "echo x | sh"},
      {"bash", "-c", "ls; eval echo"},  // `ls` was read (and is allowed below), eval was not
      {"sudo", "ls"},
      {"bash", "-s"},
  };
  const std::string allow = Rule(R"(["echo"])", "allow") + Rule(R"(["ls"])", "allow") +
                            Rule(R"(["bash"])", "allow") + Rule(R"(["sudo"])", "allow") +
                            Rule(R"(["pytest"])", "allow");
  const std::string prompt = Rule(R"(["git", "push"])", "prompt");
  const std::string forbidden = Rule(R"(["curl"])", "forbidden");
  struct Layering {
    std::string name;
    std::vector<std::pair<std::string, RuleLayer>> files;
    RulesOutcome expected;
  };
  const std::vector<Layering> layerings = {
      {"no rules at all", {}, RulesOutcome::kNoRule},
      {"allow rules only", {{allow, RuleLayer::kUser}}, RulesOutcome::kNoRule},
      {"an admin prompt rule",
       {{prompt, RuleLayer::kAdmin}, {allow, RuleLayer::kUser}},
       RulesOutcome::kPrompt},
      {"an admin forbidden rule", {{forbidden, RuleLayer::kAdmin}}, RulesOutcome::kPrompt},
      {"a user prompt rule", {{allow + prompt, RuleLayer::kUser}}, RulesOutcome::kPrompt},
      {"a user forbidden rule", {{forbidden + allow, RuleLayer::kUser}}, RulesOutcome::kPrompt},
      {"a workspace prompt rule",
       {{allow, RuleLayer::kUser}, {prompt, RuleLayer::kWorkspace}},
       RulesOutcome::kPrompt},
      {"a workspace forbidden rule",
       {{allow, RuleLayer::kUser}, {forbidden, RuleLayer::kWorkspace}},
       RulesOutcome::kPrompt},
  };
  for (const auto& layering : layerings) {
    CommandRules rules;
    for (const auto& [text, layer] : layering.files) {
      AddLayer(rules, text, layer, std::string(ToString(layer)) + ".toml");
    }
    EXPECT_EQ(rules.HasRestrictions(), layering.expected == RulesOutcome::kPrompt) << layering.name;
    for (const auto& argv : unreadable) {
      const CommandVerdict verdict = EvaluateCommand(rules, argv);
      const std::string what = layering.name + ": " + JoinShellWords(argv);
      EXPECT_EQ(verdict.outcome, layering.expected)
          << what << ": got " << ToString(verdict.outcome) << " (" << verdict.reason << ")";
      EXPECT_FALSE(verdict.understood) << what;
      EXPECT_FALSE(verdict.not_understood.empty()) << what;
      EXPECT_NE(verdict.reason.find(verdict.not_understood), std::string::npos)
          << what << ": " << verdict.reason;
      EXPECT_EQ(verdict.rule, nullptr) << what;
      EXPECT_EQ(verdict.deciding_segment, -1) << what;
    }
    // Benign neighbours: what is understood is judged as before.
    ExpectOutcomes(rules, {{{"bash", "-c", "make && ls"}, RulesOutcome::kNoRule},
                           {{"bash", "-c", "[ -f x ] && echo y"}, RulesOutcome::kNoRule}});
  }
}

// Attack: with a restriction in place, a construct the parser refuses beside the restricted
// command does not let it run without a question.
TEST(CommandRules, ARestrictedCommandBesideAnUnreadableConstructIsStillStopped) {
  const CommandRules rules = Rules(Rule(R"(["rm"])", "forbidden"));
  ExpectOutcomes(rules, {
                            {{"bash", "-c", "[[ $x -eq 1 ]]; rm x"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo ${X:-y}; rm x"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "echo $((n+1)) && rm -rf x"}, RulesOutcome::kPrompt},
                            // Understood, and so judged command by command.
                            {{"bash", "-c", "[[ -f x ]]; rm x"}, RulesOutcome::kForbidden},
                            {{"bash", "-c", "echo $((1+2)) && rm -rf x"}, RulesOutcome::kForbidden},
                            {{"bash", "-c", "f() { rm x; }; f"}, RulesOutcome::kPrompt},
                            // Read before what is not understood: forbidden, as before.
                            {{"bash", "-c", "rm x; eval y"}, RulesOutcome::kForbidden},
                            // Benign: understood, and no rule decides it.
                            {{"bash", "-c", "[ -f x ] && echo y"}, RulesOutcome::kNoRule},
                        });
}

// Words that expand (shell_words.h) are wildcards: a restriction applies when it could match
// some expansion, an allow rule and the harmless set only when they hold for every expansion.
TEST(CommandRules, WildcardWordsMeetRulesForEveryExpansion) {
  const CommandRules rules = Rules(Rule(R"(["rm", "-rf"])", "prompt") +
                                   Rule(R"(["git", "push", "--force"])", "forbidden") +
                                   Rule(R"(["npm", "publish"])", "prompt", "exact = true") +
                                   Rule(R"(["cargo", "build"])", "allow") +
                                   Rule(R"(["make", "test"])", "allow", "exact = true"));
  ExpectOutcomes(
      rules,
      {
          // Attacks: an expansion that could be the restricted word.
          {{"bash", "-c", "rm *"}, RulesOutcome::kPrompt},       // a file named -rf
          {{"bash", "-c", "rm \"$X\""}, RulesOutcome::kPrompt},  // X=-rf
          {{"bash", "-c", "rm $X x"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "for f in x; do rm -rf \"$f\"; done"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "if true; then rm -rf x; fi"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "(cd x && rm -rf y) > log"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "git push \"$R\" --force"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "git $SUB --force"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "git push $ARGS"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "npm publish $FLAGS"},
           RulesOutcome::kPrompt},  // may be no word
                                    // An expansion where a program is chosen is not understood.
          {{"bash", "-c", "for c in rm; do $c -rf x; done"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "timeout $T ls"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "env $X"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "xargs $X"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "bash -c \"$X\""}, RulesOutcome::kPrompt},
          {{"bash", "-c", "busybox $X"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "printf \"$X\""}, RulesOutcome::kPrompt},  // printf -v
          {{"bash", "-c", "PATH=/tmp ls"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "IFS=x; ls"}, RulesOutcome::kPrompt},
          // Allow rules hold only for every expansion, and for the argv alone.
          {{"bash", "-c", "cargo build $FLAGS"}, RulesOutcome::kAllow},
          {{"bash", "-c", "cargo $X"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "make $T"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "make test \"$X\""}, RulesOutcome::kNoRule},
          {{"bash", "-c", "cargo build > log"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "X=1 cargo build"}, RulesOutcome::kNoRule},
          // Benign neighbours.
          {{"bash", "-c", "rm -- \"$X\""}, RulesOutcome::kNoRule},
          {{"bash", "-c", "rm x"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "npm publish \"$X\""}, RulesOutcome::kNoRule},  // exact: one word more
          {{"bash", "-c", "git push origin main"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "echo hi > f.txt"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "cat > f.txt <<'EOF'\nhi $(x)\nEOF"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "python3 -m pytest -q > log.txt 2>&1"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "x=1 make"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "for f in *.c; do gcc -c \"$f\"; done"}, RulesOutcome::kNoRule},
          // Harmless only when harmless for every expansion, and never when writing a file.
          {{"bash", "-c", "ls *.py"}, RulesOutcome::kHarmless},
          {{"bash", "-c", "cd \"$HOME/x\" && ls"}, RulesOutcome::kHarmless},
          {{"bash", "-c", "cat < in.txt; cat <<'EOF'\nx\nEOF"}, RulesOutcome::kHarmless},
          {{"bash", "-c", "if test -f x; then cat x; fi 2>/dev/null"}, RulesOutcome::kHarmless},
          {{"bash", "-c", "rg foo -- *"}, RulesOutcome::kHarmless},
          {{"bash", "-c", "git diff -- *.cc"}, RulesOutcome::kHarmless},
          {{"bash", "-c", "rg foo *"}, RulesOutcome::kNoRule},    // a file named --pre=x
          {{"bash", "-c", "rg -e -- *"}, RulesOutcome::kNoRule},  // `--` is -e's value
          {{"bash", "-c", "rg -n -- *"}, RulesOutcome::kNoRule},  // -n's value, for all we know
          {{"bash", "-c", "find -- *"}, RulesOutcome::kNoRule},   // a file named -delete
          {{"bash", "-c", "sed -n 1p *"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "git $X"}, RulesOutcome::kForbidden},  // could be push --force
          {{"bash", "-c", "ls > list.txt"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "{ ls; } > list.txt"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "x=1; ls"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "for f in a; do cat \"$f\"; done"}, RulesOutcome::kNoRule},
          // A command substitution's commands are judged like the script's others, and what
          // it prints is a wildcard.
          {{"bash", "-c", "echo $(rm -rf ~)"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "ls \"$(git push --force)\""}, RulesOutcome::kForbidden},
          {{"bash", "-c", "git $(echo push) --force"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "cargo build $(make flags)"}, RulesOutcome::kNoRule},  // make: no rule
          {{"bash", "-c", "cargo build $(cat flags)"}, RulesOutcome::kHarmless},
          {{"bash", "-c", "cd \"$(git rev-parse --show-toplevel)\" && ls"},
           RulesOutcome::kHarmless},
          {{"bash", "-c", "ls \"$(pwd)\""}, RulesOutcome::kHarmless},
          {{"bash", "-c", "cat \"$(git rev-parse --show-toplevel)/README\""},
           RulesOutcome::kHarmless},
          // read, export and set in the forms understood: the script assigns.
          {{"bash", "-c", "ls | while IFS= read -r f; do rm -rf \"$f\"; done"},
           RulesOutcome::kPrompt},
          {{"bash", "-c", "ls | while IFS= read -r f; do cat \"$f\"; done"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "read x; git diff"}, RulesOutcome::kNoRule},  // GIT_EXTERNAL_DIFF
          {{"bash", "-c", "export CI=1 && cargo build"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "set -euo pipefail; cargo build"}, RulesOutcome::kNoRule},  // set: none
          {{"bash", "-c", "set -e -x +u -o pipefail; ls"}, RulesOutcome::kNoRule},    // set: none
          {{"bash", "-c", "find . -name '*.py' -exec rm -rf {} +"}, RulesOutcome::kNoRule},
          // test, [, jobs and wait in their inert forms are understood (none: no rule).
          {{"bash", "-c", "[ -f Makefile ] && ls"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "[ -n \"$x\" ] && [ \"$a\" = \"$b\" ] && test -d ~/x -a -r \"$f\""},
           RulesOutcome::kNoRule},
          {{"bash", "-c", "test \"$(git status --porcelain)\" = '' && ls"},
           RulesOutcome::kHarmless},
          {{"bash", "-c", "jobs -l; wait; wait %1"}, RulesOutcome::kNoRule},
      });
  const CommandVerdict verdict = EvaluateCommand(rules, {"bash", "-c", "echo hi > f.txt"});
  EXPECT_NE(verdict.reason.find("writes a file"), std::string::npos) << verdict.reason;
  // Many wildcard words cost no more than a few: still judged, and for every expansion.
  std::string many = "npm publish";
  for (int i = 0; i < 2000; ++i) many += " $X";
  EXPECT_EQ(Outcome(rules, {"bash", "-c", many}), RulesOutcome::kPrompt);
  EXPECT_EQ(Outcome(rules, {"bash", "-c", many + " x y"}), RulesOutcome::kNoRule);
  const CommandVerdict rm = EvaluateCommand(rules, {"bash", "-c", "rm *"});
  EXPECT_NE(rm.reason.find("`rm <*>` needs approval by"), std::string::npos) << rm.reason;
}

TEST(CommandRules, AllowingTheShellDoesNotAllowItsScript) {
  // Attack: an allow rule for `bash -c` (or `env`) used as a blanket pass for what they run.
  const CommandRules rules = Rules(Rule(R"(["bash", "-c"])", "allow") +
                                   Rule(R"(["env"])", "allow") + Rule(R"(["rm"])", "allow"));
  ExpectOutcomes(rules, {
                            {{"bash", "-c", "make deploy"}, RulesOutcome::kNoRule},
                            // env is allowed, but what it runs still counts when restricted.
                            {{"env", "make"}, RulesOutcome::kAllow},
                            // Allowing rm does not allow rm with an environment around it.
                            {{"nice", "rm", "x"}, RulesOutcome::kNoRule},
                            // Benign: the script's own commands allowed.
                            {{"bash", "-c", "rm x"}, RulesOutcome::kAllow},
                        });
  // A prompt or forbidden rule on the shell still applies to every script.
  const CommandRules strict = Rules(Rule(R"(["bash"])", "prompt") + Rule(R"(["ls"])", "allow"));
  ExpectOutcomes(strict, {{{"bash", "-c", "ls"}, RulesOutcome::kPrompt},
                          {{"sh", "-c", "ls"}, RulesOutcome::kAllow}});
}

TEST(CommandRules, ForbiddenCommandBehindAWrapperIsForbidden) {
  const CommandRules rules = Rules(Rule(R"(["rm"])", "forbidden"));
  ExpectOutcomes(
      rules,
      {
          {{"env", "rm", "-rf", "x"}, RulesOutcome::kForbidden},
          {{"env", "-i", "-u", "X", "FOO=1", "rm", "x"}, RulesOutcome::kForbidden},
          {{"/usr/bin/env", "-uX", "--chdir=/", "rm"}, RulesOutcome::kForbidden},
          {{"nice", "-n", "5", "rm", "x"}, RulesOutcome::kForbidden},
          {{"nice", "-10", "rm", "x"}, RulesOutcome::kForbidden},
          {{"nohup", "rm", "x"}, RulesOutcome::kForbidden},
          {{"timeout", "-s", "KILL", "5", "rm", "x"}, RulesOutcome::kForbidden},
          {{"timeout", "--kill-after=1", "5s", "rm"}, RulesOutcome::kForbidden},
          {{"stdbuf", "-oL", "rm", "x"}, RulesOutcome::kForbidden},
          {{"xargs", "-0", "-n1", "rm"}, RulesOutcome::kForbidden},
          {{"xargs", "-I{}", "rm", "{}"}, RulesOutcome::kForbidden},
          {{"time", "-o", "t", "rm"}, RulesOutcome::kForbidden},
          {{"busybox", "rm", "x"}, RulesOutcome::kForbidden},
          {{"env", "timeout", "5", "nice", "rm"}, RulesOutcome::kForbidden},
          {{"env", "bash", "-c", "ls && rm x"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "command rm x"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "exec rm x"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "builtin command -p rm x"}, RulesOutcome::kForbidden},
          {{"xargs", "busybox", "sh", "-c", "rm x"}, RulesOutcome::kForbidden},
          // xargs adds the words it reads to its command, or puts them in place of
          // its replace string: a wrapper there runs what it reads.
          {{"bash", "-c", "echo rm -rf x | xargs env"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "ls | xargs timeout 5"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "echo rm | xargs -I{} {} -rf x"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "echo rm | xargs -I % % -rf x"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "echo 'rm x' | xargs -I% sh -c %"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "ls | xargs --replace=@ sh -c 'echo @'"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "ls | xargs -i nice {}"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "ls | xargs -0I@ command @"}, RulesOutcome::kPrompt},
          {{"xargs", "-I", "", "ls"}, RulesOutcome::kPrompt},
          {{"bash", "-c", "ls | xargs -I{} rm {}.bak"}, RulesOutcome::kForbidden},
          {{"bash", "-c", "ls | xargs sh -c 'rm \"$@\"' sh"}, RulesOutcome::kForbidden},
          // Benign: what xargs runs is judged with the words it adds.
          {{"bash", "-c", "find . -name '*.o' | xargs -I{} cp {} out/"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "ls | xargs sh -c 'wc -l \"$@\"' sh"}, RulesOutcome::kNoRule},
          // What cannot be followed needs a question.
          {{"env", "-S", "rm x"}, RulesOutcome::kPrompt},
          {{"env", "--split-string=rm x"}, RulesOutcome::kPrompt},
          {{"env", "--unknown", "rm"}, RulesOutcome::kPrompt},
          {{"env", "--chd=/", "rm"}, RulesOutcome::kPrompt},
          {{"timeout", "-q", "5", "rm"}, RulesOutcome::kPrompt},
          {{"timeout"}, RulesOutcome::kPrompt},
          {{"nice", "-n"}, RulesOutcome::kPrompt},
          {{"sudo", "rm", "x"}, RulesOutcome::kPrompt},
          {{"strace", "rm", "x"}, RulesOutcome::kPrompt},
          {{"setsid", "ls"}, RulesOutcome::kPrompt},
          // Benign: wrappers around other programs, and wrappers that run nothing.
          {{"env", "FOO=1", "ls"}, RulesOutcome::kNoRule},
          {{"timeout", "5", "make"}, RulesOutcome::kNoRule},
          {{"env"}, RulesOutcome::kNoRule},
          {{"bash", "-c", "command -v rm"}, RulesOutcome::kNoRule},
          {{"xargs"}, RulesOutcome::kNoRule},
      });
  // The wrapper's command is judged; what it runs only narrows.
  const CommandVerdict verdict = EvaluateCommand(rules, {"env", "FOO=1", "rm", "x"});
  ASSERT_EQ(verdict.segments.size(), 2u);
  EXPECT_EQ(verdict.segments[0].segment.role, SegmentRole::kJudged);
  EXPECT_EQ(verdict.segments[1].segment.role, SegmentRole::kNarrowing);
  EXPECT_EQ(verdict.segments[1].segment.argv, (Argv{"rm", "x"}));
  EXPECT_EQ(verdict.deciding_segment, 1);
  EXPECT_NE(verdict.reason.find("`rm x` forbidden by"), std::string::npos) << verdict.reason;
}

TEST(CommandRules, DeepNestingIsBoundedAndNotUnderstood) {
  // With a prompt rule anywhere, not understood is prompt; with allow rules only, none (never
  // the allow of `ls`, which no longer speaks for the whole).
  const CommandRules rules = Rules(Rule(R"(["ls"])", "allow") + Rule(R"(["curl"])", "prompt"));
  const CommandRules allow_only = Rules(Rule(R"(["ls"])", "allow"));
  Argv argv = {"ls"};
  for (int i = 0; i < 20; ++i) argv.insert(argv.begin(), "nohup");
  std::string script = "ls";
  for (int i = 0; i < 10; ++i) script = "bash -c " + QuoteShellWord(script);
  for (const Argv& command : {argv, Argv{"bash", "-c", script}, Argv{""}, Argv{}}) {
    EXPECT_FALSE(EvaluateCommand(rules, command).understood) << JoinShellWords(command);
    EXPECT_EQ(Outcome(rules, command), RulesOutcome::kPrompt) << JoinShellWords(command);
    EXPECT_EQ(Outcome(allow_only, command), RulesOutcome::kNoRule) << JoinShellWords(command);
  }
}

TEST(CommandRules, HarmlessAndNoRuleOutcomes) {
  const CommandRules rules = Rules(Rule(R"(["git", "log"])", "prompt"));
  ExpectOutcomes(rules, {
                            {{"ls", "-la"}, RulesOutcome::kHarmless},
                            {{"git", "status"}, RulesOutcome::kHarmless},
                            // A rule beats the harmless set, even a prompt rule.
                            {{"git", "log"}, RulesOutcome::kPrompt},
                            {{"git", "diff", "--output=x"}, RulesOutcome::kNoRule},
                            {{"make"}, RulesOutcome::kNoRule},
                        });
}

// A shell named by a relative path or from outside the system's directories may be any
// program (red team s7 review3 #1: `./sh -c ls` ran the workspace's ./sh as harmless under
// untrusted): it is judged itself, beside its script's commands. Benign neighbours: the
// system's shell by name or by its path.
TEST(CommandRules, OnlyTheSystemsShellIsJustAnInterpreter) {
  const CommandRules rules = Rules(Rule(R"(["git", "log"])", "prompt"));
  ExpectOutcomes(rules, {
                            {{"sh", "-c", "ls"}, RulesOutcome::kHarmless},
                            {{"/bin/sh", "-c", "ls"}, RulesOutcome::kHarmless},
                            {{"/usr/bin/bash", "-c", "ls"}, RulesOutcome::kHarmless},
                            {{"./sh", "-c", "ls"}, RulesOutcome::kNoRule},
                            {{"tools/bash", "-c", "ls"}, RulesOutcome::kNoRule},
                            {{"/tmp/w/sh", "-c", "ls"}, RulesOutcome::kNoRule},
                            {{"/usr/bin/../../tmp/sh", "-c", "ls"}, RulesOutcome::kNoRule},
                            // Its script is judged as ever.
                            {{"./sh", "-c", "git log"}, RulesOutcome::kPrompt},
                        });
  EXPECT_TRUE(IsSystemProgramPath("bash"));
  EXPECT_TRUE(IsSystemProgramPath("/usr/local/bin/zsh"));
  EXPECT_FALSE(IsSystemProgramPath("/usr/bin/x/bash"));
  EXPECT_FALSE(IsSystemProgramPath("./bash"));
}

// Attack: a shell missing from the name list (rzsh, zsh5, fish) sidestepped a forbidden rule:
// its script was no one's to read, so the command had no decision and ran unasked. Now every
// shell name is known (a version after it too), a shell whose language is not read is not
// understood, and a program is known by the file it links to (rzsh -> zsh, any name -> bash).
TEST(CommandRules, AShellUnderAnotherNameDoesNotSidestepARule) {
  const CommandRules rules =
      Rules(Rule(R"(["rm"])", "forbidden") + Rule(R"(["git", "log"])", "prompt"));
  ExpectOutcomes(rules, {
                            {{"rzsh", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"rbash", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"zsh5", "-c", "rm -f victim2"}, RulesOutcome::kForbidden},
                            {{"bash-5.2", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"/usr/bin/zsh-5.9", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"ksh93", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"rksh", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"env", "zsh5", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"busybox", "sh", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"busybox", "ash", "-c", "rm x"}, RulesOutcome::kForbidden},
                            {{"fish", "-c", "rm x"}, RulesOutcome::kPrompt},
                            {{"fish", "-C", "rm x", "build.fish"}, RulesOutcome::kPrompt},
                            {{"fish"}, RulesOutcome::kPrompt},
                            {{"tcsh", "-c", "rm x"}, RulesOutcome::kPrompt},
                            {{"csh", "-fc", "rm x"}, RulesOutcome::kPrompt},
                            {{"/usr/bin/fish", "-c", "ls"}, RulesOutcome::kPrompt},
                            {{"bash", "-c", "fish -c 'rm x'"}, RulesOutcome::kPrompt},
                            // Benign neighbours: a script file is judged as the command it is.
                            {{"rzsh", "-c", "ls"}, RulesOutcome::kHarmless},
                            {{"fish", "build.fish"}, RulesOutcome::kNoRule},
                            {{"tcsh", "build.csh"}, RulesOutcome::kNoRule},
                            // A versioned name is read, but the program is judged itself too.
                            {{"zsh5", "-c", "ls"}, RulesOutcome::kNoRule},
                        });
  // No rule restricts anything: nothing hides from a rule, so no decision (as for any script
  // that is not understood).
  const CommandRules none = Rules(Rule(R"(["cargo"])", "allow"));
  ExpectOutcomes(none, {
                           {{"fish", "-c", "rm x"}, RulesOutcome::kNoRule},
                           {{"rzsh", "-c", "ls"}, RulesOutcome::kHarmless},
                       });
  for (std::string_view shell : {"rzsh", "rbash", "fish", "tcsh", "csh", "mksh", "ksh93", "zsh5"}) {
    EXPECT_TRUE(IsShellProgram(shell)) << shell;
  }
  EXPECT_FALSE(IsShellProgram("python3"));
  EXPECT_FALSE(IsShellProgram("shasum"));
}

// Attack: a shell linked under a name no list knows (`sh`-named links, /usr/local/bin/mysh ->
// /bin/bash) is known by the file it resolves to, on the PATH it is looked up on.
TEST(CommandRules, AShellIsKnownByTheFileItLinksTo) {
  const CommandRules rules = Rules(Rule(R"(["rm"])", "forbidden"));
  ProgramSearch search;
  search.paths = {LookupPath{"/usr/local/bin:/usr/bin:/bin", {"/w"}, {}}};
  search.facts.holds = [](const std::string& dir, const std::string& name) {
    return (dir == "/usr/bin" &&
            (name == "zsh" || name == "rzsh" || name == "fish" || name == "ls" || name == "py")) ||
           (dir == "/usr/local/bin" && name == "mysh");
  };
  search.facts.canonical = [](const std::string& path) -> std::string {
    if (path == "/usr/bin/rzsh") return "/usr/bin/zsh";
    if (path == "/usr/local/bin/mysh") return "/usr/bin/bash";
    if (path == "/opt/x/shell") return "/usr/bin/fish";
    if (path == "/usr/bin/py") return "/usr/bin/python3.11";
    return path;
  };
  auto outcome = [&](const Argv& argv) { return EvaluateCommand(rules, argv, &search).outcome; };
  EXPECT_EQ(outcome({"mysh", "-c", "rm x"}), RulesOutcome::kForbidden);
  EXPECT_EQ(outcome({"rzsh", "-c", "rm x"}), RulesOutcome::kForbidden);
  EXPECT_EQ(outcome({"/opt/x/shell", "-c", "ls"}), RulesOutcome::kPrompt);
  // A link to an interpreter is judged by its command line, as the interpreter is: its code is
  // beyond the rules (InterpretersCodeIsBeyondTheRules).
  EXPECT_EQ(outcome({"py", "-c", "import os"}), RulesOutcome::kNoRule);
  EXPECT_EQ(outcome({"env", "mysh", "-c", "rm x"}), RulesOutcome::kForbidden);
  // Benign: the link's script is read like the shell's own.
  EXPECT_EQ(outcome({"mysh", "-c", "ls"}), RulesOutcome::kHarmless);
  EXPECT_EQ(outcome({"ls", "-la"}), RulesOutcome::kHarmless);
  // Without facts (`anvil rules check`), a name no list knows is judged as the program it is.
  EXPECT_EQ(Outcome(rules, {"mysh", "-c", "rm x"}), RulesOutcome::kNoRule);

  EXPECT_EQ(ResolvedProgramNames("rzsh", search), std::vector<std::string>{"zsh"});
  EXPECT_EQ(ResolvedProgramNames("/usr/local/bin/mysh", search), std::vector<std::string>{"bash"});
  EXPECT_TRUE(ResolvedProgramNames("./mysh", search).empty());
  EXPECT_TRUE(ResolvedProgramNames("missing", search).empty());
}

// Rules see a command line (docs/agents.md, "What rules cannot see"): the code an interpreter is
// handed (python3 -c, perl -e, node -e, …) is beyond them, as a script file it runs is, and the
// sandbox is the wall. Such a command is judged by its command line: beside a forbidden rule on
// rm it gets no decision, and it does not become a question whenever some rule restricts.
TEST(CommandRules, InterpretersCodeIsBeyondTheRules) {
  const CommandRules rules =
      Rules(Rule(R"(["rm"])", "forbidden") + Rule(R"(["git", "push"])", "prompt"));
  ExpectOutcomes(rules,
                 {
                     {{"python3", "-c", "import os; os.remove('x')"}, RulesOutcome::kNoRule},
                     {{"python3", "-c", "print(1)"}, RulesOutcome::kNoRule},
                     {{"perl", "-e", "unlink 'x'"}, RulesOutcome::kNoRule},
                     {{"node", "-e", "require('fs').rmSync('x')"}, RulesOutcome::kNoRule},
                     {{"python3", "script.py"}, RulesOutcome::kNoRule},
                     // Inside a shell script, the script's other commands are still judged.
                     {{"bash", "-c", "python3 -c 'print(1)' && rm x"}, RulesOutcome::kForbidden},
                 });
  const CommandVerdict verdict = EvaluateCommand(rules, {"python3", "-c", "print(1)"});
  EXPECT_TRUE(verdict.understood) << verdict.reason;
  // An allow rule for the interpreter speaks for it, with its code, as for any program.
  const CommandRules allowed =
      Rules(Rule(R"(["python3"])", "allow") + Rule(R"(["rm"])", "forbidden"));
  ExpectOutcomes(allowed, {{{"python3", "-c", "print(1)"}, RulesOutcome::kAllow}});
}

TEST(CommandRules, ManyRulesAreIndexedByProgram) {
  std::string text;
  for (int i = 0; i < 1000; ++i) {
    text +=
        Rule("[\"tool" + std::to_string(i) + "\", \"run\"]", i % 3 == 0 ? "forbidden" : "allow");
  }
  const CommandRules rules = Rules(text);
  EXPECT_EQ(rules.rules().size(), 1000u);
  ExpectOutcomes(rules, {{{"tool0", "run"}, RulesOutcome::kForbidden},
                         {{"tool1", "run", "x"}, RulesOutcome::kAllow},
                         {{"/opt/tool999", "run"}, RulesOutcome::kForbidden},
                         {{"/opt/tool998", "run"}, RulesOutcome::kNoRule},
                         {{"tool1000", "run"}, RulesOutcome::kNoRule}});
}

TEST(CommandRules, UserRulesDirectoryFollowsXdgConfigHome) {
  EXPECT_EQ(UserRulesDirFrom("/x/config", "/home/u"), "/x/config/anvil/rules");
  EXPECT_EQ(UserRulesDirFrom(nullptr, "/home/u"), "/home/u/.config/anvil/rules");
  EXPECT_EQ(UserRulesDirFrom("", "/home/u"), "/home/u/.config/anvil/rules");
  // A relative XDG_CONFIG_HOME is ignored (XDG Base Directory), as is a relative HOME.
  EXPECT_EQ(UserRulesDirFrom("config", "/home/u"), "/home/u/.config/anvil/rules");
  EXPECT_EQ(UserRulesDirFrom(nullptr, "home"), "");
  EXPECT_EQ(UserRulesDirFrom(nullptr, nullptr), "");
}

class RulesLoadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-rules-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    where_.admin_dir = root_ + "/etc/anvil/rules";
    where_.user_dir = root_ + "/home/.config/anvil/rules";
    where_.workspace_dir = root_ + "/ws";
    std::filesystem::create_directories(where_.workspace_dir);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& path, const std::string& text) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  }

  std::string root_;
  RulesLocations where_;
};

TEST_F(RulesLoadTest, MissingDirectoriesAndFilesAreEmptyLayers) {
  auto rules = LoadCommandRules(where_);
  ASSERT_TRUE(rules) << rules.error().ToString();
  EXPECT_TRUE(rules->rules().empty());
}

TEST_F(RulesLoadTest, EveryLayerIsReadInOrderAndOnlyTomlFilesCount) {
  Write(where_.admin_dir + "/b.toml", Rule(R"(["curl"])", "forbidden"));
  Write(where_.admin_dir + "/a.toml", Rule(R"(["wget"])", "forbidden"));
  Write(where_.admin_dir + "/notes.txt", "not rules");
  Write(where_.admin_dir + "/.hidden.toml", "not = rules");
  Write(where_.user_dir + "/default.toml", Rule(R"(["make"])", "allow"));
  Write(where_.workspace_dir + "/.anvil/rules.toml", Rule(R"(["make", "deploy"])", "prompt"));
  auto rules = LoadCommandRules(where_);
  ASSERT_TRUE(rules) << rules.error().ToString();
  ASSERT_EQ(rules->rules().size(), 4u);
  EXPECT_EQ(rules->rules()[0].file, where_.admin_dir + "/a.toml");
  EXPECT_EQ(rules->rules()[1].file, where_.admin_dir + "/b.toml");
  EXPECT_EQ(rules->rules()[2].layer, RuleLayer::kUser);
  EXPECT_EQ(rules->rules()[3].layer, RuleLayer::kWorkspace);
  EXPECT_EQ(rules->rules()[3].file, where_.workspace_dir + "/.anvil/rules.toml");
  ExpectOutcomes(*rules, {{{"curl"}, RulesOutcome::kForbidden},
                          {{"make"}, RulesOutcome::kAllow},
                          {{"make", "deploy"}, RulesOutcome::kPrompt}});
  // --rules FILE replaces the user directory, never the other layers.
  Write(root_ + "/other.toml", Rule(R"(["curl"])", "allow") + Rule(R"(["make"])", "prompt"));
  RulesLocations with_files = where_;
  with_files.user_files = {root_ + "/other.toml"};
  auto replaced = LoadCommandRules(with_files);
  ASSERT_TRUE(replaced) << replaced.error().ToString();
  ExpectOutcomes(*replaced,
                 {{{"curl"}, RulesOutcome::kForbidden}, {{"make"}, RulesOutcome::kPrompt}});
}

// Whether a layer restricts anything is known from the files as loaded: a prompt or forbidden
// rule in any one of them (the workspace's own file included) makes a script that is not
// understood `prompt`; allow rules alone leave it `none`.
TEST_F(RulesLoadTest, APromptOrForbiddenRuleInAnyLoadedLayerMakesNotUnderstoodPrompt) {
  const Argv unreadable = {"bash", "-c", "echo ${V:-y}"};
  auto load = [&] {
    auto rules = LoadCommandRules(where_);
    EXPECT_TRUE(rules) << rules.error().ToString();
    return rules ? EvaluateCommand(*rules, unreadable).outcome : RulesOutcome::kForbidden;
  };
  EXPECT_EQ(load(), RulesOutcome::kNoRule);
  Write(where_.user_dir + "/default.toml", Rule(R"(["echo"])", "allow"));
  EXPECT_EQ(load(), RulesOutcome::kNoRule);
  const std::string files[] = {where_.admin_dir + "/site.toml", where_.user_dir + "/more.toml",
                               where_.workspace_dir + "/.anvil/rules.toml"};
  for (const std::string& file : files) {
    for (const char* decision : {"prompt", "forbidden"}) {
      Write(file, Rule(R"(["git", "push"])", decision));
      EXPECT_EQ(load(), RulesOutcome::kPrompt) << file << " " << decision;
      std::filesystem::remove(file);
    }
  }
  EXPECT_EQ(load(), RulesOutcome::kNoRule);
}

TEST_F(RulesLoadTest, ATreeAboveTheWorkspaceAddsItsRulesAndNeverDropsTheWorkspaces) {
  // Attack: naming a directory above the workspace as the rules' workspace, to leave out the
  // stricter rules of the workspace the command runs in.
  const std::string sub = where_.workspace_dir + "/sub";
  Write(sub + "/.anvil/rules.toml", Rule(R"(["make", "deploy"])", "forbidden"));
  Write(where_.workspace_dir + "/.anvil/rules.toml", Rule(R"(["make", "clean"])", "prompt"));
  RulesLocations tree = where_;
  tree.more_workspace_dirs = {sub, where_.workspace_dir};  // a repeat is read once
  auto rules = LoadCommandRules(tree);
  ASSERT_TRUE(rules) << rules.error().ToString();
  EXPECT_EQ(rules->rules().size(), 2u);
  ExpectOutcomes(*rules, {{{"make", "deploy"}, RulesOutcome::kForbidden},
                          {{"make", "clean"}, RulesOutcome::kPrompt},
                          {{"make"}, RulesOutcome::kNoRule}});
}

TEST_F(RulesLoadTest, AMalformedFileInAnyLayerFailsClosedNamingIt) {
  Write(where_.user_dir + "/default.toml", Rule(R"(["make"])", "allow"));
  Write(where_.workspace_dir + "/.anvil/rules.toml", Rule(R"(["make"])", "allow"));
  auto rules = LoadCommandRules(where_);
  ASSERT_FALSE(rules);
  EXPECT_NE(rules.error().message.find(where_.workspace_dir + "/.anvil/rules.toml:3:1"),
            std::string::npos)
      << rules.error().message;
  Write(where_.workspace_dir + "/.anvil/rules.toml", "");
  Write(where_.admin_dir + "/site.toml", "[[rule]]\npattern = 1\n");
  rules = LoadCommandRules(where_);
  ASSERT_FALSE(rules);
  EXPECT_NE(rules.error().message.find(where_.admin_dir + "/site.toml:2:1"), std::string::npos)
      << rules.error().message;
}

TEST_F(RulesLoadTest, SymlinkedWorkspaceRulesFileIsRefused) {
  // Attack: the repository links its rules file (or its .anvil directory) to a file elsewhere.
  Write(root_ + "/elsewhere/rules.toml", Rule(R"(["ls"])", "prompt"));
  std::filesystem::create_directories(where_.workspace_dir + "/.anvil");
  std::filesystem::create_symlink(root_ + "/elsewhere/rules.toml",
                                  where_.workspace_dir + "/.anvil/rules.toml");
  auto rules = LoadCommandRules(where_);
  ASSERT_FALSE(rules);
  EXPECT_EQ(rules.error().code, "denied");
  EXPECT_NE(rules.error().message.find("symbolic link"), std::string::npos);

  std::filesystem::remove_all(where_.workspace_dir + "/.anvil");
  std::filesystem::create_directory_symlink(root_ + "/elsewhere", where_.workspace_dir + "/.anvil");
  rules = LoadCommandRules(where_);
  ASSERT_FALSE(rules);
  EXPECT_EQ(rules.error().code, "denied");

  // A FIFO is not waited on.
  std::filesystem::remove(where_.workspace_dir + "/.anvil");
  std::filesystem::create_directories(where_.workspace_dir + "/.anvil");
  ASSERT_EQ(::mkfifo((where_.workspace_dir + "/.anvil/rules.toml").c_str(), 0644), 0);
  rules = LoadCommandRules(where_);
  ASSERT_FALSE(rules);
  EXPECT_NE(rules.error().message.find("not a regular file"), std::string::npos);

  // Benign: the file itself.
  std::filesystem::remove(where_.workspace_dir + "/.anvil/rules.toml");
  Write(where_.workspace_dir + "/.anvil/rules.toml", Rule(R"(["ls"])", "prompt"));
  rules = LoadCommandRules(where_);
  ASSERT_TRUE(rules) << rules.error().ToString();
  EXPECT_EQ(Outcome(*rules, {"ls"}), RulesOutcome::kPrompt);
}

TEST_F(RulesLoadTest, AUsersSymlinkedRulesFileIsFollowed) {
  // A dotfiles manager links ~/.config files into a repository the user owns.
  Write(root_ + "/dotfiles/rules.toml", Rule(R"(["make"])", "allow"));
  std::filesystem::create_directories(where_.user_dir);
  std::filesystem::create_symlink(root_ + "/dotfiles/rules.toml", where_.user_dir + "/main.toml");
  auto rules = LoadCommandRules(where_);
  ASSERT_TRUE(rules) << rules.error().ToString();
  EXPECT_EQ(Outcome(*rules, {"make"}), RulesOutcome::kAllow);
}

}  // namespace
}  // namespace command_rules_test
}  // namespace anvil
