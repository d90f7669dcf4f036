// T1/T8 for Anvil's own trust state (linux/trust_shield.h): with a workspace of $HOME, a
// sandboxed command must not write the user's command rules (it could approve its own next
// command), trusted keys, config, or the grant store (it could grant a plugin more) — not by
// writing the files, not by moving a directory aside and making it anew. Next to it: everything
// else under the same home stays writable. Root and unprivileged callers.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace t1_sandbox_trust_dirs_test {
namespace {

class T1SandboxTrustDirs : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    home_ = base_ / "home";
    ASSERT_EQ(mkdir(home_.c_str(), 0755), 0);
    ASSERT_EQ(Shell("chown " + std::to_string(caller_.uid()) + " " + ShellQuote(home_)), 0);
  }
  RunResult Sh(const std::string& script, const std::vector<std::string>& env_extra = {}) {
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=" + home_};
    o.env.insert(o.env.end(), env_extra.begin(), env_extra.end());
    return SandboxSh(home_, script, {}, Opts(o));
  }
  TempDir base_{"anvil-trust", "/var/tmp"};
  std::string home_;
};

TEST_P(T1SandboxTrustDirs, AWorkspaceOfHomeCannotWriteAnvilsRulesGrantsOrConfig) {
  // Missing on the host at first: the run makes them, so the command cannot.
  auto r = Sh(
      "for p in .config/anvil/rules/approved.toml .config/anvil/config.toml "
      ".config/anvil/trusted-keys .local/state/anvil/grants.json; do "
      "  mkdir -p \"$(dirname \"$p\")\" 2>/dev/null; "
      "  if echo x > \"$p\" 2>/dev/null; then echo \"WROTE $p\"; fi; done; "
      "mv .config/anvil .config/anvil.old 2>/dev/null && echo MOVED-ANVIL; "
      "mv .config .config.old 2>/dev/null && echo MOVED-CONFIG; "
      "mv .local/state .local/state.old 2>/dev/null && echo MOVED-STATE; "
      "rmdir .config/anvil 2>/dev/null && echo REMOVED; "
      "echo ok > .config/other.conf && mkdir -p .config/myapp && echo ok > .config/myapp/settings "
      "&& echo ok > notes.txt && echo BENIGN");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MOVED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("REMOVED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
  // A command that fails on it gets the refusal summary, which names it for what it is, with
  // no flag that would not open it.
  auto failed = Sh("echo x > .config/anvil/config.toml");
  EXPECT_NE(failed.status, 0);
  EXPECT_NE(failed.err.find("is Anvil's own state on this machine"), std::string::npos)
      << failed.err;
  EXPECT_EQ(failed.err.find("--writable-git"), std::string::npos) << failed.err;
  struct stat st {};
  EXPECT_NE(lstat((home_ + "/.config/anvil/rules").c_str(), &st), 0) << "the command made it";
  EXPECT_EQ(lstat((home_ + "/.config/myapp/settings").c_str(), &st), 0);
  // The same when they exist already, and with XDG directories of their own.
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(home_ + "/xdg/cfg/anvil/rules") + " " +
                  ShellQuote(home_ + "/xdg/state/anvil") + " && chown -R " +
                  std::to_string(caller_.uid()) + " " + ShellQuote(home_ + "/xdg")),
            0);
  r =
      Sh("echo x > xdg/cfg/anvil/rules/approved.toml 2>/dev/null && echo WROTE; "
         "echo x > xdg/state/anvil/grants.json 2>/dev/null && echo WROTE; "
         "mv xdg/cfg xdg/cfg.old 2>/dev/null && echo MOVED; echo ok > xdg/other && echo BENIGN",
         {"XDG_CONFIG_HOME=" + home_ + "/xdg/cfg", "XDG_STATE_HOME=" + home_ + "/xdg/state"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("MOVED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
}

TEST_P(T1SandboxTrustDirs, ASymlinkedConfigDirectoryInTheWorkspaceRefusesTheRun) {
  ASSERT_EQ(
      Shell("mkdir -p " + ShellQuote(base_ / "realcfg") + " && ln -s " +
            ShellQuote(base_ / "realcfg") + " " + ShellQuote(home_ + "/.config") + " && chown -R " +
            std::to_string(caller_.uid()) + " " + ShellQuote(base_ / "realcfg")),
      0);
  auto r = Sh("echo RAN");
  EXPECT_EQ(r.status, 125) << r.out << r.err;
  EXPECT_EQ(r.out.find("RAN"), std::string::npos);
  EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
}

// A later run may read another place than this run's environment names: one started with
// other XDG values, or without HOME (then the user database's home). Every such place stays
// read-only, not only this run's.
TEST_P(T1SandboxTrustDirs, PlacesThatOtherRunsReadStayReadOnlyToo) {
  ASSERT_EQ(
      Shell("mkdir -p " + ShellQuote(home_ + "/xdgcfg") + " " + ShellQuote(home_ + "/xdgstate") +
            " && chown -R " + std::to_string(caller_.uid()) + " " + ShellQuote(home_)),
      0);
  auto r =
      Sh("mkdir -p .config/anvil/rules .local/state/anvil 2>/dev/null; "
         "echo x > .config/anvil/rules/zz.toml 2>/dev/null && echo WROTE-RULES; "
         "echo x > .local/state/anvil/grants.json 2>/dev/null && echo WROTE-GRANTS; "
         "echo ok > notes.txt && echo BENIGN",
         {"XDG_CONFIG_HOME=" + home_ + "/xdgcfg", "XDG_STATE_HOME=" + home_ + "/xdgstate"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
}

// Without HOME, Anvil finds its state in the user database's home: a workspace of that home
// cannot write the grant store or the trusted keys there. Unprivileged only: for root that home
// is /root, which a test must not make a workspace of.
TEST_P(T1SandboxTrustDirs, WithoutHomeTheUserDatabasesHomeIsKeptReadOnly) {
  if (!Unprivileged()) GTEST_SKIP() << "root's user-database home is /root: not a test workspace";
  const std::string home = "/home/anviltest";
  ASSERT_EQ(Shell("mkdir -p " + home + " && chown " + std::to_string(caller_.uid()) + " " + home +
                  " && getent passwd anviltest | cut -d: -f6 | grep -qx " + home),
            0)
      << "anviltest's home in the user database is not " << home;
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin"};  // no HOME
  auto r = SandboxSh(home,
                     "mkdir -p .config/anvil/trusted-keys .local/state/anvil 2>/dev/null; "
                     "echo x > .local/state/anvil/grants.json 2>/dev/null && echo WROTE; "
                     "echo x > .config/anvil/trusted-keys/evil.pub 2>/dev/null && echo WROTE; "
                     "echo ok > anvil-trust-test.txt && rm anvil-trust-test.txt && echo BENIGN",
                     {}, Opts(o));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.find("WROTE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("BENIGN"), std::string::npos) << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(Callers, T1SandboxTrustDirs, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t1_sandbox_trust_dirs_test
}  // namespace anvil::testing
