// Approval modes, answers and the audit line (src/policy/approval.h): the decision table over
// rule outcome x mode x whether a person can be asked x escalation, the "always" answer written
// atomically into the user's rules, and one JSON line per decision.
#include "policy/approval.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "policy/shell_words.h"

namespace anvil {
namespace approval_test {
namespace {

using Argv = std::vector<std::string>;

CommandRules TestRules() {
  const std::string text = R"(
[[rule]]
pattern = ["rm"]
decision = "forbidden"
justification = "use trash instead"

[[rule]]
pattern = ["git", "push"]
decision = "prompt"
justification = "talks to the remote"

[[rule]]
pattern = ["cargo"]
decision = "allow"
justification = "the build"
)";
  auto parsed = ParseRulesFile(text, "user.toml", RuleLayer::kUser);
  EXPECT_TRUE(parsed) << parsed.error().ToString();
  CommandRules rules;
  rules.Add(std::move(*parsed));
  return rules;
}

// One row per (command, mode): the action where a person can be asked, and where nobody can.
struct Row {
  Argv argv;
  ApprovalMode mode;
  ApprovalAction asked;
  ApprovalAction unattended;
};

constexpr auto kRun = ApprovalAction::kRun;
constexpr auto kAsk = ApprovalAction::kAsk;
constexpr auto kRefuse = ApprovalAction::kRefuse;
constexpr auto kUntrusted = ApprovalMode::kUntrusted;
constexpr auto kOnFailure = ApprovalMode::kOnFailure;
constexpr auto kOnRequest = ApprovalMode::kOnRequest;
constexpr auto kNever = ApprovalMode::kNever;

TEST(Approval, DecisionTableOverOutcomeModeAndAWayToAsk) {
  const CommandRules rules = TestRules();
  const Argv forbidden = {"rm", "-rf", "x"};
  const Argv prompt = {"git", "push"};
  const Argv unreadable = {"bash", "-c", "cargo build $((x))"};
  const Argv allowed = {"cargo", "build"};
  const Argv harmless = {"git", "status"};
  const Argv none = {"make"};
  const std::vector<Row> rows = {
      {forbidden, kUntrusted, kRefuse, kRefuse},
      {forbidden, kOnFailure, kRefuse, kRefuse},
      {forbidden, kOnRequest, kRefuse, kRefuse},
      {forbidden, kNever, kRefuse, kRefuse},
      {prompt, kUntrusted, kAsk, kRefuse},
      {prompt, kOnFailure, kAsk, kRefuse},
      {prompt, kOnRequest, kAsk, kRefuse},
      {prompt, kNever, kRefuse, kRefuse},
      {unreadable, kUntrusted, kAsk, kRefuse},
      {unreadable, kOnFailure, kAsk, kRefuse},
      {unreadable, kOnRequest, kAsk, kRefuse},
      {unreadable, kNever, kRefuse, kRefuse},
      {allowed, kUntrusted, kRun, kRun},
      {allowed, kOnFailure, kRun, kRun},
      {allowed, kOnRequest, kRun, kRun},
      {allowed, kNever, kRun, kRun},
      {harmless, kUntrusted, kRun, kRun},
      {harmless, kOnFailure, kRun, kRun},
      {harmless, kOnRequest, kRun, kRun},
      {harmless, kNever, kRun, kRun},
      {none, kUntrusted, kAsk, kRefuse},
      {none, kOnFailure, kRun, kRun},
      {none, kOnRequest, kRun, kRun},
      {none, kNever, kRun, kRun},
  };
  for (const auto& row : rows) {
    const CommandVerdict verdict = EvaluateCommand(rules, row.argv);
    const ApprovalDecision asked = DecideApproval(verdict, row.mode, true);
    const ApprovalDecision unattended = DecideApproval(verdict, row.mode, false);
    const std::string what = JoinShellWords(row.argv) + " in " + std::string(ToString(row.mode));
    EXPECT_EQ(asked.action, row.asked) << what << ": " << asked.reason;
    EXPECT_EQ(unattended.action, row.unattended) << what << ": " << unattended.reason;
    for (const ApprovalDecision* d : {&asked, &unattended}) {
      EXPECT_FALSE(d->reason.empty()) << what;
      EXPECT_EQ(d->reason.find('\n'), std::string::npos) << what;
      // Every refusal says, in one line, how to make the command run.
      EXPECT_EQ(d->action == kRefuse, !d->how_to_allow.empty()) << what << ": " << d->how_to_allow;
      EXPECT_EQ(d->how_to_allow.find('\n'), std::string::npos) << what;
    }
  }
}

// With no prompt or forbidden rule in any layer, a command not fully understood is `none`: the
// modes treat it as any command no rule decides (run sandboxed, or asked under untrusted), but
// "always" is never offered and no allow rule is suggested, since none could apply to it.
TEST(Approval, NotUnderstoodWithoutRestrictionsFollowsTheModeWithoutAlways) {
  auto parsed = ParseRulesFile(
      "[[rule]]\npattern = [\"echo\"]\ndecision = \"allow\"\njustification = \"ok\"\n", "user.toml",
      RuleLayer::kUser);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  CommandRules allow_only;
  allow_only.Add(std::move(*parsed));
  const std::vector<Argv> unreadable = {{"bash", "-c", "[[ $n -eq 1 ]] && echo y"},
                                        {"bash", "-c", "echo $((n+1))"},
                                        {"bash", "-c", "ls; eval echo"},
                                        {"bash", "-c", "make && source x"}};
  const std::vector<Row> modes = {
      {{}, kUntrusted, kAsk, kRefuse},
      {{}, kOnFailure, kRun, kRun},
      {{}, kOnRequest, kRun, kRun},
      {{}, kNever, kRun, kRun},
  };
  for (const auto& argv : unreadable) {
    const CommandVerdict verdict = EvaluateCommand(allow_only, argv);
    ASSERT_EQ(verdict.outcome, RulesOutcome::kNoRule) << verdict.reason;
    ASSERT_FALSE(verdict.understood);
    for (const auto& row : modes) {
      const std::string what = JoinShellWords(argv) + " in " + std::string(ToString(row.mode));
      const ApprovalDecision asked = DecideApproval(verdict, row.mode, true);
      const ApprovalDecision unattended = DecideApproval(verdict, row.mode, false);
      EXPECT_EQ(asked.action, row.asked) << what << ": " << asked.reason;
      EXPECT_EQ(unattended.action, row.unattended) << what << ": " << unattended.reason;
      for (const ApprovalDecision* d : {&asked, &unattended}) {
        EXPECT_TRUE(d->always_prefixes.empty()) << what;
        EXPECT_NE(d->reason.find("not fully understood"), std::string::npos) << what;
        EXPECT_EQ(d->action == kRefuse, !d->how_to_allow.empty()) << what;
        EXPECT_EQ(d->how_to_allow.find("decision = \"allow\""), std::string::npos)
            << what << ": " << d->how_to_allow;
      }
    }
    // Nobody to ask in untrusted: the way out is a mode that runs it sandboxed.
    EXPECT_NE(DecideApproval(verdict, kUntrusted, false).how_to_allow.find("--approval on-request"),
              std::string::npos);
    // Answered "always", it runs this time and writes nothing.
    const AnswerEffect always = ApplyAnswer(DecideApproval(verdict, kUntrusted, true),
                                            ApprovalAnswer::kAlways, "2025-01-02T03:04:05Z");
    EXPECT_EQ(always.action, kRun);
    EXPECT_TRUE(always.rules.empty());
  }
}

TEST(Approval, TheWayToAllowNamesTheRuleOrTheFix) {
  const CommandRules rules = TestRules();
  auto how = [&](const Argv& argv, ApprovalMode mode) {
    return DecideApproval(EvaluateCommand(rules, argv), mode, false).how_to_allow;
  };
  EXPECT_NE(how({"rm", "x"}, kOnRequest).find("change or remove the rule at user.toml:2:1"),
            std::string::npos)
      << how({"rm", "x"}, kOnRequest);
  EXPECT_NE(how({"git", "push"}, kNever).find("--approval on-request"), std::string::npos);
  EXPECT_NE(how({"git", "push"}, kNever).find("user.toml:7:1"), std::string::npos);
  EXPECT_NE(how({"make", "all"}, kUntrusted).find("pattern = [\"make\", \"all\"]"),
            std::string::npos)
      << how({"make", "all"}, kUntrusted);
  EXPECT_NE(how({"bash", "-c", "echo $((x))"}, kNever).find("without a shell script"),
            std::string::npos);

  // Who owns a forbidding rule decides who can lift it.
  CommandRules layered;
  auto admin = ParseRulesFile(
      "[[rule]]\npattern = [\"curl\"]\ndecision = \"forbidden\"\njustification = \"no\"\n",
      "/etc/anvil/rules/site.toml", RuleLayer::kAdmin);
  auto workspace = ParseRulesFile(
      "[[rule]]\npattern = [\"wget\"]\ndecision = \"forbidden\"\njustification = \"no\"\n",
      "ws/.anvil/rules.toml", RuleLayer::kWorkspace);
  ASSERT_TRUE(admin && workspace);
  layered.Add(std::move(*admin));
  layered.Add(std::move(*workspace));
  EXPECT_NE(DecideApproval(EvaluateCommand(layered, {"curl"}), kUntrusted, true)
                .how_to_allow.find("ask the administrator"),
            std::string::npos);
  EXPECT_NE(DecideApproval(EvaluateCommand(layered, {"wget"}), kUntrusted, true)
                .how_to_allow.find("(the workspace's own rules)"),
            std::string::npos);
}

TEST(Approval, EscalationsFollowTheModes) {
  const CommandRules rules = TestRules();
  const CommandVerdict verdict = EvaluateCommand(rules, {"cargo", "build"});
  struct Esc {
    ApprovalMode mode;
    Escalation escalation;
    ApprovalAction expected;
  };
  const std::vector<Esc> table = {
      {kUntrusted, Escalation::kAgentRequest, kAsk},
      {kOnRequest, Escalation::kAgentRequest, kAsk},
      {kOnFailure, Escalation::kAgentRequest, kRefuse},
      {kNever, Escalation::kAgentRequest, kRefuse},
      {kUntrusted, Escalation::kAfterSandboxRefusal, kAsk},
      {kOnFailure, Escalation::kAfterSandboxRefusal, kAsk},
      {kOnRequest, Escalation::kAfterSandboxRefusal, kRefuse},
      {kNever, Escalation::kAfterSandboxRefusal, kRefuse},
  };
  for (const auto& row : table) {
    const ApprovalDecision d = DecideApproval(verdict, row.mode, true, row.escalation);
    EXPECT_EQ(d.action, row.expected) << ToString(row.mode) << ": " << d.reason;
    EXPECT_TRUE(d.always_prefixes.empty());
    EXPECT_EQ(d.action == kRefuse, !d.how_to_allow.empty()) << d.reason;
    // Nobody to ask: a refusal that says so.
    EXPECT_EQ(DecideApproval(verdict, row.mode, false, row.escalation).action, kRefuse);
  }
  // A widening cannot lift a forbidden rule.
  EXPECT_EQ(DecideApproval(EvaluateCommand(rules, {"rm", "x"}), kOnRequest, true,
                           Escalation::kAgentRequest)
                .action,
            kRefuse);
}

TEST(Approval, AlwaysIsOfferedOnlyWhereAnAllowRuleCanHelp) {
  const CommandRules rules = TestRules();
  auto offered = [&](const Argv& argv) {
    return DecideApproval(EvaluateCommand(rules, argv), kUntrusted, true).always_prefixes;
  };
  EXPECT_EQ(offered({"make", "all"}), (std::vector<Argv>{{"make", "all"}}));
  // The commands of a script that had no rule and are not harmless, each whole.
  EXPECT_EQ(offered({"bash", "-lc", "cargo build && make && ls && make"}),
            (std::vector<Argv>{{"make"}}));
  EXPECT_EQ(offered({"bash", "-lc", "npm ci && make test"}),
            (std::vector<Argv>{{"npm", "ci"}, {"make", "test"}}));
  // A prompt rule is stricter than any allow rule, and an unreadable script has no prefix.
  EXPECT_TRUE(offered({"git", "push"}).empty());
  EXPECT_TRUE(offered({"bash", "-c", "make $((x))"}).empty());
  // A word that TOML cannot hold.
  EXPECT_TRUE(offered({"make", "\xff"}).empty());
  // Attack (red team): a program named by a relative path is whatever file is there in the
  // directory it runs in; "always" would allow every repository's ./build.sh. Only "once".
  EXPECT_TRUE(offered({"./build.sh"}).empty());
  EXPECT_TRUE(offered({"tools/gen", "x"}).empty());
  EXPECT_TRUE(offered({"bash", "-c", "cd anywhere && ./build.sh"}).empty());
  EXPECT_TRUE(offered({"bash", "-c", "make && ./build.sh"}).empty());
  // Benign: an absolute path, a bare name after a cd.
  EXPECT_EQ(offered({"/opt/tools/build"}), (std::vector<Argv>{{"/opt/tools/build"}}));
  EXPECT_EQ(offered({"bash", "-c", "cd sub && make"}), (std::vector<Argv>{{"make"}}));
}

TEST(Approval, AnswersDecideWhatRunsAndWhatIsWritten) {
  const CommandRules rules = TestRules();
  const ApprovalDecision asked =
      DecideApproval(EvaluateCommand(rules, {"make", "all"}), kUntrusted, true);
  ASSERT_EQ(asked.action, kAsk);
  const AnswerEffect once = ApplyAnswer(asked, ApprovalAnswer::kOnce, "2025-01-02T03:04:05Z");
  EXPECT_EQ(once.action, kRun);
  EXPECT_TRUE(once.rules.empty());
  const AnswerEffect never = ApplyAnswer(asked, ApprovalAnswer::kNever, "2025-01-02T03:04:05Z");
  EXPECT_EQ(never.action, kRefuse);
  EXPECT_TRUE(never.rules.empty());
  const AnswerEffect always = ApplyAnswer(asked, ApprovalAnswer::kAlways, "2025-01-02T03:04:05Z");
  EXPECT_EQ(always.action, kRun);
  ASSERT_EQ(always.rules.size(), 1u);
  EXPECT_EQ(always.rules[0].prefix, (Argv{"make", "all"}));
  EXPECT_EQ(always.rules[0].example, (Argv{"make", "all"}));
  EXPECT_NE(always.rules[0].justification.find("2025-01-02T03:04:05Z"), std::string::npos);
  // "always" where a prompt rule applies: runs once, writes nothing.
  const ApprovalDecision prompted =
      DecideApproval(EvaluateCommand(rules, {"git", "push"}), kUntrusted, true);
  const AnswerEffect fallback = ApplyAnswer(prompted, ApprovalAnswer::kAlways, "now");
  EXPECT_EQ(fallback.action, kRun);
  EXPECT_TRUE(fallback.rules.empty());
  EXPECT_NE(fallback.note.find("once"), std::string::npos);

  for (const char* word : {"once", "always", "never"}) {
    ASSERT_TRUE(ParseApprovalAnswer(word));
    EXPECT_EQ(ToString(*ParseApprovalAnswer(word)), word);
  }
  EXPECT_FALSE(ParseApprovalAnswer("yes"));
  for (ApprovalMode mode : kApprovalModes) EXPECT_EQ(ParseApprovalMode(ToString(mode)), mode);
  EXPECT_FALSE(ParseApprovalMode("full-auto"));
}

TEST(Approval, AlwaysNeverAllowsABareLauncherPrefix) {
  struct Case {
    Argv prefix;
    Argv command;
    bool ok;
  };
  const std::vector<Case> cases = {
      {{"make", "test"}, {"make", "test"}, true},
      // Attack: an "always" rule is exact, never a prefix of the command answered (approving
      // `git fetch` must not allow `git fetch --upload-pack=CMD` later).
      {{"cargo"}, {"cargo", "build", "--release"}, false},
      {{"cargo", "build"}, {"cargo", "build", "--release"}, false},
      {{"bash"}, {"bash", "-c", "ls"}, false},
      {{"bash", "-c"}, {"bash", "-c", "ls"}, false},
      {{"python3", "-c"}, {"python3", "-c", "print(1)"}, false},
      {{"/usr/bin/env"}, {"/usr/bin/env", "make"}, false},
      {{"git"}, {"git", "stash"}, false},
      {{"xargs"}, {"xargs", "rm"}, false},
      // Attack: a wrapper or shell runs a program its own command line does not fix (stdin for
      // a bare shell or xargs, whatever follows env): not even the whole command.
      {{"env"}, {"env"}, false},
      {{"xargs", "rm"}, {"xargs", "rm"}, false},
      {{"bash"}, {"bash"}, false},
      {{"/bin/sh", "x.sh"}, {"/bin/sh", "x.sh"}, false},
      {{"nice"}, {"nice"}, false},
      {{"busybox", "sh"}, {"busybox", "sh"}, false},
      {{"command", "-v", "ls"}, {"command", "-v", "ls"}, false},
      {{"sudo", "ls"}, {"sudo", "ls"}, false},
      {{"bash", "-c", "ls"}, {"bash", "-c", "ls"}, false},
      // Benign: the whole command of a program that runs nothing else, or whose code is fixed.
      {{"cargo", "build", "--release"}, {"cargo", "build", "--release"}, true},
      {{"python3", "-c", "print(1)"}, {"python3", "-c", "print(1)"}, true},
      {{"git", "stash"}, {"git", "stash"}, true},
      {{"git", "fetch"}, {"git", "fetch"}, true},
      // Attack: a program named by a relative path (any repository's file of that name).
      {{"./build.sh"}, {"./build.sh"}, false},
      {{"tools/gen", "x"}, {"tools/gen", "x"}, false},
      {{"../bin/x"}, {"../bin/x"}, false},
      // Benign: by its absolute path.
      {{"/opt/tools/build"}, {"/opt/tools/build"}, true},
      // Not the command.
      {{"make", "deploy"}, {"make", "test"}, false},
      {{}, {"make"}, false},
      {{"make", "test", "x"}, {"make", "test"}, false},
      // Bytes TOML cannot hold.
      {{"make", "\xc3\x28"}, {"make", "\xc3\x28"}, false},
  };
  for (const auto& c : cases) {
    const Status s = ValidateAlwaysPrefix(c.prefix, c.command);
    EXPECT_EQ(s.has_value(), c.ok)
        << JoinShellWords(c.prefix) << " for " << JoinShellWords(c.command) << ": "
        << (s ? "" : s.error().message);
  }
}

class AlwaysRulesFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-approved-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    dir_ = root_ + "/config/anvil/rules";
    file_ = dir_ + "/approved.toml";
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }
  static mode_t Mode(const std::string& path) {
    struct stat st {};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st.st_mode & 07777;
  }
  static AlwaysRule Make(const Argv& argv) { return {argv, argv, "approved by the user"}; }
  RulesOutcome Loaded(const Argv& argv) {
    RulesLocations where;
    where.admin_dir.clear();
    where.user_dir = dir_;
    auto rules = LoadCommandRules(where);
    EXPECT_TRUE(rules) << rules.error().ToString();
    return rules ? EvaluateCommand(*rules, argv).outcome : RulesOutcome::kPrompt;
  }

