// The acceptance suite of everyday developer tasks (everyday_tasks.sh) under the DEFAULT policy,
// as root and as an unprivileged user with a lived-in home (home_fixture.h), in a fresh project
// and with $HOME itself as the workspace: every task passes (or is skipped because its tool is
// missing on this machine), no secret of the home shows up in anything printed, and the real
// home outside the workspace and Anvil's state is unchanged.
#include <string>
#include <tuple>
#include <vector>

#include "home_fixture.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_acceptance_test {
namespace {

// Which tasks (everyday_tasks.sh's groups) and where: a fresh project under the home, or the
// home itself as the workspace.
using Param = std::tuple<Caller, const char*, bool>;

class T3SandboxAcceptance : public ::testing::TestWithParam<Param> {};

std::string Script() { return std::string(ANVIL_SOURCE_DIR) + "/tests/security/everyday_tasks.sh"; }

TEST_P(T3SandboxAcceptance, EverydayTasksPass) {
  const auto [who, group, home_is_workspace] = GetParam();
  ANVIL_CALLER_OR_END_TEST(caller, who);
  LivedInHome home;
  const std::string ws = home_is_workspace ? home.home() : home.workspace();
  home.GiveTo(*caller);
  RunOptions o;
  o.cwd = ws;
  o.env = home.Env();
  // Generous: a CI machine under full load runs the whole task script much slower.
  o.timeout_seconds = 200;
  const RunResult r = ::anvil::testing::Run(
      {"/bin/bash", Script(), AnvilBin(), ws, home_is_workspace ? "home" : "project", group},
      caller->Options(o));
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out << r.err;
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out << r.err;
  for (const auto& [rel, secret] : home.secrets()) {
    EXPECT_EQ(r.out.find(secret.second), std::string::npos) << rel << "\n" << r.out;
  }
  EXPECT_EQ(r.out.find(home.gitconfig_token()), std::string::npos) << r.out;
  // The secrets are still where they were, unchanged.
  for (const auto& [rel, secret] : home.secrets()) {
    EXPECT_NE(ReadFile(secret.first).find(secret.second), std::string::npos) << rel;
  }
}

std::string Name(const ::testing::TestParamInfo<Param>& info) {
  return std::string(ToString(std::get<0>(info.param))) + "_" + std::get<1>(info.param) +
         (std::get<2>(info.param) ? "_HomeIsTheWorkspace" : "_FreshProject");
}

INSTANTIATE_TEST_SUITE_P(Tasks, T3SandboxAcceptance,
                         ::testing::Combine(::testing::ValuesIn(kAllCallers),
                                            ::testing::Values("scripts", "builds", "python", "node",
                                                              "git", "system", "files"),
                                            ::testing::Bool()),
                         Name);

}  // namespace
}  // namespace t3_sandbox_acceptance_test
}  // namespace anvil::testing
