// The read plan of a sys.exec tool (fs/read_plan.h): grant + facts about the workspace's
// directories -> what the tool's view holds. Pure: the facts are a table here.
#include "fs/read_plan.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fs/path_glob.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace read_plan_test {
namespace {

using K = ReadOpKind;

WalkEntry File(std::string name, std::uint64_t nlink = 1) {
  WalkEntry e;
  e.name = std::move(name);
  e.kind = EntryKind::kFile;
  e.nlink = nlink;
  return e;
}
WalkEntry Dir(std::string name) {
  WalkEntry e;
  e.name = std::move(name);
  e.kind = EntryKind::kDir;
  return e;
}
WalkEntry Link(std::string name, std::string target) {
  WalkEntry e;
  e.name = std::move(name);
  e.kind = EntryKind::kSymlink;
  e.link_target = std::move(target);
  return e;
}
WalkEntry Other(std::string name) {
  WalkEntry e;
  e.name = std::move(name);
  e.kind = EntryKind::kOther;
  return e;
}
WalkEntry BadName(WalkEntry e) {
  e.valid_name = false;
  return e;
}

// A workspace:
//   README.md  NOTES.md  .env  key (2 links)  fifo  link.md -> docs/guide.md  out.md -> /etc/passwd
//   up.md -> ../elsewhere/x.md  round.md -> docs/../README.md
//   docs/guide.md  docs/img/a.png  docs/bad\x01name
//   src/a.c  src/b.c  src/hard.c (2 links)  src/pipe  src/sub/c.c  src/ln -> ../.env
//   src/<bad name dir>/x
//   config/prod.ini
//   .git/config  .git/hooks/pre-commit
//   empty/
class Workspace {
 public:
  Workspace() {
    dirs_["."] = {File(".env"),
                  Dir(".git"),
                  File("NOTES.md"),
                  File("README.md"),
                  Dir("config"),
                  Dir("docs"),
                  Dir("empty"),
                  Other("fifo"),
                  File("key", 2),
                  Link("link.md", "docs/guide.md"),
                  Link("out.md", "/etc/passwd"),
                  Link("up.md", "../elsewhere/x.md"),
                  Link("round.md", "docs/../README.md"),
                  Dir("src")};
    dirs_["docs"] = {BadName(File("bad\x01name")), File("guide.md"), Dir("img")};
    dirs_["docs/img"] = {File("a.png")};
    dirs_["src"] = {BadName(Dir("bad\x02")), File("a.c"),   File("b.c"), File("hard.c", 3),
                    Link("ln", "../.env"),   Other("pipe"), Dir("sub")};
    dirs_["src/sub"] = {File("c.c")};
    dirs_["config"] = {File("prod.ini")};
    dirs_[".git"] = {File("config"), Dir("hooks")};
    dirs_[".git/hooks"] = {File("pre-commit")};
    dirs_["empty"] = {};
  }
  DirFactsLookup Lookup() {
    return [this](const std::string& path) -> Result<const DirFacts*> {
      asked.push_back(path);
      auto it = dirs_.find(path);
      return it == dirs_.end() ? nullptr : &it->second;
    };
  }
  std::vector<ReadOp> Plan(const std::vector<std::string>& grant, ReadPlanOptions o = {}) {
    asked.clear();
    auto plan = PlanWorkspaceReads(grant, Lookup(), o);
    EXPECT_TRUE(plan) << plan.error().ToString();
    if (!plan) return {};
    EXPECT_TRUE(ValidateReadPlan(*plan)) << grant[0];
    return *plan;
  }
  std::map<std::string, DirFacts> dirs_;
  std::vector<std::string> asked;
};

using Ops = std::vector<ReadOp>;

TEST(ReadPlan, TheWholeTreeIsOneBindWithWhatSysFsReadRefusesMasked) {
  Workspace ws;
  EXPECT_EQ(ws.Plan({"**"}), (Ops{{K::kBindDir, ".", ""},
                                  {K::kMaskFile, "docs/bad\x01name", ""},
                                  {K::kMaskFile, "fifo", ""},
                                  {K::kMaskFile, "key", ""},
                                  {K::kMaskDir, "src/bad\x02", ""},
                                  {K::kMaskFile, "src/hard.c", ""},
                                  {K::kMaskFile, "src/pipe", ""}}));
  // Whole-bound trees are walked to the bottom (hard links can be anywhere), but not into a
  // directory whose name no sys.fs path can spell: it is hidden whole.
  EXPECT_EQ(ws.asked, (std::vector<std::string>{".", ".git", ".git/hooks", "config", "docs",
                                                "docs/img", "empty", "src", "src/sub"}));
}

TEST(ReadPlan, AGlobGrantShowsOnlyTheMatchingFilesNotItsLiteralPrefix) {
  Workspace ws;
  // "*.md": the top-level markdown files, and the links named *.md that stay in the workspace,
  // recreated: they resolve inside the view (where docs/guide.md is not, and README.md is). Not
  // .env, config, .git, docs; not the links that leave the workspace (sys.fs.read refuses them).
  EXPECT_EQ(ws.Plan({"*.md"}), (Ops{{K::kDir, ".", ""},
                                    {K::kBindFile, "NOTES.md", ""},
                                    {K::kBindFile, "README.md", ""},
                                    {K::kSymlink, "link.md", "docs/guide.md"},
                                    {K::kSymlink, "round.md", "docs/../README.md"}}));
  EXPECT_EQ(ws.asked, (std::vector<std::string>{"."}));
  // "docs/*.md": docs rebuilt with guide.md; nothing at the top.
  EXPECT_EQ(ws.Plan({"docs/*.md"}),
            (Ops{{K::kDir, ".", ""}, {K::kDir, "docs", ""}, {K::kBindFile, "docs/guide.md", ""}}));
  // "**/*.md": every directory is looked at; those without a markdown file are not shown.
  EXPECT_EQ(ws.Plan({"**/*.md"}), (Ops{{K::kDir, ".", ""},
                                       {K::kBindFile, "NOTES.md", ""},
                                       {K::kBindFile, "README.md", ""},
                                       {K::kDir, "docs", ""},
                                       {K::kBindFile, "docs/guide.md", ""},
                                       {K::kSymlink, "link.md", "docs/guide.md"},
                                       {K::kSymlink, "round.md", "docs/../README.md"}}));
  // A link in a subdirectory may climb back up, not above the root.
  EXPECT_EQ(ws.Plan({"src/*"}), (Ops{{K::kDir, ".", ""},
                                     {K::kDir, "src", ""},
                                     {K::kBindFile, "src/a.c", ""},
                                     {K::kBindFile, "src/b.c", ""},
                                     {K::kSymlink, "src/ln", "../.env"}}));
}

TEST(ReadPlan, ACoveredSubtreeIsBoundWholeAndTheRestIsRebuilt) {
  Workspace ws;
  EXPECT_EQ(ws.Plan({"src/**"}), (Ops{{K::kDir, ".", ""},
                                      {K::kBindDir, "src", ""},
                                      {K::kMaskDir, "src/bad\x02", ""},
                                      {K::kMaskFile, "src/hard.c", ""},
                                      {K::kMaskFile, "src/pipe", ""}}));
  EXPECT_EQ(ws.Plan({"src/*.c"}), (Ops{{K::kDir, ".", ""},
                                       {K::kDir, "src", ""},
                                       {K::kBindFile, "src/a.c", ""},
                                       {K::kBindFile, "src/b.c", ""}}));
  // Two grants: each part as its glob says.
  EXPECT_EQ(
      ws.Plan({"README.md", "config/**"}),
      (Ops{{K::kDir, ".", ""}, {K::kBindFile, "README.md", ""}, {K::kBindDir, "config", ""}}));
  // ".git" is read like any other name (sys.fs.read of .git/config is allowed by "**" too).
  EXPECT_EQ(ws.Plan({".git/**"}), (Ops{{K::kDir, ".", ""}, {K::kBindDir, ".git", ""}}));
}

TEST(ReadPlan, NothingGrantedLeavesAnEmptyWorkspace) {
  Workspace ws;
  EXPECT_EQ(ws.Plan({}), (Ops{{K::kDir, ".", ""}}));
  EXPECT_EQ(ws.Plan({"/etc/**", "../**", "a**"}), (Ops{{K::kDir, ".", ""}}));  // invalid globs
  EXPECT_EQ(ws.Plan({"nothing/here/**"}), (Ops{{K::kDir, ".", ""}}));
  EXPECT_EQ(ws.Plan({"empty/*"}), (Ops{{K::kDir, ".", ""}}));  // an empty directory is not shown
  EXPECT_EQ(ws.Plan({"empty/**"}), (Ops{{K::kDir, ".", ""}, {K::kBindDir, "empty", ""}}));
}

TEST(ReadPlan, HardLinkedFilesFollowTheGatewaysSetting) {
  Workspace ws;
  ReadPlanOptions allow;
  allow.allow_hardlinked = true;
  EXPECT_EQ(ws.Plan({"key", "src/*.c"}), (Ops{{K::kDir, ".", ""},
                                              {K::kDir, "src", ""},
                                              {K::kBindFile, "src/a.c", ""},
                                              {K::kBindFile, "src/b.c", ""}}));
  EXPECT_EQ(ws.Plan({"key", "src/*.c"}, allow), (Ops{{K::kDir, ".", ""},
                                                     {K::kBindLinkedFile, "key", ""},
                                                     {K::kDir, "src", ""},
                                                     {K::kBindLinkedFile, "src/a.c", ""},
                                                     {K::kBindLinkedFile, "src/b.c", ""},
                                                     {K::kBindLinkedFile, "src/hard.c", ""}}));
  EXPECT_EQ(ws.Plan({"src/**"}, allow), (Ops{{K::kDir, ".", ""},
                                             {K::kBindDir, "src", ""},
                                             {K::kMaskDir, "src/bad\x02", ""},
                                             {K::kMaskFile, "src/pipe", ""}}));
}

TEST(ReadPlan, SymlinksAreLeftOutWhenTheGatewayFollowsNone) {
  Workspace ws;
  ReadPlanOptions none;
  none.follow_symlinks = false;
  EXPECT_EQ(
      ws.Plan({"*.md"}, none),
      (Ops{{K::kDir, ".", ""}, {K::kBindFile, "NOTES.md", ""}, {K::kBindFile, "README.md", ""}}));
}

TEST(ReadPlan, DirectoriesThatVanishOrCannotBeReadAreNotShown) {
  Workspace ws;
  ws.dirs_.erase("src/sub");  // gone between its parent's listing and its own
  ws.dirs_.erase("docs");
  EXPECT_EQ(ws.Plan({"src/**"}), (Ops{{K::kDir, ".", ""},
                                      {K::kBindDir, "src", ""},
                                      {K::kMaskDir, "src/bad\x02", ""},
                                      {K::kMaskFile, "src/hard.c", ""},
                                      {K::kMaskFile, "src/pipe", ""},
                                      {K::kMaskDir, "src/sub", ""}}));
  EXPECT_EQ(ws.Plan({"docs/**"}), (Ops{{K::kDir, ".", ""}}));
}

TEST(ReadPlan, WhatLiesBeyondPathMaxIsHiddenWithTheDeepestSpellableDirectory) {
  // src/A/A/.../A: 16 levels of 250-byte names fit in PATH_MAX, the 17th does not. No path
  // spells what is down there, but a relative symlink operand (src/s -> the deep directory)
  // takes rg there through the bind: a hard link or a special file there must be hidden.
  const std::string a(250, 'a');
  std::string deep = "src";
  Workspace ws;
  ws.dirs_["src"] = {Dir(a), File("ok.c")};
  for (int i = 0; i < 16; ++i) {
    deep += "/" + a;
    ws.dirs_[deep] = {Dir(a), File("x")};
  }
  ASSERT_LE(deep.size(), kMaxWorkspacePathBytes);
  ASSERT_GT(deep.size() + 1 + a.size(), kMaxWorkspacePathBytes);
  ws.dirs_[deep + "/" + a] = {File("key", 2)};  // never asked for: beyond PATH_MAX
  for (auto beyond : {Dir(a), File(std::string(200, 'k'), 2), Other(std::string(200, 'p')),
                      BadName(File(std::string(200, 'b')))}) {
    ws.dirs_[deep] = {beyond, File("x")};
    Ops plan = ws.Plan({"src/**"});
    EXPECT_EQ(plan, (Ops{{K::kDir, ".", ""}, {K::kBindDir, "src", ""}, {K::kMaskDir, deep, ""}}))
        << beyond.name.substr(0, 3);
  }
  // Benign: a plain file or a symlink down there is the bound tree's own, like the rest of it.
  ws.dirs_[deep] = {File(std::string(200, 'f')), Link(std::string(200, 'l'), "x"), File("x")};
  EXPECT_EQ(ws.Plan({"src/**"}), (Ops{{K::kDir, ".", ""}, {K::kBindDir, "src", ""}}));
}

TEST(ReadPlan, BoundsFailTheCallWithALimitNamingThem) {
  Workspace ws;
  ReadPlanOptions few;
  few.max_mounts = 2;
  auto plan = PlanWorkspaceReads({"src/*.c", "*.md"}, ws.Lookup(), few);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().code, "limit");
  EXPECT_NE(plan.error().message.find("more than 2 separate mounts"), std::string::npos);
  few = {};
  few.max_ops = 3;
  plan = PlanWorkspaceReads({"**/*.md"}, ws.Lookup(), few);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("more than 3 entries"), std::string::npos);
  few = {};
  few.max_depth = 1;
  plan = PlanWorkspaceReads({"**"}, ws.Lookup(), few);
  ASSERT_FALSE(plan);
  EXPECT_NE(plan.error().message.find("deeper than 1 directories"), std::string::npos);
  // The lookup's own error (the walk's bounds) fails the plan as it is.
  DirFactsLookup failing = [](const std::string&) -> Result<const DirFacts*> {
    return Fail("limit", "walk bound");
  };
  plan = PlanWorkspaceReads({"**"}, failing);
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.error().ToString(), "limit: walk bound");
}