  std::string root_, dir_, file_;
};

TEST_F(AlwaysRulesFileTest, AlwaysWritesAnAllowRuleWithTheCommandAsItsExample) {
  ASSERT_EQ(Loaded({"make", "test"}), RulesOutcome::kNoRule);
  auto s = RecordAlwaysRules(dir_, {Make({"make", "test"})});
  ASSERT_TRUE(s) << s.error().ToString();
  EXPECT_EQ(Mode(dir_), 0700u);
  EXPECT_EQ(Mode(file_), 0600u);
  EXPECT_EQ(Read(file_),
            "[[rule]]\npattern = [\"make\", \"test\"]\nexact = true\ndecision = \"allow\"\n"
            "justification = \"approved by the user\"\nmatch = [[\"make\", \"test\"]]\n");
  EXPECT_EQ(Loaded({"make", "test"}), RulesOutcome::kAllow);
  // The rule is exact: approving `make test` does not allow `make test --eval=…` later.
  EXPECT_EQ(Loaded({"make", "test", "--eval=$(shell id)"}), RulesOutcome::kNoRule);
  EXPECT_EQ(Loaded({"make", "deploy"}), RulesOutcome::kNoRule);
  // Only the file itself is left in the directory: no temporary files.
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    names.push_back(entry.path().filename());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"approved.toml"}));
}

