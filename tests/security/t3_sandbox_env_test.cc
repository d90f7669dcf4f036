// T3 for the command sandbox, environment: variables through which the dynamic loader or libc
// load code, and names that look like secrets, do not travel from the caller to the command;
// --keep-env, --setenv and --clear-env do exactly what they say.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t3_sandbox_env_test {
namespace {

// Announces itself only inside a sandbox (ANVIL_SANDBOX is set for the command, never for
// anvil itself), so a load by the trusted `anvil` process does not count.
constexpr char kPreload[] = R"c(
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void hijack(void) {
  if (getenv("ANVIL_SANDBOX")) write(1, "PRELOAD-RAN\n", 12);
}
)c";

class T3SandboxEnv : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    caller_.Give(ws_.path());
  }
  // `env` run in the sandbox with `caller_env` as the caller's whole environment.
  RunResult Env(const std::vector<std::string>& caller_env,
                const std::vector<std::string>& flags = {}) {
    RunOptions options;
    options.env = caller_env;
    return Sandbox(ws_.path(), flags, {"/usr/bin/env"}, Opts(options));
  }
  static std::set<std::string> Entries(const RunResult& r) {
    auto lines = Lines(r.out);
    return {lines.begin(), lines.end()};
  }
  static bool HasName(const RunResult& r, const std::string& name) {
    auto lines = Lines(r.out);
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.rfind(name + "=", 0) == 0; });
  }

  TempDir ws_{"anvil-ws-env"};
};

TEST_P(T3SandboxEnv, LoaderVariablesFromCallerDoNotReachCommand) {
  const std::string so = ws_ / "libhijack.so";
  ASSERT_TRUE(CompileC(kPreload, so, "-shared -fPIC")) << "gcc could not build the preload";
  caller_.Give(ws_.path());
  const std::vector<std::string> caller_env = {"PATH=/usr/bin:/bin",
                                               "HOME=/root",
                                               "HARMLESS=kept",
                                               "LD_PRELOAD=" + so,
                                               "LD_LIBRARY_PATH=/var/tmp/evil",
                                               "LD_AUDIT=" + so,
                                               "GCONV_PATH=/var/tmp/evil",
                                               "GLIBC_TUNABLES=glibc.malloc.check=3",
                                               "LOCPATH=/var/tmp/evil"};

  // Control: the preload really loads when the variable is let through on purpose.
  auto control = Env(caller_env, {"--keep-env", "LD_PRELOAD"});
  ASSERT_EQ(control.status, 0) << control.err;
  ASSERT_NE(control.out.find("PRELOAD-RAN"), std::string::npos)
      << "control: an explicitly kept LD_PRELOAD should load the test library";

  auto attack = Env(caller_env);
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_EQ(attack.out.find("PRELOAD-RAN"), std::string::npos) << "LD_PRELOAD ran in the command";
  for (const char* name : {"LD_PRELOAD", "LD_AUDIT", "GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH"}) {
    EXPECT_FALSE(HasName(attack, name)) << name << " reached the command";
  }
  // A search path like PATH, which the command could set itself: kept (builds and toolkits
  // need it); it loads nothing the command could not load anyway.
  EXPECT_TRUE(Entries(attack).count("LD_LIBRARY_PATH=/var/tmp/evil")) << attack.out;
  EXPECT_TRUE(Entries(attack).count("HARMLESS=kept")) << attack.out;
  EXPECT_TRUE(Entries(attack).count("PATH=/usr/bin:/bin")) << attack.out;
}

TEST_P(T3SandboxEnv, SecretLookingVariablesDoNotReachCommand) {
  const std::string token = UniqueToken("secret-value");
  const std::vector<std::string> caller_env = {"PATH=/usr/bin:/bin",
                                               "HARMLESS=kept",
                                               "TMPDIR=/var/tmp",
                                               "GITHUB_TOKEN=" + token,
                                               "AWS_SECRET_ACCESS_KEY=" + token,
                                               "MY_PASSWORD=" + token,
                                               "db_passwd=" + token,
                                               "OpenAI_Api_Key=" + token,
                                               "GOOGLE_APPLICATION_CREDENTIALS=" + token};
  auto attack = Env(caller_env);
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_EQ(attack.out.find(token), std::string::npos) << attack.out;
  EXPECT_FALSE(HasName(attack, "TMPDIR")) << "TMPDIR points outside the sandbox's own /tmp";
  EXPECT_TRUE(Entries(attack).count("HARMLESS=kept")) << attack.out;
  EXPECT_TRUE(Entries(attack).count("ANVIL_SANDBOX=workspace-write")) << attack.out;

  auto read_only = Env(caller_env, {"--policy", "read-only"});
  EXPECT_EQ(read_only.out.find(token), std::string::npos);
  EXPECT_TRUE(Entries(read_only).count("ANVIL_SANDBOX=read-only")) << read_only.out;
}

