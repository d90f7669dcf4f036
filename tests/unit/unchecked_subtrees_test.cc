// The record of what a sandbox run's check after it left unchecked (policy/unchecked_subtrees.h):
// what is recorded, which plugin it keeps out, what a later run resolves, and the files.
#include "policy/unchecked_subtrees.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace anvil {
namespace unchecked_subtrees_test {
namespace {

using V = std::vector<std::string>;

V Paths(const UncheckedRecord& r) {
  V out;
  for (const auto& s : r.subtrees) out.push_back(s.path);
  return out;
}

// Review s15: a command nested its directories past PATH_MAX; the record named the deepest one,
// which the reader refuses, and every later run of the user stopped on "not one of yours".
TEST(UncheckedAfterRun, APathTooLongForARecordIsRecordedAsTheDeepestDirectoryThatFits) {
  UncheckedFacts f;
  f.roots = {"/w"};
  std::string deep = "/w/t";
  while (deep.size() <= 5000) deep += "/" + std::string(250, 'd');
  f.unwalked = {{deep, "past the 'depth' bound (3)"}, {"/w/ok", "cannot be listed"}};
  f.unwalked_total = 2;
  auto r = UncheckedAfterRun(f);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->subtrees.size(), 2u);
  EXPECT_LE(r->subtrees[0].path.size(), 4096u);
  EXPECT_TRUE(deep.starts_with(r->subtrees[0].path + "/")) << r->subtrees[0].path;
  auto decoded = DecodeUncheckedRecord(EncodeUncheckedRecord(*r));
  ASSERT_TRUE(decoded);
  EXPECT_EQ(decoded->subtrees.size(), 2u);
}

TEST(UncheckedAfterRun, RecordsWhatTheCheckDidNotVouchFor) {
  UncheckedFacts complete;
  complete.roots = {"/w"};
  EXPECT_FALSE(UncheckedAfterRun(complete));

  UncheckedFacts named = complete;
  named.unwalked = {{"/w/deep", "past the 'depth' bound (3)"}, {"/w/b", "cannot be listed"}};
  named.unwalked_total = 2;
  named.names_left = {{"/w/sub/Anvil.toml", "rename failed"}};
  auto r = UncheckedAfterRun(named);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->roots, V{"/w"});
  EXPECT_EQ(Paths(*r), (V{"/w/deep", "/w/b", "/w/sub/Anvil.toml"}));
  EXPECT_NE(r->subtrees[0].why.find("depth"), std::string::npos);

  // Whatever the list cannot say in full is the whole root.
  struct Row {
    const char* what;
    UncheckedFacts facts;
  } rows[] = {
      {"more than were named",
       [&] {
         auto f = named;
         f.unwalked_total = 500;
         return f;
       }()},
      {"planning out of time",
       [&] {
         auto f = complete;
         f.check_error = "the planning after the run took longer";
         return f;
       }()},
      {"a repository not moved aside",
       [&] {
         auto f = complete;
         f.quarantine_failures = {"/w/x/.git: rename failed"};
         return f;
       }()},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    auto whole = UncheckedAfterRun(row.facts);
    ASSERT_TRUE(whole);
    EXPECT_EQ(Paths(*whole), V{"/w"});
  }
}

TEST(MergeUncheckedRecords, JoinsEachPathOnceAndPastTheBoundNamesTheRoots) {
  UncheckedRecord a{{"/w"}, {{"/w/a", "x"}, {"/w/b", "x"}}};
  UncheckedRecord b{{"/w"}, {{"/w/b", "y"}, {"/w/c", "y"}}};
  EXPECT_EQ(Paths(MergeUncheckedRecords(a, b)), (V{"/w/b", "/w/c", "/w/a"}));
  UncheckedRecord many{{"/w"}, {}};
  for (size_t i = 0; i <= kMaxUncheckedSubtrees; ++i) {
    many.subtrees.push_back({"/w/d" + std::to_string(i), "x"});
  }
  EXPECT_EQ(Paths(MergeUncheckedRecords(a, many)), V{"/w"});
}

