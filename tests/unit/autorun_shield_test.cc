// The placeholders of what the host runs from the home (linux/autorun_shield.h) on a real file
// system: made for the run, held while it lasts, removed after, shared by concurrent runs,
// taken over when a killed run left them, and never taking what the user put there meanwhile.
#include "linux/autorun_shield.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "linux/protected_placeholders.h"

namespace anvil {
namespace autorun_shield_test {
namespace {

class AutorunShieldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/var/tmp/anvil-autorun-unit-XXXXXX";
    ASSERT_NE(mkdtemp(t), nullptr);
    home_ = t;
    std::ofstream(home_ + "/.bashrc") << "# mine\n";
    ASSERT_EQ(mkdir((home_ + "/.local").c_str(), 0755), 0);
  }
  void TearDown() override { std::filesystem::remove_all(home_); }

  std::vector<std::string> Places() const {
    return {home_ + "/.bashrc", home_ + "/.zshrc", home_ + "/.local/bin",
            home_ + "/.local/share/anvil"};
  }
  // Everything beneath the home, as relative paths.
  std::set<std::string> Listing() const {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::recursive_directory_iterator(home_)) {
      out.insert(e.path().string().substr(home_.size() + 1));
    }
    return out;
  }
  bool IsPlaceholder(const std::string& rel) const {
    std::error_code ec;
    return std::filesystem::read_symlink(home_ + "/" + rel, ec).string() ==
           std::string(kAutorunPlaceholder);
  }
  std::string home_;
};

TEST_F(AutorunShieldTest, MissingPlacesAreTakenForTheRunAndNothingIsLeftAfter) {
  const auto before = Listing();
  {
    auto shield = AutorunShield::Prepare(Places(), {home_}, {});
    ASSERT_TRUE(shield) << shield.error().ToString();
    EXPECT_TRUE(IsPlaceholder(".zshrc"));
    EXPECT_TRUE(IsPlaceholder(".local/bin"));
    EXPECT_TRUE(IsPlaceholder(".local/share/anvil"));
    EXPECT_TRUE(std::filesystem::is_directory(home_ + "/.local/share"));
    const auto& plan = shield->Plan();
    EXPECT_TRUE(plan.make.empty());
    EXPECT_EQ(plan.read_only, std::vector<std::string>{home_ + "/.bashrc"});
    EXPECT_EQ(plan.pinned_links, (std::vector<std::string>{home_ + "/.zshrc", home_ + "/.local/bin",
                                                           home_ + "/.local/share/anvil"}));
    EXPECT_EQ(plan.pinned_dirs,
              (std::vector<std::string>{home_ + "/.local", home_ + "/.local/share"}));
    const auto made = shield->Made();
    EXPECT_EQ(std::set<std::string>(made.begin(), made.end()),
              (std::set<std::string>{home_ + "/.zshrc", home_ + "/.local/bin",
                                     home_ + "/.local/share/anvil", home_ + "/.local/share"}));
  }
  EXPECT_EQ(Listing(), before);
}

TEST_F(AutorunShieldTest, ConcurrentRunsShareThemAndTheLastOneRemovesThem) {
  const auto before = Listing();
  std::optional<AutorunShield> first, second;
  {
    auto a = AutorunShield::Prepare(Places(), {home_}, {});
    ASSERT_TRUE(a) << a.error().ToString();
    first.emplace(std::move(*a));
    auto b = AutorunShield::Prepare(Places(), {home_}, {});
    ASSERT_TRUE(b) << b.error().ToString();
    second.emplace(std::move(*b));
  }
  EXPECT_TRUE(second->Made().empty()) << "the second run takes the first one's placeholders";
  first.reset();
  // The second run still binds them: removing one would detach it from its view.
  EXPECT_TRUE(IsPlaceholder(".zshrc"));
  EXPECT_TRUE(IsPlaceholder(".local/share/anvil"));
  second.reset();
  EXPECT_EQ(Listing(), before);
}

TEST_F(AutorunShieldTest, WhatAKilledRunLeftIsTakenOverAndRemoved) {
  const auto before = Listing();
  ASSERT_EQ(mkdir((home_ + "/.local/share").c_str(), 0700), 0);
  const bool marked =
      setxattr((home_ + "/.local/share").c_str(), kPlaceholderXattr, "1", 1, 0) == 0;
  ASSERT_EQ(symlink(std::string(kAutorunPlaceholder).c_str(), (home_ + "/.zshrc").c_str()), 0);
  ASSERT_EQ(
      symlink(std::string(kAutorunPlaceholder).c_str(), (home_ + "/.local/share/anvil").c_str()),
      0);
  {
    auto shield = AutorunShield::Prepare(Places(), {home_}, {});
    ASSERT_TRUE(shield) << shield.error().ToString();
    EXPECT_EQ(shield->Made(), std::vector<std::string>{home_ + "/.local/bin"});
  }
  auto want = before;
  if (!marked) want.insert(".local/share");  // no user xattrs here: it cannot be told apart
  EXPECT_EQ(Listing(), want);
  // Left where this run's roots hold nothing: removed all the same.
  ASSERT_EQ(symlink(std::string(kAutorunPlaceholder).c_str(), (home_ + "/.zshrc").c_str()), 0);
  {
    auto shield = AutorunShield::Prepare(Places(), {home_ + "/.local"}, {});
    ASSERT_TRUE(shield) << shield.error().ToString();
  }
  EXPECT_FALSE(IsPlaceholder(".zshrc"));
}

