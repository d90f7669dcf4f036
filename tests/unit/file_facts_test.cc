// fs/file_facts: the facts and steps policy/'s decisions are made from, on a real directory.
#include "fs/file_facts.h"

#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

namespace anvil {
namespace file_facts_test {
namespace {

class FileFactsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-file-facts-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    std::ofstream(root_ + "/file") << "x";
    std::filesystem::create_directory(root_ + "/dir");
    std::filesystem::create_symlink("file", root_ + "/link");
    std::filesystem::create_directory_symlink("dir", root_ + "/dirlink");
    ASSERT_EQ(::mkfifo((root_ + "/fifo").c_str(), 0600), 0);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  UniqueFd Root() {
    auto fd = OpenDirectory(root_, DirOpen::kRead);
    EXPECT_TRUE(fd);
    return fd ? std::move(*fd) : UniqueFd();
  }

  std::string root_;
};

TEST_F(FileFactsTest, KindOfANameFollowsNoLink) {
  UniqueFd root = Root();
  const std::vector<std::pair<std::string, FileKind>> table = {
      {"file", FileKind::kRegular}, {"dir", FileKind::kDirectory},
      {"link", FileKind::kSymlink}, {"dirlink", FileKind::kSymlink},
      {"fifo", FileKind::kOther},   {"missing", FileKind::kMissing},
  };
  for (const auto& [name, kind] : table) {
    auto found = KindAtNoFollow(root.Get(), name);
    ASSERT_TRUE(found) << name;
    EXPECT_EQ(*found, kind) << name;
  }
}

// Where a PATH entry leads, for the judgement of a bare program name: a link into a directory
// not made yet is unknown (it may be made later, somewhere writable), never the link's own path.
TEST_F(FileFactsTest, CanonicalAsFarAsExistsFollowsLinksAndGivesUpOnDanglingOnes) {
  char real[PATH_MAX];
  ASSERT_NE(::realpath(root_.c_str(), real), nullptr);
  const std::string r = real;
  EXPECT_EQ(CanonicalAsFarAsExists(root_ + "/dirlink/bin"), r + "/dir/bin");
  EXPECT_EQ(CanonicalAsFarAsExists(root_ + "/dir/missing/bin"), r + "/dir/missing/bin");
  std::filesystem::create_directory_symlink(root_ + "/later", root_ + "/dangling");
  EXPECT_EQ(CanonicalAsFarAsExists(root_ + "/dangling"), "");
  EXPECT_EQ(CanonicalAsFarAsExists(root_ + "/dangling/bin"), "");
  std::filesystem::create_directory(root_ + "/later");
  EXPECT_EQ(CanonicalAsFarAsExists(root_ + "/dangling/bin"), r + "/later/bin");
}

TEST_F(FileFactsTest, DirectoryOpenFailuresCarryTheirErrno) {
  auto missing = OpenDirectoryOr(root_ + "/missing", DirOpen::kPath, "workspace 'w'");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, "not_found");
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  EXPECT_EQ(missing.error().message.rfind("workspace 'w': ", 0), 0u);

  auto file = OpenDirectoryOr(root_ + "/file", DirOpen::kRead, "workspace 'w'");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().code, "io");
  EXPECT_EQ(file.error().sys_errno, ENOTDIR);

  auto link = OpenDirectory(root_ + "/dirlink", DirOpen::kReadNoFollow);
  ASSERT_FALSE(link);
  EXPECT_TRUE(link.error().sys_errno == ELOOP || link.error().sys_errno == ENOTDIR);
  EXPECT_TRUE(OpenDirectory(root_ + "/dirlink", DirOpen::kRead));  // followed when asked to
  EXPECT_FALSE(OpenDirectoryAtNoFollow(Root().Get(), "dirlink"));
  EXPECT_TRUE(OpenDirectoryAtNoFollow(Root().Get(), "dir"));
}

