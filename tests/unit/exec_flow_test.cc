// The exec flow (src/agent/exec_flow.h) with a scripted person and a fake sandbox: who is
// asked what in each approval mode, that a refusal runs nothing, that "always" writes the rule
// and the next run does not ask, that the escalation re-runs exactly the same command with
// exactly one more flag, and that every decision, answer and escalation is one audit line.
#include "agent/exec_flow.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <deque>
#include <filesystem>
#include <fstream>

namespace anvil::agent {
namespace exec_flow_test {
namespace {

namespace fs = std::filesystem;
using Argv = std::vector<std::string>;

class ScriptedAsker final : public Asker {
 public:
  bool can_ask = true;
  std::deque<std::optional<ApprovalAnswer>> answers;
  std::vector<Question> asked;
  bool CanAsk() const override { return can_ask; }
  std::optional<ApprovalAnswer> Ask(const Question& q) override {
    asked.push_back(q);
    if (answers.empty()) {
      ADD_FAILURE() << "an unexpected question: " << q.Text();
      return std::nullopt;
    }
    auto a = answers.front();
    answers.pop_front();
    return a;
  }
};

class FakeSandbox {
 public:
  std::deque<SandboxRun> results;
  std::vector<Argv> calls;
  SandboxRunner Runner() {
    return [this](const Argv& args) {
      calls.push_back(args);
      if (results.empty()) return SandboxRun{0, true, {}, {}};
      SandboxRun r = results.front();
      results.pop_front();
      return r;
    };
  }
};

bool AnyDir(const std::string& p) { return p == "/var/tmp" || p == "/var" || p == "/"; }

class ExecFlowTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("anvil-exec-flow-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "ws");
    fs::create_directories(root_ / "rules");
    std::ofstream(root_ / "rules" / "user.toml") << R"(
[[rule]]
pattern = ["rm"]
decision = "forbidden"
justification = "use trash"

[[rule]]
pattern = ["git", "push"]
decision = "prompt"
justification = "talks to the remote"

[[rule]]
pattern = ["cargo"]
decision = "allow"
justification = "the build"
)";
  }
  void TearDown() override { fs::remove_all(root_); }

  ExecRequest Request(Argv argv, ApprovalMode mode) {
    ExecRequest r;
    r.argv = std::move(argv);
    r.sandbox_flags = {"--cwd", (root_ / "ws").string()};
    r.mode = mode;
    r.rules.admin_dir = "";
    r.rules.user_dir = (root_ / "rules").string();
    r.rules.workspace_dir = (root_ / "ws").string();
    r.user_rules_dir = (root_ / "rules").string();
    r.context.workspace = (root_ / "ws").string();
    r.context.writable_roots = {r.context.workspace};
    r.context.network = NetworkMode::kNone;
    // The system's directories hold every program; PATH holds only them.
    const LookupPath path{"/usr/bin:/bin", r.context.writable_roots, {}};
    r.search.paths = {path, path};
    r.search.facts.holds = [](const std::string& dir, const std::string&) {
      return dir == "/usr/bin" || dir == "/bin";
    };
    r.search.facts.canonical = [](const std::string& dir) { return dir; };
    return r;
  }

  ExecResult Run(const ExecRequest& r) {
    return RunExec(r, asker_, sandbox_.Runner(), AnyDir,
                   [this](const std::string& line) { audit_.push_back(line); });
  }