// Whatever the facts, a planned file is one sys.fs.read could read by that name, and nothing
// sys.fs.read can read is left out (under the default options).
TEST(ReadPlan, AgreesWithGrantAllowsForEveryFile) {
  Workspace ws;
  const std::vector<std::vector<std::string>> grants = {
      {"**"},       {"*.md"}, {"**/*.md"}, {"src/**"}, {"src/*.c"},   {"docs/**", "*.ini"},
      {"config/*"}, {"*"},    {"*/*"},     {"**/c.c"}, {"src/**/?.c"}};
  for (const auto& grant : grants) {
    auto ops = ws.Plan(grant);
    // What the view shows as a readable regular file: bound files, and every file beneath a
    // bound directory that is not masked.
    std::set<std::string> shown;
    std::map<std::string, K> by_path;
    for (const auto& op : ops) by_path[op.path] = op.kind;
    std::function<void(const std::string&, bool)> walk = [&](const std::string& dir, bool bound) {
      auto it = ws.dirs_.find(dir);
      if (it == ws.dirs_.end()) return;
      for (const auto& e : it->second) {
        std::string p = dir == "." ? e.name : dir + "/" + e.name;
        auto op = by_path.find(p);
        bool masked =
            op != by_path.end() && (op->second == K::kMaskFile || op->second == K::kMaskDir);
        bool here = bound ? !masked : (op != by_path.end());
        if (!here) continue;
        if (e.kind == EntryKind::kFile && (bound || op->second == K::kBindFile)) shown.insert(p);
        if (e.kind == EntryKind::kDir) {
          walk(p, bound || (op != by_path.end() && op->second == K::kBindDir));
        }
      }
    };
    walk(".", by_path["."] == K::kBindDir);
    for (const auto& [dir, entries] : ws.dirs_) {
      for (const auto& e : entries) {
        if (e.kind != EntryKind::kFile) continue;
        std::string p = dir == "." ? e.name : dir + "/" + e.name;
        bool readable = e.valid_name && e.nlink == 1 && GrantAllows(grant, p, Access::kRead);
        // A file inside a directory with a bad name cannot be named by sys.fs either.
        if (p.find('\x02') != std::string::npos) readable = false;
        EXPECT_EQ(shown.count(p) == 1, readable) << grant[0] << ": " << p;
      }
    }
  }
}

