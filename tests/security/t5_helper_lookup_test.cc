// T5 (a local process as the adversary): `anvil` starts its helpers (anvil-gateway,
// anvil-plugin-host, anvil-exec-runner, anvil-proxy) with the caller's full authority. Whoever
// can replace one runs code as the caller, root included. So a helper is found only beside the
// running `anvil` (installed: ../libexec/anvil/; the build tree: the same directory), never
// through PATH or the working directory, and refused when anyone but root or the caller could
// replace it or a directory above it. Each attack is tried on a copy of the built binaries laid
// out as an installation, next to the benign installation that must keep working.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "linux/helper_executable.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t5_helper_lookup_test {
namespace {

constexpr const char* kHelpers[] = {"anvil-gateway", "anvil-gateway-offline", "anvil-plugin-host",
                                    "anvil-exec-runner", "anvil-proxy"};

// PREFIX/bin/anvil and PREFIX/libexec/anvil/<helpers>, copied from the build (copies, not links:
// the tests change their modes and owners).
void InstallCopy(const std::string& prefix) {
  const std::string helper_dir = prefix + "/bin/" + std::string(InstalledHelperDir());
  std::string cmd = "mkdir -p " + ShellQuote(prefix + "/bin") + " " + ShellQuote(helper_dir) +
                    " && cp " + ShellQuote(AnvilBin()) + " " + ShellQuote(prefix + "/bin/");
  for (const char* h : kHelpers) {
    cmd += " && cp " + ShellQuote(BinDir() + "/" + h) + " " + ShellQuote(helper_dir + "/");
  }
  ASSERT_EQ(Shell(cmd), 0) << cmd;
}

// A program an attacker would like `anvil` to run: it leaves a mark and fails.
void PlantFake(const std::string& path, const std::string& marker, int mode) {
  WriteFile(path, "#!/bin/sh\necho ran >> " + ShellQuote(marker) + "\nexit 1\n", mode);
  ASSERT_EQ(::chmod(path.c_str(), static_cast<mode_t>(mode)), 0);
}

class T5HelperLookup : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    InstallCopy(prefix_.path());
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"test.helpers\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
              "entry = \"main.lua\"\n");
    WriteFile(plugin_ / "main.lua", "anvil.command('hi', function() return 'hello' end)\n");
    caller_.Give(ws_.path());
    caller_.Give(state_.path());
    marker_ = state_ / "marker";
  }
  std::string Bin() const { return prefix_.path() + "/bin/anvil"; }
  std::string HelperPath(const std::string& name) const {
    return prefix_.path() + "/libexec/anvil/" + name;
  }
  // Run from a directory of the attacker's choosing, with a PATH of the attacker's choosing.
  RunResult Anvil(const std::string& bin, std::vector<std::string> args,
                  const std::string& cwd = "/", const std::string& path = "/usr/bin:/bin") {
    args.insert(args.begin(), bin);
    RunOptions o;
    o.cwd = cwd;
    o.env = {"PATH=" + path, "HOME=" + state_.path(), "XDG_STATE_HOME=" + state_.path()};
    return testing::Run(args, Opts(o));
  }
  RunResult RunPlugin(const std::string& bin, const std::string& cwd = "/",
                      const std::string& path = "/usr/bin:/bin") {
    return Anvil(bin, {"run", "--workspace", ws_.path(), "--approve", plugin_.path(), "hi"}, cwd,
                 path);
  }
  RunResult SandboxViaProxy(const std::string& bin, const std::string& cwd = "/",
                            const std::string& path = "/usr/bin:/bin") {
    return Anvil(bin,
                 {"sandbox", "--cwd", ws_.path(), "--network", "proxy", "--allow-host",
                  "example.com", "--", "/bin/true"},
                 cwd, path);
  }
  nlohmann::json Doctor(const std::string& bin, int* status = nullptr) {
    auto r = Anvil(bin, {"doctor", "--json"});
    if (status) *status = r.status;
    return nlohmann::json::parse(r.out, nullptr, false);
  }
  bool Marked() const { return Exists(marker_); }

  TempDir prefix_{"anvil-t5-prefix"};
  TempDir ws_{"anvil-t5-ws"};
  TempDir plugin_{"anvil-t5-plugin"};
  TempDir state_{"anvil-t5-state"};
  std::string marker_;
};

