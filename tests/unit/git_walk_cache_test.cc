// The walk cache's pure parts (where the view shields it, the file's encoding) and its
// directory's own checks on a real filesystem. Whether a sandboxed command can reach it is
// tests/security/t1_sandbox_git_walk_cache_test.cc.
#include "linux/git_walk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace anvil {
namespace git_walk_cache_test {
namespace {

using V = std::vector<std::string>;

// A territory key (policy/git_territory.h GitTerritoryKey): one homes directory and its object.
const std::string kT(
    "/h/.local/state/anvil/homes\0"
    "5:7\0",
    32);

TEST(ShieldGitWalkCache, ARootThatShowsTheCacheKeepsItReadOnlyAndPinsTheWayDown) {
  const std::string cache = "/tmp/anvil-cache-1000";
  struct Case {
    V roots;
    V covered;
    V read_only;
    V pinned;
  } cases[] = {
      {{"/home/u/ws"}, {"/tmp"}, {}, {}},      // elsewhere
      {{"/tmp/ws"}, {"/tmp"}, {}, {}},         // beside it, in /tmp
      {{"/tmp"}, {"/tmp"}, {cache}, {}},       // its parent: itself a mount
      {{"/"}, {"/tmp"}, {}, {}},               // the view's own /tmp covers it
      {{"/"}, {}, {cache}, {"/tmp"}},          // no private /tmp
      {{"/tmp", "/"}, {}, {cache}, {"/tmp"}},  // both
      {{"/tmpx"}, {}, {}, {}},                 // a prefix is not a parent
  };
  for (const auto& c : cases) {
    auto s = ShieldGitWalkCache(cache, c.roots, c.covered);
    ASSERT_TRUE(s) << c.roots.front();
    EXPECT_EQ(s->read_only, c.read_only) << c.roots.front();
    EXPECT_EQ(s->pinned, c.pinned) << c.roots.front();
  }
  auto deep = ShieldGitWalkCache("/var/cache/anvil/git/walk", {"/var"});
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->pinned, (V{"/var/cache", "/var/cache/anvil", "/var/cache/anvil/git"}));
  EXPECT_EQ(deep->read_only, V{"/var/cache/anvil/git/walk"});
}

TEST(ShieldGitWalkCache, TheCacheOrAnythingInsideItAsAWritableRootIsRefused) {
  for (const std::string& root : V{"/tmp/anvil-cache-0", "/tmp/anvil-cache-0/sub"}) {
    auto s = ShieldGitWalkCache("/tmp/anvil-cache-0", {"/w", root}, {"/tmp"});
    ASSERT_FALSE(s) << root;
    EXPECT_NE(s.error().message.find("fix:"), std::string::npos);
  }
}

GitWalkMemo SampleMemo() {
  GitWalkMemo memo;
  memo.dirs[{5, 10}] = {100, 42, 9, 3, {{"src", GitFileType::kDir}, {".git", GitFileType::kDir}},
                        "/w"};
  memo.dirs[{5, 11}] = {101, 0, 9, 0, {}, "/w/src"};
  memo.dirs[{6, 12}] = {99, 999999999, 10, 5, {{"HEAD", GitFileType::kFile}}, "/v"};
  return memo;
}

bool Same(const GitWalkMemo& a, const GitWalkMemo& b) {
  if (a.dirs.size() != b.dirs.size()) return false;
  for (const auto& [id, d] : a.dirs) {
    auto it = b.dirs.find(id);
    if (it == b.dirs.end()) return false;
    const auto& e = it->second;
    if (d.ctime_sec != e.ctime_sec || d.ctime_nsec != e.ctime_nsec || d.mnt_id != e.mnt_id ||
        d.entries != e.entries || d.kept.size() != e.kept.size()) {
      return false;
    }
    for (size_t i = 0; i < d.kept.size(); ++i) {
      if (d.kept[i].name != e.kept[i].name || d.kept[i].type != e.kept[i].type) return false;
    }
  }
  return true;
}

TEST(GitWalkMemoNeedsSave, OnlyAMemoThatDiffersFromTheLoadedOneIsWritten) {
  const GitWalkMemo loaded = SampleMemo();
  EXPECT_TRUE(GitWalkMemoNeedsSave(nullptr, loaded));  // nothing on disk yet
  EXPECT_TRUE(GitWalkMemoNeedsSave(nullptr, GitWalkMemo{}));
  EXPECT_FALSE(GitWalkMemoNeedsSave(&loaded, SampleMemo()));  // the walk kept what it loaded
  // Every change of what a memo vouches for is written.
  std::vector<std::pair<const char*, void (*)(GitWalkMemo&)>> changes = {
      {"ctime s",
       [](GitWalkMemo& m) {
         m.dirs[{5, 10}].ctime_sec++;
       }},
      {"ctime ns",
       [](GitWalkMemo& m) {
         m.dirs[{5, 10}].ctime_nsec++;
       }},
      {"mount",
       [](GitWalkMemo& m) {
         m.dirs[{5, 10}].mnt_id++;
       }},
      {"entries",
       [](GitWalkMemo& m) {
         m.dirs[{5, 11}].entries++;
       }},
      {"kept added",
       [](GitWalkMemo& m) {
         m.dirs[{5, 11}].kept.push_back({"x", GitFileType::kDir});
       }},
      {"kept dropped",
       [](GitWalkMemo& m) {
         m.dirs[{5, 10}].kept.pop_back();
       }},
      {"kept renamed",
       [](GitWalkMemo& m) {
         m.dirs[{5, 10}].kept[0].name = "srd";
       }},
      {"kept type",
       [](GitWalkMemo& m) {
         m.dirs[{5, 10}].kept[0].type = GitFileType::kFile;
       }},
      {"dir added",
       [](GitWalkMemo& m) {
         m.dirs[{5, 12}] = {};
       }},
      {"dir dropped",
       [](GitWalkMemo& m) {
         m.dirs.erase({6, 12});
       }},
      {"dir replaced",
       [](GitWalkMemo& m) {
         auto d = m.dirs[{6, 12}];
         m.dirs.erase({6, 12});
         m.dirs[{6, 13}] = d;
       }},
      {"emptied", [](GitWalkMemo& m) { m.dirs.clear(); }},
  };
  for (const auto& [what, change] : changes) {
    GitWalkMemo now = SampleMemo();
    change(now);
    EXPECT_TRUE(GitWalkMemoNeedsSave(&loaded, now)) << what;
  }
}

TEST(GitWalkMemoCodec, RoundTripsForTheSameBootAndRootsOnly) {
  const V roots = {"/w", "/x y"};
  const std::string data = EncodeGitWalkMemo("boot-1", roots, kT, SampleMemo());
  auto back = DecodeGitWalkMemo(data, "boot-1", roots, kT);
  ASSERT_TRUE(back);
  EXPECT_TRUE(Same(*back, SampleMemo()));
  EXPECT_FALSE(DecodeGitWalkMemo(data, "boot-2", roots, kT));           // after a reboot
  EXPECT_FALSE(DecodeGitWalkMemo(data, "", roots, kT));                 // no boot id known
  EXPECT_FALSE(DecodeGitWalkMemo(data, "boot-1", {"/w"}, kT));          // other roots
  EXPECT_FALSE(DecodeGitWalkMemo(data, "boot-1", {"/x y", "/w"}, kT));  // other order
}

// Review s12: a memo vouches that the links of its directories were judged against one
// territory; a run with another (another state dir, a homes directory made again, none) takes
// nothing from it.
TEST(GitWalkMemoCodec, AMemoIsTrustedOnlyUnderTheTerritoryItWasJudgedAgainst) {
  const V roots = {"/w"};
  const std::string data = EncodeGitWalkMemo("b", roots, kT, SampleMemo());
  ASSERT_TRUE(DecodeGitWalkMemo(data, "b", roots, kT));
  const std::string other_state(
      "/o/anvil/homes\0"
      "5:9\0",
      20);
  const std::string made_again(
      "/h/.local/state/anvil/homes\0"
      "5:8\0",
      32);
  for (const std::string& other : {std::string(), other_state, made_again, kT + kT}) {
    EXPECT_FALSE(DecodeGitWalkMemo(data, "b", roots, other)) << other;
  }
  // No territory is a territory too: its memo is trusted only where there is none.
  const std::string none = EncodeGitWalkMemo("b", roots, "", SampleMemo());
  EXPECT_TRUE(DecodeGitWalkMemo(none, "b", roots, ""));
  EXPECT_FALSE(DecodeGitWalkMemo(none, "b", roots, kT));
}

TEST(GitWalkMemoMayBeSaved, OnlyAfterACheckThatJudgedAgainstTheTerritoryItWasLoadedFor) {
  struct Row {
    const char* what;
    std::string loaded_for;
    std::optional<std::string> judged;
    bool save;
  };
  const Row rows[] = {
      {"the same territory", kT, kT, true},
      {"no territory, before and after", "", std::string(), true},
      {"no check, or one whose walk failed", kT, std::nullopt, false},
      {"no check, no territory", "", std::nullopt, false},
      {"the territory changed during the run", kT, std::string("/o\0", 3), false},
      {"a territory appeared during the run", "", kT, false},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(GitWalkMemoMayBeSaved(r.loaded_for, r.judged), r.save) << r.what;
  }
}

// A memo of an older walk (which kept fewer markers: no commondir before 2, none of Anvil's
// protected names before 3, no symlinks before 4, no territory before 5, fewer protected names
// before 6 and 7, links not judged against the read-only places before 9, no directory paths
// before 10) is not trusted.
TEST(GitWalkMemoCodec, AMemoOfAnOlderFormatIsNoMemo) {
  const V roots = {"/w"};
  const std::string current = "anvil-git-walk-cache 10\n";
  const std::string data = EncodeGitWalkMemo("b", roots, kT, SampleMemo());
  ASSERT_TRUE(data.starts_with(current));
  ASSERT_TRUE(DecodeGitWalkMemo(data, "b", roots, kT));
  for (const char* older :
       {"anvil-git-walk-cache 1\n", "anvil-git-walk-cache 2\n", "anvil-git-walk-cache 3\n",
        "anvil-git-walk-cache 4\n", "anvil-git-walk-cache 5\n", "anvil-git-walk-cache 6\n",
        "anvil-git-walk-cache 7\n", "anvil-git-walk-cache 8\n", "anvil-git-walk-cache 9\n"}) {
    std::string old = data;
    old.replace(0, current.size(), older);
    EXPECT_FALSE(DecodeGitWalkMemo(old, "b", roots, kT)) << older;
  }
}

TEST(GitWalkMemoCodec, ATornOrForgedFileIsNoMemo) {
  const V roots = {"/w"};
  const std::string data = EncodeGitWalkMemo("b", roots, kT, SampleMemo());
  for (size_t n = 0; n < data.size(); ++n) {
    EXPECT_FALSE(DecodeGitWalkMemo(data.substr(0, n), "b", roots, kT)) << "cut at " << n;
  }
  EXPECT_FALSE(DecodeGitWalkMemo(data + "x", "b", roots, kT));
  auto with_name = [&](const std::string& name) {
    GitWalkMemo m;
    m.dirs[{1, 2}] = {1, 0, 0, 1, {{name, GitFileType::kDir}}, "/w"};
    return EncodeGitWalkMemo("b", roots, kT, m);
  };
  EXPECT_TRUE(DecodeGitWalkMemo(with_name("ok"), "b", roots, kT));
  for (const std::string& bad : V{"", ".", "..", "a/b", std::string("a\0b", 3)}) {
    EXPECT_FALSE(DecodeGitWalkMemo(with_name(bad), "b", roots, kT)) << bad;
  }
  GitWalkMemo more_kept_than_entries;
  more_kept_than_entries.dirs[{1, 2}] = {1, 0, 0, 0, {{"a", GitFileType::kDir}}, "/w"};
  EXPECT_FALSE(
      DecodeGitWalkMemo(EncodeGitWalkMemo("b", roots, kT, more_kept_than_entries), "b", roots, kT));
  // Every byte flipped in turn: never a crash; what still decodes is a well-formed memo.
  for (size_t i = 0; i < data.size(); ++i) {
    std::string bent = data;
    bent[i] = static_cast<char>(bent[i] ^ 0x5a);
    (void)DecodeGitWalkMemo(bent, "b", roots, kT);
  }
}

class GitWalkCacheDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/anvil-walk-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
    path_ = base_ + "/cache";
  }
  void TearDown() override { std::system(("rm -rf '" + base_ + "'").c_str()); }
  std::string base_, path_;
};

