// policy/git_dir_closed.h: what a git dir the command made may hold (red team s13: a config
// that is a symlink into the sandbox home or a FIFO, a legacy remotes/ or branches/ file, a
// rebase todo with `exec` lines), each refused next to what git itself writes there.
#include "policy/git_dir_closed.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fake_git_tree.h"

namespace anvil {
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
      {GitDirPart::kGitDir, {{"rebase-merge", D}}},         // a todo with exec lines
      {GitDirPart::kGitDir, {{"rebase-apply", D}}},         //
      {GitDirPart::kGitDir, {{"sequencer", D}}},            //
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
      {GitDirPart::kWorktree, {{"HEAD", F}, {"rebase-merge", D}}},  //
      {GitDirPart::kWorktree, {{"config", F}}},                     // not a worktree's
  };
  for (const auto& [part, entries] : refused) {
    auto v = JudgeGitDirListing(part, entries);
    EXPECT_TRUE(v.refused.has_value()) << static_cast<int>(part) << " " << entries.back().name;
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
  for (const E& entries : std::vector<E>{{{"HEAD", F}, {"config", L}},
                                         {{"HEAD", F}, {"config", O}},
                                         {{"HEAD", F}, {"rebase-merge", D}},
                                         {{"HEAD", F}, {"sequencer", D}},
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
  // A repository hidden in lfs/ or objects/ (review F5).
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

}  // namespace
}  // namespace anvil