// Benign: an installed copy finds every helper in libexec/anvil/, from any directory.
TEST_P(T5HelperLookup, AnInstalledAnvilFindsItsHelpersBesideItselfFromAnyDirectory) {
  int status = -1;
  auto doctor = Doctor(Bin(), &status);
  ASSERT_TRUE(doctor.is_object()) << status;
  ASSERT_TRUE(doctor["helpers"].is_array()) << doctor.dump(2);
  ASSERT_EQ(doctor["helpers"].size(), std::size(kHelpers));
  for (const auto& h : doctor["helpers"]) {
    EXPECT_TRUE(h.value("ok", false)) << h.dump();
    EXPECT_EQ(h.value("path", ""), HelperPath(h.value("name", ""))) << h.dump();
  }
  auto r = RunPlugin(Bin());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello\n");
  r = RunPlugin(Bin(), ws_.path());
  EXPECT_EQ(r.status, 0) << r.err;
  r = SandboxViaProxy(Bin());
  EXPECT_EQ(r.status, 0) << r.err;
}

// Attack: an `anvil` with no helpers beside it, run with helpers planted on PATH and in the
// working directory. None of them may run; `anvil` fails closed and says where it looked.
TEST_P(T5HelperLookup, HelpersAreNeverTakenFromPathOrTheWorkingDirectory) {
  TempDir lonely("anvil-t5-lonely");
  TempDir planted("anvil-t5-planted");
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(lonely / "bin") + " && cp " + ShellQuote(AnvilBin()) +
                  " " + ShellQuote(lonely / "bin/")),
            0);
  for (const char* h : kHelpers) PlantFake(planted / h, marker_, 0755);
  const std::string bin = lonely / "bin/anvil";
  const std::string path = planted.path() + ":/usr/bin:/bin";
  auto r = RunPlugin(bin, planted.path(), path);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  // The plugin may not fetch: its gateway is the one without network code.
  EXPECT_TRUE(Printed(r, "anvil-gateway-offline not found beside " + lonely.path() + "/bin"))
      << r.err;
  r = SandboxViaProxy(bin, planted.path(), path);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_TRUE(Printed(r, "anvil-proxy not found")) << r.err;
  int status = -1;
  auto doctor = Doctor(bin, &status);
  EXPECT_EQ(status, 1);
  ASSERT_TRUE(doctor["helpers"].is_array()) << doctor;
  for (const auto& h : doctor["helpers"]) {
    EXPECT_FALSE(h.value("ok", true)) << h.dump();
    EXPECT_NE(h.value("fix", "").find("reinstall anvil"), std::string::npos) << h.dump();
  }
  EXPECT_FALSE(Marked()) << "a helper from PATH or the working directory ran";
}

// Attack: a helper anyone (or its group) can write was replaced by another user's program.
TEST_P(T5HelperLookup, AHelperOthersCanWriteIsRefusedNotRun) {
  for (int mode : {0777, 0775}) {
    SCOPED_TRACE(mode);
    PlantFake(HelperPath("anvil-plugin-host"), marker_, mode);
    PlantFake(HelperPath("anvil-proxy"), marker_, mode);
    auto r = RunPlugin(Bin());
    EXPECT_EQ(r.status, 125) << r.out << r.err;
    EXPECT_TRUE(Printed(r, HelperPath("anvil-plugin-host") + " is writable by")) << r.err;
    EXPECT_TRUE(Printed(r, "chmod go-w")) << r.err;
    r = SandboxViaProxy(Bin());
    EXPECT_EQ(r.status, 125) << r.out << r.err;
    EXPECT_TRUE(Printed(r, HelperPath("anvil-proxy") + " is writable by")) << r.err;
    auto text = Anvil(Bin(), {"doctor"});
    EXPECT_EQ(text.status, 1) << text.out;
    EXPECT_NE(text.out.find("REFUSED   helper anvil-plugin-host: "), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("          fix: chmod go-w " + HelperPath("anvil-plugin-host")),
              std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("ok        helper anvil-gateway: " + HelperPath("anvil-gateway")),
              std::string::npos)
        << text.out;
    EXPECT_FALSE(Marked());
  }
}