TEST_F(GitWalkCacheDir, MadeOwnerOnlyAndAMemoComesBack) {
  auto cache = GitWalkCache::OpenAt(path_);
  ASSERT_TRUE(cache.Usable()) << cache.Problem();
  EXPECT_EQ(cache.Dir(), path_);
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_FALSE(cache.Load({"/w"}, kT));
  cache.Save({"/w"}, kT, SampleMemo());
  auto back = GitWalkCache::OpenAt(path_).Load({"/w"}, kT);
  ASSERT_TRUE(back);
  EXPECT_TRUE(Same(*back, SampleMemo()));
  EXPECT_FALSE(cache.Load({"/v"}, kT));
  EXPECT_FALSE(cache.Load({"/w"}, ""));  // judged against another territory
  const std::string file = path_ + "/" + GitWalkCacheFileName({"/w"});
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // A file others could have written is not read.
  ASSERT_EQ(chmod(file.c_str(), 0644), 0);
  EXPECT_FALSE(cache.Load({"/w"}, kT));
}

TEST_F(GitWalkCacheDir, ASecondSaveReplacesTheFirstAndLeavesNothingElse) {
  auto cache = GitWalkCache::OpenAt(path_);
  ASSERT_TRUE(cache.Usable()) << cache.Problem();
  GitWalkMemo first;
  first.dirs[{1, 2}] = {7, 0, 3, 0, {{"a", GitFileType::kFile}}, "/w"};
  cache.Save({"/w"}, kT, first);
  cache.Save({"/w"}, kT, SampleMemo());  // exchanged with the first, which goes
  auto back = cache.Load({"/w"}, kT);
  ASSERT_TRUE(back);
  EXPECT_TRUE(Same(*back, SampleMemo()));
  std::vector<std::string> names;
  DIR* dir = opendir(path_.c_str());
  ASSERT_NE(dir, nullptr);
  while (dirent* e = readdir(dir)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") names.push_back(e->d_name);
  }
  closedir(dir);
  EXPECT_EQ(names, std::vector<std::string>{GitWalkCacheFileName({"/w"})});
  struct stat st {};
  ASSERT_EQ(stat((path_ + "/" + names.front()).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST_F(GitWalkCacheDir, WhatIsThereAndUnfitIsMovedAsideNotUsed) {
  // A directory others can write, holding a memo someone put there.
  ASSERT_EQ(mkdir(path_.c_str(), 0700), 0);
  GitWalkCache::OpenAt(path_).Save({"/w"}, kT, SampleMemo());
  ASSERT_EQ(chmod(path_.c_str(), 0777), 0);
  auto cache = GitWalkCache::OpenAt(path_);
  ASSERT_TRUE(cache.Usable()) << cache.Problem();
  EXPECT_FALSE(cache.Load({"/w"}, kT));
  struct stat st {};
  ASSERT_EQ(stat(path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);

  // A symlink to a directory of the same shape elsewhere.
  const std::string elsewhere = base_ + "/elsewhere";
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0700), 0);
  GitWalkCache::OpenAt(elsewhere).Save({"/w"}, kT, SampleMemo());
  ASSERT_EQ(std::system(("rm -rf '" + path_ + "'").c_str()), 0);
  ASSERT_EQ(symlink(elsewhere.c_str(), path_.c_str()), 0);
  auto linked = GitWalkCache::OpenAt(path_);
  ASSERT_TRUE(linked.Usable()) << linked.Problem();
  EXPECT_EQ(linked.Dir(), path_);
  EXPECT_FALSE(linked.Load({"/w"}, kT));
  struct stat lst {};
  ASSERT_EQ(lstat(path_.c_str(), &lst), 0);
  EXPECT_TRUE(S_ISDIR(lst.st_mode));

  // A plain file.
  ASSERT_EQ(rmdir(path_.c_str()), 0);
  std::ofstream(path_) << "x";
  EXPECT_TRUE(GitWalkCache::OpenAt(path_).Usable());

  // Another user's directory: never read, and still named for the view to shield.
  if (geteuid() == 0) {
    ASSERT_EQ(chown(path_.c_str(), 65534, 65534), 0);
    auto other = GitWalkCache::OpenAt(path_);
    EXPECT_FALSE(other.Usable());
    EXPECT_EQ(other.Dir(), path_);
    EXPECT_FALSE(other.Load({"/w"}, kT));
  }
}

TEST(GitWalkCachePrune, KeepsTheNewestMemosAndDropsStaleTemporaries) {
  const std::string a = "walk-" + std::string(32, 'a');
  const std::string b = "walk-" + std::string(32, 'b');
  const std::string c = "walk-" + std::string(32, 'c');
  const std::vector<GitWalkCacheFile> files = {
      {b, 200},          {a, 100}, {c, 300}, {".tmp-1-2", 1000},  // a save in progress: kept
      {".tmp-3-4", 10},   // left by a run that died while saving: dropped
      {"walk-short", 1},  // not a memo of the cache: left alone
      {"notes.txt", 1},   // not the cache's: left alone
  };
  struct Row {
    size_t keep;
    std::vector<std::string> pruned;
  } rows[] = {
      {3, {".tmp-3-4"}},
      {2, {".tmp-3-4", a}},
      {1, {".tmp-3-4", b, a}},
      {0, {".tmp-3-4", c, b, a}},
  };
  for (const auto& row : rows) {
    EXPECT_EQ(GitWalkCacheFilesToPrune(files, row.keep, 1100, 500), row.pruned) << row.keep;
  }
  // The same age: the name decides, whatever order the directory listed them in.
  EXPECT_EQ(GitWalkCacheFilesToPrune({{b, 5}, {a, 5}}, 1, 0, 1), std::vector<std::string>{b});
  EXPECT_EQ(GitWalkCacheFilesToPrune({{a, 5}, {b, 5}}, 1, 0, 1), std::vector<std::string>{b});
}

TEST_F(GitWalkCacheDir, ANewMemoPastTheBoundDropsTheOldestOnly) {
  auto cache = GitWalkCache::OpenAt(path_);
  ASSERT_TRUE(cache.Usable()) << cache.Problem();
  for (size_t i = 0; i < kGitWalkCacheMaxMemos + 5; ++i) {
    cache.Save({"/w" + std::to_string(i)}, kT, SampleMemo());
    // Distinct ages even on a filesystem with coarse timestamps.
    const std::string file = path_ + "/" + GitWalkCacheFileName({"/w" + std::to_string(i)});
    struct timespec times[2] = {{static_cast<time_t>(1000000 + i), 0},
                                {static_cast<time_t>(1000000 + i), 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
  }
  size_t count = 0;
  DIR* dir = opendir(path_.c_str());
  ASSERT_NE(dir, nullptr);
  while (dirent* e = readdir(dir)) count += std::string(e->d_name).rfind("walk-", 0) == 0;
  closedir(dir);
  // Each new memo past the bound dropped the oldest one.
  EXPECT_EQ(count, kGitWalkCacheMaxMemos);
  EXPECT_FALSE(cache.Load({"/w0"}, kT));
  EXPECT_TRUE(cache.Load({"/w" + std::to_string(kGitWalkCacheMaxMemos + 4)}, kT));
  // Saving an existing memo again drops nothing.
  cache.Save({"/w" + std::to_string(kGitWalkCacheMaxMemos + 4)}, kT, SampleMemo());
  EXPECT_TRUE(cache.Load({"/w10"}, kT));
}

}  // namespace
}  // namespace git_walk_cache_test
}  // namespace anvil
