// T8 for `anvil sandbox`'s configuration (policy/user_config.h): the user's config.toml sets
// defaults, readable toolchains and profiles; a cloned repository's Anvil.toml may only narrow
// them. Every widening a repository could try is refused before anything runs (exit 125, the
// file and line named); narrowing works; the command line wins over both.
#include <sys/stat.h>

#include <string>
#include <vector>

#include "home_fixture.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace t8_sandbox_config_test {
namespace {

class T8SandboxConfig : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    home_.GiveTo(caller_);
  }
  void UserConfig(const std::string& text) {
    Put(home_.home() + "/.config/anvil/config.toml", text);
    home_.GiveTo(caller_);
  }
  void AnvilToml(const std::string& text) {
    Put(home_.workspace() + "/Anvil.toml", text);
    home_.GiveTo(caller_);
  }
  RunResult Sh(const std::string& script, const std::vector<std::string>& flags = {}) {
    RunOptions o;
    o.cwd = home_.workspace();
    o.env = home_.Env();
    return SandboxSh(home_.workspace(), script, flags, Opts(o));
  }
  std::string Marker() const { return home_.workspace() + "/ran"; }

  LivedInHome home_;
};

TEST_P(T8SandboxConfig, HostileAnvilTomlCannotGrantItselfAnythingAndNothingRuns) {
  // Each would widen what the user runs with; each must stop the run before the command.
  const std::vector<std::pair<std::string, std::string>> attempts = {
      {"[sandbox]\nwritable_roots = [\"" + home_.home() + "\"]\n", "cannot make anything writable"},
      {"[sandbox]\nwritable_git = true\n", "cannot make anything writable"},
      {"[sandbox]\nreadable_roots = [\"~/.ssh\"]\n", "cannot make anything readable"},
      {"[sandbox]\nread_access = \"full\"\n", "cannot make anything readable"},
      {"[sandbox]\nallow_hosts = [\"evil.example\"]\n", "cannot allow a host"},
      {"[sandbox]\nprofiles = [\"node\"]\n", "cannot turn a profile on"},
      {"[sandbox]\npolicy = \"danger-full-access\"\n", "can only narrow"},
      {"[sandbox]\nnetwork = \"full\"\n", "can only narrow"},
      {"[sandbox]\nnetwork = \"proxy\"\n", "would widen the network 'none'"},
      {"[sandbox]\nhome = \"none\"\n", "cannot choose the home"},
      {"[sandbox]\nread_only_subpaths = [\"../..\"]\n", "must be a path inside"},
  };
  for (const auto& [text, why] : attempts) {
    SCOPED_TRACE(text);
    AnvilToml(text);
    auto r = Sh("touch " + ShellQuote(Marker()) + "; cat ~/.ssh/id_ed25519");
    EXPECT_EQ(r.status, 125) << r.out << r.err;
    EXPECT_NE(r.err.find("Anvil.toml:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
    EXPECT_FALSE(Exists(Marker())) << "the command ran";
    EXPECT_EQ(r.out.find("CRED"), std::string::npos);
  }
  // The user's own policy is read-only: a repository asking for workspace-write is refused too.
  UserConfig("[sandbox]\npolicy = \"read-only\"\n");
  AnvilToml("[sandbox]\npolicy = \"workspace-write\"\n");
  auto wider = Sh("touch " + ShellQuote(Marker()));
  EXPECT_EQ(wider.status, 125);
  EXPECT_NE(wider.err.find("would widen the policy 'read-only'"), std::string::npos) << wider.err;
  EXPECT_FALSE(Exists(Marker()));
}

TEST_P(T8SandboxConfig, AnvilTomlNarrowsAndTheCommandLineStillWins) {
  Put(home_.workspace() + "/vendor/lib.c", "int x;\n");
  AnvilToml(
      "[sandbox]\npolicy = \"workspace-write\"\nread_only_subpaths = [\"vendor\", "
      "\"missing\"]\n");
  auto narrowed = Sh("echo y > vendor/lib.c 2>/dev/null; echo ok > built.txt && echo done");
  EXPECT_NE(narrowed.out.find("done"), std::string::npos) << narrowed.err;
  EXPECT_EQ(ReadFile(home_.workspace() + "/vendor/lib.c"), "int x;\n");
  EXPECT_TRUE(Exists(home_.workspace() + "/built.txt"));

  AnvilToml("[sandbox]\npolicy = \"read-only\"\n");
  auto ro = Sh("touch " + ShellQuote(Marker()) + " 2>/dev/null; echo done");
  EXPECT_NE(ro.out.find("done"), std::string::npos);
  EXPECT_FALSE(Exists(Marker())) << "Anvil.toml's read-only did not apply";
  auto explicit_flag = Sh("touch " + ShellQuote(Marker()), {"--policy", "workspace-write"});
  EXPECT_EQ(explicit_flag.status, 0) << explicit_flag.err;
  EXPECT_TRUE(Exists(Marker())) << "the command line must win over Anvil.toml";
}

TEST_P(T8SandboxConfig, UserConfigSetsDefaultsToolchainsAndProfiles) {
  Put(home_.home() + "/tools/bin/special", "#!/bin/sh\necho special-ran\n", 0755);
  UserConfig(
      "[sandbox]\nreadable_roots = [\"~/tools\"]\n\n"
      "[profiles.mine]\nwritable_roots = [\"~/.cache/mine\"]\n");
  auto r =
      Sh("~/tools/bin/special && echo x > ~/.cache/mine/f && echo wrote", {"--profile", "mine"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("special-ran"), std::string::npos) << r.out << r.err;
  EXPECT_TRUE(Exists(home_.home() + "/.cache/mine/f")) << "a profile's cache is the real one";

  // A built-in profile: its caches in the real home, the network through the proxy.
  auto py = Sh("echo \"$HTTPS_PROXY\"; mkdir -p ~/.cache/pip/x && echo y > ~/.cache/pip/x/y",
               {"--profile", "python"});
  EXPECT_EQ(py.status, 0) << py.err;
  EXPECT_NE(py.out.find("http://127.0.0.1:3128"), std::string::npos) << py.out;
  EXPECT_TRUE(Exists(home_.home() + "/.cache/pip/x/y"));

  UserConfig("[sandbox]\npolicy = \"read-only\"\n");
  auto ro = Sh("touch " + ShellQuote(Marker()) + " 2>/dev/null; echo done");
  EXPECT_FALSE(Exists(Marker())) << "config.toml's policy did not apply";
  UserConfig("[sandbox]\npolicy = \"yolo\"\n");
  auto bad = Sh("touch " + ShellQuote(Marker()));
  EXPECT_EQ(bad.status, 125);
  EXPECT_NE(bad.err.find("config.toml:2:1: sandbox.policy: unknown policy 'yolo'"),
            std::string::npos)
      << bad.err;
  EXPECT_NE(bad.err.find("(fix: "), std::string::npos) << bad.err;
  EXPECT_FALSE(Exists(Marker()));
}

TEST_P(T8SandboxConfig, UserReadableRootCannotReachACredential) {
  UserConfig("[sandbox]\nreadable_roots = [\"~/.ssh\"]\n");
  auto r = Sh("cat ~/.ssh/id_ed25519; touch " + ShellQuote(Marker()));
  EXPECT_EQ(r.status, 125) << r.out;
  EXPECT_NE(r.err.find("where credentials live"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("CRED"), std::string::npos);
  EXPECT_FALSE(Exists(Marker()));
}

// The same for a writable root: refused before anything is made, naming the credential
// location (it once failed the set-up with "mkdir .../.ssh/.git: Read-only file system").
TEST_P(T8SandboxConfig, UserWritableRootCannotReachACredential) {
  UserConfig("[sandbox]\nwritable_roots = [\"~/.ssh\"]\n");
  struct stat before {};
  ASSERT_EQ(::stat((home_.home() + "/.ssh").c_str(), &before), 0);
  auto r = Sh("cat ~/.ssh/id_ed25519; touch " + ShellQuote(Marker()));
  EXPECT_EQ(r.status, 125) << r.out;
  EXPECT_NE(r.err.find("writable root"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("where credentials live"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("CRED"), std::string::npos);
  EXPECT_FALSE(Exists(Marker()));
  EXPECT_FALSE(Exists(home_.home() + "/.ssh/.git"));
  // Nothing was made there and taken away again (a placeholder, the git walk's marks).
  struct stat after {};
  ASSERT_EQ(::stat((home_.home() + "/.ssh").c_str(), &after), 0);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

// A workspace inside a credential location under --policy read-only: what is there is never
// shown, so the command once saw an empty masked directory and ran on as if the project were
// empty. Refused by name as under workspace-write, before anything is made; the same project
// outside the credential location still runs read-only.
TEST_P(T8SandboxConfig, ReadOnlyWorkspaceInsideACredentialLocationIsRefused) {
  for (const std::string loc : {".ssh", ".aws"}) {
    SCOPED_TRACE(loc);
    const std::string ws = home_.home() + "/" + loc + "/proj";
    Put(ws + "/README", "a project\n");
    home_.GiveTo(caller_);
    struct stat before {};
    ASSERT_EQ(::stat(ws.c_str(), &before), 0);
    RunOptions o;
    o.cwd = ws;
    o.env = home_.Env();
    for (const std::string policy : {"read-only", "workspace-write"}) {
      SCOPED_TRACE(policy);
      auto r = SandboxSh(ws, "ls -A; cat ../* ../id_ed25519 2>/dev/null; echo ran",
                         {"--policy", policy}, Opts(o));
      EXPECT_EQ(r.status, 125) << r.out << r.err;
      EXPECT_NE(r.err.find("the workspace " + ws), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("where credentials live"), std::string::npos) << r.err;
      EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
      EXPECT_EQ(r.out.find("ran"), std::string::npos) << "the command ran: " << r.out;
      EXPECT_EQ(r.out.find("CRED"), std::string::npos) << r.out;
    }
    // Nothing made there (a placeholder, a mount point).
    struct stat after {};
    ASSERT_EQ(::stat(ws.c_str(), &after), 0);
    EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
  }
  // The benign neighbour: the same project outside a credential location runs read-only.
  auto ok = Sh("cat README && echo ran", {"--policy", "read-only"});
  EXPECT_EQ(ok.status, 0) << ok.err;
  EXPECT_NE(ok.out.find("a project"), std::string::npos) << ok.out;
}

INSTANTIATE_TEST_SUITE_P(Callers, T8SandboxConfig, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t8_sandbox_config_test
}  // namespace anvil::testing
