// Placeholders of protected names (linux/protected_placeholders.h) on a real file system: each
// one carries its mark from the moment its name exists, so a concurrent run that finds it knows
// it for a placeholder (and the last run out removes it), and nothing else is left behind.
#include "linux/protected_placeholders.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include "common/unique_fd.h"

namespace anvil {
namespace protected_placeholders_test {
namespace {

class ProtectedPlaceholdersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/var/tmp/anvil-placeholder-unit-XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    dir_ = t;
    fd_ = UniqueFd(open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(fd_);
    xattrs_ = setxattr(dir_.c_str(), "user.anvil.probe", "1", 1, 0) == 0;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::set<std::string> Names() const {
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      names.insert(e.path().filename());
    }
    return names;
  }
  bool Marked(const std::string& name) const {
    return getxattr((dir_ + "/" + name).c_str(), kPlaceholderXattr, nullptr, 0) >= 0;
  }

  std::string dir_;
  UniqueFd fd_;
  bool xattrs_ = false;
};

TEST_F(ProtectedPlaceholdersTest, ADirectoryIsMadeMarkedAndNothingElseIsLeft) {
  ASSERT_EQ(MakeMarkedPlaceholder(fd_.Get(), ".git", true, 0755), 0);
  struct stat st {};
  ASSERT_EQ(lstat((dir_ + "/.git").c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0755u);
  if (xattrs_) {
    EXPECT_TRUE(Marked(".git"));
  }
  EXPECT_EQ(Names(), (std::set<std::string>{".git"}));
}

TEST_F(ProtectedPlaceholdersTest, AFileIsMadeEmptyReadOnlyAndMarked) {
  ASSERT_EQ(MakeMarkedPlaceholder(fd_.Get(), "config", false, 0755), 0);
  struct stat st {};
  ASSERT_EQ(lstat((dir_ + "/config").c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  if (xattrs_) {
    EXPECT_TRUE(Marked("config"));
  }
  EXPECT_EQ(Names(), (std::set<std::string>{"config"}));
}

// What is there already is never replaced, whatever it is, and no private name is left.
TEST_F(ProtectedPlaceholdersTest, AnExistingNameIsNeverReplaced) {
  ASSERT_EQ(mkdir((dir_ + "/.git").c_str(), 0700), 0);
  ASSERT_EQ(symlink("elsewhere", (dir_ + "/Anvil.toml").c_str()), 0);
  EXPECT_EQ(MakeMarkedPlaceholder(fd_.Get(), ".git", true, 0755), EEXIST);
  EXPECT_EQ(MakeMarkedPlaceholder(fd_.Get(), "Anvil.toml", false, 0755), EEXIST);
  struct stat st {};
  ASSERT_EQ(lstat((dir_ + "/.git").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  if (xattrs_) {
    EXPECT_FALSE(Marked(".git"));
  }
  EXPECT_EQ(Names(), (std::set<std::string>{".git", "Anvil.toml"}));
}

// Another run that finds the placeholder (here: a watcher woken the moment the name appears)
// always sees it marked. When it did not, that run took the placeholder for the user's own, and
// when it was the last one out nobody removed it.
TEST_F(ProtectedPlaceholdersTest, EveryRunThatFindsThePlaceholderSeesItMarked) {
  if (!xattrs_) GTEST_SKIP() << dir_ << " has no user extended attributes";
  UniqueFd watch(inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  ASSERT_TRUE(watch);
  ASSERT_GE(inotify_add_watch(watch.Get(), dir_.c_str(), IN_CREATE | IN_MOVED_TO), 0);
  std::atomic<bool> stop{false};
  std::atomic<int> seen{0}, unmarked{0};
  std::thread watcher([&] {
    alignas(inotify_event) char buf[4096];
    while (!stop.load()) {
      const ssize_t n = read(watch.Get(), buf, sizeof buf);
      if (n <= 0) continue;
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
        if (ev->len == 0 || std::string(ev->name) != ".git") continue;
        if (getxattr((dir_ + "/.git").c_str(), kPlaceholderXattr, nullptr, 0) >= 0) {
          ++seen;
        } else if (errno != ENOENT) {
          ++unmarked;
        }
      }
    }
  });
  for (int i = 0; i < 300; ++i) {
    auto held = ProtectedPlaceholders::Create({{dir_, ".git", true, true}});
    ASSERT_TRUE(held) << held.error().message;
    EXPECT_EQ(held->Created().size(), 1u);
  }
  stop = true;
  watcher.join();
  EXPECT_EQ(unmarked.load(), 0) << "of " << seen.load() + unmarked.load() << " sightings";
  EXPECT_EQ(Names(), std::set<std::string>{}) << "every placeholder removed, no private name left";
}

}  // namespace
}  // namespace protected_placeholders_test
}  // namespace anvil
