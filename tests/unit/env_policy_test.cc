#include "policy/env_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace anvil {
namespace {

bool Has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

TEST(EnvPolicy, DropsLoaderVariablesAndSecretsKeepsTheRest) {
  std::vector<std::string> caller = {"PATH=/usr/bin", "LD_PRELOAD=/tmp/evil.so",
                                     "LD_LIBRARY_PATH=/x", "GITHUB_TOKEN=t", "AWS_SECRET_ACCESS_KEY=k",
                                     "my_password=p", "DB_CREDENTIALS=c", "GCONV_PATH=/x",
                                     "HOME=/home/u", "LANG=C.UTF-8"};
  auto out = FilterEnvironment(caller, EnvPolicy{});
  EXPECT_TRUE(Has(out, "PATH=/usr/bin"));
  EXPECT_TRUE(Has(out, "HOME=/home/u"));
  EXPECT_TRUE(Has(out, "LANG=C.UTF-8"));
  for (const auto& e : out) {
    EXPECT_EQ(e.find("LD_"), std::string::npos) << e;
    EXPECT_EQ(e.find("TOKEN"), std::string::npos) << e;
    EXPECT_EQ(e.find("SECRET"), std::string::npos) << e;
    EXPECT_EQ(e.find("password"), std::string::npos) << e;
    EXPECT_EQ(e.find("CREDENTIALS"), std::string::npos) << e;
    EXPECT_EQ(e.find("GCONV"), std::string::npos) << e;
  }
}

TEST(EnvPolicy, KeepOverridesFilterAndClearKeepsOnlyNamed) {
  std::vector<std::string> caller = {"PATH=/usr/bin", "GITHUB_TOKEN=t", "HOME=/h"};
  EnvPolicy keep;
  keep.keep = {"GITHUB_TOKEN"};
  EXPECT_TRUE(Has(FilterEnvironment(caller, keep), "GITHUB_TOKEN=t"));
  EnvPolicy clear;
  clear.clear = true;
  clear.keep = {"PATH"};
  auto out = FilterEnvironment(caller, clear);
  EXPECT_EQ(out, std::vector<std::string>{"PATH=/usr/bin"});
}

TEST(EnvPolicy, SetReplacesAndMalformedEntriesAreDropped) {
  std::vector<std::string> caller = {"A=1", "noequals", "=x"};
  EnvPolicy p;
  p.set = {"A=2", "B=3"};
  auto out = FilterEnvironment(caller, p);
  EXPECT_EQ(out, (std::vector<std::string>{"A=2", "B=3"}));
}

TEST(EnvPolicy, MinimalEnvironmentHasNoCallerInfluence) {
  auto env = MinimalExecEnvironment();
  for (const auto& e : env) {
    EXPECT_FALSE(IsDangerousEnvName(e.substr(0, e.find('='))));
    EXPECT_EQ(e.find("RIPGREP"), std::string::npos);
  }
}

}  // namespace
}  // namespace anvil