// A cache place (shadowed, policy/host_caches.h) that a killed run made and left, empty and
// marked: the next run takes it over and removes it. The user's own empty one, and a marked one
// the user has put something in since, stay.
TEST_F(AutorunShieldTest, ACachePlaceAKilledRunLeftIsTakenOverAndRemoved) {
  const auto before = Listing();
  const std::vector<std::string> caches = {home_ + "/.yarn", home_ + "/.gem", home_ + "/.ivy2",
                                           home_ + "/.m2/repository"};
  auto marked_dir = [&](const std::string& rel) {
    const std::string path = home_ + "/" + rel;
    EXPECT_EQ(mkdir(path.c_str(), 0700), 0) << rel;
    return setxattr(path.c_str(), kPlaceholderXattr, "1", 1, 0) == 0;
  };
  const bool marked = marked_dir(".yarn");
  marked_dir(".m2");
  marked_dir(".m2/repository");
  marked_dir(".gem");
  std::ofstream(home_ + "/.gem/specs") << "mine\n";       // the user's since
  ASSERT_EQ(mkdir((home_ + "/.ivy2").c_str(), 0755), 0);  // the user's own, unmarked
  {
    auto shield = AutorunShield::Prepare(Places(), {home_}, {}, caches);
    ASSERT_TRUE(shield) << shield.error().ToString();
    EXPECT_EQ(shield->Plan().shadowed.size(), 4u);
  }
  auto want = before;
  want.insert({".gem", ".gem/specs", ".ivy2"});
  if (!marked) want.insert({".yarn", ".m2", ".m2/repository"});
  EXPECT_EQ(Listing(), want);
  if (!marked) return;
  // Left where this run's roots hold nothing (a workspace below the home): removed all the same.
  marked_dir(".yarn");
  marked_dir(".m2");
  marked_dir(".m2/repository");
  ASSERT_EQ(mkdir((home_ + "/proj").c_str(), 0755), 0);
  {
    auto shield = AutorunShield::Prepare(Places(), {home_ + "/proj"}, {}, caches);
    ASSERT_TRUE(shield) << shield.error().ToString();
    EXPECT_TRUE(shield->Plan().shadowed.empty());
  }
  want.insert("proj");
  EXPECT_EQ(Listing(), want);
}

// Concurrent runs share a cache placeholder: the one that made it, ending first, leaves it to the
// other (whose view binds over it).
TEST_F(AutorunShieldTest, ACachePlaceholderStaysWhileAnotherRunShadowsIt) {
  const auto before = Listing();
  const std::vector<std::string> caches = {home_ + "/.yarn"};
  std::optional<AutorunShield> first, second;
  {
    auto a = AutorunShield::Prepare(Places(), {home_}, {}, caches);
    ASSERT_TRUE(a) << a.error().ToString();
    first.emplace(std::move(*a));
    auto b = AutorunShield::Prepare(Places(), {home_}, {}, caches);
    ASSERT_TRUE(b) << b.error().ToString();
    second.emplace(std::move(*b));
  }
  if (getxattr((home_ + "/.yarn").c_str(), kPlaceholderXattr, nullptr, 0) < 0) {
    GTEST_SKIP() << "SKIPPED: no user xattrs here";
  }
  first.reset();
  EXPECT_TRUE(std::filesystem::is_directory(home_ + "/.yarn"))
      << "the first run removed a directory the second one binds over";
  second.reset();
  EXPECT_EQ(Listing(), before);
}

TEST_F(AutorunShieldTest, WhatTheUserPutThereMeanwhileStays) {
  {
    auto shield = AutorunShield::Prepare(Places(), {home_}, {});
    ASSERT_TRUE(shield) << shield.error().ToString();
    // Outside the sandbox, during the run: a program of the user's writes into the directory
    // the run made.
    std::ofstream(home_ + "/.local/share/recently-used.xbel") << "<xbel/>\n";
  }
  EXPECT_TRUE(std::filesystem::exists(home_ + "/.local/share/recently-used.xbel"));
  EXPECT_FALSE(IsPlaceholder(".local/share/anvil"));
  EXPECT_FALSE(IsPlaceholder(".zshrc"));
  EXPECT_TRUE(std::filesystem::exists(home_ + "/.bashrc"));
}

