// T3/T4 for the command sandbox, exit status and fail-closed set-up: the exit status says what
// happened (the command's own code, 128+N, 127, 126, 125) so that a caller never mistakes a
// sandbox that could not be built for a command that ran; a layer that cannot be applied means
// nothing runs at all; --json reports it as one parseable object.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <tuple>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_exit_status_test {
namespace {

class T3SandboxExitStatus : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    caller_.Give(ws_.path());
  }
  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {}) {
    return SandboxSh(ws_.path(), script, flags, Opts());
  }
  TempDir ws_{"anvil-ws-exit"};
};

TEST_P(T3SandboxExitStatus, CommandsOwnExitCodeIsReturned) {
  EXPECT_EQ(Sh("exit 42").status, 42);
  EXPECT_EQ(Sh("true").status, 0);
  EXPECT_EQ(Sh("exit 255").status, 255);
  EXPECT_EQ(Sh("exit 42", {"--policy", "read-only"}).status, 42);
}

TEST_P(T3SandboxExitStatus, CommandKilledBySignalGives128PlusN) {
  EXPECT_EQ(Sh("kill -TERM $$").status, 128 + 15);
  EXPECT_EQ(Sh("kill -KILL $$").status, 128 + 9);
  EXPECT_EQ(Sh("kill -SEGV $$").status, 128 + 11);
  auto json = Sh("kill -USR1 $$", {"--json"});
  EXPECT_EQ(json.status, 128 + 10);
  auto report = JsonReport(json);
  ASSERT_FALSE(report.is_discarded()) << json.err;
  EXPECT_EQ(report.value("outcome", ""), "signaled");
  EXPECT_EQ(report.value("signal", 0), 10);
  EXPECT_EQ(report.value("exit_code", 0), 138);
}

TEST_P(T3SandboxExitStatus, MissingCommandGives127) {
  auto absolute = Sandbox(ws_.path(), {}, {"/nonexistent-anvil-dir/cmd"}, Opts());
  EXPECT_EQ(absolute.status, 127) << absolute.err;
  auto on_path = Sandbox(ws_.path(), {}, {"no-such-command-anvil-test"}, Opts());
  EXPECT_EQ(on_path.status, 127) << on_path.err;
  auto relative = Sandbox(ws_.path(), {}, {"./missing.sh"}, Opts());
  EXPECT_EQ(relative.status, 127) << relative.err;
}

TEST_P(T3SandboxExitStatus, NonExecutableFileGives126AndDoesNotRun) {
  WriteFile(ws_ / "not-exec.sh", "#!/bin/sh\necho ran > ran.txt\n", 0644);
  ASSERT_EQ(mkdir((ws_ / "a-dir").c_str(), 0755), 0);
  caller_.Give(ws_.path());
  auto file = Sandbox(ws_.path(), {}, {"./not-exec.sh"}, Opts());
  EXPECT_EQ(file.status, 126) << file.err;
  auto dir = Sandbox(ws_.path(), {}, {"./a-dir"}, Opts());
  EXPECT_EQ(dir.status, 126) << dir.err;
  EXPECT_FALSE(Exists(ws_ / "ran.txt"));

  // Benign: the same script, made executable, runs.
  chmod((ws_ / "not-exec.sh").c_str(), 0755);
  auto benign = Sandbox(ws_.path(), {}, {"./not-exec.sh"}, Opts());
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Exists(ws_ / "ran.txt"));
}

// A script without `#!` runs with /bin/sh, as execvp, every shell, env and bwrap run it; a
// binary the kernel cannot run stays "Exec format error" (126), as bash reports it.
TEST_P(T3SandboxExitStatus, AScriptWithoutAnInterpreterLineRunsWithSh) {
  WriteFile(ws_ / "nsb.sh", "echo ran \"$@\" > ran.txt\n", 0755);
  WriteFile(ws_ / "bad.bin",
            std::string("\x7f"
                        "ELF\0\x01junk",
                        10),
            0755);
  caller_.Give(ws_.path());
  auto r = Sandbox(ws_.path(), {}, {"./nsb.sh", "a", "b c"}, Opts());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ReadFile(ws_ / "ran.txt"), "ran a b c\n");
  auto bad = Sandbox(ws_.path(), {}, {"./bad.bin"}, Opts());
  EXPECT_EQ(bad.status, 126) << bad.err;
  EXPECT_NE(bad.err.find("Exec format error"), std::string::npos) << bad.err;
  // Not a program at all: the fix is named.
  auto cd = Sandbox(ws_.path(), {}, {"cd", "sub"}, Opts());
  EXPECT_EQ(cd.status, 127) << cd.err;
  EXPECT_NE(cd.err.find("shell builtin"), std::string::npos) << cd.err;
}

