// sys.exec end to end from a real plugin (`anvil run`: session, gateway, exec broker, runner),
// as root and as an unprivileged user: the runner takes different paths for each (uid 0 keeps
// its uid inside and is bounded by a pids cgroup; a user gets a user namespace).
#include <gtest/gtest.h>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace {

class ExecFromPlugin : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    ASSERT_EQ(Shell("mkdir -p '" + ws_.path() + "/src'"), 0);
    WriteFile(ws_ / "src/main.c", "int main() { return 0; } // TODO: error handling\n");
    WriteFile(ws_ / ".env", "TOKEN=TODO-not-for-plugins\n");
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"test.todo\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n"
              "\n[permissions]\nfs.read = [\"src/**\"]\nexec = [\"rg\"]\n");
    WriteFile(plugin_ / "main.lua",
              "anvil.command('todos', function()\n"
              "  local r = sys.exec{program = 'rg', args = {'-n', '--no-heading', 'TODO'}}\n"
              "  return r.stdout\n"
              "end)\n"
              "anvil.command('shell', function()\n"
              "  local ok, err = pcall(sys.exec, {program = 'sh', args = {'-c', 'id'}})\n"
              "  return err\n"
              "end)\n");
    caller_.Give(ws_.path());
    caller_.Give(plugin_.path());
    caller_.Give(state_.path());
  }
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "run", "--workspace", ws_.path(), "--approve"});
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path(),
             "XDG_RUNTIME_DIR=" + state_.path()};
    return testing::Run(args, Opts(o));
  }
  TempDir ws_{"anvil-exec-ws"};
  TempDir plugin_{"anvil-exec-plugin"};
  TempDir state_{"anvil-exec-state"};
};

TEST_P(ExecFromPlugin, RgFindsTodosInTheGrantedTreeOnly) {
  auto r = Anvil({plugin_.path(), "todos"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("src/main.c:1:int main() { return 0; } // TODO: error handling"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("not-for-plugins"), std::string::npos) << r.out;
}

TEST_P(ExecFromPlugin, AShellIsNeverAProgram) {
  auto r = Anvil({plugin_.path(), "shell"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "denied: executable not in the policy table: sh\n");
}

INSTANTIATE_TEST_SUITE_P(Callers, ExecFromPlugin, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace anvil::testing
