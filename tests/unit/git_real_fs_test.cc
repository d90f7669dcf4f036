// The host's side of the git check (linux/git_real_fs.h): what it changes after a run — a
// repository moved aside, a directory's mode given back — it reaches through directories opened
// without following a symlink anywhere on the way. The paths it is given are canonical, so a
// link on the way is one a concurrent command made after they were resolved, to lead the
// rename (or the chmod) out of the writable roots: it fails instead of following it.
#include "linux/git_real_fs.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

namespace anvil {
namespace git_real_fs_test {
namespace {

class GitRealFsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-git-real-fs-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    base_ = pattern;
    std::filesystem::create_directories(base_ + "/ws/sub/.git");
    std::filesystem::create_directories(base_ + "/other/sub/.git");
    ASSERT_EQ(::symlink((base_ + "/other").c_str(), (base_ + "/ws/link").c_str()), 0);
  }
  void TearDown() override { std::filesystem::remove_all(base_); }
  bool Exists(const std::string& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0;
  }
  std::string base_;
};

TEST_F(GitRealFsTest, AQuarantineRenameNeverFollowsALinkOnTheWay) {
  GitFs fs = RealGitFs();
  auto through_link = fs.rename_noreplace(base_ + "/ws/link/sub/.git",
                                          base_ + "/ws/link/sub/.git.anvil-quarantine");
  EXPECT_FALSE(through_link);
  EXPECT_TRUE(Exists(base_ + "/other/sub/.git")) << "the rename followed the link";
  EXPECT_FALSE(Exists(base_ + "/other/sub/.git.anvil-quarantine"));
  // Benign neighbour: the same rename where the path is what it says.
  auto direct =
      fs.rename_noreplace(base_ + "/ws/sub/.git", base_ + "/ws/sub/.git.anvil-quarantine");
  EXPECT_TRUE(direct) << direct.error().ToString();
  EXPECT_TRUE(Exists(base_ + "/ws/sub/.git.anvil-quarantine"));
  // Never over an existing name.
  std::filesystem::create_directories(base_ + "/ws/sub/.git");
  EXPECT_FALSE(
      fs.rename_noreplace(base_ + "/ws/sub/.git", base_ + "/ws/sub/.git.anvil-quarantine"));
}

TEST_F(GitRealFsTest, OpeningUpADirectoryNeverFollowsALinkOnTheWay) {
  ASSERT_EQ(::chmod((base_ + "/other/sub").c_str(), 0500), 0);
  GitFs fs = RealGitFs();
  EXPECT_FALSE(fs.open_up(base_ + "/ws/link/sub"));
  struct stat st {};
  ASSERT_EQ(::stat((base_ + "/other/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0500u);
  EXPECT_TRUE(fs.open_up(base_ + "/ws/sub"));
  fs.close_up();
  ::chmod((base_ + "/other/sub").c_str(), 0755);
}

}  // namespace
}  // namespace git_real_fs_test
}  // namespace anvil