TEST(UncheckedRecordCodec, RoundTripsAndRefusesWhatIsNotARecord) {
  UncheckedRecord r{{"/w", "/tmp/x"}, {{"/w/deep", "why \"quoted\"\n"}}};
  auto back = DecodeUncheckedRecord(EncodeUncheckedRecord(r));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->roots, r.roots);
  EXPECT_EQ(Paths(*back), V{"/w/deep"});
  EXPECT_EQ(back->subtrees[0].why, r.subtrees[0].why);
  for (const char* bad :
       {"", "{", "[]", R"({"version":2,"roots":["/w"],"subtrees":[]})",
        R"({"version":1,"roots":["/w"],"subtrees":[]})",
        R"({"version":1,"roots":["w"],"subtrees":[{"path":"/w","why":""}]})",
        R"({"version":1,"roots":["/w"],"subtrees":[{"path":"/w/../x","why":""}]})",
        R"({"version":1,"roots":["/w"],"subtrees":[{"path":"/w/x/"}]})"}) {
    EXPECT_FALSE(DecodeUncheckedRecord(bad)) << bad;
  }
  // A live run's pending record says what it trusts; an older record says nothing.
  r.trusted = RunTrust{{{2049, 12}, {2049, 13}}, {"/w/sub/Anvil.toml"}};
  back = DecodeUncheckedRecord(EncodeUncheckedRecord(r));
  ASSERT_TRUE(back && back->trusted);
  EXPECT_EQ(back->trusted->ids, r.trusted->ids);
  EXPECT_EQ(back->trusted->names, r.trusted->names);
  EXPECT_FALSE(
      DecodeUncheckedRecord(R"({"version":1,"roots":["/w"],"subtrees":[{"path":"/w","why":""}]})")
          ->trusted);
  for (
      const char* bad :
      {R"({"version":1,"roots":["/w"],"subtrees":[{"path":"/w","why":""}],"trusted":[]})",
       R"({"version":1,"roots":["/w"],"subtrees":[{"path":"/w","why":""}],"trusted":{"ids":[[1]],"names":[]}})",
       R"({"version":1,"roots":["/w"],"subtrees":[{"path":"/w","why":""}],"trusted":{"ids":[[1,-2]],"names":[]}})",
       R"({"version":1,"roots":["/w"],"subtrees":[{"path":"/w","why":""}],"trusted":{"ids":[],"names":["x"]}})",
       R"({"version":1,"roots":["/w"],"subtrees":[{"path":"/w","why":""}],"trusted":{"ids":[]}})"}) {
    EXPECT_FALSE(DecodeUncheckedRecord(bad)) << bad;
  }
  // A settled record never keeps what a live run trusted.
  EXPECT_FALSE(MergeUncheckedRecords(r, r).trusted);
  const std::string name = UncheckedRecordFileName({"/w"});
  EXPECT_TRUE(IsUncheckedRecordFileName(name)) << name;
  EXPECT_NE(name, UncheckedRecordFileName({"/w", "/x"}));
  EXPECT_FALSE(IsUncheckedRecordFileName("unchecked-xyz.json"));
  EXPECT_FALSE(IsUncheckedRecordFileName(name + ".tmp"));
}

// What a run trusts past the bounds is nothing (a later run then judges everything in its
// roots); within them, as it is. Roots overlap when one lies within the other.
TEST(RunTrust, BoundedAndOverlapping) {
  RunTrust small{{{1, 2}}, {"/w/a"}};
  EXPECT_EQ(BoundedRunTrust(small).ids.size(), 1u);
  RunTrust many;
  for (uint64_t i = 0; i <= kMaxTrustedIds; ++i) many.ids.emplace_back(1, i);
  many.names = {"/w/a"};
  EXPECT_TRUE(BoundedRunTrust(many).ids.empty());
  EXPECT_TRUE(BoundedRunTrust(many).names.empty());
  EXPECT_TRUE(RootsOverlap({"/w"}, {"/w"}));
  EXPECT_TRUE(RootsOverlap({"/w"}, {"/w/sub"}));
  EXPECT_TRUE(RootsOverlap({"/x", "/w/sub"}, {"/w"}));
  EXPECT_FALSE(RootsOverlap({"/w"}, {"/ww"}));
  EXPECT_FALSE(RootsOverlap({"/w/a"}, {"/w/b"}));
}

