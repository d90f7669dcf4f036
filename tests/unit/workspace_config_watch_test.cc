// The workspace's Anvil.toml checked after a run (linux/workspace_config_watch.h) on a real file
// system: what was not there before, or is not the same entry unchanged, is moved aside under a
// name that replaces nothing; what was there and stayed is left, as is a name left empty.
#include "linux/workspace_config_watch.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace anvil {
namespace workspace_config_watch_test {
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
    // Edited in place on the host (the same inode, changed since), no other run going: kept.
    Write("Anvil.toml", "mine");
    auto watch = Watch();
    EXPECT_FALSE(watch.strict());
    usleep(20000);
    Write("Anvil.toml", "mine, edited");
    EXPECT_FALSE(watch.CheckAfterRun());
    EXPECT_EQ(Read("Anvil.toml"), "mine, edited");
  }
  {
    // Moved away and back while a watcher (a run that found none) holds its lock: strict, moved
    // aside.
    Write("Anvil.toml", "mine");
    UniqueFd other(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(WorkspaceConfigWatch::LockByte(other.Get(), kConfigWatchAnyChangeOffset));
    auto watch = Watch();
    EXPECT_TRUE(watch.strict());
    other.Reset();
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

// The runs' locks on the workspace directory (protected_names_plan.h): OFD read locks, one byte
// each, seen by another open of the directory and not by the one holding them, gone with it,
// and not met by flock(2).
TEST_F(WorkspaceConfigWatchTest, TheLocksOnTheDirectory) {
  auto open_dir = [&] { return UniqueFd(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)); };
  UniqueFd me = open_dir(), other = open_dir();
  ASSERT_TRUE(me && other);
  EXPECT_FALSE(WorkspaceConfigWatch::OtherLockHeld(me.Get(), 5));
  ASSERT_EQ(flock(other.Get(), LOCK_EX), 0);
  EXPECT_FALSE(WorkspaceConfigWatch::OtherLockHeld(me.Get(), 5));
  ASSERT_TRUE(WorkspaceConfigWatch::LockByte(other.Get(), 5));
  EXPECT_FALSE(WorkspaceConfigWatch::OtherLockHeld(me.Get(), 5));  // the same entry's
  EXPECT_TRUE(WorkspaceConfigWatch::OtherLockHeld(me.Get(), 6));
  EXPECT_TRUE(WorkspaceConfigWatch::OtherLockHeld(me.Get(), 4));
  EXPECT_FALSE(WorkspaceConfigWatch::OtherLockHeld(other.Get(), 6));  // its own
  UniqueFd third = open_dir();
  ASSERT_TRUE(WorkspaceConfigWatch::LockByte(third.Get(), kConfigWatchAnyChangeOffset));
  EXPECT_TRUE(WorkspaceConfigWatch::OtherLockHeld(me.Get(), 5));
  third.Reset();
  EXPECT_FALSE(WorkspaceConfigWatch::OtherLockHeld(me.Get(), 5));
  other.Reset();
  EXPECT_FALSE(WorkspaceConfigWatch::OtherLockHeld(me.Get(), 6));
  // Cannot be told: as if held.
  EXPECT_TRUE(WorkspaceConfigWatch::OtherLockHeld(-1, 5));
}

// A run that finds the name missing holds the lock at byte 0 until its check: a run that finds
// an entry meanwhile is strict and holds it too; once both have checked, runs that find the same
// entry are not strict and do not make each other strict.
TEST_F(WorkspaceConfigWatchTest, WatchersAndStrictRunsMakeTheRunsThatFindAnEntryStrict) {
  auto watcher = Watch();
  EXPECT_FALSE(watcher.strict());
  Write("Anvil.toml", "made");
  auto during = Watch();
  EXPECT_TRUE(during.strict());
  ASSERT_TRUE(watcher.CheckAfterRun());  // moved aside; its lock released
  Write("Anvil.toml", "another");
  auto next = Watch();
  EXPECT_TRUE(next.strict());           // `during` is strict and going
  ASSERT_TRUE(during.CheckAfterRun());  // another inode than it found: moved aside
  EXPECT_FALSE(next.CheckAfterRun());   // gone: nothing to do
  Write("Anvil.toml", "mine");
  auto first = Watch();
  auto second = Watch();
  EXPECT_FALSE(first.strict());
  EXPECT_FALSE(second.strict());
  EXPECT_FALSE(first.CheckAfterRun());
  EXPECT_FALSE(second.CheckAfterRun());
  EXPECT_EQ(Read("Anvil.toml"), "mine");
}

// Below the top: the names the walk found new, moved aside in their own directories (one the
// command took the owner's write permission off too), a numbered name when the first is taken,
// one gone since the walk left out.
TEST_F(WorkspaceConfigWatchTest, ProtectedNamesMadeBelowAreMovedAsideInTheirDirectories) {
  ASSERT_EQ(mkdir(At("sub").c_str(), 0755), 0);
  ASSERT_EQ(mkdir(At("sub/.anvil").c_str(), 0755), 0);
  Write("sub/.anvil/x", "x");
  Write("sub/Anvil.toml", "[plugins]\n");
  Write("sub/Anvil.toml.anvil-quarantine", "earlier");
  ASSERT_EQ(mkdir(At("ro").c_str(), 0755), 0);
  Write("ro/anvil.lock", "lock");
  ASSERT_EQ(chmod(At("ro").c_str(), 0555), 0);
  using K = ProtectedNameKind;
  auto out = QuarantineProtectedNames({{At("sub/.anvil"), dir_, K::kAnvilState},
                                       {At("sub/Anvil.toml"), dir_, K::kWorkspaceConfig},
                                       {At("ro/anvil.lock"), dir_, K::kPluginLock},
                                       {At("gone/Anvil.toml"), dir_, K::kWorkspaceConfig},
                                       {At("sub/anvil.lock"), dir_, K::kPluginLock}});
  struct stat st {};
  ASSERT_EQ(stat(At("ro").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u) << "the mode it had is set again";
  ASSERT_EQ(chmod(At("ro").c_str(), 0755), 0);
  // The one whose directory is gone is named (it cannot be vouched for); the one gone since the
  // walk is not.
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].moved_to, At("sub/.anvil.anvil-quarantine"));
  EXPECT_EQ(out[0].kind, K::kAnvilState);
  EXPECT_EQ(Read("sub/.anvil.anvil-quarantine/x"), "x");
  EXPECT_EQ(out[1].moved_to, At("sub/Anvil.toml.anvil-quarantine-2"));
  EXPECT_EQ(Read("sub/Anvil.toml.anvil-quarantine"), "earlier");
  EXPECT_EQ(Read("sub/Anvil.toml.anvil-quarantine-2"), "[plugins]\n");
  EXPECT_EQ(out[2].moved_to, At("ro/anvil.lock.anvil-quarantine"));
  EXPECT_FALSE(Exists("ro/anvil.lock"));
  EXPECT_TRUE(out[3].moved_to.empty());
  EXPECT_EQ(out[3].path, At("gone/Anvil.toml"));
  EXPECT_FALSE(out[3].failure.empty());
  for (const auto& q : out) EXPECT_NE(q.reason.find("did not exist"), std::string::npos);
}

TEST_F(WorkspaceConfigWatchTest, AMissingWorkspaceFailsTheStart) {
  EXPECT_FALSE(WorkspaceConfigWatch::Start(dir_ + "/nope"));
}

}  // namespace
}  // namespace workspace_config_watch_test
}  // namespace anvil
