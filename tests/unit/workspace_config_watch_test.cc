// The workspace's Anvil.toml checked after a run (linux/workspace_config_watch.h) on a real file
// system: what was not there before, or is not the same entry unchanged, is moved aside under a
// name that replaces nothing; what was there and stayed is left, as is a name left empty.
#include "linux/workspace_config_watch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace anvil {
namespace {

class WorkspaceConfigWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/var/tmp/anvil-config-watch-XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    dir_ = t;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string At(const std::string& name) const { return dir_ + "/" + name; }
  void Write(const std::string& name, const std::string& text) const {
    std::ofstream(At(name), std::ios::trunc) << text;
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(At(name));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  bool Exists(const std::string& name) const {
    struct stat st {};
    return lstat(At(name).c_str(), &st) == 0;
  }
  WorkspaceConfigWatch Watch() const {
    auto w = WorkspaceConfigWatch::Start(dir_);
    EXPECT_TRUE(w) << w.error().ToString();
    return std::move(*w);
  }

  std::string dir_;
};

TEST_F(WorkspaceConfigWatchTest, NothingBeforeAndNothingAfterIsQuiet) {
  auto watch = Watch();
  EXPECT_FALSE(watch.CheckAfterRun());
}

TEST_F(WorkspaceConfigWatchTest, AFileMadeDuringTheRunIsMovedAsideIntact) {
  auto watch = Watch();
  Write("Anvil.toml", "[plugins]\nenable = [\"x\"]\n");
  auto q = watch.CheckAfterRun();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->path, At("Anvil.toml"));
  EXPECT_EQ(q->moved_to, At("Anvil.toml.anvil-quarantine"));
  EXPECT_NE(q->reason.find("did not exist"), std::string::npos);
  EXPECT_FALSE(Exists("Anvil.toml"));
  EXPECT_EQ(Read("Anvil.toml.anvil-quarantine"), "[plugins]\nenable = [\"x\"]\n");
}

TEST_F(WorkspaceConfigWatchTest, AnEarlierQuarantineIsNeverReplaced) {
  Write("Anvil.toml.anvil-quarantine", "first");
  Write("Anvil.toml.anvil-quarantine-2", "second");
  auto watch = Watch();
  Write("Anvil.toml", "third");
  auto q = watch.CheckAfterRun();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->moved_to, At("Anvil.toml.anvil-quarantine-3"));
  EXPECT_EQ(Read("Anvil.toml.anvil-quarantine"), "first");
  EXPECT_EQ(Read("Anvil.toml.anvil-quarantine-2"), "second");
  EXPECT_EQ(Read("Anvil.toml.anvil-quarantine-3"), "third");
}

TEST_F(WorkspaceConfigWatchTest, ASymlinkOrDirectoryMadeIsMovedAsItselfNotItsTarget) {
  Write("elsewhere.toml", "target");
  {
    auto watch = Watch();
    ASSERT_EQ(symlink("elsewhere.toml", At("Anvil.toml").c_str()), 0);
    auto q = watch.CheckAfterRun();
    ASSERT_TRUE(q);
    struct stat st {};
    ASSERT_EQ(lstat(At("Anvil.toml.anvil-quarantine").c_str(), &st), 0);
    EXPECT_TRUE(S_ISLNK(st.st_mode));
    EXPECT_EQ(Read("elsewhere.toml"), "target");
  }
  {
    auto watch = Watch();
    ASSERT_EQ(mkdir(At("Anvil.toml").c_str(), 0755), 0);
    auto q = watch.CheckAfterRun();
    ASSERT_TRUE(q);
    EXPECT_EQ(q->moved_to, At("Anvil.toml.anvil-quarantine-2"));
    EXPECT_FALSE(Exists("Anvil.toml"));
  }
}

TEST_F(WorkspaceConfigWatchTest, TheUsersFileStaysUnlessReplacedOrChanged) {
  Write("Anvil.toml", "mine");
  {
    auto watch = Watch();
    EXPECT_FALSE(watch.CheckAfterRun());
    EXPECT_EQ(Read("Anvil.toml"), "mine");
  }
  {
    // Renamed over (a new inode): moved aside.
    auto watch = Watch();
    Write("new.toml", "theirs");
    ASSERT_EQ(rename(At("new.toml").c_str(), At("Anvil.toml").c_str()), 0);
    auto q = watch.CheckAfterRun();
    ASSERT_TRUE(q);
    EXPECT_NE(q->reason.find("replaced"), std::string::npos) << q->reason;
    EXPECT_EQ(Read("Anvil.toml.anvil-quarantine"), "theirs");
  }
  {
    // Moved away and back (the same inode, changed since): moved aside too.
    Write("Anvil.toml", "mine");
    auto watch = Watch();
    usleep(20000);
    ASSERT_EQ(rename(At("Anvil.toml").c_str(), At("away.toml").c_str()), 0);
    ASSERT_EQ(rename(At("away.toml").c_str(), At("Anvil.toml").c_str()), 0);
    auto q = watch.CheckAfterRun();
    ASSERT_TRUE(q);
    EXPECT_NE(q->reason.find("changed"), std::string::npos) << q->reason;
    EXPECT_EQ(q->moved_to, At("Anvil.toml.anvil-quarantine-2"));
  }
  {
    // Removed (another run moved it aside): nothing to do.
    Write("Anvil.toml", "mine");
    auto watch = Watch();
    ASSERT_EQ(unlink(At("Anvil.toml").c_str()), 0);
    EXPECT_FALSE(watch.CheckAfterRun());
  }
}

TEST_F(WorkspaceConfigWatchTest, TheHeldDirectoryIsCheckedEvenWhenItsPathIsSwapped) {
  auto watch = Watch();
  Write("Anvil.toml", "made");
  const std::string moved = dir_ + ".moved";
  ASSERT_EQ(rename(dir_.c_str(), moved.c_str()), 0);
  ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  auto q = watch.CheckAfterRun();
  std::filesystem::remove_all(dir_);
  ASSERT_EQ(rename(moved.c_str(), dir_.c_str()), 0);
  ASSERT_TRUE(q);
  EXPECT_FALSE(q->moved_to.empty()) << q->failure;
  EXPECT_FALSE(Exists("Anvil.toml"));
  EXPECT_EQ(Read("Anvil.toml.anvil-quarantine"), "made");
}

TEST_F(WorkspaceConfigWatchTest, AMissingWorkspaceFailsTheStart) {
  EXPECT_FALSE(WorkspaceConfigWatch::Start(dir_ + "/nope"));
}

}  // namespace
}  // namespace anvil