TEST_P(T3SandboxExitStatus, ProgramOutsideTheViewIsNotExecutable) {
  // `anvil sandbox -- /somewhere/outside/prog`: the program is opened outside the sandbox, but
  // running it would execute code from outside the view; Landlock refuses the exec (126).
  TempDir outside("anvil-outside-prog", "/var/tmp");
  const std::string script = outside / "prog.sh";
  const std::string binary = outside / "id-copy";
  WriteFile(script, "#!/bin/sh\necho RAN-OUTSIDE-PROGRAM\n", 0755);
  ASSERT_EQ(Shell("cp /usr/bin/id " + ShellQuote(binary)), 0);
  auto control = Sandbox(ws_.path(), {"--policy", "danger-full-access"}, {script}, Opts());
  ASSERT_EQ(control.out, "RAN-OUTSIDE-PROGRAM\n") << "control: " << control.err;

  for (const auto& flags : std::vector<std::vector<std::string>>{{}, {"--policy", "read-only"}}) {
    auto attack = Sandbox(ws_.path(), flags, {script}, Opts());
    EXPECT_EQ(attack.status, 126) << attack.err;
    EXPECT_EQ(attack.out.find("RAN-OUTSIDE-PROGRAM"), std::string::npos);
    auto elf = Sandbox(ws_.path(), flags, {binary, "-u"}, Opts());
    EXPECT_EQ(elf.status, 126) << elf.err;
    EXPECT_EQ(elf.out, "");
  }
}

TEST_P(T3SandboxExitStatus, TestFaultFlagIsRejectedWithoutTheOptIn) {
  auto result = Sh("echo ran > ran.txt", {"--unsafe-test-fail-layer", "landlock"});
  EXPECT_NE(result.status, 0);
  EXPECT_NE(result.err.find("unknown option"), std::string::npos) << result.err;
  EXPECT_FALSE(Exists(ws_ / "ran.txt"));
}

TEST_P(T3SandboxExitStatus, JsonReportIsOneParseableObject) {
  auto result = Sh("exit 42", {"--json"});
  EXPECT_EQ(result.status, 42);
  auto lines = Lines(result.err);
  ASSERT_EQ(lines.size(), 1u) << "stderr must hold exactly the report:\n" << result.err;
  auto report = nlohmann::json::parse(lines[0], nullptr, false);
  ASSERT_TRUE(report.is_object()) << lines[0];
  EXPECT_EQ(report.value("exit_code", -1), 42);
  EXPECT_EQ(report.value("outcome", ""), "exited");
  EXPECT_EQ(report.value("policy", ""), "workspace-write");
  EXPECT_EQ(report.value("network", ""), "none");
  EXPECT_EQ(report.value("workspace", ""), ws_.path());
  ASSERT_TRUE(report.contains("layers") && report["layers"].is_object());
  const auto& layers = report["layers"];
  for (const char* layer : {"user_namespace", "pid_namespace", "mount_namespace", "net_namespace",
                            "seccomp", "no_new_privs"}) {
    EXPECT_EQ(layers.value(layer, false), true) << layer;
  }
  EXPECT_GE(layers.value("landlock_abi", 0), 1);

  auto ro = Sh("true", {"--json", "--policy", "read-only", "--network", "full"});
  auto ro_report = JsonReport(ro);
  ASSERT_FALSE(ro_report.is_discarded()) << ro.err;
  EXPECT_EQ(ro_report.value("policy", ""), "read-only");
  EXPECT_EQ(ro_report.value("network", ""), "full");
  EXPECT_EQ(ro_report["layers"].value("net_namespace", true), false);
}