TEST_F(AlwaysRulesFileTest, ExistingTextIsKeptAndARuleIsWrittenOnce) {
  std::filesystem::create_directories(dir_);
  std::ofstream(file_) << "# my approvals\n[[rule]]\npattern = [\"npm\", \"ci\"]\n"
                          "decision = \"allow\"\njustification = \"mine\"";
  ASSERT_TRUE(RecordAlwaysRules(dir_, {Make({"make"}), Make({"npm", "ci"})}));
  ASSERT_TRUE(RecordAlwaysRules(dir_, {Make({"make"})}));
  const std::string text = Read(file_);
  EXPECT_EQ(text.rfind("# my approvals\n[[rule]]\npattern = [\"npm\", \"ci\"]\n", 0), 0u) << text;
  std::size_t count = 0;
  for (std::size_t at = text.find("pattern = [\"make\"]"); at != std::string::npos;
       at = text.find("pattern = [\"make\"]", at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << text;
  EXPECT_EQ(text.find("pattern = [\"npm\", \"ci\"]", 30), std::string::npos) << text;
  EXPECT_EQ(Loaded({"make"}), RulesOutcome::kAllow);
  EXPECT_EQ(Loaded({"npm", "ci"}), RulesOutcome::kAllow);
}

TEST_F(AlwaysRulesFileTest, WordsThatNeedEscapingRoundTrip) {
  const Argv argv = {"grep", "-e", "a\"b\\c", "--", "tab\there", "ünï"};
  ASSERT_TRUE(RecordAlwaysRules(dir_, {Make(argv)}));
  EXPECT_EQ(Loaded(argv), RulesOutcome::kAllow);
  auto parsed = ParseRulesFile(Read(file_), "approved.toml", RuleLayer::kUser);
  ASSERT_TRUE(parsed);
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0].match[0], argv);
}

