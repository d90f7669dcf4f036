// Where a root shows, by another name, a directory the host reaches by its own path
// (policy/tree_alias.h): the aliases of a mount table, table by table, and what they make of
// the protected places and of a root inside one.
#include "policy/tree_alias.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace anvil {
namespace tree_alias_test {
namespace {

constexpr uint64_t kRootFs = 0x801;
constexpr uint64_t kData = 0x811;
constexpr uint64_t kTmpfs = 0x2a;
constexpr uint64_t kOther = 0x999;  // mounted nowhere else
// Every host path matters: each alias is built.
const std::vector<std::string> kAll = {"/"};

// /, a /tmp tmpfs, /data on its own disk, and whatever each case adds.
std::vector<HostMount> Table(std::vector<HostMount> extra) {
  std::vector<HostMount> t = {{"/", "/", kRootFs}, {"/tmp", "/", kTmpfs}, {"/data", "/", kData}};
  t.insert(t.end(), extra.begin(), extra.end());
  return t;
}

TEST(TreeAlias, TheKeyIsTheDeviceAndThePathWithinTheFileSystem) {
  const auto t = Table({{"/srv/w", "/home/u", kRootFs}, {"/tmp/x", "/y", kTmpfs}});
  struct Case {
    std::string path;
    TreeKey key;
  } cases[] = {
      {"/home/u/.ssh", {kRootFs, "/home/u/.ssh"}},
      {"/srv/w", {kRootFs, "/home/u"}},
      {"/srv/w/.ssh", {kRootFs, "/home/u/.ssh"}},
      {"/tmp/x/z", {kTmpfs, "/y/z"}},
      {"/tmp", {kTmpfs, "/"}},
      {"/data/a", {kData, "/a"}},
      {"/", {kRootFs, "/"}},
  };
  for (const auto& c : cases) EXPECT_EQ(TreeKeyOf(t, c.path), c.key) << c.path;
  // The last mount listed at a point is the one on top.
  const auto stacked = Table({{"/srv/w", "/a", kData}, {"/srv/w", "/b", kData}});
  EXPECT_EQ(TreeKeyOf(stacked, "/srv/w/c"), (TreeKey{kData, "/b/c"}));
}

TEST(TreeAlias, TheMountOnTopIsTheOneNoOtherAtItsPointHasAsParent) {
  struct Case {
    const char* what;
    std::vector<HostMount> extra;
    TreeKey want;
  } cases[] = {
      {"stacked later: the child of the one it covers",
       {{"/srv/w", "/under", kData, 40, 1}, {"/srv/w", "/top", kData, 50, 40}},
       {kData, "/top/c"}},
      {"tucked beneath by propagation, listed after the one above it",
       {{"/srv/w", "/top", kData, 50, 60}, {"/srv/w", "/under", kData, 60, 1}},
       {kData, "/top/c"}},
      {"three at one point, listed out of order",
       {{"/srv/w", "/mid", kData, 70, 60},
        {"/srv/w", "/top", kData, 80, 70},
        {"/srv/w", "/under", kData, 60, 1}},
       {kData, "/top/c"}},
      {"a mount beneath the point is not at it",
       {{"/srv/w", "/top", kData, 50, 1}, {"/srv/w/d", "/deep", kData, 51, 50}},
       {kData, "/top/c"}},
  };
  for (const auto& c : cases) EXPECT_EQ(TreeKeyOf(Table(c.extra), "/srv/w/c"), c.want) << c.what;
  // The aliases go by the one on top too.
  const auto t =
      Table({{"/srv/w", "/home/u", kRootFs, 50, 60}, {"/srv/w", "/opt", kRootFs, 60, 1}});
  EXPECT_EQ(RootAliases(t, {"/srv/w"}, kAll), (std::vector<TreeAlias>{{"/home/u", "/srv/w"}}));
}

TEST(TreeAlias, OnlyAliasesOfHostPathsThatHoldOrLieInAPlaceAreBuilt) {
  const auto t = Table({{"/srv/w", "/home/u", kRootFs},
                        {"/srv/v", "/opt/x", kRootFs},
                        {"/srv/k", "/home/u/.ssh/k", kRootFs}});
  EXPECT_EQ(RootAliases(t, {"/srv/w", "/srv/v", "/srv/k"}, {"/home/u/.ssh"}),
            (std::vector<TreeAlias>{{"/home/u", "/srv/w"}, {"/home/u/.ssh/k", "/srv/k"}}));
  EXPECT_EQ(RootAliases(t, {"/srv/w", "/srv/v"}, {}), std::vector<TreeAlias>{});
}

TEST(TreeAlias, AThousandBindsOfOneDirectoryStayCheap) {
  // A thousand binds of the home elsewhere, a thousand of another directory beneath the
  // workspace, the whole host readable: the work grows with the mounts, not their square.
  std::vector<HostMount> extra;
  std::vector<std::string> homes;
  for (int i = 0; i < 1000; ++i) {
    const std::string n = std::to_string(i);
    extra.push_back({"/mnt/h" + n, "/home/u", kRootFs, uint64_t(100 + i), 1});
    extra.push_back({"/ws/b" + n, "/src", kData, uint64_t(5000 + i), 1});
    homes.push_back("/mnt/h" + n);
  }
  const auto aliases = RootAliases(Table(extra), {"/", "/ws"}, {"/home/u/.ssh", "/home/u/.bashrc"});
  ASSERT_EQ(aliases.size(), 1000u);
  std::sort(homes.begin(), homes.end());
  for (size_t i = 0; i < aliases.size(); ++i) {
    EXPECT_EQ(aliases[i], (TreeAlias{"/home/u", homes[i]}));
  }
  EXPECT_EQ(PlacesThroughAliases(aliases, {"/home/u/.ssh"}).size(), 1000u);
}

TEST(TreeAlias, EachRootsAliasesFromTheMountTable) {
  struct Case {
    const char* what;
    std::vector<HostMount> extra;
    std::vector<std::string> roots;
    std::vector<TreeAlias> want;
  } cases[] = {
      {"no bind mount: no alias", {}, {"/home/u", "/data/w"}, {}},
      {"a bind of the home", {{"/srv/w", "/home/u", kRootFs}}, {"/srv/w"}, {{"/home/u", "/srv/w"}}},
      {"a bind of a directory above the home",
       {{"/srv/w", "/home", kRootFs}},
       {"/srv/w"},
       {{"/home", "/srv/w"}}},
      {"a root beneath a bind",
       {{"/srv/w", "/home", kRootFs}},
       {"/srv/w/u"},
       {{"/home/u", "/srv/w/u"}}},
      {"a root at a bind's source: the bind is another name of it",
       {{"/srv/w", "/home/u", kRootFs}},
       {"/home/u"},
       {{"/srv/w", "/home/u"}}},
      {"a root that holds the source of a mount elsewhere",
       {{"/home/u/.config", "/cfg", kData}},
       {"/data"},
       {{"/home/u/.config", "/data/cfg"}}},
      {"a mount beneath a root shows another place",
       {{"/srv/w", "/x", kTmpfs}, {"/srv/w/sub", "/home/u", kRootFs}},
       {"/srv/w"},
       {{"/home/u", "/srv/w/sub"}, {"/tmp/x", "/srv/w"}}},
      {"another file system's same path is not the same directory",
       {{"/srv/w", "/home/u", kOther}},
       {"/srv/w"},
       {}},
      {"the same path within a file system mounted elsewhere",
       {{"/srv/w", "/home/u", kData}},
       {"/srv/w"},
       {{"/data/home/u", "/srv/w"}}},
      {"a host path covered by a deeper mount is not where it shows",
       {{"/srv/w", "/tmp/q", kRootFs}},
       {"/srv/w"},
       {}},
      {"an unrelated bind", {{"/srv/w", "/opt/x", kRootFs}}, {"/srv/w"}, {{"/opt/x", "/srv/w"}}},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(RootAliases(Table(c.extra), c.roots, kAll), c.want) << c.what;
  }
}

TEST(TreeAlias, PlacesAreSeenThroughTheAliasesThatHoldThem) {
  const std::vector<TreeAlias> aliases = {{"/home/u", "/srv/w"}, {"/opt/x", "/srv/v"}};
  const std::vector<std::string> places = {"/home/u/.bashrc", "/home/u/.config/autostart",
                                           "/home/v/.bashrc", "/home/u"};
  EXPECT_EQ(PlacesThroughAliases(aliases, places),
            (std::vector<std::string>{"/srv/w/.bashrc", "/srv/w/.config/autostart", "/srv/w"}));
  EXPECT_EQ(PlacesThroughAliases({}, places), std::vector<std::string>{});
  EXPECT_EQ(WithPlacesThroughAliases(aliases, {"/home/u/.bashrc", "/srv/w/.bashrc"},
                                     {"/home/u/.bashrc", "/home/u/.profile"}),
            (std::vector<std::string>{"/home/u/.bashrc", "/srv/w/.bashrc", "/srv/w/.profile"}));
  // Through the mount table: a workspace that is a bind of the home.
  const auto t = Table({{"/srv/w", "/home/u", kRootFs}});
  EXPECT_EQ(PlacesThroughAliases(RootAliases(t, {"/srv/w"}, {"/home/u/.ssh"}),
                                 {"/home/u/.ssh", "/etc/passwd"}),
            std::vector<std::string>{"/srv/w/.ssh"});
}

TEST(TreeAlias, ACachePlaceThroughAnAliasKeepsItsKey) {
  AutorunEnv env;
  env.home = "/home/u";
  const auto places = HostCachePlaces(env);
  ASSERT_FALSE(places.empty());
  const auto all = CachePlacesThroughAliases({{"/home/u", "/srv/w"}}, places, env);
  ASSERT_EQ(all.size(), places.size() * 2);
  for (size_t i = 0; i < places.size(); ++i) {
    EXPECT_EQ(all[i], places[i]);
    EXPECT_EQ(all[places.size() + i].key, places[i].key);
    EXPECT_EQ(all[places.size() + i].path, "/srv/w" + places[i].path.substr(7));
  }
  EXPECT_EQ(CachePlacesThroughAliases({}, places, env), places);
}

TEST(TreeAlias, ARootIsInsideAPlaceWhenAnotherNameOfItIs) {
  const auto t = Table({{"/srv/s", "/home/u/.ssh", kRootFs}, {"/srv/o", "/opt", kRootFs}});
  const std::vector<std::string> creds = {"/home/u/.ssh", "/home/u/.aws"};
  const auto aliases = RootAliases(t, {"/srv/s", "/srv/o", "/srv/s/keys"}, creds);
  auto in = RootInsideByAlias(aliases, "/srv/s", creds);
  ASSERT_TRUE(in);
  EXPECT_EQ(in->host, "/home/u/.ssh");
  EXPECT_EQ(in->place, "/home/u/.ssh");
  auto deeper = RootInsideByAlias(aliases, "/srv/s/keys", creds);
  ASSERT_TRUE(deeper);
  EXPECT_EQ(deeper->host, "/home/u/.ssh/keys");
  EXPECT_FALSE(RootInsideByAlias(aliases, "/srv/o", creds));
  EXPECT_FALSE(RootInsideByAlias({}, "/srv/s", creds));
}

// The mount table the bind-alias protection works from: one that could not be read, lists no
// mount or has a line that does not parse stops the start, naming the feature, what was wrong
// and the fix; a table read whole is used as it is.
TEST(TreeAlias, AMountTableThatCannotBeHadStopsTheStart) {
  const std::vector<HostMount> table = Table({{"/srv/w", "/home/u", kRootFs}});
  struct Row {
    MountInfoRead read;
    std::string says;  // "" for the table itself
  } rows[] = {
      {{true, "", table, 0, ""}, ""},
      {{true, "", {{"/", "/", kRootFs}}, 0, ""}, ""},
      {{false, "open: Permission denied", {}, 0, ""},
       "could not be read (open: Permission denied)"},
      {{false, "read: Input/output error", {}, 0, ""}, "could not be read (read: Input/output"},
      {{false, "", {}, 0, ""}, "could not be read (unknown error)"},
      // Read, yet empty: every alias hidden.
      {{true, "", {}, 0, ""}, "lists no mount"},
      // A line that does not parse could be the alias itself.
      {{true, "", table, 2, "36 35 98:0"}, "2 line(s) that do not parse as a mount"},
      {{false, "open: No such file or directory", table, 0, ""}, "could not be read"},
  };
  for (const auto& row : rows) {
    auto got = MountTableForAliases(row.read);
    if (row.says.empty()) {
      ASSERT_TRUE(got) << got.error().ToString();
      ASSERT_EQ(got->size(), row.read.mounts.size());
      for (size_t i = 0; i < got->size(); ++i) {
        EXPECT_EQ((*got)[i].path, row.read.mounts[i].path);
        EXPECT_EQ((*got)[i].root, row.read.mounts[i].root);
        EXPECT_EQ((*got)[i].dev, row.read.mounts[i].dev);
      }
      continue;
    }
    ASSERT_FALSE(got) << row.says;
    EXPECT_EQ(got.error().code, "sandbox");
    const std::string& m = got.error().message;
    EXPECT_NE(m.find(row.says), std::string::npos) << m;
    EXPECT_NE(m.find("bind-alias protection"), std::string::npos) << m;
    EXPECT_NE(m.find("/proc/self/mountinfo"), std::string::npos) << m;
    EXPECT_NE(m.find("fix: "), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace tree_alias_test
}  // namespace anvil