// A hard-linked startup file: its other names in the writable roots are kept read-only too.
TEST_F(AutorunShieldTest, AHardLinkedStartupFileIsKeptUnderEveryNameARootShows) {
  ASSERT_EQ(mkdir((home_ + "/dotfiles").c_str(), 0755), 0);
  ASSERT_EQ(link((home_ + "/.bashrc").c_str(), (home_ + "/dotfiles/bashrc").c_str()), 0);
  auto shield = AutorunShield::Prepare(Places(), {home_}, {});
  ASSERT_TRUE(shield) << shield.error().ToString();
  const auto& ro = shield->Plan().read_only;
  EXPECT_NE(std::find(ro.begin(), ro.end(), home_ + "/.bashrc"), ro.end());
  EXPECT_NE(std::find(ro.begin(), ro.end(), home_ + "/dotfiles/bashrc"), ro.end());
}

// A search cut short refuses the run, and leaves nothing made behind.
TEST_F(AutorunShieldTest, AHardLinkSearchCutShortRefusesTheRunAndLeavesNothing) {
  const auto before = Listing();
  ASSERT_EQ(link((home_ + "/.bashrc").c_str(), (home_ + "/bashrc.bak").c_str()), 0);
  auto shield = AutorunShield::Prepare(Places(), {home_}, {}, {}, /*link_search_entries=*/1);
  ASSERT_FALSE(shield);
  EXPECT_NE(shield.error().message.find("hard links"), std::string::npos);
  EXPECT_NE(shield.error().message.find("fix:"), std::string::npos);
  auto want = before;
  want.insert("bashrc.bak");
  EXPECT_EQ(Listing(), want);
}

// The other name outside every writable root: nothing more to keep.
TEST_F(AutorunShieldTest, AHardLinkOutsideTheRootsNeedsNothingMore) {
  const std::string outside = home_ + "-bashrc.bak";
  ASSERT_EQ(link((home_ + "/.bashrc").c_str(), outside.c_str()), 0);
  auto shield = AutorunShield::Prepare(Places(), {home_}, {});
  ::unlink(outside.c_str());
  ASSERT_TRUE(shield) << shield.error().ToString();
  const auto& ro = shield->Plan().read_only;
  EXPECT_NE(std::find(ro.begin(), ro.end(), home_ + "/.bashrc"), ro.end());
  EXPECT_EQ(std::find(ro.begin(), ro.end(), outside), ro.end());
}

// The listing answers exactly as lstat(2) and readlink(2) would, name by name: every kind, a
// file's hard links, a link's text, a missing name, a name beneath a missing or non-directory
// one, a path through a symbolic link, a directory too large to list, and the top directory.
TEST_F(AutorunShieldTest, TheListingAnswersAsLstatDoes) {
  ASSERT_EQ(mkdir((home_ + "/dir").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((home_ + "/big").c_str(), 0755), 0);
  for (size_t i = 0; i <= kListedEntries; ++i) {
    std::ofstream(home_ + "/big/f" + std::to_string(i)) << "";
  }
  ASSERT_EQ(link((home_ + "/.bashrc").c_str(), (home_ + "/dir/bashrc").c_str()), 0);
  ASSERT_EQ(symlink("dir", (home_ + "/to-dir").c_str()), 0);
  ASSERT_EQ(symlink(std::string(kAutorunPlaceholder).c_str(), (home_ + "/.zshrc").c_str()), 0);
  ASSERT_EQ(symlink("/nowhere/at/all", (home_ + "/dangling").c_str()), 0);
  ASSERT_EQ(mkfifo((home_ + "/fifo").c_str(), 0600), 0);
  const std::vector<std::string> rels = {
      "",       ".bashrc",  "dir",    "dir/bashrc", "to-dir",        "to-dir/bashrc", "to-dir/nope",
      ".zshrc", "dangling", "fifo",   "missing",    "missing/below", ".bashrc/below", "big",
      "big/f7", "big/nope", ".local", ".local/bin"};
  const AutorunFs real = RealAutorunFs();
  const AutorunFs listing = ListingAutorunFs();
  for (int pass = 0; pass < 2; ++pass) {  // the second from the listings kept
    for (const auto& rel : rels) {
      const std::string path = rel.empty() ? home_ : home_ + "/" + rel;
      const AutorunFs::Node want = real.lstat(path);
      const AutorunFs::Node got = listing.lstat(path);
      EXPECT_EQ(got.kind, want.kind) << path;
      EXPECT_EQ(got.target, want.target) << path;
      if (want.kind == AutorunFs::Kind::kFile) {
        EXPECT_EQ(got.links, want.links) << path;
      }
    }
  }
  EXPECT_EQ(listing.lstat("/").kind, AutorunFs::Kind::kDirectory);
}

}  // namespace
}  // namespace autorun_shield_test
}  // namespace anvil
