// `anvil sandbox --workdir`: the command's working directory inside the workspace (what `anvil
// mcp` passes for a call's cwd), and the refusal of one outside it.
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace sandbox_workdir_test {
namespace {

std::string Real(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

RunResult Sandbox(const std::string& ws, const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {AnvilBin(), "sandbox", "--cwd", ws};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"--", "pwd"});
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent"};
  return Run(argv, o);
}

TEST(SandboxWorkdir, TheCommandRunsInTheDirectoryInsideTheWorkspace) {
  TempDir ws{"anvil-workdir-ws"};
  ASSERT_EQ(Shell("mkdir -p '" + ws.path() + "/sub/deeper'"), 0);
  auto r = Sandbox(ws.path(), {"--workdir", "sub/deeper"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, Real(ws.path()) + "/sub/deeper\n");
  r = Sandbox(ws.path(), {"--workdir", ws.path() + "/sub"});  // absolute, inside
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, Real(ws.path()) + "/sub\n");
  r = Sandbox(ws.path(), {});  // the benign default: the workspace itself
  EXPECT_EQ(r.out, Real(ws.path()) + "\n");
}

TEST(SandboxWorkdir, ADirectoryOutsideTheWorkspaceIsRefusedAndNothingRuns) {
  TempDir ws{"anvil-workdir-ws"};
  for (const std::string& outside : {std::string("/etc"), std::string("..")}) {
    auto r = Sandbox(ws.path(), {"--workdir", outside});
    EXPECT_NE(r.status, 0) << outside;
    EXPECT_NE(r.err.find("is outside the workspace"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << outside;
  }
  auto r = Sandbox(ws.path(), {"--workdir", "missing"});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("no such directory"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace sandbox_workdir_test
}  // namespace anvil::testing
