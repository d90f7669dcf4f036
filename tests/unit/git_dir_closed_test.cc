// policy/git_dir_closed.h: what a git dir the command made may hold (red team s13: a config
// that is a symlink into the sandbox home or a FIFO, a legacy remotes/ or branches/ file, a
// rebase todo with `exec` lines), each refused next to what git itself writes there.
#include "policy/git_dir_closed.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fake_git_tree.h"

namespace anvil {
namespace git_dir_closed_test {
namespace {

using testing_support::FakeTree;
using E = std::vector<GitDirEntry>;
constexpr GitFileType F = GitFileType::kFile;
constexpr GitFileType D = GitFileType::kDir;
constexpr GitFileType L = GitFileType::kSymlink;
constexpr GitFileType O = GitFileType::kOther;

TEST(JudgeGitDirListing, WhatGitWritesIsClosed) {
  // git init, clone, commit, fetch, merge in progress, stash, gc, submodule add, worktree add.
  const E gitdir = {
      {"HEAD", F},           {"config", F},      {"description", F},    {"hooks", D},
      {"info", D},           {"objects", D},     {"refs", D},           {"logs", D},
      {"index", F},          {"packed-refs", F}, {"FETCH_HEAD", F},     {"ORIG_HEAD", F},
      {"MERGE_HEAD", F},     {"MERGE_MSG", F},   {"MERGE_MODE", F},     {"AUTO_MERGE", F},
      {"COMMIT_EDITMSG", F}, {"branches", D},    {"modules", D},        {"worktrees", D},
      {"index.lock", F},     {"shallow", F},     {"config.worktree", F}};
  auto v = JudgeGitDirListing(GitDirPart::kGitDir, gitdir);
  EXPECT_FALSE(v.refused.has_value()) << *v.refused;
  EXPECT_EQ(v.descend.size(), 8u);
  for (const auto& [part, entries] : std::vector<std::pair<GitDirPart, E>>{
           {GitDirPart::kHooks, {{"pre-commit.sample", F}, {"update.sample", F}}},
           {GitDirPart::kInfo, {{"exclude", F}, {"attributes", F}, {"refs", F}}},
           {GitDirPart::kData, {{"pack", D}, {"info", D}, {"ab", D}, {"packs", F}}},
           {GitDirPart::kEmpty, {}},
           {GitDirPart::kModules, {{"lib", D}, {"a", D}}},
           {GitDirPart::kModule, {{"HEAD", F}, {"objects", D}, {"refs", D}, {"config", F}}},
           {GitDirPart::kModule, {{"b", D}}},  // modules/a/b: a name with a slash
           {GitDirPart::kWorktrees, {{"wt", D}}},
           {GitDirPart::kWorktree,
            {{"HEAD", F}, {"commondir", F}, {"gitdir", F}, {"index", F}, {"logs", D}}},
       }) {
    auto r = JudgeGitDirListing(part, entries);
    EXPECT_FALSE(r.refused.has_value()) << *r.refused;
  }
}

TEST(JudgeGitDirListing, AnythingElseGitReadsIsNot) {
  const std::vector<std::pair<GitDirPart, E>> refused = {
      {GitDirPart::kGitDir, {{"HEAD", F}, {"config", L}}},  // into the sandbox home
      {GitDirPart::kGitDir, {{"HEAD", F}, {"config", O}}},  // a FIFO
      {GitDirPart::kGitDir, {{"config.worktree", L}}},      // a symlink
      {GitDirPart::kGitDir, {{"rebase-merge", F}}},         // a file where git keeps a dir
      {GitDirPart::kGitDir, {{"rebase-merge", L}}},         //
      {GitDirPart::kGitDir, {{"BISECT_OTHER", F}}},         // not one of bisect's
      {GitDirPart::kSequencer, {{"done", F}, {"sub", D}}},  // no directory there
      {GitDirPart::kSequencer, {{"hooks", F}}},             // not one of the sequencer's
      {GitDirPart::kSequencer, {{"git-rebase-todo", L}}},   // into the sandbox home
      {GitDirPart::kSequencer, {{"todo", O}}},              // a FIFO
      {GitDirPart::kSequencer, {{"000000001", F}}},         // longer than am numbers
      {GitDirPart::kGitDir, {{"remotes", F}}},              // not even as a file
      {GitDirPart::kGitDir, {{"objects", L}}},              // a symlinked objects
      {GitDirPart::kGitDir, {{"hooks", L}}},                //
      {GitDirPart::kGitDir, {{"unknown", F}}},              // any other name
      {GitDirPart::kGitDir, {{"commondir", F}}},            // only a worktree's
      {GitDirPart::kEmpty, {{"origin", F}}},                // remotes/origin
      {GitDirPart::kEmpty, {{"up", F}}},                    // branches/up
      {GitDirPart::kData, {{"ab", D}, {"cdef", L}}},        // a link in objects/
      {GitDirPart::kData, {{"sock", O}}},                   //
      {GitDirPart::kHooks, {{"dir", D}}},                   //
      {GitDirPart::kInfo, {{"alternates", F}}},             // not git's
      {GitDirPart::kModules, {{"x", F}}},                   //
      {GitDirPart::kModule, {{"HEAD", F}, {"objects", D}, {"refs", D}, {"config", L}}},
      {GitDirPart::kModule, {{"HEAD", F}, {"objects", D}, {"refs", D}, {"remotes", F}}},
      {GitDirPart::kWorktrees, {{"wt", F}}},                        //
      {GitDirPart::kWorktree, {{"HEAD", F}, {"rebase-merge", F}}},  //
      {GitDirPart::kWorktree, {{"config", F}}},                     // not a worktree's
  };
  for (const auto& [part, entries] : refused) {
    auto v = JudgeGitDirListing(part, entries);
    EXPECT_TRUE(v.refused.has_value()) << static_cast<int>(part) << " " << entries.back().name;
  }
}

// The state of a bisect, or of a rebase, am, cherry-pick or revert stopped on a conflict, as git
// 2.39 leaves it: the files that could name a command handed on to be read.
TEST(JudgeGitDirListing, AStoppedRebaseBisectOrCherryPickIsClosed) {
  auto top = JudgeGitDirListing(GitDirPart::kGitDir, {{"HEAD", F},
                                                      {"BISECT_START", F},
                                                      {"BISECT_LOG", F},
                                                      {"BISECT_NAMES", F},
                                                      {"BISECT_TERMS", F},
                                                      {"BISECT_EXPECTED_REV", F},
                                                      {"BISECT_ANCESTORS_OK", F},
                                                      {"CHERRY_PICK_HEAD", F},
                                                      {"REVERT_HEAD", F},
                                                      {"REBASE_HEAD", F},
                                                      {"MERGE_MSG", F},
                                                      {"AUTO_MERGE", F},
                                                      {"MERGE_RR", F},
                                                      {"rr-cache", D},
                                                      {"rebase-merge", D},
                                                      {"rebase-apply", D},
                                                      {"sequencer", D}});
  ASSERT_FALSE(top.refused.has_value()) << *top.refused;
  EXPECT_EQ(top.contents, (std::vector<std::string>{"BISECT_START", "MERGE_RR"}));
  ASSERT_EQ(top.descend.size(), 4u);
  EXPECT_EQ(top.descend[1], std::make_pair(std::string("rebase-merge"), GitDirPart::kSequencer));
  auto merge = JudgeGitDirListing(GitDirPart::kSequencer, {{"author-script", F},
                                                           {"done", F},
                                                           {"drop_redundant_commits", F},
                                                           {"end", F},
                                                           {"git-rebase-todo", F},
                                                           {"git-rebase-todo.backup", F},
                                                           {"head-name", F},
                                                           {"interactive", F},
                                                           {"message", F},
                                                           {"msgnum", F},
                                                           {"no-reschedule-failed-exec", F},
                                                           {"onto", F},
                                                           {"orig-head", F},
                                                           {"patch", F},
                                                           {"quiet", F},
                                                           {"stopped-sha", F},
                                                           {"strategy", F},
                                                           {"strategy_opts", F},
                                                           {"autostash", F},
                                                           {"gpg_sign_opt", F}});
  ASSERT_FALSE(merge.refused.has_value()) << *merge.refused;
  EXPECT_EQ(merge.contents,
            (std::vector<std::string>{"done", "git-rebase-todo", "git-rebase-todo.backup",
                                      "strategy", "autostash", "gpg_sign_opt"}));
  auto apply = JudgeGitDirListing(GitDirPart::kSequencer, {{"0001", F},
                                                           {"abort-safety", F},
                                                           {"apply-opt", F},
                                                           {"final-commit", F},
                                                           {"keep", F},
                                                           {"last", F},
                                                           {"messageid", F},
                                                           {"next", F},
                                                           {"original-commit", F},
                                                           {"patch-merge-index", F},
                                                           {"quoted-cr", F},
                                                           {"rebasing", F},
                                                           {"scissors", F},
                                                           {"sign", F},
                                                           {"threeway", F},
                                                           {"utf8", F}});
  ASSERT_FALSE(apply.refused.has_value()) << *apply.refused;
  EXPECT_EQ(apply.contents, std::vector<std::string>{"apply-opt"});
  auto pick = JudgeGitDirListing(GitDirPart::kSequencer,
                                 {{"abort-safety", F}, {"head", F}, {"todo", F}, {"opts", F}});
  ASSERT_FALSE(pick.refused.has_value()) << *pick.refused;
  EXPECT_EQ(pick.contents, (std::vector<std::string>{"todo", "opts"}));
  // A linked worktree keeps its own.
  auto wt = JudgeGitDirListing(GitDirPart::kWorktree, {{"HEAD", F},
                                                       {"commondir", F},
                                                       {"BISECT_LOG", F},
                                                       {"rebase-merge", D},
                                                       {"config.worktree", F}});
  EXPECT_FALSE(wt.refused.has_value()) << *wt.refused;
}

// An index of `names` as git writes one (SHA-1 ids, entries of mode `mode`), version 2 or 4,
// with `extensions` (signature + size + data) after the entries and a checksum-sized tail.
std::string Index(const std::vector<std::string>& names, uint32_t version = 2,
                  const std::string& extensions = "", uint32_t mode = 0100644, size_t id = 20) {
  auto be32 = [](uint32_t v) {
    return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                       static_cast<char>(v >> 8), static_cast<char>(v)};
  };
  std::string out = "DIRC" + be32(version) + be32(static_cast<uint32_t>(names.size()));
  std::string previous;
  for (const auto& name : names) {
    std::string e(24, '\0');
    e += be32(mode) + std::string(12, '\0') + std::string(id, '\x11');
    const size_t len = std::min<size_t>(name.size(), 0xfff);
    e += std::string{static_cast<char>(len >> 8), static_cast<char>(len & 0xff)};
    if (version == 4) {
      e += '\x00';  // drop nothing: the whole name follows
      e += name;
      e += '\0';
      if (!previous.empty()) {
        // Drop the whole previous name (its length as git's varint, under 128 here).
        e[e.size() - name.size() - 2] = static_cast<char>(previous.size());
      }
    } else {
      e += name;
      e.append(8 - (e.size() % 8), '\0');
    }
    out += e;
    previous = name;
  }
  return out + extensions + std::string(id, '\x22');
}

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string Extension(const std::string& sig, const std::string& data) {
  const auto n = static_cast<uint32_t>(data.size());
  return sig +
         std::string{static_cast<char>(n >> 24), static_cast<char>(n >> 16),
                     static_cast<char>(n >> 8), static_cast<char>(n)} +
         data;
}

// Review s14: git reads an index's paths without verify_path, and `git restore .` writes them.
TEST(GitStateFileNotInert, AnIndexMayNameOnlyPathsInItsWorkingTree) {
  for (uint32_t version : {2u, 3u, 4u}) {
    EXPECT_FALSE(GitStateFileNotInert("index", Index({"README", "a/b/c.txt"}, version))) << version;
    for (const char* bad : {"../.git/hooks/pre-commit", "/etc/passwd", "a/../../x", ".git/config",
                            "sub/.GIT/hooks/x", "a//b", "./a", "sub/.git./x"}) {
      auto why = GitStateFileNotInert("index", Index({"README", bad}, version));
      ASSERT_TRUE(why) << version << " " << bad;
      EXPECT_NE(why->find("outside its working tree"), std::string::npos) << *why;
    }
  }
  EXPECT_FALSE(GitStateFileNotInert("sharedindex.0123", Index({"ok"})));
  EXPECT_TRUE(GitStateFileNotInert("sharedindex.0123", Index({"../x"})));
  // A sparse directory entry ends in `/`.
  EXPECT_FALSE(GitStateFileNotInert("index", Index({"dir/"}, 2, "", 040000)));
  EXPECT_TRUE(GitStateFileNotInert("index", Index({"../dir/"}, 2, "", 040000)));
  // Extensions: data ones pass, resolve-undo paths are judged, others refused.
  EXPECT_FALSE(GitStateFileNotInert("index", Index({"a"}, 2, Extension("TREE", "xyz"))));
  using namespace std::string_literals;
  const std::string reuc_ok = "a\0"s + "100644\0"s + "0\0"s + "0\0"s + std::string(20, '\x33');
  EXPECT_FALSE(GitStateFileNotInert("index", Index({"a"}, 2, Extension("REUC", reuc_ok))));
  const std::string reuc_bad = "../h\0"s + "100644\0"s + "0\0"s + "0\0"s + std::string(20, '\x33');
  EXPECT_TRUE(GitStateFileNotInert("index", Index({"a"}, 2, Extension("REUC", reuc_bad))));
  EXPECT_TRUE(GitStateFileNotInert("index", Index({"a"}, 2, Extension("link", "x"))));
  EXPECT_TRUE(GitStateFileNotInert("index", Index({"a"}, 2, Extension("UNTR", "x"))));
  // Not an index, or one that ends inside an entry: not read, so not closed.
  EXPECT_TRUE(GitStateFileNotInert("index", "DIRC"));
  EXPECT_TRUE(GitStateFileNotInert("index", Index({"a"}).substr(0, 30)));
  EXPECT_TRUE(GitStateFileNotInert("index", "not an index at all, just text"));
}

// Review s15: a git reading with threads (index.threads) takes the entries from the offset
// table's blocks and the extensions from where the end-of-index entry points: an entry hidden in
// a cache tree's payload, pointed at, was the only one git saw.
TEST(GitStateFileNotInert, AnIndexReadWithThreadsHoldsTheSameEntries) {
  // Version 2, one-letter names: every entry 64 bytes from offset 12.
  auto eoie = [](uint32_t at) { return Extension("EOIE", Be32(at) + std::string(20, '\x44')); };
  auto ieot = [](std::vector<std::pair<uint32_t, uint32_t>> blocks) {
    std::string data = Be32(1);
    for (auto [offset, n] : blocks) data += Be32(offset) + Be32(n);
    return Extension("IEOT", data);
  };
  const uint32_t end = 12 + 3 * 64;
  EXPECT_FALSE(GitStateFileNotInert(
      "index", Index({"a", "b", "c"}, 2, ieot({{12, 2}, {12 + 2 * 64, 1}}) + eoie(end))));
  EXPECT_FALSE(GitStateFileNotInert("index", Index({"a", "b", "c"}, 2, eoie(end))));
  struct Bad {
    const char* what;
    std::string extensions;
  };
  const std::vector<Bad> bad = {
      {"end-of-index elsewhere", eoie(end - 64)},
      {"end-of-index past the entries", Extension("TREE", "xyz") + eoie(end + 11)},
      {"a block inside an entry", ieot({{12, 1}, {12 + 64 + 8, 2}}) + eoie(end)},
      {"a block in an extension", ieot({{12, 3}, {end + 8, 1}}) + eoie(end)},
      {"blocks short of the entries", ieot({{12, 2}}) + eoie(end)},
      {"blocks past the entries", ieot({{12, 2}, {12 + 2 * 64, 2}}) + eoie(end)},
      {"a table of another version", Extension("IEOT", Be32(2) + Be32(12) + Be32(3)) + eoie(end)},
      {"a torn table", Extension("IEOT", Be32(1) + Be32(12)) + eoie(end)},
  };
  for (const auto& b : bad) {
    auto why = GitStateFileNotInert("index", Index({"a", "b", "c"}, 2, b.extensions));
    EXPECT_TRUE(why.has_value()) << b.what;
  }
  // git reads an end-of-index entry at a fixed place before the checksum, not where a walk of
  // the extensions ends: one there inside a cache tree's bytes is not the index's own.
  const std::string fake = "EOIE" + Be32(24) + Be32(12) + std::string(20, '\x44');
  auto hidden = GitStateFileNotInert("index", Index({"a", "b", "c"}, 2, Extension("TREE", fake)));
  ASSERT_TRUE(hidden.has_value());
  EXPECT_NE(hidden->find("not one of its own"), std::string::npos) << *hidden;
  EXPECT_TRUE(GitStateFileNotInert(
      "index", Index({"a", "b", "c"}, 2, eoie(end) + Extension("TREE", "xyz"))));  // EOIE not last
  // Version 4: a block starts a name afresh, so its first entry must keep nothing of the one
  // before (git's writer makes it so); Index() writes every name whole.
  const uint32_t v4_end = 12 + 3 * (62 + 1 + 2);
  EXPECT_FALSE(GitStateFileNotInert(
      "index", Index({"a", "b", "c"}, 4, ieot({{12, 1}, {12 + 65, 2}}) + eoie(v4_end))));
  // "ab" then "ac" kept as "a" + "c": a block there reads "c" with threads, "ac" without.
  auto entry4 = [](char drop, const std::string& rest, size_t length) {
    return std::string(24, '\0') + Be32(0100644) + std::string(12, '\0') + std::string(20, '\x11') +
           std::string{static_cast<char>(length >> 8), static_cast<char>(length & 0xff)} + drop +
           rest + '\0';
  };
  const std::string first = entry4(0, "ab", 2);
  const std::string second = entry4(1, "c", 2);
  const std::string head = "DIRC" + Be32(4) + Be32(2) + first + second;
  const auto at2 = static_cast<uint32_t>(12 + first.size());
  EXPECT_FALSE(GitStateFileNotInert("index", head + std::string(20, '\x22')));
  EXPECT_TRUE(GitStateFileNotInert("index", head + ieot({{12, 1}, {at2, 1}}) +
                                                eoie(static_cast<uint32_t>(head.size())) +
                                                std::string(20, '\x22')));
}

// Review s15: git takes a name as the C string its length ends; `a/.gi` then `t` is `a/.git`.
TEST(GitStateFileNotInert, AnIndexNameEndsWithANul) {
  std::string index = Index({"a/.git"});
  ASSERT_FALSE(GitStateFileNotInert("index", index).has_value() &&
               GitStateFileNotInert("index", index)->find("NUL") != std::string::npos);
  index[12 + 61] = 5;  // the name's length: "a/.gi", and `t` where its NUL should be
  auto why = GitStateFileNotInert("index", index);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("not NUL-ended"), std::string::npos) << *why;
  EXPECT_FALSE(GitStateFileNotInert("index", Index({"a/.gi"})));
}

// Review s15: the index was read with 32-byte ids when any objectformat said sha256, git takes
// the last one: an index both ways read named `../.git/hooks/pre-commit` to git only.
TEST(GitObjectIdBytes, TheFormatIsNamedOnceAndOneGitKnows) {
  struct Case {
    const char* config;
    int bytes;  // 0: refused
  };
  const std::vector<Case> cases = {
      {"", 20},
      {"[core]\n\trepositoryformatversion = 1\n", 20},
      {"[extensions]\n\tobjectformat = sha256\n", 32},
      {"[extensions]\n\tobjectFormat = sha1\n", 20},
      {"[extensions]\n\tobjectformat = sha256\n\tobjectformat = sha1\n", 0},
      {"[extensions]\n\tobjectformat = sha256\n[extensions]\n\tobjectformat = sha256\n", 0},
      {"[extensions]\n\tobjectformat = SHA256\n", 0},
      {"[extensions]\n\tobjectformat\n", 0},
      {"[extensions]\n\tobjectformat = sha512\n", 0},
      {"[extensions \"x\"]\n\tobjectformat = sha256\n", 20},
  };
  for (const auto& c : cases) {
    auto entries = ParseGitConfig(c.config);
    ASSERT_TRUE(entries) << c.config;
    auto bytes = GitObjectIdBytes(*entries);
    if (c.bytes == 0) {
      EXPECT_FALSE(bytes) << c.config;
    } else {
      ASSERT_TRUE(bytes) << c.config << bytes.error().message;
      EXPECT_EQ(*bytes, static_cast<size_t>(c.bytes)) << c.config;
    }
  }
}

TEST(GitStateFileNotInert, WhatCouldNameACommandIsRefused) {
  struct Case {
    const char* name;
    std::string text;
    bool inert;
  };
  const std::vector<Case> cases = {
      {"git-rebase-todo", "pick 8f4843b s\n# exec is a comment here\nbreak\n", true},
      {"git-rebase-todo", "pick 1 a\nlabel onto\nreset onto\nmerge -C 2 topic\n", true},
      {"git-rebase-todo", "pick 1 a\nexec make\n", false},
      {"git-rebase-todo", "x make", false},
      {"git-rebase-todo", "  \tx\tmake\n", false},
      {"git-rebase-todo", "exec\n", false},
      {"git-rebase-todo", "\rexec make\n", false},        // over-matched: git would not parse it
      {"git-rebase-todo", "xargs 1\nexecute 2\n", true},  // no such commands
      {"git-rebase-todo.backup", "exec make\n", false},
      {"done", "pick 1 a\nexec make\n", false},
      {"todo", "pick 1 a\n", true},
      {"todo", "revert 1 a\nx sh\n", false},
      {"todo", std::string("pick 1 a\0\nx sh\n", 15), false},  // past a NUL too
      {"strategy", "ort\n", true},
      {"strategy", "recursive", true},
      {"strategy", "evil\n", false},
      {"strategy", "../../tmp/x", false},
      {"strategy", "ort \n", false},   // git strips one newline only: git-merge-'ort '
      {"strategy", "ort\n\n", false},  // git-merge-'ort\n'
      {"strategy", "ort\r\n", true},
      {"MERGE_RR", "", true},
      {"MERGE_RR", std::string("abc.-1\t../.git/config\0", 23), false},
      {"gpg_sign_opt", "", true},
      {"gpg_sign_opt", "-SABCDEF", false},
      {"apply-opt", "", true},
      {"apply-opt", "--directory=x", false},
      {"autostash", "8f4843bf1b2440b5b756cea25730577170e853da\n", true},
      {"autostash", "--index\n", false},
      {"autostash", "stash@{0}\n", false},
      {"BISECT_START", "main\n", true},
      {"BISECT_START", "--orphan=x\n", false},
      {"opts", "[options]\n\tedit = false\n\tmainline = 1\n", true},
      {"opts", "[options]\n\tstrategy = ort\n\tstrategy-option = theirs\n", true},
      {"opts", "[options]\n\tstrategy = evil\n", false},
      {"opts", "[options]\n\tgpg-sign = KEY\n", false},
      {"opts", "[include]\n\tpath = /x\n", false},
      {"opts", "[options \"x\"]\n\tedit = false\n", false},
      {"opts", "[options\n", false},           // git cannot read it
      {"author-script", "exec make\n", true},  // not judged: data
      {"MERGE_AUTOSTASH", "8f4843bf1b2440b5b756cea25730577170e853da\n", true},
      {"MERGE_AUTOSTASH", "--index\n", false},
      {"commondir", "../..\n", true},
      {"commondir", "../../../innocent\n", false},
      {"commondir", "/w/other/.git\n", false},
      {"gitdir", "/w/wt/.git\n", true},
      {"gitdir", "w/wt/.git\n", false},
      {"gitdir", "/w/../x/.git\n", false},
      {"gitdir", "/w/wt\n", false},
      {"gitdir", "/.git\n", false},
  };
  for (const auto& c : cases) {
    auto why = GitStateFileNotInert(c.name, c.text);
    EXPECT_EQ(!why.has_value(), c.inert) << c.name << ": " << c.text << " " << why.value_or("");
  }
}

// objects/, refs/, logs/, lfs/ take any names: no repository may hide there (review F5).
TEST(JudgeGitDirListing, GitsDataHidesNoRepository) {
  for (const E& entries : std::vector<E>{
           {{"x", D}, {".git", D}},
           {{".git", F}},
           {{".GIT", D}},
           {{".Git.", D}},                                             // NTFS's trailing dot
           {{"\xe2\x80\x8c.git", D}},                                  // HFS+'s ignorable U+200C
           {{"HEAD", F}, {"objects", D}, {"refs", D}, {"config", F}},  // of git dir shape
           {{"HEAD", F}, {"commondir", F}},                            //
           {{"head", F}, {"OBJECTS", D}, {"refs", F}},                 // folded, an exec file
       }) {
    auto v = JudgeGitDirListing(GitDirPart::kData, entries);
    EXPECT_TRUE(v.refused.has_value()) << entries.back().name;
  }
  // Benign: a real clone's objects/, logs/, refs/, lfs/.
  for (const E& entries : std::vector<E>{
           {{"pack", D}, {"info", D}, {"ab", D}, {"cd", D}},
           {{"HEAD", F}, {"refs", D}},  // logs/
           {{"heads", D}, {"tags", D}, {"remotes", D}, {"bisect", D}},
           {{"objects", D}, {"tmp", D}, {"incomplete", D}},  // lfs/
           {{"gitignore", F}, {"git", D}, {".gitx", D}},
       }) {
    auto v = JudgeGitDirListing(GitDirPart::kData, entries);
    EXPECT_FALSE(v.refused.has_value()) << *v.refused;
  }
}

// A directory of git dir shape the walk found (a working directory may be one): what git reads
// there is judged as in a git dir, the rest left to the walk.
TEST(JudgeGitDirListing, ADirectoryOfGitDirShapeIsJudgedByWhatGitReadsThere) {
  auto ok = JudgeGitDirListing(GitDirPart::kShapedDir, {{"HEAD", F},
                                                        {"objects", D},
                                                        {"refs", D},
                                                        {"src", D},
                                                        {"README", F},
                                                        {"link", L},
                                                        {"Anvil.toml", F}});
  EXPECT_FALSE(ok.refused.has_value()) << *ok.refused;
  EXPECT_EQ(ok.descend.size(), 2u);
  // git init's empty branches/ is git's own, as in a git dir.
  auto init = JudgeGitDirListing(GitDirPart::kShapedDir, {{"HEAD", F}, {"branches", D}});
  EXPECT_FALSE(init.refused.has_value()) << *init.refused;
  for (const E& entries : std::vector<E>{{{"HEAD", F}, {"config", L}},
                                         {{"HEAD", F}, {"config", O}},
                                         {{"HEAD", F}, {"rebase-merge", D}},
                                         {{"HEAD", F}, {"sequencer", D}},
                                         {{"HEAD", F}, {"rebase-apply", D}},
                                         {{"HEAD", F}, {"BISECT_START", F}},
                                         {{"HEAD", F}, {"remotes", F}},
                                         {{"HEAD", F}, {"BISECT_LOG", F}},
                                         {{"HEAD", F}, {"hooks", L}}}) {
    EXPECT_TRUE(JudgeGitDirListing(GitDirPart::kShapedDir, entries).refused.has_value())
        << entries.back().name;
  }
}

TEST(GitDirNotClosed, ListsTheGitDirDownWithoutFollowingALink) {
  FakeTree t;
  t.GitInit("/w/ok");
  t.File("/w/ok/.git/objects/ab/cdef", "x");
  t.Dir("/w/ok/.git/branches");
  t.File("/w/ok/.git/modules/lib/HEAD", "ref: refs/heads/main\n");
  t.Dir("/w/ok/.git/modules/lib/objects");
  t.Dir("/w/ok/.git/modules/lib/refs/heads");
  t.File("/w/ok/.git/modules/lib/config", "[core]\n");
  t.GitInit("/w/cfg");
  t.Remove("/w/cfg/.git/config");
  t.Link("/w/cfg/.git/config", "/home/u/.local/state/anvil/homes/w-1/home/cfg");
  t.GitInit("/w/rem");
  t.File("/w/rem/.git/remotes/origin", "URL: /elsewhere\n");
  t.GitInit("/w/rb");
  t.File("/w/rb/.git/rebase-merge/git-rebase-todo", "exec x\n");
  t.GitInit("/w/sm");
  t.File("/w/sm/.git/modules/lib/HEAD", "ref: refs/heads/main\n");
  t.Dir("/w/sm/.git/modules/lib/objects");
  t.Dir("/w/sm/.git/modules/lib/refs");
  t.Link("/w/sm/.git/modules/lib/config", "/elsewhere/cfg");
  t.GitInit("/w/deep");
  t.Link("/w/deep/.git/objects/ab", "/elsewhere");
  GitFs fs = t.Fs();
  EXPECT_EQ(GitDirNotClosed("/w/ok/.git", GitDirPart::kGitDir, fs), std::nullopt);
  for (const char* dir :
       {"/w/cfg/.git", "/w/rem/.git", "/w/rb/.git", "/w/sm/.git", "/w/deep/.git"}) {
    auto why = GitDirNotClosed(dir, GitDirPart::kGitDir, fs);
    ASSERT_TRUE(why.has_value()) << dir;
    EXPECT_NE(why->find("in its git dir"), std::string::npos) << *why;
  }
  EXPECT_NE(GitDirNotClosed("/w/rem/.git", GitDirPart::kGitDir, fs)->find("remotes/origin"),
            std::string::npos);
  // Past the bound on entries: not closed, as one that cannot be read in full.
  EXPECT_TRUE(GitDirNotClosed("/w/ok/.git", GitDirPart::kGitDir, fs, 3).has_value());
  // A `.git` directory git would not take for a git dir (no HEAD): what git does not read
  // there is left to the walk ...
  t.File("/w/nohead/.git/sub/.git/hooks/pre-commit", "#!/bin/sh\n");
  EXPECT_EQ(GitDirNotClosed("/w/nohead/.git", GitDirPart::kGitDir, fs), std::nullopt);
  // ... but a link where git reads its config is refused (review: a later `git init` by the
  // user makes it a git dir, and git writes its config through the link).
  t.Link("/w/nohead/.git/config", "/elsewhere/cfg");
  EXPECT_TRUE(GitDirNotClosed("/w/nohead/.git", GitDirPart::kGitDir, fs).has_value());
  // A stopped rebase is closed; one whose todo runs a command is not; nor a repository hidden
  // in lfs/ or objects/.
  t.GitInit("/w/stop");
  t.File("/w/stop/.git/rebase-merge/git-rebase-todo", "pick 1 a\n");
  t.File("/w/stop/.git/rebase-merge/done", "pick 2 b\n");
  t.File("/w/stop/.git/BISECT_START", "main\n");
  t.File("/w/stop/.git/lfs/objects/ab/cd/abcd", "data");
  EXPECT_EQ(GitDirNotClosed("/w/stop/.git", GitDirPart::kGitDir, fs), std::nullopt);
  t.File("/w/stop/.git/rebase-merge/done", "pick 2 b\nexec make\n");
  auto why = GitDirNotClosed("/w/stop/.git", GitDirPart::kGitDir, fs);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("rebase-merge/done line 2"), std::string::npos) << *why;
  t.GitInit("/w/lfs");
  t.File("/w/lfs/.git/lfs/x/.git/HEAD", "ref: refs/heads/main\n");
  t.GitInit("/w/obj");
  t.File("/w/obj/.git/objects/y/HEAD", "ref: refs/heads/main\n");
  t.Dir("/w/obj/.git/objects/y/objects");
  t.Dir("/w/obj/.git/objects/y/refs");
  t.File("/w/obj/.git/objects/y/config", "[core]\n\tfsmonitor = /x\n");
  for (const char* dir : {"/w/lfs/.git", "/w/obj/.git"}) {
    auto hidden = GitDirNotClosed(dir, GitDirPart::kGitDir, fs);
    ASSERT_TRUE(hidden.has_value()) << dir;
    EXPECT_NE(hidden->find("hidden"), std::string::npos) << *hidden;
  }
  // A git dir that is itself a symlink.
  t.Link("/w/linked", "/w/ok/.git");
  EXPECT_TRUE(GitDirNotClosed("/w/linked", GitDirPart::kGitDir, fs).has_value());
}

