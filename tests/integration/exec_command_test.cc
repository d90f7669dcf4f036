// `anvil exec` end to end on a pseudo-terminal that the test types into: the question and its
// three answers, "always" written and not asked again, and the attacks on the question itself
// (keys typed before it was shown, an answer fed on stdin, no terminal at all), as root and as
// an unprivileged caller.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "sandbox_harness.h"
#include "terminal_harness.h"

namespace anvil::testing {
namespace exec_command_test {
namespace {

class ExecApproval : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (!term_.ok()) GTEST_SKIP() << "SKIPPED: no pseudo-terminal could be opened here";
    Shell("mkdir -p " + ShellQuote(home_ / "config") + " " + ShellQuote(home_ / "state"));
    caller_.Give(ws_.path());
    caller_.Give(home_.path());
    term_.GiveTo(caller_.uid(), caller_.gid());
  }

  std::vector<std::string> Env() const {
    return {"PATH=" + path_,
            "TERM=xterm",
            "HOME=" + home_.path(),
            "XDG_CONFIG_HOME=" + (home_ / "config"),
            "XDG_STATE_HOME=" + (home_ / "state"),
            "LANG=C.UTF-8"};
  }

  UserTerminal::Start Start(const std::vector<std::string>& flags,
                            const std::vector<std::string>& command, bool controlling = true) {
    UserTerminal::Start s;
    s.argv = {AnvilBin(), "exec", "--cwd", ws_.path()};
    s.argv.insert(s.argv.end(), flags.begin(), flags.end());
    s.argv.push_back("--");
    s.argv.insert(s.argv.end(), command.begin(), command.end());
    s.cwd = ws_.path();
    s.env = Env();
    s.controlling = controlling;
    if (Unprivileged()) {
      s.uid = caller_.uid();
      s.gid = caller_.gid();
    }
    return s;
  }

