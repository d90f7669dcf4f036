#include "policy/env_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace anvil {
namespace {

bool Has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

TEST(EnvPolicy, DropsLoaderVariablesAndSecretsKeepsTheRest) {
  std::vector<std::string> caller = {
      "PATH=/usr/bin",    "LD_PRELOAD=/tmp/evil.so", "LD_LIBRARY_PATH=/x",
      "GITHUB_TOKEN=t",   "AWS_SECRET_ACCESS_KEY=k", "my_password=p",
      "DB_CREDENTIALS=c", "GCONV_PATH=/x",           "HOME=/home/u",
      "LANG=C.UTF-8"};
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

TEST(EnvPolicy, CredentialNamesAndUrlPasswordsAreDroppedWhateverTheName) {
  struct Row {
    const char* entry;
    bool dropped;
  };
  const Row rows[] = {
      // Database, ssh and forge credentials by their tools' names.
      {"MYSQL_PWD=p", true},
      {"PGPASSWORD=p", true},
      {"PGPASS=/home/u/.pgpass", true},
      {"SSHPASS=p", true},
      {"GH_PAT=ghp_x", true},
      {"GITHUB_PAT=ghp_x", true},
      {"PAT=x", true},
      {"BORG_PASSPHRASE=p", true},
      {"NPM_CONFIG__AUTH=dTpw", true},
      {"npm_config__auth=dTpw", true},
      {"npm_config_//registry.npmjs.org/:_authToken=t", true},
      {"SENTRY_DSN=https://k@o.ingest.sentry.io/1", true},
      {"DATABASE_DSN=mysql:host=h", true},
      {"HTTP_AUTHORIZATION=Bearer t", true},
      {"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", true},
      {"GOOGLE_OAUTH_CLIENT=x", true},
      {"DB_AUTH=x", true},
      // A URL with a password, whatever the variable is called.
      {"DATABASE_URL=postgres://app:s3cret@db.internal:5432/app", true},
      {"PIP_INDEX_URL=https://user:pw@pypi.example/simple", true},
      {"CACHE=redis://:pw@cache:6379/0", true},
      {"MIRRORS=https://a.example/x https://u:p@b.example/y", true},
      {"WEIRD=\"git+https://u:tok@git.example/r.git\"", true},
      // Not secrets: the working directory, git identity, X authority file, plain URLs.
      {"PWD=/ws", false},
      {"OLDPWD=/ws/sub", false},
      {"GIT_AUTHOR_NAME=A U Thor", false},
      {"GIT_AUTHOR_EMAIL=a@example.com", false},
      {"XAUTHORITY=/run/user/1000/xauth", false},
      {"DATABASE_URL=postgres://localhost/app", false},
      {"REPO=https://git@github.com/o/r.git", false},
      {"SERVICE=http://localhost:8080/users/a@b", false},
      {"FTP=ftp://anonymous:@ftp.example/pub", false},
      {"NOTE=see http://example.com: user:pass@ is the form", false},
      {"PATH=/usr/bin", false},
      {"CLASSPATH=/a.jar", false},
  };
  for (const Row& row : rows) {
    std::vector<std::string> out = FilterEnvironment({row.entry}, EnvPolicy{});
    EXPECT_EQ(out.empty(), row.dropped) << row.entry;
  }
  // --keep-env names a variable deliberately: it is kept even with a password in its URL.
  EnvPolicy keep;
  keep.keep = {"DATABASE_URL"};
  EXPECT_TRUE(Has(FilterEnvironment({"DATABASE_URL=postgres://a:b@h/d"}, keep),
                  "DATABASE_URL=postgres://a:b@h/d"));
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