// Each git dir's index is read with the object ids its own config names: a SHA-256 repository
// with a SHA-1 submodule, and the other way round; a linked worktree with its repository's.
TEST(GitDirNotClosed, EachIndexIsReadWithItsGitDirsObjectIds) {
  FakeTree t;
  const std::string sha256 =
      "[core]\n\trepositoryformatversion = 1\n[extensions]\n"
      "\tobjectformat = sha256\n";
  const std::string sha1 = "[core]\n\trepositoryformatversion = 0\n";
  auto module = [&](const std::string& git_dir, const std::string& config) {
    t.File(git_dir + "/modules/lib/HEAD", "ref: refs/heads/main\n");
    t.Dir(git_dir + "/modules/lib/objects");
    t.Dir(git_dir + "/modules/lib/refs/heads");
    t.File(git_dir + "/modules/lib/config", config);
  };
  t.GitInit("/w/a");
  t.File("/w/a/.git/config", sha256);
  t.File("/w/a/.git/index", Index({"ok"}, 2, "", 0100644, 32));
  module("/w/a/.git", sha1);
  t.File("/w/a/.git/modules/lib/index", Index({"ok"}));
  t.GitInit("/w/b");
  module("/w/b/.git", sha256);
  t.File("/w/b/.git/index", Index({"ok"}));
  t.File("/w/b/.git/modules/lib/index", Index({"ok"}, 2, "", 0100644, 32));
  GitFs fs = t.Fs();
  EXPECT_EQ(GitDirNotClosed("/w/a/.git", GitDirPart::kGitDir, fs), std::nullopt);
  EXPECT_EQ(GitDirNotClosed("/w/b/.git", GitDirPart::kGitDir, fs), std::nullopt);
  // The submodule's index names a path outside, read with its own (SHA-1) ids.
  t.File("/w/a/.git/modules/lib/index", Index({"ok", "../../.git/hooks/pre-commit"}));
  auto why = GitDirNotClosed("/w/a/.git", GitDirPart::kGitDir, fs);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("modules/lib/index"), std::string::npos) << *why;
  // The format named twice: git takes the last, so no one length is the one git reads with.
  t.File("/w/b/.git/config", sha256 + "[extensions]\n\tobjectformat = sha1\n");
  why = GitDirNotClosed("/w/b/.git", GitDirPart::kGitDir, fs);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("more than once"), std::string::npos) << *why;
  // A linked worktree's own git dir: its index has its repository's ids.
  t.File("/w/a/.git/worktrees/wt/HEAD", "ref: refs/heads/x\n");
  t.File("/w/a/.git/worktrees/wt/commondir", "../..\n");
  t.File("/w/a/.git/worktrees/wt/gitdir", "/w/wt/.git\n");
  t.File("/w/a/.git/worktrees/wt/index", Index({"ok"}, 2, "", 0100644, 32));
  EXPECT_EQ(
      GitDirNotClosed("/w/a/.git/worktrees/wt", GitDirPart::kWorktree, fs, 1000000, "/w/a/.git"),
      std::nullopt);
  t.File("/w/a/.git/worktrees/wt/index",
         Index({"ok", "../../.git/hooks/pre-commit"}, 2, "", 0100644, 32));
  EXPECT_TRUE(
      GitDirNotClosed("/w/a/.git/worktrees/wt", GitDirPart::kWorktree, fs, 1000000, "/w/a/.git")
          .has_value());
}

