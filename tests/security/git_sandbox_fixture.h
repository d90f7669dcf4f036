// The fixture of the T1 attacks on git metadata through the command sandbox
// (t1_sandbox_git_*_test.cc): a workspace holding a committed repository and a home, both
// under /var/tmp and given to the caller, and the real git run on the host as the caller. A
// planted hook or fsmonitor writes the marker file outside the workspace (which the sandbox
// itself cannot write), so the marker's absence shows that git on the host ran nothing planted.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {

inline constexpr char kGit[] = "/usr/bin/git";

class GitSandboxTest : public CallerTest {
 protected:
  void SetUp() override {
    CallerTest::SetUp();
    if (IsSkipped()) return;
    if (access(kGit, X_OK) != 0) GTEST_SKIP() << "SKIPPED: no " << kGit << " to prove it with";
    // Writable by both callers, outside the workspace: only git run on the host can reach the
    // marker, never the sandboxed command.
    chmod(outside_.path().c_str(), 0777);
    ws_ = outside_ / "ws";
    home_ = outside_ / "home";
    marker_ = outside_ / "pwned";
    ASSERT_EQ(mkdir(ws_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(home_.c_str(), 0755), 0);
    caller_.Give(ws_);
    caller_.Give(home_);
    GitOk(ws_, {"init", "-q"});
    Write(ws_ + "/README", "hello\n");
    GitOk(ws_, {"add", "README"});
    GitOk(ws_, {"commit", "-q", "-m", "first"});
  }

  RunOptions Env() const {
    RunOptions o;
    o.env = {"PATH=/usr/local/bin:/usr/bin:/bin",
             "HOME=" + home_,
             "LANG=C.UTF-8",
             "GIT_AUTHOR_NAME=t",
             "GIT_AUTHOR_EMAIL=t@example.invalid",
             "GIT_COMMITTER_NAME=t",
             "GIT_COMMITTER_EMAIL=t@example.invalid"};
    return Opts(o);
  }
  // The real git, outside any sandbox, as the caller.
  RunResult Git(const std::string& dir, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {kGit, "-C", dir};
    argv.insert(argv.end(), args.begin(), args.end());
    return ::anvil::testing::Run(argv, Env());
  }
  void GitOk(const std::string& dir, const std::vector<std::string>& args) {
    auto r = Git(dir, args);
    ASSERT_EQ(r.status, 0) << "git " << args.front() << " in " << dir << ": " << r.err;
  }
  RunResult Sh(const std::string& script, std::vector<std::string> flags = {}) {
    flags.push_back("--json");
    return SandboxSh(ws_, script, flags, Env());
  }
  void Write(const std::string& path, const std::string& data, int mode = 0644) {
    WriteFile(path, data, mode);
    caller_.Give(path);
  }
  // Shell for the sandbox: a script at `path` that would leave the marker when run.
  std::string Plant(const std::string& path) const {
    return "printf '#!/bin/sh\\necho pwned >> " + marker_ + "\\n' > " + path + " && chmod +x " +
           path;
  }
  std::string HookText() const { return "#!/bin/sh\necho pwned >> " + marker_ + "\n"; }
  // Runs git on the host the way a user (or an editor polling it) does.
  void UseGitOnTheHost(const std::string& dir) {
    Git(dir, {"status"});
    Git(dir, {"diff", "HEAD"});
    Git(dir, {"commit", "-q", "--allow-empty", "-m", "by the user"});
  }
  nlohmann::json Quarantined(const RunResult& r) {
    auto report = JsonReport(r);
    if (report.is_discarded() || !report.contains("git")) return nlohmann::json::array();
    return report["git"]["quarantined"];
  }

  TempDir outside_{"anvil-git", "/var/tmp"};
  std::string ws_, home_, marker_;
};

}  // namespace anvil::testing