TEST_F(AlwaysRulesFileTest, ABrokenOrLinkedFileIsNeitherReplacedNorTouched) {
  std::filesystem::create_directories(dir_);
  std::ofstream(file_) << "[[rule]]\npattern = 1\n";
  auto s = RecordAlwaysRules(dir_, {Make({"make"})});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("approved.toml:2:1"), std::string::npos) << s.error().message;
  EXPECT_EQ(Read(file_), "[[rule]]\npattern = 1\n");

  // A dotfiles link is not silently replaced by a regular file.
  std::filesystem::remove(file_);
  std::ofstream(root_ + "/dotfiles.toml") << "";
  std::filesystem::create_symlink(root_ + "/dotfiles.toml", file_);
  s = RecordAlwaysRules(dir_, {Make({"make"})});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "denied");
  EXPECT_TRUE(std::filesystem::is_symlink(file_));
  EXPECT_EQ(Read(root_ + "/dotfiles.toml"), "");

  // A launcher prefix is refused before anything is written.
  std::filesystem::remove(file_);
  s = RecordAlwaysRules(dir_, {{{"bash"}, {"bash", "-c", "x"}, "j"}});
  ASSERT_FALSE(s);
  EXPECT_FALSE(std::filesystem::exists(file_));
  EXPECT_FALSE(RecordAlwaysRules("relative/dir", {Make({"make"})}));
}