// Attack: the helper is root's, but a directory above it is writable by others, who could
// rename it away and put their own in its place. A sticky directory (like /tmp) is not that.
TEST_P(T5HelperLookup, ADirectoryAboveAHelperOthersCanWriteIsRefused) {
  const std::string libexec = prefix_.path() + "/libexec";
  for (mode_t mode : {0777, 0775}) {
    SCOPED_TRACE(mode);
    ASSERT_EQ(::chmod(libexec.c_str(), mode), 0);
    auto r = RunPlugin(Bin());
    EXPECT_EQ(r.status, 125) << r.out << r.err;
    EXPECT_TRUE(Printed(r, "directory " + libexec + " is writable by")) << r.err;
    int status = -1;
    auto doctor = Doctor(Bin(), &status);
    EXPECT_EQ(status, 1);
    for (const auto& h : doctor["helpers"]) EXPECT_FALSE(h.value("ok", true)) << h.dump();
  }
  // Benign neighbour: sticky and world-writable, like /tmp.
  ASSERT_EQ(::chmod(libexec.c_str(), 01777), 0);
  auto r = RunPlugin(Bin());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "hello\n");
}

// Attack: the gateway starts anvil-exec-runner for sys.exec; a runner others can write is
// refused there too (sys.exec is unavailable, nothing runs), while sys.fs keeps working.
TEST_P(T5HelperLookup, TheGatewayRefusesARunnerOthersCanWrite) {
  WriteFile(plugin_ / "anvil-plugin.toml",
            "id = \"test.helpers\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
            "entry = \"main.lua\"\n\n[permissions]\nfs.read = [\"**\"]\n"
            "exec = [\"rg\"]\n");
  WriteFile(plugin_ / "main.lua",
            "anvil.command('hi', function()\n"
            "  local ok, err = pcall(sys.exec, {program = 'rg', args = {'-e', 'TODO', '.'}})\n"
            "  return sys.fs.read('a.txt') .. ' exec:' .. tostring(ok) .. ' ' .. tostring(err)\n"
            "end)\n");
  WriteFile(ws_ / "a.txt", "TODO here");
  caller_.Give(ws_.path());
  PlantFake(HelperPath("anvil-exec-runner"), marker_, 0777);
  auto r = RunPlugin(Bin());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("TODO here exec:false", 0), 0u) << r.out;
  EXPECT_TRUE(Printed(r, "is writable by anyone")) << r.out << r.err;
  EXPECT_FALSE(Marked());
}

INSTANTIATE_TEST_SUITE_P(Callers, T5HelperLookup, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

// Attack: root runs an `anvil` whose helper belongs to another user, who could replace it at
// will. Benign neighbour: that user runs the same tree, which is theirs.
TEST(T5HelperOwner, AHelperOwnedByAnotherUserIsRefusedForRootAndAcceptedForItsOwner) {
  ANVIL_CALLER_OR_END_TEST(user, Caller::kUnprivileged);
  TempDir prefix("anvil-t5-owner");
  InstallCopy(prefix.path());
  const std::string proxy = prefix.path() + "/libexec/anvil/anvil-proxy";
  ASSERT_EQ(::chown(proxy.c_str(), user->uid(), user->gid()), 0);
  TempDir ws("anvil-t5-owner-ws");
  user->Give(ws.path());
  const std::vector<std::string> args = {prefix.path() + "/bin/anvil",
                                         "sandbox",
                                         "--cwd",
                                         ws.path(),
                                         "--network",
                                         "proxy",
                                         "--allow-host",
                                         "example.com",
                                         "--",
                                         "/bin/true"};
  RunOptions o;
  o.cwd = "/";
  o.env = {"PATH=/usr/bin:/bin", "HOME=" + ws.path()};
  auto r = testing::Run(args, o);
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_TRUE(Printed(r, proxy + " is owned by uid " + std::to_string(user->uid()))) << r.err;
  r = testing::Run(args, user->Options(o));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
}

}  // namespace
}  // namespace t5_helper_lookup_test
}  // namespace anvil::testing