  RunResult RunWithoutTerminal(const std::vector<std::string>& flags,
                               const std::vector<std::string>& command,
                               const std::string& stdin_data = "") {
    std::vector<std::string> argv = {AnvilBin(), "exec", "--cwd", ws_.path()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back("--");
    argv.insert(argv.end(), command.begin(), command.end());
    // setsid -w: no controlling terminal even when the test itself runs in one; its status.
    argv.insert(argv.begin(), {"/usr/bin/setsid", "-w"});
    RunOptions o;
    o.env = Env();
    o.cwd = ws_.path();
    o.stdin_data = stdin_data;
    return ::anvil::testing::Run(argv, Opts(o));
  }

  std::string path_ = "/usr/local/bin:/usr/bin:/bin";
  TempDir ws_{"anvil-ws-exec"};
  TempDir home_{"anvil-home-exec"};
  UserTerminal term_;
};

TEST_P(ExecApproval, AnsweringOnceRunsItAndNeverRunsNothing) {
  term_.Run(Start({"--approval", "untrusted"}, {"touch", "made-once"}));
  ASSERT_TRUE(term_.Expect("Run it?")) << term_.screen();
  EXPECT_NE(term_.screen().find("touch made-once"), std::string::npos) << term_.screen();
  term_.Send("o\n");
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
  EXPECT_TRUE(Exists(ws_ / "made-once"));

  UserTerminal second;
  second.GiveTo(caller_.uid(), caller_.gid());
  second.Run(Start({"--approval", "untrusted"}, {"touch", "made-never"}));
  ASSERT_TRUE(second.Expect("Run it?")) << second.screen();
  second.Send("n\n");
  EXPECT_EQ(second.Wait(), 3) << second.screen();
  EXPECT_FALSE(Exists(ws_ / "made-never"));
  EXPECT_NE(second.screen().find("refused"), std::string::npos) << second.screen();
}

TEST_P(ExecApproval, AlwaysWritesTheRuleAtomicallyAndTheNextRunDoesNotAsk) {
  term_.Run(Start({"--approval", "untrusted"}, {"touch", "made-always"}));
  ASSERT_TRUE(term_.Expect("[a]lways")) << term_.screen();
  term_.Send("a\n");
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
  const std::string approved = home_ / "config/anvil/rules/approved.toml";
  ASSERT_TRUE(Exists(approved)) << term_.screen();
  EXPECT_NE(ReadFile(approved).find(R"(pattern = ["touch", "made-always"])"), std::string::npos)
      << ReadFile(approved);
  // No temporary file left beside it.
  EXPECT_EQ(Shell("test $(ls -A " + ShellQuote(home_ / "config/anvil/rules") + " | wc -l) = 1"), 0);
  // The next run has no terminal at all, and runs without a question.
  Shell("rm -f " + ShellQuote(ws_ / "made-always"));
  auto r = RunWithoutTerminal({"--approval", "untrusted", "--json"}, {"touch", "made-always"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(Exists(ws_ / "made-always"));
  auto report = nlohmann::json::parse(Lines(r.err).back(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.err;
  EXPECT_EQ(report["decision"], "allow");
  EXPECT_TRUE(report["questions"].empty());
}

// Keys typed before the question was on the screen (an agent or a pasted buffer) do not answer
// it: they are discarded when it is asked.
TEST_P(ExecApproval, KeysTypedBeforeTheQuestionDoNotAnswerIt) {
  term_.Run(Start({"--approval", "untrusted"}, {"touch", "typed-ahead"}));
  term_.Send("o\n");
  ASSERT_TRUE(term_.Expect("Run it?")) << term_.screen();
  term_.Send("n\n");
  EXPECT_EQ(term_.Wait(), 3) << term_.screen();
  EXPECT_FALSE(Exists(ws_ / "typed-ahead"));
}

// Without a terminal, stdin is the command's (an agent's pipe), never the person's answer.
TEST_P(ExecApproval, AnAnswerOnStdinIsNotAnAnswer) {
  auto r = RunWithoutTerminal({"--approval", "untrusted", "--json"}, {"touch", "from-stdin"},
                              "a\no\nalways\n");
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_FALSE(Exists(ws_ / "from-stdin"));
  EXPECT_NE(r.err.find("to allow it:"), std::string::npos) << r.err;
  EXPECT_FALSE(Exists(home_ / "config/anvil/rules/approved.toml"));
}

// A terminal that is only the descriptors (not the controlling terminal) is not asked either.
TEST_P(ExecApproval, ATerminalThatIsNotControllingIsNotAsked) {
  term_.Run(Start({"--approval", "untrusted"}, {"touch", "no-ctty"}, /*controlling=*/false));
  EXPECT_EQ(term_.Wait(), 3) << term_.screen();
  EXPECT_EQ(term_.screen().find("Run it?"), std::string::npos) << term_.screen();
  EXPECT_FALSE(Exists(ws_ / "no-ctty"));
}

TEST_P(ExecApproval, ModeNeverAndForbiddenRulesAskNothing) {
  WriteFile(ws_ / "rules.toml", R"([[rule]]
pattern = ["touch", "forbidden"]
decision = "forbidden"
justification = "not this one"

[[rule]]
pattern = ["touch", "prompted"]
decision = "prompt"
justification = "ask first"
)");
  caller_.Give(ws_ / "rules.toml");
  term_.Run(Start({"--approval", "never", "--rules", ws_ / "rules.toml"}, {"touch", "prompted"}));
  EXPECT_EQ(term_.Wait(), 3) << term_.screen();
  EXPECT_EQ(term_.screen().find("Run it?"), std::string::npos) << term_.screen();
  EXPECT_FALSE(Exists(ws_ / "prompted"));

  UserTerminal second;
  second.GiveTo(caller_.uid(), caller_.gid());
  second.Run(
      Start({"--approval", "untrusted", "--rules", ws_ / "rules.toml"}, {"touch", "forbidden"}));
  EXPECT_EQ(second.Wait(), 3) << second.screen();
  EXPECT_EQ(second.screen().find("Run it?"), std::string::npos) << second.screen();
  EXPECT_FALSE(Exists(ws_ / "forbidden"));
}

// The benign neighbour: an allowed or harmless command runs without a question, sandboxed, and
// its exit status and the JSON report come back.
TEST_P(ExecApproval, HarmlessCommandsRunWithoutAQuestionInTheSandbox) {
  // A command no rule knows runs, sandboxed, in on-request; its own status comes back.
  auto r = RunWithoutTerminal({"--approval", "on-request"}, {"sh", "-c", "exit 7"});
  EXPECT_EQ(r.status, 7) << r.err;
  // A script that is not understood: NotUnderstoodScriptsRunWhenNoRuleRestricts.
  r = RunWithoutTerminal({"--json"}, {"ls", "-a"});
  EXPECT_EQ(r.status, 0) << r.err;
  auto report = nlohmann::json::parse(Lines(r.err).back(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.err;
  EXPECT_EQ(report["decision"], "harmless");
  EXPECT_EQ(report["exit"], 0);
  EXPECT_TRUE(report["ran"]);
  r = RunWithoutTerminal({}, {"env"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ANVIL_SANDBOX=workspace-write"), std::string::npos) << r.out;
}

TEST_P(ExecApproval, AHarmlessNameAWorkspacePathMayShadowIsAskedAbout) {
  // Attack: an activated virtualenv puts the workspace's .venv/bin first on PATH, and the agent
  // (or a dependency) put an `ls` there that is any program.
  const std::string bin = ws_ / ".venv/bin";
  Shell("mkdir -p " + ShellQuote(bin));
  WriteFile(ws_ / ".venv/bin/ls", R"(#!/bin/sh
touch "$PWD/pwned"
)");
  Shell("chmod 755 " + ShellQuote(ws_ / ".venv/bin/ls"));
  caller_.Give(ws_.path());
  path_ = bin + ":/usr/local/bin:/usr/bin:/bin";
  // Through a shell too, and for a name the directory does not hold yet.
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {"ls", "-a"}, {"sh", "-c", "ls | cat"}, {"cat", "/dev/null"}}) {
    auto r = RunWithoutTerminal({"--approval", "untrusted", "--json"}, command);
    EXPECT_EQ(r.status, 3) << command[0] << "\n" << r.err;
    EXPECT_FALSE(Exists(ws_ / "pwned")) << command[0];
    auto report = nlohmann::json::parse(Lines(r.err).back(), nullptr, false);
    ASSERT_TRUE(report.is_object()) << r.err;
    EXPECT_EQ(report["decision"], "none") << report.dump();
    EXPECT_NE(report["reason"].get<std::string>().find(".venv/bin"), std::string::npos)
        << report.dump();
    EXPECT_FALSE(report["ran"]);
  }
  // Benign: the workspace's directory after the system's; the system's ls runs unasked.
  path_ = "/usr/local/bin:/usr/bin:/bin:" + bin;
  auto r = RunWithoutTerminal({"--approval", "untrusted", "--json"}, {"ls", "-a"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find(".venv"), std::string::npos) << r.out;
  EXPECT_FALSE(Exists(ws_ / "pwned"));
  auto report = nlohmann::json::parse(Lines(r.err).back(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.err;
  EXPECT_EQ(report["decision"], "harmless");
}

// Attack: a system directory made a writable root (`--writable-root /usr/local`) is the
// command's to fill: a harmless-looking `ls` found through /usr/local/bin first is asked about,
// not run unasked (nothing is written there: the question comes before anything runs).
TEST_P(ExecApproval, AHarmlessNameInAWritableSystemDirectoryIsAskedAbout) {
  caller_.Give(ws_.path());
  auto r = RunWithoutTerminal(
      {"--approval", "untrusted", "--writable-root", "/usr/local", "--json"}, {"ls", "-a"});
  EXPECT_EQ(r.status, 3) << r.err;
  auto report = nlohmann::json::parse(Lines(r.err).back(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.err;
  EXPECT_EQ(report["decision"], "none") << report.dump();
  EXPECT_NE(report["reason"].get<std::string>().find("/usr/local/bin"), std::string::npos)
      << report.dump();
  EXPECT_FALSE(report["ran"]);
  // Benign: another writable root beside the workspace; the system's ls runs unasked.
  TempDir other{"anvil-exec-other"};
  caller_.Give(other.path());
  r = RunWithoutTerminal({"--approval", "untrusted", "--writable-root", other.path(), "--json"},
                         {"ls", "-a"});
  EXPECT_EQ(r.status, 0) << r.err;
  report = nlohmann::json::parse(Lines(r.err).back(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.err;
  EXPECT_EQ(report["decision"], "harmless") << report.dump();
}

// Attack: with no PATH in the sandbox's environment (--clear-env) a shell inside looks names up
// on its own default, bash's ending in `.`: an allow rule for a tool installed nowhere must not
// speak for the one the agent put in the workspace.
TEST_P(ExecApproval, AnAllowRuleDoesNotSpeakForAToolAShellsDefaultPathFindsInTheWorkspace) {
  WriteFile(ws_ / "rules.toml",
            "[[rule]]\npattern = [\"mytool\"]\ndecision = \"allow\"\njustification = \"x\"\n");
  WriteFile(ws_ / "mytool", "#!/bin/sh\ntouch \"$PWD/pwned\"\n");
  Shell("chmod 755 " + ShellQuote(ws_ / "mytool"));
  caller_.Give(ws_.path());
  auto r = RunWithoutTerminal(
      {"--approval", "untrusted", "--rules", ws_ / "rules.toml", "--clear-env", "--json"},
      {"bash", "-c", "mytool"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_FALSE(Exists(ws_ / "pwned"));
  // Its neighbour: the same rule and environment, the system's ls through the same shell is
  // found before `.` and stays harmless.
  r = RunWithoutTerminal(
      {"--approval", "untrusted", "--rules", ws_ / "rules.toml", "--clear-env", "--json"},
      {"bash", "-c", "ls"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(Exists(ws_ / "pwned"));
}

TEST_P(ExecApproval, EveryDecisionAndAnswerIsAnAuditLine) {
  term_.Run(Start({"--approval", "untrusted"}, {"touch", "audited"}));
  ASSERT_TRUE(term_.Expect("Run it?")) << term_.screen();
  term_.Send("o\n");
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
  std::vector<std::string> env = Env();
  RunOptions o;
  o.env = env;
  auto audit =
      ::anvil::testing::Run({AnvilBin(), "audit", "--workspace", ws_.path(), "--json"}, Opts(o));
  EXPECT_EQ(audit.status, 0) << audit.err;
  int decisions = 0, answers = 0;
  for (const auto& line : Lines(audit.out)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    if (j["op"] == "command" && j["target"] == "touch audited") ++decisions;
    if (j["op"] == "command.answer" && j["answer"] == "once") ++answers;
  }
  EXPECT_EQ(decisions, 1) << audit.out;
  EXPECT_EQ(answers, 1) << audit.out;
}

// on-failure: the sandbox refused a write under .git, the recorded refusal (not a guess from
// the output) makes the one widening that would let it through, --writable-git, the offer;
// answered once, the same command runs again with exactly that widening. Answered never,
// nothing more runs and .git stays as it was.
TEST_P(ExecApproval, ARefusedGitWriteOffersWritableGitAndTheRerunSucceeds) {
  ASSERT_EQ(Shell("git init -q " + ShellQuote(ws_.path()) + " && chown -R " +
                  std::to_string(caller_.uid()) + " " + ShellQuote(ws_ / ".git")),
            0);
  const std::vector<std::string> command = {"/bin/sh", "-c", "echo x > .git/escalation-probe"};
  term_.Run(Start({"--approval", "on-failure", "--json"}, command));
  // A script that writes a file has no rule: run in the sandbox, which refuses the write.
  ASSERT_TRUE(term_.Expect("--writable-git")) << term_.screen();
  ASSERT_TRUE(term_.Expect("Run it?")) << term_.screen();
  term_.Send("o\n");
  EXPECT_EQ(term_.Wait(), 0) << term_.screen();
  EXPECT_TRUE(Exists(ws_ / ".git/escalation-probe")) << term_.screen();

  Shell("rm -f " + ShellQuote(ws_ / ".git/escalation-probe"));
  UserTerminal second;
  second.GiveTo(caller_.uid(), caller_.gid());
  second.Run(Start({"--approval", "on-failure"}, command));
  ASSERT_TRUE(second.Expect("--writable-git")) << second.screen();
  ASSERT_TRUE(second.Expect("Run it?")) << second.screen();
  second.Send("n\n");
  EXPECT_NE(second.Wait(), 0) << second.screen();
  EXPECT_FALSE(Exists(ws_ / ".git/escalation-probe"));

  // A command that fails for its own reasons is not offered anything.
  auto r = RunWithoutTerminal({"--approval", "on-failure", "--json"}, {"/bin/sh", "-c", "exit 7"});
  EXPECT_EQ(r.status, 7) << r.err;
  auto report = nlohmann::json::parse(Lines(r.err).back(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << r.err;
  EXPECT_TRUE(report["escalation"].is_null()) << report.dump();
}

// The everyday scripts of an agent (redirections, here-documents, globs, variables, loops,
// assignments) run under the default mode with nobody to ask; a workspace prompt rule on `rm`
// still refuses a script that could run `rm -rf`, however it is written.
TEST_P(ExecApproval, EverydayScriptsRunUnattendedAndAnRmRuleStillRefuses) {
  Shell("mkdir -p " + ShellQuote(ws_ / ".anvil") + " " + ShellQuote(ws_ / "sub"));
  WriteFile(ws_ / ".anvil/rules.toml", R"([[rule]]
pattern = ["rm"]
decision = "prompt"
justification = "deleting needs a question"
)");
  WriteFile(ws_ / "sub/b.txt", "beta\n");
  caller_.Give(ws_.path());
  struct Case {
    std::string script;
    std::string out;
  };
  const std::vector<Case> everyday = {
      {"echo hi > f.txt && cat f.txt", "hi\n"},
      {"cat > g.txt <<'EOF'\nline $HOME $(id)\nEOF\ncat g.txt", "line $HOME $(id)\n"},
      {"ls sub/*.txt > list.txt 2>&1; cat list.txt", "sub/b.txt\n"},
      {"for f in sub/*.txt; do echo \"$f\"; done", "sub/b.txt\n"},
      {"cd \"$PWD/sub\" && x=1 ls", "b.txt\n"},
      {"if [ -f f.txt ]; then { echo yes; } 2>/dev/null; else echo no; fi", "yes\n"},
      {"wc -l < f.txt", "1\n"},
  };
  for (const auto& c : everyday) {
    for (const char* shell : {"bash", "sh"}) {
      auto r = RunWithoutTerminal({"--json"}, {shell, "-c", c.script});
      EXPECT_EQ(r.status, 0) << shell << " -c " << c.script << "\n" << r.err;
      EXPECT_EQ(r.out, c.out) << shell << " -c " << c.script;
    }
  }
  auto bash = RunWithoutTerminal({}, {"bash", "-c", "python3 -c 'print(1)' > log.txt 2>&1"});
  EXPECT_EQ(bash.status, 0) << bash.err;
  // Attacks: the rule on rm holds through a loop variable, a glob and a quoted variable.
  WriteFile(ws_ / "victim", "x");
  caller_.Give(ws_ / "victim");
  for (const std::string script :
       {"for f in victim; do rm -rf \"$f\"; done", "rm *", "X=victim; rm \"$X\"",
        "{ rm victim; } > /dev/null", "(rm victim)", "if true; then rm victim; fi"}) {
    auto r = RunWithoutTerminal({}, {"bash", "-c", script});
    EXPECT_EQ(r.status, 3) << script << "\n" << r.err;
    EXPECT_NE(r.err.find("needs approval by"), std::string::npos) << script << "\n" << r.err;
    EXPECT_TRUE(Exists(ws_ / "victim")) << script;
  }
}

// The shell idioms the parser does not read (parameter operators, case, functions, source,
// arithmetic on names, [[ ]] with an arithmetic comparison) hide nothing when no layer has a
// prompt or forbidden rule: they run sandboxed under on-request and never, where nobody can be
// asked. A prompt or forbidden rule in any layer makes them a question again, and a forbidden rm
// beside one is never run. The simple [[ ]] tests and literal arithmetic are understood: they run
// whatever the rules, unless a rule applies to what they hold.
TEST_P(ExecApproval, NotUnderstoodScriptsRunWhenNoRuleRestricts) {
  if (Exists("/etc/anvil/rules")) {
    GTEST_SKIP() << "SKIPPED: this machine has an admin rules layer (/etc/anvil/rules), which may "
                    "restrict; this test needs none";
  }
  WriteFile(ws_ / "x", "");
  WriteFile(ws_ / "act", "A=1\n");
  caller_.Give(ws_.path());
  struct Case {
    std::string script;
    std::string out;
    std::string decision = "none";
    bool understood = false;
  };
  const std::vector<Case> idioms = {
      {"[[ -f x ]] && echo y", "y\n", "none", true},
      {"echo $((1+2))", "3\n", "harmless", true},
      {"[[ $n -eq 0 ]] && echo zero", "zero\n"},
      {"echo $((n+1))", "1\n"},
      {"echo ${VAR:-default}", "default\n"},
      {"case a in a) echo a;; esac", "a\n"},
      {"f() { echo f; }; f", "f\n"},
      {"source ./act && echo $A", "1\n"},
      {". ./act; echo $A", "1\n"},
  };
  for (const auto& c : idioms) {
    for (const char* mode : {"on-request", "never"}) {
      auto r = RunWithoutTerminal({"--approval", mode, "--json"}, {"bash", "-c", c.script});
      EXPECT_EQ(r.status, 0) << mode << ": " << c.script << "\n" << r.err;
      EXPECT_EQ(r.out, c.out) << mode << ": " << c.script;
      auto report = nlohmann::json::parse(Lines(r.err).back(), nullptr, false);
      ASSERT_TRUE(report.is_object()) << r.err;
      EXPECT_EQ(report["decision"], c.decision) << c.script;
      EXPECT_EQ(
          report["reason"].get<std::string>().find("not fully understood") == std::string::npos,
          c.understood)
          << report["reason"];
      EXPECT_TRUE(report["questions"].empty());
    }
  }
  // untrusted asks about what no rule decides; nobody can be asked here, and the way out is a
  // mode, never an allow rule (none could apply to a script that was not read).
  auto untrusted =
      RunWithoutTerminal({"--approval", "untrusted", "--json"}, {"bash", "-c", "echo $((n+1))"});
  EXPECT_EQ(untrusted.status, 3) << untrusted.err;
  EXPECT_EQ(untrusted.out, "");
  auto report = nlohmann::json::parse(Lines(untrusted.err).back(), nullptr, false);
  ASSERT_TRUE(report.is_object()) << untrusted.err;
  EXPECT_NE(report["how_to_allow"].get<std::string>().find("--approval on-request"),
            std::string::npos)
      << report.dump();
  EXPECT_EQ(report["how_to_allow"].get<std::string>().find("decision"), std::string::npos)
      << report.dump();

  // Attack: a forbidden rm beside a construct the parser refuses.
  WriteFile(ws_ / "rules.toml", R"([[rule]]
pattern = ["rm"]
decision = "forbidden"
justification = "never delete"
)");
  caller_.Give(ws_ / "rules.toml");
  for (const std::string script :
       {"[[ -f x ]]; rm x", "[[ $n -eq 0 ]]; rm x", "echo $((1+2)); rm x", "echo $((n)); rm x",
        "n='a[$(rm x)]'; echo $((n))", "[[ -n $(rm x) ]]", "f() { rm x; }; f",
        "case a in a) rm x;; esac"}) {
    for (const char* mode : {"on-request", "never"}) {
      auto r = RunWithoutTerminal({"--approval", mode, "--rules", ws_ / "rules.toml"},
                                  {"bash", "-c", script});
      EXPECT_EQ(r.status, 3) << mode << ": " << script << "\n" << r.err;
      EXPECT_TRUE(Exists(ws_ / "x")) << script;
    }
  }
  // A prompt rule about anything else, in the workspace's own file, makes the idiom a question
  // again: refused where nobody can be asked.
  Shell("mkdir -p " + ShellQuote(ws_ / ".anvil"));
  WriteFile(ws_ / ".anvil/rules.toml", R"([[rule]]
pattern = ["git", "push"]
decision = "prompt"
justification = "talks to the remote"
)");
  caller_.Give(ws_.path());
  auto r = RunWithoutTerminal({"--approval", "on-request"}, {"bash", "-c", "echo ${V:-y}"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("not fully understood, so it needs approval"), std::string::npos) << r.err;
  // What is understood runs as before, that rule or not.
  r = RunWithoutTerminal({"--approval", "on-request"},
                         {"bash", "-c", "[[ -f x && ! -d x ]] && echo $((1+2))"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "3\n");
}

INSTANTIATE_TEST_SUITE_P(Callers, ExecApproval, ::testing::ValuesIn(kAllCallers), CallerParamName);

}  // namespace
}  // namespace exec_command_test
}  // namespace anvil::testing