TEST_F(FileFactsTest, BeneathOpenRefusesLinksAndEscapes) {
  UniqueFd root = Root();
  EXPECT_TRUE(OpenBeneathNoSymlinks(root.Get(), "file", /*path_only=*/false));
  EXPECT_TRUE(OpenBeneathNoSymlinks(root.Get(), "dir", /*path_only=*/true));
  auto link = OpenBeneathNoSymlinks(root.Get(), "link", /*path_only=*/true);
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().sys_errno, ELOOP);
  auto through = OpenBeneathNoSymlinks(root.Get(), "dirlink/x", /*path_only=*/false);
  ASSERT_FALSE(through);
  EXPECT_EQ(through.error().sys_errno, ELOOP);
  auto up = OpenBeneathNoSymlinks(root.Get(), "../file", /*path_only=*/true);
  ASSERT_FALSE(up);
  EXPECT_EQ(up.error().sys_errno, EXDEV);
  auto missing = OpenBeneathNoSymlinks(root.Get(), "missing", /*path_only=*/false);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
  // A FIFO is opened without waiting for a writer; what it is stays the caller's question.
  auto fifo = OpenBeneathNoSymlinks(root.Get(), "fifo", /*path_only=*/false);
  ASSERT_TRUE(fifo);
  auto regular = IsRegularFd(fifo->Get());
  ASSERT_TRUE(regular);
  EXPECT_FALSE(*regular);
}

TEST_F(FileFactsTest, OwnerFactsOfTheOpenedObject) {
  auto dir = OpenDirectory(root_ + "/dir", DirOpen::kReadNoFollow);
  ASSERT_TRUE(dir);
  auto owner = OwnerOfFd(dir->Get(), root_ + "/dir");
  ASSERT_TRUE(owner);
  EXPECT_TRUE(owner->Mine());
  EXPECT_EQ(owner->euid, ::geteuid());
  ASSERT_EQ(::chmod((root_ + "/dir").c_str(), 0775), 0);
  owner = OwnerOfFd(dir->Get(), root_ + "/dir");
  ASSERT_TRUE(owner);
  EXPECT_TRUE(owner->others_may_write);
  ASSERT_EQ(::chmod((root_ + "/dir").c_str(), 0755), 0);
  EXPECT_FALSE(OwnerOfFd(dir->Get(), root_ + "/dir")->others_may_write);

  OwnerFacts file_owner;
  auto text = ReadRegularFileNoFollowOwned(Root().Get(), "file", 16, file_owner);
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, "x");
  EXPECT_TRUE(file_owner.Mine());
}

TEST_F(FileFactsTest, PrivateDirsAreMade0700AndExistingOnesKept) {
  ASSERT_EQ(::chmod((root_ + "/dir").c_str(), 0755), 0);
  ASSERT_TRUE(MakePrivateDirs(root_ + "/dir/a/b", "create directory "));
  struct stat st {};
  ASSERT_EQ(::stat((root_ + "/dir").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  for (const char* made : {"/dir/a", "/dir/a/b"}) {
    ASSERT_EQ(::stat((root_ + made).c_str(), &st), 0) << made;
    EXPECT_TRUE(S_ISDIR(st.st_mode));
    EXPECT_EQ(st.st_mode & 07777, 0700u) << made;
  }
  auto under_file = MakePrivateDirs(root_ + "/file/a", "create ");
  ASSERT_FALSE(under_file);
  EXPECT_EQ(under_file.error().code, "io");
  EXPECT_EQ(under_file.error().message.rfind("create " + root_ + "/file/a: ", 0), 0u);
  EXPECT_TRUE(MakePrivateDirs("", "create "));
}

TEST_F(FileFactsTest, NamesListedWithoutDotsUntilTheCallerStops) {
  UniqueFd root = Root();
  std::vector<std::string> names;
  ASSERT_TRUE(ForEachName(root.Get(), "list", [&](const std::string& name) -> Status {
    names.push_back(name);
    return Ok();
  }));
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"dir", "dirlink", "fifo", "file", "link"}));
  std::size_t seen = 0;
  auto stopped = ForEachName(root.Get(), "list", [&](const std::string&) -> Status {
    return ++seen == 2 ? Fail("limit", "two") : Ok();
  });
  ASSERT_FALSE(stopped);
  EXPECT_EQ(stopped.error().code, "limit");
  EXPECT_EQ(seen, 2u);
}