// The attack's shape: the workspace (or the plugin) lies in what was not checked, or holds it.
// Benign neighbours: a sibling, a prefix that is not a parent, another record's roots.
TEST(UncheckedSubtreeFor, KeepsOutTheWorkspacesInAndAboveASubtreeAndThePluginsInOne) {
  const std::vector<UncheckedRecord> records{
      {{"/home/u"}, {{"/home/u/proj", "not walked: past the 'entries' bound"}}}};
  struct Row {
    const char* workspace;
    const char* plugin_dir;
    bool refused;
  } rows[] = {
      {"/home/u/proj", "/home/u/proj/tools/p", true},    // the subtree itself
      {"/home/u/proj/sub", "/home/u/proj/sub/p", true},  // below it
      {"/home/u", "/home/u/p", true},                    // a workspace that holds it
      {"/home/u/other", "/home/u/proj/tools/p", true},   // a plugin that lies in it
      {"/home/u/other", "/home/u/other/p", false},       // a sibling
      {"/home/u/project", "/home/u/project/p", false},   // a prefix, not a parent
      {"/srv/w", "/srv/w/p", false},                     // elsewhere
      {"/home/u/other", "", false},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(std::string(row.workspace) + " " + row.plugin_dir);
    auto hit = UncheckedSubtreeFor(records, row.workspace, row.plugin_dir);
    EXPECT_EQ(hit.has_value(), row.refused);
    if (hit) {
      EXPECT_EQ(hit->subtree.path, "/home/u/proj");
      EXPECT_EQ(hit->root, "/home/u");
      const std::string message = UncheckedRefusal(*hit);
      EXPECT_NE(message.find("/home/u/proj"), std::string::npos) << message;
      EXPECT_NE(message.find("anvil sandbox --cwd /home/u -- true"), std::string::npos) << message;
    }
  }
}

TEST(SuspectUncheckedSubtrees, OnlyThoseInTheRunsRootsAndWhatARunResolves) {
  const std::vector<UncheckedRecord> records{{{"/w"}, {{"/w/a", ""}, {"/w/b/c", ""}}},
                                             {{"/x"}, {{"/x", ""}}}};
  EXPECT_EQ(SuspectUncheckedSubtrees(records, {"/w"}), (V{"/w/a", "/w/b/c"}));
  EXPECT_EQ(SuspectUncheckedSubtrees(records, {"/w/b"}), V{"/w/b/c"});
  EXPECT_EQ(SuspectUncheckedSubtrees(records, {"/x", "/w/a"}), (V{"/w/a", "/x"}));
  EXPECT_TRUE(SuspectUncheckedSubtrees(records, {"/y"}).empty());

  EXPECT_FALSE(UncheckedLeftAfter(records[0], {"/w"}));
  auto left = UncheckedLeftAfter(records[0], {"/w/b"});
  ASSERT_TRUE(left);
  EXPECT_EQ(Paths(*left), V{"/w/a"});
  EXPECT_EQ(Paths(*UncheckedLeftAfter(records[0], {"/elsewhere"})), (V{"/w/a", "/w/b/c"}));
  // A root below the subtree did not walk all of it.
  EXPECT_TRUE(UncheckedLeftAfter(records[1], {"/x/sub"}));
}

class UncheckedRecordsFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-unchecked-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    base_ = pattern;
    dir_ = base_ + "/state/anvil/unchecked";
    ws_ = base_ + "/ws";
    std::filesystem::create_directories(ws_ + "/deep");
  }
  void TearDown() override { std::filesystem::remove_all(base_); }
  std::vector<LoadedUncheckedRecord> Load() {
    auto loaded = LoadUncheckedRecords(dir_);
    EXPECT_TRUE(loaded) << loaded.error().ToString();
    return loaded ? *loaded : std::vector<LoadedUncheckedRecord>{};
  }
  std::string base_, dir_, ws_;
};

TEST_F(UncheckedRecordsFiles, SavedJoinedResolvedAndGoneWithTheirWorkspace) {
  EXPECT_TRUE(Load().empty());  // no directory yet
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{ws_}, {{ws_ + "/deep", "a"}}}));
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{ws_}, {{ws_ + "/other", "b"}}}));
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  auto loaded = Load();
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(Paths(loaded[0].record), (V{ws_ + "/other", ws_ + "/deep"}));
  ASSERT_EQ(::stat((dir_ + "/" + loaded[0].file).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  // A run over ws/deep resolves that subtree only; one over ws the rest.
  ASSERT_TRUE(ResolveUncheckedRecord(dir_, loaded[0], {ws_ + "/deep"}));
  loaded = Load();
  ASSERT_EQ(loaded.size(), 1u);
  EXPECT_EQ(Paths(loaded[0].record), V{ws_ + "/other"});
  // What was loaded before a concurrent run added to it is not what is there: left.
  const LoadedUncheckedRecord stale = loaded[0];
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{ws_}, {{ws_ + "/third", "c"}}}));
  ASSERT_TRUE(ResolveUncheckedRecord(dir_, stale, {ws_}));
  ASSERT_EQ(Load().size(), 1u);
  loaded = Load();
  ASSERT_TRUE(ResolveUncheckedRecord(dir_, loaded[0], {ws_}));
  EXPECT_TRUE(Load().empty());

  // A record whose workspace is gone is nothing to refuse for, and is swept by the next save.
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{ws_}, {{ws_ + "/deep", "a"}}}));
  std::filesystem::remove_all(ws_);
  EXPECT_TRUE(Load().empty());
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{base_}, {{base_ + "/x", "a"}}}));
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

// Nothing is made in a tree that is not the caller's (root with another user's $HOME).
TEST_F(UncheckedRecordsFiles, NothingIsMadeInAnotherUsersTree) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a tree away";
  const std::string theirs = base_ + "/theirs";
  std::filesystem::create_directories(theirs);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
  auto s = SaveUncheckedRecord(theirs + "/.local/state/anvil/unchecked", {{ws_}, {{ws_, "a"}}});
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("is not yours"), std::string::npos) << s.error().message;
  EXPECT_FALSE(std::filesystem::exists(theirs + "/.local"));
  // Benign: the caller's own tree.
  EXPECT_TRUE(SaveUncheckedRecord(dir_, {{ws_}, {{ws_, "a"}}}));
}

// Fail closed: a record that cannot be read may stand for an unchecked subtree.
TEST_F(UncheckedRecordsFiles, ARecordThatDoesNotParseIsAnError) {
  ASSERT_TRUE(SaveUncheckedRecord(dir_, {{ws_}, {{ws_ + "/deep", "a"}}}));
  const std::string file = dir_ + "/" + UncheckedRecordFileName({ws_});
  std::ofstream(file, std::ios::trunc) << "{torn";
  auto loaded = LoadUncheckedRecords(dir_);
  ASSERT_FALSE(loaded);
  EXPECT_NE(loaded.error().message.find(file), std::string::npos) << loaded.error().message;
  // Benign: other names in the directory are not records.
  std::filesystem::remove(file);
  std::ofstream(dir_ + "/notes.txt") << "x";
  EXPECT_TRUE(Load().empty());
}

}  // namespace
}  // namespace unchecked_subtrees_test
}  // namespace anvil