TEST_P(T3SandboxEnv, DatabaseForgeAndRegistryCredentialsDoNotReachCommand) {
  // The variables tools read credentials from, and any URL carrying a password, whatever the
  // variable's name. Benign: the working directory, git's identity and plain URLs pass.
  const std::string token = UniqueToken("cred");
  const std::vector<std::string> caller_env = {
      "PATH=/usr/bin:/bin",
      "MYSQL_PWD=" + token,
      "PGPASSWORD=" + token,
      "PGPASS=/home/u/.pgpass-" + token,
      "SSHPASS=" + token,
      "GH_PAT=" + token,
      "NPM_CONFIG__AUTH=" + token,
      "npm_config__auth=" + token,
      "npm_config_//registry.example/:_authToken=" + token,
      "SENTRY_DSN=https://" + token + "@o1.ingest.example/2",
      "DATABASE_URL=postgres://app:" + token + "@db.internal/app",
      "UPSTREAM=https://ci:" + token + "@mirror.example/simple",
      "OLDPWD=/var/tmp",
      "GIT_AUTHOR_NAME=A U Thor",
      "PLAIN_URL=https://mirror.example/simple"};
  auto attack = Env(caller_env);
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_EQ(attack.out.find(token), std::string::npos) << attack.out;
  auto entries = Entries(attack);
  EXPECT_TRUE(entries.count("OLDPWD=/var/tmp")) << attack.out;
  EXPECT_TRUE(entries.count("GIT_AUTHOR_NAME=A U Thor")) << attack.out;
  EXPECT_TRUE(entries.count("PLAIN_URL=https://mirror.example/simple")) << attack.out;
}

TEST_P(T3SandboxEnv, CredentialsInConnectionStringsHeadersAndTokensDoNotReachCommand) {
  // Values that hold a credential under names the name filter did not know, and passwords the
  // URL scan missed (',' and ';' in userinfo).
  const std::string token = UniqueToken("hunter");
  const std::vector<std::string> caller_env = {
      "PATH=/usr/bin:/bin",
      "JDBC_DATABASE_URL=jdbc:postgresql://db:5432/app?user=app&password=" + token,
      "DATABASE_URL=postgres://app:pa;ss-" + token + "@db.example/app",
      "REDIS_URL=redis://:s3cr," + token + "@cache:6379/0",
      "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=a;AccountKey=" +
          token + ";",
      "ConnectionStrings__Default=Server=db;Database=app;Password=" + token + ";",
      "APP_DB=Server=db;Database=app;Password=" + token + ";",
      "GIT_CONFIG_COUNT=1",
      "GIT_CONFIG_KEY_0=http.extraheader",
      "GIT_CONFIG_VALUE_0=AUTHORIZATION: basic " + token,
      "CI_JOB_JWT=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0." + token,
      "ID=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0." + token,
      "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/T000/B000/" + token,
      "NOTIFY=https://hooks.slack.com/services/T000/B000/" + token,
      "EDITOR=vim",
      "CFLAGS=-O2 -g",
      "NODE_OPTIONS=--max-old-space-size=4096",
      "MIRROR=https://mirror.example/simple?platform=linux"};
  auto attack = Env(caller_env);
  EXPECT_EQ(attack.status, 0) << attack.err;
  EXPECT_EQ(attack.out.find(token), std::string::npos) << attack.out;
  EXPECT_FALSE(HasName(attack, "GIT_CONFIG_COUNT")) << "half a git config set: " << attack.out;
  auto entries = Entries(attack);
  for (const char* benign :
       {"EDITOR=vim", "CFLAGS=-O2 -g", "NODE_OPTIONS=--max-old-space-size=4096",
        "MIRROR=https://mirror.example/simple?platform=linux"}) {
    EXPECT_TRUE(entries.count(benign)) << benign << " missing: " << attack.out;
  }
  // Benign: git settings from the environment without a credential reach git whole.
  if (!Exists("/usr/bin/git")) return;
  RunOptions options;
  options.env = {
      "PATH=/usr/bin:/bin",       "GIT_CONFIG_COUNT=2",         "GIT_CONFIG_KEY_0=core.autocrlf",
      "GIT_CONFIG_VALUE_0=input", "GIT_CONFIG_KEY_1=user.name", "GIT_CONFIG_VALUE_1=A U Thor"};
  auto git = Sandbox(ws_.path(), {},
                     {"/usr/bin/git", "config", "--get-regexp", "^(core.autocrlf|user.name)$"},
                     Opts(options));
  EXPECT_EQ(git.status, 0) << git.err;
  EXPECT_EQ(git.out, "core.autocrlf input\nuser.name A U Thor\n") << git.err;
}