// A sandbox started inside a sandbox cannot be built (the outer one refuses namespaces): 125,
// and the error says that is why instead of only naming the first syscall refused.
TEST_P(T3SandboxExitStatus, ANestedSandboxSaysItIsNested) {
  auto r = Sandbox(ws_.path(), {"--read-access", "full"},
                   {AnvilBin(), "sandbox", "--", "/bin/true"}, Opts());
  EXPECT_EQ(r.status, 125) << r.err;
  EXPECT_NE(r.err.find("inside an Anvil sandbox"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fix: run it outside the sandbox"), std::string::npos) << r.err;
}

TEST_P(T3SandboxExitStatus, JsonReportIsPrintedAlsoWhenTheCommandCannotRun) {
  // INTERFACES.md: "--json prints one report object on stderr at exit" — a script that parses
  // it must get one for 127 and 126 as well, not only for commands that started.
  WriteFile(ws_ / "not-exec.sh", "#!/bin/sh\n", 0644);
  caller_.Give(ws_.path());
  struct Case {
    std::string program;
    int status;
  };
  for (const Case& c : {Case{"/nonexistent-anvil-dir/cmd", 127}, Case{"./not-exec.sh", 126}}) {
    auto result = Sandbox(ws_.path(), {"--json"}, {c.program}, Opts());
    EXPECT_EQ(result.status, c.status) << result.err;
    auto report = JsonReport(result);
    ASSERT_FALSE(report.is_discarded()) << c.program << ": no JSON report; stderr: " << result.err;
    EXPECT_EQ(report.value("exit_code", -1), c.status);
  }
}

INSTANTIATE_TEST_SUITE_P(Callers, T3SandboxExitStatus, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

// Each layer's set-up failure, injected through the trusted caller's test-only switch.
class T3SandboxFailClosed : public ::testing::TestWithParam<std::tuple<Caller, const char*>> {
 protected:
  void SetUp() override {
    ANVIL_CALLER_OR_END_TEST(id, std::get<0>(GetParam()));
    caller_ = *id;
    caller_.Give(ws_.path());
  }
  RunOptions FaultOptions() const {
    RunOptions options;
    options.env = {"PATH=/usr/bin:/bin", "HOME=/root", "ANVIL_ALLOW_TEST_FAULTS=1"};
    return caller_.Options(options);
  }
  CallerIdentity caller_;
  TempDir ws_{"anvil-ws-fail"};
};

TEST_P(T3SandboxFailClosed, UnappliableLayerGives125AndNothingRuns) {
  const std::string layer = std::get<1>(GetParam());
  auto attack = SandboxSh(ws_.path(), "echo ran > ran.txt",
                          {"--json", "--unsafe-test-fail-layer", layer}, FaultOptions());
  EXPECT_EQ(attack.status, 125) << attack.err;
  EXPECT_FALSE(Exists(ws_ / "ran.txt"))
      << "the command ran although the " << layer << " layer was not applied";
  EXPECT_NE(attack.err.find(layer), std::string::npos) << "the message must name the layer";
  auto report = JsonReport(attack);
  ASSERT_FALSE(report.is_discarded()) << attack.err;
  EXPECT_EQ(report.value("outcome", ""), "setup_failed");
  EXPECT_EQ(report.value("exit_code", 0), 125);

  // Benign: the same invocation without the injected failure runs the command.
  auto benign = SandboxSh(ws_.path(), "echo ran > ran.txt", {}, FaultOptions());
  EXPECT_EQ(benign.status, 0) << benign.err;
  EXPECT_TRUE(Exists(ws_ / "ran.txt"));
}

std::string FailParamName(const ::testing::TestParamInfo<std::tuple<Caller, const char*>>& i) {
  return std::string(ToString(std::get<0>(i.param))) + "_" + std::get<1>(i.param);
}

INSTANTIATE_TEST_SUITE_P(Layers, T3SandboxFailClosed,
                         ::testing::Combine(::testing::ValuesIn(kAllCallers),
                                            ::testing::Values("landlock", "seccomp", "mount",
                                                              "userns")),
                         FailParamName);

}  // namespace
}  // namespace t3_sandbox_exit_status_test
}  // namespace anvil::testing