TEST(ReadPlan, TheReceivingSideRefusesPlansOfAnyOtherShape) {
  auto bad = [](const Ops& ops) { return !ValidateReadPlan(ops); };
  EXPECT_FALSE(bad({{K::kDir, ".", ""}, {K::kBindFile, "a", ""}}));
  EXPECT_FALSE(bad({{K::kBindDir, ".", ""}, {K::kMaskFile, "a/b/c", ""}}));
  EXPECT_TRUE(bad({}));
  EXPECT_TRUE(bad({{K::kBindFile, "a", ""}}));                 // root not first
  EXPECT_TRUE(bad({{K::kBindFile, ".", ""}}));                 // root not a directory
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kDir, ".", ""}}));  // root twice
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindFile, "/etc/passwd", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindFile, "../x", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindFile, "a/../../x", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindFile, "a//b", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindFile, "a/b", ""}}));  // parent not in the view
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindDir, "a", ""}, {K::kBindFile, "a/b", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kSymlink, "a", "/etc"}, {K::kBindFile, "a/b", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kSymlink, "a", "/etc"}, {K::kDir, "a/b", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kMaskFile, "a", ""}}));  // mask outside a bind
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindFile, "a", ""}, {K::kMaskFile, "a/b", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindFile, "a", ""}, {K::kBindFile, "a", ""}}));
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kSymlink, "a", ""}}));    // no link text
  EXPECT_TRUE(bad({{K::kDir, ".", ""}, {K::kBindFile, "a", "x"}}));  // text on a bind
  EXPECT_TRUE(bad({{static_cast<K>('?'), ".", ""}}));
  EXPECT_TRUE(!ValidateReadPlan(Ops(3, {K::kDir, ".", ""}), 2));
  // Wire form round trip.
  Ops ops = {{K::kDir, ".", ""}, {K::kSymlink, "l", "t a"}, {K::kBindDir, "d", ""}};
  auto back = DecodeReadPlan(EncodeReadPlan(ops));
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, ops);
  EXPECT_FALSE(DecodeReadPlan({"d."}));
  EXPECT_FALSE(DecodeReadPlan({"", ""}));
}

}  // namespace
}  // namespace read_plan_test
}  // namespace anvil