TEST_P(T3SandboxEnv, KeepEnvKeepsOnlyTheNamedVariable) {
  const std::string token = UniqueToken("kept-value");
  const std::string other = UniqueToken("dropped-value");
  auto result =
      Env({"PATH=/usr/bin:/bin", "GITHUB_TOKEN=" + token, "AWS_SECRET_ACCESS_KEY=" + other},
          {"--keep-env", "GITHUB_TOKEN"});
  EXPECT_EQ(result.status, 0) << result.err;
  EXPECT_TRUE(Entries(result).count("GITHUB_TOKEN=" + token)) << result.out;
  EXPECT_EQ(result.out.find(other), std::string::npos);
}

TEST_P(T3SandboxEnv, SetenvSetsAndOverrides) {
  auto result = Env({"PATH=/usr/bin:/bin", "HARMLESS=old"},
                    {"--setenv", "FOO=bar", "--setenv", "HARMLESS=new", "--setenv", "EQ=a=b"});
  EXPECT_EQ(result.status, 0) << result.err;
  auto entries = Entries(result);
  EXPECT_TRUE(entries.count("FOO=bar")) << result.out;
  EXPECT_TRUE(entries.count("HARMLESS=new")) << result.out;
  EXPECT_FALSE(entries.count("HARMLESS=old")) << result.out;
  EXPECT_TRUE(entries.count("EQ=a=b")) << result.out;

  // A malformed --setenv is a usage error: nothing runs.
  auto bad = SandboxSh(ws_.path(), "echo ran > ran.txt", {"--setenv", "NOEQUALS"}, Opts());
  EXPECT_NE(bad.status, 0);
  EXPECT_FALSE(Exists(ws_ / "ran.txt"));
}

TEST_P(T3SandboxEnv, ClearEnvStartsFromNothingButKeptAndSetNames) {
  const std::vector<std::string> caller_env = {"PATH=/usr/bin:/bin", "HOME=/root", "HARMLESS=kept",
                                               "OTHER=dropped"};
  auto cleared = Env(caller_env, {"--clear-env", "--keep-env", "HARMLESS", "--setenv", "X=1"});
  EXPECT_EQ(cleared.status, 0) << cleared.err;
  EXPECT_EQ(Entries(cleared),
            (std::set<std::string>{"HARMLESS=kept", "X=1", "ANVIL_SANDBOX=workspace-write"}))
      << cleared.out;

  auto bare = Env(caller_env, {"--clear-env"});
  EXPECT_EQ(bare.status, 0) << bare.err;
  EXPECT_EQ(Entries(bare), (std::set<std::string>{"ANVIL_SANDBOX=workspace-write"})) << bare.out;
}

// Without a network, update checks and telemetry are turned off (they could only be refused,
// and the refusal would be reported beside the command's own failure); the caller's own value
// wins, and with a network nothing is set.
TEST_P(T3SandboxEnv, OfflineUpdateChecksAndTelemetryAreOff) {
  const std::vector<std::string> caller_env = {"PATH=/usr/bin:/bin", "HOME=/root",
                                               "DO_NOT_TRACK=0"};
  auto none = Env(caller_env);
  EXPECT_EQ(none.status, 0) << none.err;
  const auto entries = Entries(none);
  for (const char* e : {"NO_UPDATE_NOTIFIER=1", "npm_config_update_notifier=false",
                        "PIP_DISABLE_PIP_VERSION_CHECK=1", "DO_NOT_TRACK=0"}) {
    EXPECT_TRUE(entries.count(e)) << e << "\n" << none.out;
  }
  EXPECT_FALSE(entries.count("DO_NOT_TRACK=1")) << none.out;
  // TMPDIR: the inherited one goes (it would name a directory the view does not show), the
  // one the caller names stays.
  const std::vector<std::string> with_tmp = {"PATH=/usr/bin:/bin", "TMPDIR=/var/tmp/x"};
  EXPECT_FALSE(HasName(Env(with_tmp), "TMPDIR"));
  EXPECT_TRUE(Entries(Env(with_tmp, {"--keep-env", "TMPDIR"})).count("TMPDIR=/var/tmp/x"));
  EXPECT_TRUE(
      Entries(Env(with_tmp, {"--setenv", "TMPDIR=" + ws_.path()})).count("TMPDIR=" + ws_.path()));
  auto full = Env(caller_env, {"--network", "full"});
  EXPECT_EQ(full.status, 0) << full.err;
  EXPECT_FALSE(HasName(full, "NO_UPDATE_NOTIFIER")) << full.out;
}

INSTANTIATE_TEST_SUITE_P(Callers, T3SandboxEnv, ::testing::ValuesIn(kAllCallers), CallerParamName);

}  // namespace
}  // namespace t3_sandbox_env_test
}  // namespace anvil::testing