  fs::path root_;
  ScriptedAsker asker_;
  FakeSandbox sandbox_;
  std::vector<std::string> audit_;
};

RefusalFact GitWrite() {
  return {RefusalFact::Kind::kWrite, "/w/.git/index.lock", "openat", "git", "/w/.git"};
}

TEST_F(ExecFlowTest, HarmlessRunsWithoutAQuestionInEveryModeButForbiddenNever) {
  for (ApprovalMode mode : kApprovalModes) {
    auto r = Run(Request({"ls", "-l"}, mode));
    EXPECT_EQ(r.exit_status, 0) << ToString(mode);
    EXPECT_TRUE(r.report["ran"]);
    auto f = Run(Request({"rm", "-rf", "x"}, mode));
    EXPECT_EQ(f.exit_status, kExitRefused) << ToString(mode);
    EXPECT_FALSE(f.report["ran"]);
    EXPECT_TRUE(f.report.contains("how_to_allow"));
  }
  EXPECT_TRUE(asker_.asked.empty());
  EXPECT_EQ(sandbox_.calls.size(), 4u);  // only ls, never rm
}

TEST_F(ExecFlowTest, UntrustedAsksForAnUnknownCommandAndRefusesWithoutATerminal) {
  asker_.can_ask = false;
  auto r = Run(Request({"make", "test"}, ApprovalMode::kUntrusted));
  EXPECT_EQ(r.exit_status, kExitRefused);
  EXPECT_TRUE(sandbox_.calls.empty());
  EXPECT_NE(r.report["how_to_allow"].get<std::string>().find("allow"), std::string::npos);
  // The other modes run it, sandboxed, without a question.
  auto ok = Run(Request({"make", "test"}, ApprovalMode::kOnRequest));
  EXPECT_EQ(ok.exit_status, 0);
}

TEST_F(ExecFlowTest, NeverAnswerRunsNothingAndOnceRunsOnce) {
  asker_.answers = {ApprovalAnswer::kNever, ApprovalAnswer::kOnce, std::nullopt};
  auto never = Run(Request({"git", "push"}, ApprovalMode::kOnRequest));
  EXPECT_EQ(never.exit_status, kExitRefused);
  EXPECT_TRUE(sandbox_.calls.empty());
  auto once = Run(Request({"git", "push"}, ApprovalMode::kOnRequest));
  EXPECT_EQ(once.exit_status, 0);
  EXPECT_EQ(sandbox_.calls.size(), 1u);
  EXPECT_EQ(once.report["questions"][0]["answer"], "once");
  // No answer at all (the person went away, the client declined) is a refusal.
  auto gone = Run(Request({"git", "push"}, ApprovalMode::kOnRequest));
  EXPECT_EQ(gone.exit_status, kExitRefused);
  EXPECT_EQ(sandbox_.calls.size(), 1u);
}

// Red team: the question cut the command at 400 characters, so a script padded with harmless
// commands hid the one that ran ("once" approved what was never shown), and "why" named only
// the first command no rule allows. Now the whole command is shown, every such command listed,
// and one too long to show is not asked about.
TEST_F(ExecFlowTest, AQuestionShowsTheWholeCommandAndEveryCommandNoRuleAllows) {
  std::string pad;
  for (int i = 0; i < 12; ++i)
    pad += "echo checking-the-build-output-directory-listing-" + std::to_string(i) + "; ";
  const std::string script = "make -v; " + pad + "python3 -c 'print(1337)'";
  ASSERT_GT(script.size(), 600u);
  asker_.answers = {ApprovalAnswer::kNever};
  auto r = Run(Request({"bash", "-c", script}, ApprovalMode::kUntrusted));
  EXPECT_EQ(r.exit_status, kExitRefused);
  ASSERT_EQ(asker_.asked.size(), 1u);
  const std::string text = asker_.asked[0].Text();
  EXPECT_NE(text.find("python3 -c 'print(1337)'"), std::string::npos) << text;
  EXPECT_NE(text.find("not allowed by any rule: `make -v` `python3 -c 'print(1337)'`"),
            std::string::npos)
      << text;
  EXPECT_EQ(asker_.asked[0].ToJson()["not_allowed"].size(), 2u);
  // The benign neighbour: one command, no list beside its reason.
  asker_.answers = {ApprovalAnswer::kNever};
  (void)Run(Request({"make", "test"}, ApprovalMode::kUntrusted));
  ASSERT_EQ(asker_.asked.size(), 2u);
  EXPECT_EQ(asker_.asked[1].Text().find("not allowed by any rule"), std::string::npos);
  // A second line of a script is shown as one, never folded into the comment before it.
  asker_.answers = {ApprovalAnswer::kNever};
  (void)Run(Request({"python3", "-c", "print('lint ok')  # disabled\nimport os"},
                    ApprovalMode::kUntrusted));
  ASSERT_EQ(asker_.asked.size(), 3u);
  EXPECT_NE(asker_.asked[2].Text().find("# disabled\\u{a}import os"), std::string::npos)
      << asker_.asked[2].Text();
  // Too long to show: not asked, nothing runs, and the report says why and what to do.
  std::string huge = "make -v; ";
  while (huge.size() <= kMaxQuestionCommandBytes) huge += pad;
  auto refused = Run(Request({"bash", "-c", huge}, ApprovalMode::kUntrusted));
  EXPECT_EQ(refused.exit_status, kExitRefused);
  EXPECT_EQ(asker_.asked.size(), 3u);
  EXPECT_TRUE(sandbox_.calls.empty());
  EXPECT_NE(refused.report["refusal"].get<std::string>().find("too long to show"),
            std::string::npos);
  EXPECT_TRUE(refused.report.contains("how_to_allow"));
}

TEST_F(ExecFlowTest, ApprovalModeNeverRefusesWhatWouldBeAsked) {
  auto r = Run(Request({"git", "push"}, ApprovalMode::kNever));
  EXPECT_EQ(r.exit_status, kExitRefused);
  EXPECT_TRUE(asker_.asked.empty());
  EXPECT_TRUE(sandbox_.calls.empty());
}

TEST_F(ExecFlowTest, AlwaysWritesTheRuleAndTheNextRunDoesNotAsk) {
  asker_.answers = {ApprovalAnswer::kAlways};
  auto first = Run(Request({"make", "test"}, ApprovalMode::kUntrusted));
  EXPECT_EQ(first.exit_status, 0);
  ASSERT_TRUE(first.report.contains("rules_written")) << first.report.dump();
  EXPECT_TRUE(fs::exists(root_ / "rules" / "approved.toml"));
  auto second = Run(Request({"make", "test"}, ApprovalMode::kUntrusted));
  EXPECT_EQ(second.exit_status, 0);
  EXPECT_EQ(asker_.asked.size(), 1u);
  EXPECT_EQ(second.report["decision"], "allow");
  // Only that command: another one is still asked about.
  asker_.answers = {ApprovalAnswer::kNever};
  EXPECT_EQ(Run(Request({"make", "install"}, ApprovalMode::kUntrusted)).exit_status, kExitRefused);
}

TEST_F(ExecFlowTest, OnFailureOffersTheWideningAndReRunsTheSameCommandWithExactlyIt) {
  sandbox_.results = {SandboxRun{1, true, {GitWrite()}, {}}, SandboxRun{0, true, {}, {}}};
  asker_.answers = {ApprovalAnswer::kOnce};
  auto r = Run(Request({"git", "commit", "-m", "x"}, ApprovalMode::kOnFailure));
  EXPECT_EQ(r.exit_status, 0);
  ASSERT_EQ(sandbox_.calls.size(), 2u);
  Argv expected = sandbox_.calls[0];
  auto dashdash = std::find(expected.begin(), expected.end(), "--");
  expected.insert(dashdash, "--writable-git");
  EXPECT_EQ(sandbox_.calls[1], expected);
  ASSERT_EQ(asker_.asked.size(), 1u);
  EXPECT_EQ(asker_.asked[0].kind, Question::Kind::kWidening);
  EXPECT_TRUE(asker_.asked[0].always_prefixes.empty());  // a widening is never "always"
  EXPECT_EQ(r.report["escalation"]["state"], "approved");
}

TEST_F(ExecFlowTest, AWideningRefusedOrNotAskedDoesNotReRun) {
  sandbox_.results = {SandboxRun{1, true, {GitWrite()}, {}}};
  asker_.answers = {ApprovalAnswer::kNever};
  auto refused = Run(Request({"git", "commit"}, ApprovalMode::kOnFailure));
  EXPECT_EQ(refused.exit_status, 1);
  EXPECT_EQ(sandbox_.calls.size(), 1u);
  EXPECT_EQ(refused.report["escalation"]["state"], "refused");

  // on-request: reported to the agent, which may ask with a reason; never: final.
  for (ApprovalMode mode : {ApprovalMode::kOnRequest, ApprovalMode::kNever}) {
    sandbox_.calls.clear();
    sandbox_.results = {SandboxRun{1, true, {GitWrite()}, {}}};
    auto r = Run(Request({"cargo", "build"}, mode));
    EXPECT_EQ(r.exit_status, 1);
    EXPECT_EQ(sandbox_.calls.size(), 1u);
    EXPECT_EQ(r.report["escalation"]["state"], "not asked");
    EXPECT_EQ(r.report["escalation"]["widening"]["flags"], nlohmann::json({"--writable-git"}));
  }
  // Nobody to ask.
  asker_.can_ask = false;
  sandbox_.calls.clear();
  sandbox_.results = {SandboxRun{1, true, {GitWrite()}, {}}};
  auto r = Run(Request({"cargo", "build"}, ApprovalMode::kOnFailure));
  EXPECT_EQ(sandbox_.calls.size(), 1u);
  EXPECT_EQ(r.report["escalation"]["state"], "not asked");
}

TEST_F(ExecFlowTest, ASuccessOrASetupFailureIsNeverEscalated) {
  sandbox_.results = {SandboxRun{0, true, {GitWrite()}, {}},
                      SandboxRun{125, false, {GitWrite()}, {}}};
  EXPECT_EQ(Run(Request({"cargo", "build"}, ApprovalMode::kOnFailure)).exit_status, 0);
  EXPECT_EQ(Run(Request({"cargo", "build"}, ApprovalMode::kOnFailure)).exit_status, 125);
  EXPECT_TRUE(asker_.asked.empty());
  EXPECT_EQ(sandbox_.calls.size(), 2u);
}

// The command ran but the check after it for git metadata could not vouch for the workspace:
// the report says so, and it is never run again (a widening would not make it safer).
TEST_F(ExecFlowTest, AnIncompleteGitCheckIsReportedAndNeverEscalated) {
  sandbox_.results = {SandboxRun{125, true, {GitWrite()}, "not walked: /w/deep"},
                      SandboxRun{0, true, {}, {}}};
  auto r = Run(Request({"cargo", "build"}, ApprovalMode::kOnFailure));
  EXPECT_EQ(r.exit_status, 125);
  EXPECT_EQ(r.report["git_check_error"], "not walked: /w/deep");
  EXPECT_TRUE(asker_.asked.empty());
  EXPECT_EQ(sandbox_.calls.size(), 1u);
  // Benign: a run whose check was complete has no such field.
  auto ok = Run(Request({"cargo", "build"}, ApprovalMode::kOnFailure));
  EXPECT_EQ(ok.exit_status, 0);
  EXPECT_FALSE(ok.report.contains("git_check_error"));
}

TEST_F(ExecFlowTest, TheAgentAsksUpFrontOnlyWhereTheModeLetsIt) {
  auto request = Request({"cargo", "build"}, ApprovalMode::kOnRequest);
  request.requested = Widening{WideningKind::kWritableRoot, "/var/tmp"};
  request.request_reason = "the build writes its cache there";
  asker_.answers = {ApprovalAnswer::kOnce};
  auto r = Run(request);
  EXPECT_EQ(r.exit_status, 0);
  ASSERT_EQ(sandbox_.calls.size(), 1u);
  EXPECT_NE(std::find(sandbox_.calls[0].begin(), sandbox_.calls[0].end(), "/var/tmp"),
            sandbox_.calls[0].end());
  EXPECT_EQ(asker_.asked[0].agent_reason, "the build writes its cache there");

  request.mode = ApprovalMode::kOnFailure;  // offered only after a refusal
  EXPECT_EQ(Run(request).exit_status, kExitRefused);
  request.mode = ApprovalMode::kOnRequest;
  request.requested = Widening{WideningKind::kWritableRoot, "/"};  // never offered
  EXPECT_EQ(Run(request).exit_status, kExitRefused);
  EXPECT_EQ(sandbox_.calls.size(), 1u);
}

TEST_F(ExecFlowTest, WideningsStopAfterTheLimit) {
  RefusalFact tmp{RefusalFact::Kind::kWrite, "/var/tmp/x", "openat", "outside", ""};
  sandbox_.results = {SandboxRun{1, true, {GitWrite()}, {}}, SandboxRun{1, true, {tmp}, {}},
                      SandboxRun{1, true, {GitWrite()}, {}}};
  asker_.answers = {ApprovalAnswer::kOnce, ApprovalAnswer::kOnce};
  auto request = Request({"cargo", "build"}, ApprovalMode::kOnFailure);
  auto r = Run(request);
  // git widened, then /var/tmp, then git again has nothing left to offer.
  EXPECT_EQ(sandbox_.calls.size(), 3u);
  EXPECT_EQ(r.report["escalation"]["state"], "none");

  sandbox_.calls.clear();
  sandbox_.results = {SandboxRun{1, true, {GitWrite()}, {}}, SandboxRun{1, true, {tmp}, {}}};
  asker_.answers = {ApprovalAnswer::kOnce};
  request.max_escalations = 1;
  r = Run(request);
  EXPECT_EQ(sandbox_.calls.size(), 2u);
  EXPECT_EQ(r.report["escalation"]["state"], "not asked");
}

TEST_F(ExecFlowTest, EveryDecisionAnswerAndEscalationIsOneAuditLine) {
  sandbox_.results = {SandboxRun{1, true, {GitWrite()}, {}}, SandboxRun{0, true, {}, {}}};
  asker_.answers = {ApprovalAnswer::kOnce, ApprovalAnswer::kOnce};
  Run(Request({"git", "push"}, ApprovalMode::kOnFailure));
  std::vector<std::string> ops;
  for (const auto& line : audit_) {
    EXPECT_EQ(line.find('\n'), std::string::npos);
    auto j = nlohmann::json::parse(line);
    ops.push_back(j["op"].get<std::string>() + ":" + j["verdict"].get<std::string>());
  }
  EXPECT_EQ(ops, (std::vector<std::string>{"command:ask", "command.answer:allow",
                                           "command.escalation:ask", "command.escalation:allow"}));
}

TEST_F(ExecFlowTest, UntrustedAsksForAHarmlessNameAWorkspacePathMayShadow) {
  // Attack: the sandbox environment's PATH starts with the workspace's .venv/bin, where the
  // agent can put an `ls` of its own, after the check or before it.
  auto attack = Request({"ls", "-l"}, ApprovalMode::kUntrusted);
  attack.search.paths[1].value = (root_ / "ws" / ".venv" / "bin").string() + ":/usr/bin:/bin";
  asker_.can_ask = false;
  auto refused = Run(attack);
  EXPECT_EQ(refused.exit_status, kExitRefused);
  EXPECT_FALSE(refused.report["ran"]);
  EXPECT_EQ(refused.report["decision"], "none");
  EXPECT_NE(refused.report["reason"].get<std::string>().find(".venv/bin"), std::string::npos)
      << refused.report.dump();
  EXPECT_TRUE(sandbox_.calls.empty());
  asker_.can_ask = true;
  asker_.answers = {ApprovalAnswer::kOnce};
  auto asked = Run(attack);
  EXPECT_EQ(asked.exit_status, 0);
  ASSERT_EQ(asker_.asked.size(), 1u);
  EXPECT_TRUE(asker_.asked[0].always_prefixes.empty());  // an allow rule would not apply
  // Benign: the same command, PATH the system's, runs without a question; so does the
  // workspace's directory after the system's.
  auto benign = Request({"ls", "-l"}, ApprovalMode::kUntrusted);
  benign.search.paths[1].value = "/usr/bin:/bin:" + (root_ / "ws" / ".venv" / "bin").string();
  auto ran = Run(benign);
  EXPECT_EQ(ran.exit_status, 0);
  EXPECT_EQ(ran.report["decision"], "harmless");
  EXPECT_EQ(asker_.asked.size(), 1u);
  // The other modes run it in the sandbox as any command no rule decides.
  for (ApprovalMode mode :
       {ApprovalMode::kOnRequest, ApprovalMode::kOnFailure, ApprovalMode::kNever}) {
    auto other = attack;
    other.mode = mode;
    EXPECT_EQ(Run(other).exit_status, 0) << ToString(mode);
  }
  EXPECT_EQ(asker_.asked.size(), 1u);
}

// Attack (red team): "always" on `./build.sh` in repository A wrote ["./build.sh"], which then
// ran repository B's ./build.sh unasked. Now the question offers only "once", an old rule of
// that shape no longer applies, and the question says what an "always" would allow.
TEST_F(ExecFlowTest, AlwaysIsNeverOfferedForAProgramTheWorkspaceHolds) {
  std::ofstream(root_ / "rules" / "approved.toml") << R"(
[[rule]]
pattern = ["./build.sh"]
exact = true
decision = "allow"
justification = "approved by the user (always) before"
)";
  for (const Argv& argv : {Argv{"./build.sh"}, Argv{"bash", "-c", "cd sub && ./build.sh"},
                           Argv{(root_ / "ws" / "build.sh").string()}}) {
    SCOPED_TRACE(argv.back());
    asker_.asked.clear();
    asker_.answers = {ApprovalAnswer::kAlways};
    auto r = Run(Request(argv, ApprovalMode::kUntrusted));
    ASSERT_EQ(asker_.asked.size(), 1u) << r.report.dump();  // asked, not run by the old rule
    EXPECT_TRUE(asker_.asked[0].always_prefixes.empty());
    EXPECT_EQ(asker_.asked[0].ToJson()["always_offered"], false);
    EXPECT_EQ(r.exit_status, 0);  // "always" where it is not offered is "once"
  }
  std::ifstream in(root_ / "rules" / "approved.toml");
  const std::string written((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Nothing more was written: the old rule is the file's only one.
  std::size_t rules = 0;
  for (std::size_t at = written.find("[[rule]]"); at != std::string::npos;
       at = written.find("[[rule]]", at + 1)) {
    ++rules;
  }
  EXPECT_EQ(rules, 1u) << written;
  // Benign: a bare name after a cd is offered, and the question says what it would allow.
  asker_.asked.clear();
  asker_.answers = {ApprovalAnswer::kOnce};
  Run(Request({"bash", "-c", "cd sub && make"}, ApprovalMode::kUntrusted));
  ASSERT_EQ(asker_.asked.size(), 1u);
  EXPECT_EQ(asker_.asked[0].always_prefixes, (std::vector<Argv>{{"make"}}));
  const std::string text = asker_.asked[0].Text();
  EXPECT_NE(text.find("always allows: `make`"), std::string::npos) << text;
  EXPECT_NE(text.find("in any directory"), std::string::npos) << text;
}

TEST_F(ExecFlowTest, ABrokenRulesFileRunsNothing) {
  std::ofstream(root_ / "rules" / "broken.toml") << "[[rule]]\npattern = 3\n";
  auto r = Run(Request({"ls"}, ApprovalMode::kOnRequest));
  EXPECT_EQ(r.exit_status, kExitRulesBroken);
  EXPECT_TRUE(sandbox_.calls.empty());
  EXPECT_TRUE(r.report.contains("error"));
}

}  // namespace
}  // namespace exec_flow_test
}  // namespace anvil::agent
