// T3, the gateway's walk behind a sys.exec tool's view (fs/exec_read_plan.h) on real
// directories: the cache of directory facts never hides a change that matters (a hard link or a
// FIFO planted, a directory swapped for a symlink), the walk's bounds fail closed with "limit",
// and the path operands resolve beneath the workspace as sys.fs.read resolves a path.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fs/exec_read_plan.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace t3_fs_exec_read_plan_test {
namespace {

using K = ReadOpKind;
using Ops = std::vector<ReadOp>;

class TempDir {
 public:
  TempDir() {
    std::string templ = "/tmp/anvil-t3plan-XXXXXX";
    if (::mkdtemp(templ.data()) == nullptr) std::abort();
    path_ = templ;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

void Put(const std::string& path, const std::string& data = "x\n") {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(::write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ::close(fd);
}

class ExecReadPlanWalk : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(::mkdir((ws_ / "src").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((ws_ / "src/sub").c_str(), 0755), 0);
    Put(ws_ / "src/a.c");
    Put(ws_ / "src/sub/b.c");
    Put(ws_ / "README.md");
    Put(ws_ / ".env");
    auto root = WorkspaceRoot::Open(ws_.path());
    ASSERT_TRUE(root) << root.error().ToString();
    root_ = std::make_unique<WorkspaceRoot>(std::move(*root));
  }
  // A planner that trusts any directory's ctime at once (the settle margin is for real clocks).
  ExecReadPlanner Planner(ExecWalkLimits limits = {}) {
    limits.settle = std::chrono::seconds(-1);
    return ExecReadPlanner(*root_, limits);
  }
  Ops Plan(ExecReadPlanner& p, const std::vector<std::string>& grant) {
    auto plan = p.Plan(grant);
    EXPECT_TRUE(plan) << plan.error().ToString();
    return plan ? *plan : Ops{};
  }
  TempDir ws_;
  TempDir outside_;
  std::unique_ptr<WorkspaceRoot> root_;
};

TEST_F(ExecReadPlanWalk, AnUnchangedWorkspaceIsNotReadAgain) {
  auto p = Planner();
  EXPECT_EQ(Plan(p, {"**"}), (Ops{{K::kBindDir, ".", ""}}));
  const auto first = p.directories_read();
  EXPECT_EQ(first, 3u);  // ., src, src/sub
  EXPECT_EQ(Plan(p, {"**"}), (Ops{{K::kBindDir, ".", ""}}));
  EXPECT_EQ(p.directories_read(), first);
  // Another grant on the same session uses the same facts.
  EXPECT_EQ(Plan(p, {"*.md"}), (Ops{{K::kDir, ".", ""}, {K::kBindFile, "README.md", ""}}));
  EXPECT_EQ(p.directories_read(), first);
}

TEST_F(ExecReadPlanWalk, AHardLinkPlantedInACachedDirectoryIsMaskedAtTheNextCall) {
  auto p = Planner();
  EXPECT_EQ(Plan(p, {"**"}), (Ops{{K::kBindDir, ".", ""}}));
  Put(outside_ / "id_ed25519", "KEY\n");
  ASSERT_EQ(::link((outside_ / "id_ed25519").c_str(), (ws_ / "src/sub/key").c_str()), 0);
  EXPECT_EQ(Plan(p, {"**"}), (Ops{{K::kBindDir, ".", ""}, {K::kMaskFile, "src/sub/key", ""}}));
  EXPECT_EQ(Plan(p, {"src/sub/*"}), (Ops{{K::kDir, ".", ""},
                                         {K::kDir, "src", ""},
                                         {K::kDir, "src/sub", ""},
                                         {K::kBindFile, "src/sub/b.c", ""}}));
  // A file of the workspace that gains a name elsewhere later leaves its directory as it was: its
  // content is the workspace's own, and nothing from outside came in. It is masked as soon as
  // its directory changes (documented in fs/exec_read_plan.h).
  ASSERT_EQ(::link((ws_ / "src/a.c").c_str(), (outside_ / "a-copy").c_str()), 0);
  Put(ws_ / "src/new.c");
  EXPECT_EQ(Plan(p, {"**"}), (Ops{{K::kBindDir, ".", ""},
                                  {K::kMaskFile, "src/a.c", ""},
                                  {K::kMaskFile, "src/sub/key", ""}}));
}

TEST_F(ExecReadPlanWalk, AHardLinkDeeperThanPathMaxIsHiddenWithItsDeepestSpellableAncestor) {
  // A hard link to an outside secret beneath a chain of directories longer than PATH_MAX: no
  // path names it, but `rg -uu SECRET src/s` with src/s -> the deep directory reaches it through
  // the bind of src. The deepest directory a path can spell is masked.
  Put(outside_ / "secret", "SECRET\n");
  const std::string a(250, 'a');
  int dir = ::open((ws_ / "src").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  std::string spelled = "src";
  std::string deepest;
  for (int i = 0; i < 17; ++i) {
    ASSERT_EQ(::mkdirat(dir, a.c_str(), 0755), 0) << i;
    const int next = ::openat(dir, a.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(dir);
    ASSERT_GE(next, 0);
    dir = next;
    if (spelled.size() + 1 + a.size() <= kMaxWorkspacePathBytes) {
      spelled += "/" + a;
    } else if (deepest.empty()) {
      deepest = spelled;  // the last directory with a spellable path
    }
  }
  ASSERT_FALSE(deepest.empty());
  const int outside = ::open(outside_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_EQ(::linkat(outside, "secret", dir, "key", 0), 0);
  ::close(outside);
  ::close(dir);
  auto p = Planner();
  EXPECT_EQ(Plan(p, {"src/**"}),
            (Ops{{K::kDir, ".", ""}, {K::kBindDir, "src", ""}, {K::kMaskDir, deepest, ""}}));
}

TEST_F(ExecReadPlanWalk, ADirectoryBeyondPathMaxIsMaskedAndTheRestOfTheTreeStays) {
  const std::string a(250, 'a');
  int dir = ::open((ws_ / "src").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  for (int i = 0; i < 17; ++i) {
    ASSERT_EQ(::mkdirat(dir, a.c_str(), 0755), 0) << i;
    const int next = ::openat(dir, a.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ::close(dir);
    ASSERT_GE(next, 0);
    dir = next;
  }
  const int fd = ::openat(dir, "deep.c", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ::close(fd);
  ::close(dir);
  // A directory whose own path is past PATH_MAX cannot be walked by path to see what it holds:
  // its parent, the deepest spellable directory, is masked. Benign: the rest of src (a.c,
  // sub/b.c) stays in the bind, and other grants are unaffected.
  auto p = Planner();
  Ops plan = Plan(p, {"src/**"});
  ASSERT_EQ(plan.size(), 3u);
  EXPECT_EQ(plan[2].kind, K::kMaskDir);
  EXPECT_EQ(Plan(p, {"*.md"}), (Ops{{K::kDir, ".", ""}, {K::kBindFile, "README.md", ""}}));
}

TEST_F(ExecReadPlanWalk, ADirectorySwappedForASymlinkIsNotFollowed) {
  auto p = Planner();
  EXPECT_EQ(Plan(p, {"src/sub/**"}),
            (Ops{{K::kDir, ".", ""}, {K::kDir, "src", ""}, {K::kBindDir, "src/sub", ""}}));
  std::filesystem::remove_all(ws_ / "src/sub");
  ASSERT_EQ(::symlink("/etc", (ws_ / "src/sub").c_str()), 0);
  // The name is a symlink now: "src/sub/**" reaches nothing through it.
  EXPECT_EQ(Plan(p, {"src/sub/**"}), (Ops{{K::kDir, ".", ""}}));
  // A FIFO appearing in a granted tree is masked.
  ASSERT_EQ(::mkfifo((ws_ / "src/pipe").c_str(), 0644), 0);
  EXPECT_EQ(Plan(p, {"src/**"}),
            (Ops{{K::kDir, ".", ""}, {K::kBindDir, "src", ""}, {K::kMaskFile, "src/pipe", ""}}));
}

TEST_F(ExecReadPlanWalk, TheWalksBoundsFailClosedNamingTheBound) {
  ExecWalkLimits few;
  few.max_entries = 3;
  auto p = Planner(few);
  auto plan = p.Plan({"**"});
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, "limit");
  EXPECT_NE(plan.error().message.find("more than 3 entries"), std::string::npos);
  ExecWalkLimits no_time;
  no_time.max_time = std::chrono::milliseconds(-1);
  auto q = Planner(no_time);
  plan = q.Plan({"**"});
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("took longer than"), std::string::npos);
  ExecWalkLimits one_mount;
  one_mount.max_mounts = 1;
  auto r = Planner(one_mount);
  plan = r.Plan({"*.md", "src/*.c"});
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("more than 1 separate mounts"), std::string::npos);
}

TEST_F(ExecReadPlanWalk, OperandsResolveBeneathTheWorkspaceLikeSysFsRead) {
  Put(outside_ / "secret");
  ASSERT_EQ(::symlink("/etc", (ws_ / "src/etc").c_str()), 0);
  ASSERT_EQ(::symlink("/proc/self/root", (ws_ / "src/proc").c_str()), 0);
  ASSERT_EQ(::symlink((outside_ / "secret").c_str(), (ws_ / "src/out").c_str()), 0);
  ASSERT_EQ(::symlink("../../..", (ws_ / "src/up").c_str()), 0);
  ASSERT_EQ(::symlink("../.env", (ws_ / "src/env").c_str()), 0);
  ASSERT_EQ(::symlink("sub", (ws_ / "src/ok").c_str()), 0);
  ASSERT_EQ(::mkfifo((ws_ / "src/pipe").c_str(), 0644), 0);
  ASSERT_EQ(::link((ws_ / "src/a.c").c_str(), (ws_ / "src/a2.c").c_str()), 0);
  const std::vector<std::string> grant = {"src/**", "*.md"};
  struct Case {
    std::string operand;
    std::string verdict;  // "ok" or the error's prefix
  };
  const Case cases[] = {
      {".", "ok"},
      {"-", "ok"},
      {"src", "ok"},
      {"src/ok", "ok"},
      {"src/ok/b.c", "ok"},
      {"README.md", "ok"},
      {"src/missing.c", "ok"},  // the tool says it is missing
      {"src/etc", "denied: rg path operand: path escapes the workspace"},
      {"src/etc/passwd", "denied: rg path operand: path escapes the workspace"},
      {"src/proc", "denied: rg path operand: path escapes the workspace"},
      {"src/out", "denied: rg path operand: path escapes the workspace"},
      {"src/up", "denied: rg path operand: path escapes the workspace"},
      {"src/env", "denied: rg path operand leads outside the grant: src/env -> .env"},
      {".env", "denied: rg path operand outside the grant: .env"},
      {"missing.txt", "denied: rg path operand outside the grant"},
      {"src/pipe", "invalid: rg path operand is not a regular file or directory"},
      {"src/a.c", "denied: rg path operand has 2 hard links"},
  };
  for (const auto& c : cases) {
    auto s = CheckExecOperands(*root_, grant, "rg", {c.operand});
    std::string verdict = s ? "ok" : s.error().ToString();
    EXPECT_EQ(verdict.rfind(c.verdict, 0), 0u) << c.operand << ": " << verdict;
  }
}

}  // namespace
}  // namespace t3_fs_exec_read_plan_test
}  // namespace anvil