// Review s15b: `git worktree repair` writes a `.git` file where a linked worktree's gitdir says,
// and `git multi-pack-index expire` unlinks the packs a multi-pack-index names, `../` and all.
TEST(GitDirNotClosed, AWorktreesGitdirAndAMultiPackIndexNameNothingOutside) {
  FakeTree t;
  t.GitInit("/w/a");
  t.File("/w/a/.git/worktrees/wt/HEAD", "ref: refs/heads/x\n");
  t.File("/w/a/.git/worktrees/wt/commondir", "../..\n");
  t.File("/w/a/.git/worktrees/wt/gitdir", "/w/wt/.git\n");
  t.File("/w/wt/.git", "gitdir: /w/a/.git/worktrees/wt\n");
  t.File("/w/b/.git", "gitdir: /w/b-repo\n");
  t.File("/elsewhere/x/.keep", "");
  GitFs fs = t.Fs();
  const std::vector<std::string> roots = {"/w"};
  EXPECT_EQ(GitDirNotClosed("/w/a/.git", GitDirPart::kGitDir, fs, 1000000, "", roots),
            std::nullopt);
  // Not made yet (or pruned): repair writes nothing outside.
  t.Remove("/w/wt/.git");
  EXPECT_EQ(GitDirNotClosed("/w/a/.git", GitDirPart::kGitDir, fs, 1000000, "", roots),
            std::nullopt);
  for (const char* gitdir : {"/elsewhere/x/.git\n", "/w/b/.git\n"}) {
    t.File("/w/a/.git/worktrees/wt/gitdir", gitdir);
    auto why = GitDirNotClosed("/w/a/.git", GitDirPart::kGitDir, fs, 1000000, "", roots);
    ASSERT_TRUE(why.has_value()) << gitdir;
    EXPECT_NE(why->find("worktrees/wt/gitdir"), std::string::npos) << *why;
  }
  t.File("/w/a/.git/worktrees/wt/gitdir", "/w/wt/.git\n");
  t.File("/w/a/.git/objects/pack/pack-1.idx", "x");
  EXPECT_EQ(GitDirNotClosed("/w/a/.git", GitDirPart::kGitDir, fs, 1000000, "", roots),
            std::nullopt);
  t.File("/w/a/.git/objects/pack/multi-pack-index", "MIDX");
  auto why = GitDirNotClosed("/w/a/.git", GitDirPart::kGitDir, fs, 1000000, "", roots);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("multi-pack-index"), std::string::npos) << *why;
}

}  // namespace
}  // namespace git_dir_closed_test
}  // namespace anvil