TEST_F(AlwaysRulesFileTest, ConcurrentAnswersAllLandAndTheFileIsNeverTorn) {
  constexpr int kWriters = 8;
  constexpr int kRulesEach = 10;
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < kRulesEach; ++i) {
        const Argv argv = {"tool" + std::to_string(w), "run" + std::to_string(i)};
        if (!RecordAlwaysRules(dir_, {Make(argv)})) ::_exit(1);
      }
      ::_exit(0);
    }
    pids.push_back(pid);
  }
  // Meanwhile every read sees a whole file that loads.
  for (int i = 0; i < 50; ++i) {
    if (!std::filesystem::exists(file_)) continue;
    auto parsed = ParseRulesFile(Read(file_), "approved.toml", RuleLayer::kUser);
    EXPECT_TRUE(parsed) << parsed.error().ToString();
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  auto parsed = ParseRulesFile(Read(file_), "approved.toml", RuleLayer::kUser);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(parsed->size(), static_cast<std::size_t>(kWriters * kRulesEach));
}

TEST(Approval, OneAuditLinePerDecisionAndAnswer) {
  const CommandRules rules = TestRules();
  const Argv argv = {"git", "push", "line\nbreak", "\x1b[31m", "\xff"};
  const CommandVerdict verdict = EvaluateCommand(rules, argv);
  const ApprovalDecision decision = DecideApproval(verdict, kNever, true);
  CommandAuditContext context{"s1", "agent", "/ws", kNever, 7, 12};
  const std::string line = CommandDecisionAuditLine(context, verdict, decision, 1700000000.5);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  EXPECT_EQ(line.find('\x1b'), std::string::npos) << line;
  const auto json = nlohmann::json::parse(line);
  EXPECT_EQ(json["op"], "command");
  EXPECT_EQ(json["verdict"], "deny");
  EXPECT_EQ(json["code"], "denied");
  EXPECT_EQ(json["decision"], "prompt");
  EXPECT_EQ(json["rule"], "user.toml:7:1");
  EXPECT_EQ(json["layer"], "user");
  EXPECT_EQ(json["mode"], "never");
  EXPECT_EQ(json["plugin"], "agent");
  EXPECT_EQ(json["session"], "s1");
  EXPECT_EQ(json["cwd"], "/ws");
  EXPECT_EQ(json["id"], 7);
  EXPECT_EQ(json["duration_us"], 12);
  EXPECT_EQ(json["argv"].size(), argv.size());
  EXPECT_EQ(json["argv"][2], "line\nbreak");
  EXPECT_FALSE(json["reason"].get<std::string>().empty());
  EXPECT_FALSE(json["how_to_allow"].get<std::string>().empty());
  for (const char* key : {"time", "target", "bytes"}) EXPECT_TRUE(json.contains(key)) << key;

  const ApprovalDecision ask = DecideApproval(verdict, kUntrusted, true);
  const auto asked = nlohmann::json::parse(CommandDecisionAuditLine(context, verdict, ask, 1));
  EXPECT_EQ(asked["verdict"], "ask");
  EXPECT_EQ(asked["code"], "approval_required");

  const CommandVerdict make = EvaluateCommand(rules, {"make"});
  const ApprovalDecision make_ask = DecideApproval(make, kUntrusted, true);
  const AnswerEffect effect = ApplyAnswer(make_ask, ApprovalAnswer::kAlways, "now");
  const auto answered = nlohmann::json::parse(
      CommandAnswerAuditLine(context, make, ApprovalAnswer::kAlways, effect, 2));
  EXPECT_EQ(answered["op"], "command.answer");
  EXPECT_EQ(answered["verdict"], "allow");
  EXPECT_EQ(answered["answer"], "always");
  EXPECT_EQ(answered["rules_written"], nlohmann::json::parse(R"([["make"]])"));
  EXPECT_FALSE(answered.contains("code"));
  const auto refused = nlohmann::json::parse(
      CommandAnswerAuditLine(context, make, ApprovalAnswer::kNever,
                             ApplyAnswer(make_ask, ApprovalAnswer::kNever, "now"), 3));
  EXPECT_EQ(refused["verdict"], "deny");
  EXPECT_EQ(refused["code"], "denied");
}

}  // namespace
}  // namespace approval_test
}  // namespace anvil