TEST_F(FileFactsTest, RemoveAndRealPathCarryErrno) {
  UniqueFd root = Root();
  auto gone = RemoveFileAt(root.Get(), "missing");
  ASSERT_FALSE(gone);
  EXPECT_EQ(gone.error().sys_errno, ENOENT);
  EXPECT_TRUE(RemoveFileAt(root.Get(), "link"));
  auto real = RealPath(root_ + "/dirlink/../file");
  ASSERT_TRUE(real);
  EXPECT_EQ(*real, std::filesystem::canonical(root_ + "/file").string());
  auto missing = RealPath(root_ + "/missing");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().sys_errno, ENOENT);
}

TEST_F(FileFactsTest, DirLockIsExclusiveUntilReleased) {
  UniqueFd held = Root();
  UniqueFd other = Root();
  {
    auto lock = DirLock::Acquire(held.Get(), "lock");
    ASSERT_TRUE(lock);
    EXPECT_NE(::flock(other.Get(), LOCK_EX | LOCK_NB), 0);
    EXPECT_EQ(errno, EWOULDBLOCK);
  }
  EXPECT_EQ(::flock(other.Get(), LOCK_EX | LOCK_NB), 0);
}

// The attack (red team s5 rtnew5): the grant store's, the user rules' and the unchecked
// records' directory lock is an flock, which any process that can open the directory takes — a
// sandboxed command whose view holds the state directory read-only (a workspace of $HOME). Held,
// it made `anvil run --approve`, an approval and a sandbox run's record wait for as long as the
// command liked. Now the wait is bounded and answered "busy", naming the lock; a lock released
// within the wait is taken as before.
TEST_F(FileFactsTest, ADirLockHeldByAnotherIsWaitedForABoundedTime) {
  UniqueFd mine = Root();
  UniqueFd reader = Root();
  ASSERT_EQ(::flock(reader.Get(), LOCK_EX | LOCK_NB), 0);
  auto attempt = [&](std::chrono::milliseconds wait) {
    return std::async(std::launch::async, [&mine, wait] {
      auto lock = DirLock::Acquire(mine.Get(), "lock the grant store directory", wait);
      return lock ? std::string("locked") : lock.error().ToString();
    });
  };
  auto refused = attempt(std::chrono::milliseconds(300));
  const bool answered = refused.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!answered) (void)::flock(reader.Get(), LOCK_UN);  // let it finish: the test fails here
  ASSERT_TRUE(answered) << "the lock was waited for as long as the reader held it";
  const std::string text = refused.get();
  EXPECT_EQ(text.rfind("busy: lock the grant store directory", 0), 0u) << text;
  // Released within the wait: taken.
  auto taken = attempt(std::chrono::seconds(10));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(::flock(reader.Get(), LOCK_UN), 0);
  EXPECT_EQ(taken.get(), "locked");
}

TEST(FileFacts, ExecutableIsARegularFileWithAnExecuteBit) {
  EXPECT_TRUE(IsExecutableFile("/bin/sh"));
  EXPECT_FALSE(IsExecutableFile("/etc"));
  EXPECT_FALSE(IsExecutableFile("/nonexistent/anvil"));
}

TEST(FileFacts, XdgDirectoriesOnlyWhenAbsolute) {
  const char* config = std::getenv("XDG_CONFIG_HOME");
  const char* state = std::getenv("XDG_STATE_HOME");
  const std::string saved_config = config ? config : "", saved_state = state ? state : "";
  ::setenv("XDG_CONFIG_HOME", "/c", 1);
  ::setenv("XDG_STATE_HOME", "relative/state", 1);
  EXPECT_EQ(XdgConfigHome(), "/c");
  EXPECT_EQ(XdgStateHome(), "");
  ::unsetenv("XDG_CONFIG_HOME");
  EXPECT_EQ(XdgConfigHome(), "");
  config ? ::setenv("XDG_CONFIG_HOME", saved_config.c_str(), 1) : ::unsetenv("XDG_CONFIG_HOME");
  state ? ::setenv("XDG_STATE_HOME", saved_state.c_str(), 1) : ::unsetenv("XDG_STATE_HOME");
}

TEST(FileFacts, DeviceNumberTextIsMajorColonMinor) {
  EXPECT_EQ(DeviceNumberText(makedev(8, 1)), "8:1");
  EXPECT_EQ(DeviceNumberText(makedev(259, 65537)), "259:65537");
  EXPECT_EQ(DeviceNumberText(0), "0:0");
}

}  // namespace
}  // namespace file_facts_test
}  // namespace anvil
