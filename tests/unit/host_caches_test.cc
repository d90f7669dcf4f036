// The caches the host's builds trust (policy/host_caches.h): where they are for each home and
// XDG value, how the autorun plan shadows them (policy/host_autorun.h), and what the view keeps
// beneath a shadowed one.
#include "policy/host_caches.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace anvil {
namespace host_caches_test {
namespace {

using Node = AutorunFs::Node;
using Kind = AutorunFs::Kind;
Node Dir() { return {Kind::kDirectory, 1, ""}; }
Node File(uint64_t links = 1) { return {Kind::kFile, links, ""}; }
Node Link(std::string target) { return {Kind::kSymlink, 1, std::move(target)}; }

struct FakeFs {
  std::map<std::string, Node> nodes;
  FakeFs(std::initializer_list<std::pair<const std::string, Node>> entries) : nodes(entries) {
    nodes["/"] = Dir();
    for (const auto& [path, node] : std::map<std::string, Node>(entries)) {
      for (auto slash = path.rfind('/'); slash != 0 && slash != std::string::npos;
           slash = path.rfind('/', slash - 1)) {
        nodes.emplace(path.substr(0, slash), Dir());
      }
    }
  }
  AutorunFs Fs() const {
    return {[this](const std::string& p) {
      auto it = nodes.find(p);
      return it == nodes.end() ? Node{} : it->second;
    }};
  }
};

std::string KeyOf(const std::vector<HostCachePlace>& places, const std::string& path) {
  for (const auto& p : places) {
    if (p.path == path) return p.key;
  }
  return "<none>";
}

TEST(HostCaches, EachHomeAndXdgCacheHasItsPlacesWithTheirSandboxHomeKeys) {
  const auto places = HostCachePlaces({"/home/u", "/home/p", "", "/d", "", "/c"});
  EXPECT_EQ(KeyOf(places, "/c"), ".cache");
  EXPECT_EQ(KeyOf(places, "/home/u/.cache"), ".cache");
  EXPECT_EQ(KeyOf(places, "/home/p/.cache"), ".cache");
  EXPECT_EQ(KeyOf(places, "/home/u/.cargo/registry"), ".cargo/registry");
  EXPECT_EQ(KeyOf(places, "/home/p/go/pkg"), "go/pkg");
  EXPECT_EQ(KeyOf(places, "/home/u/.m2/repository"), ".m2/repository");
  EXPECT_EQ(KeyOf(places, "/d/virtualenv"), ".local/share/virtualenv");
  EXPECT_EQ(KeyOf(places, "/home/u/.local/share/virtualenv"), ".local/share/virtualenv");
  // Each once; relative and dotted XDG values are ignored, as the spec says.
  for (const auto& p : places) {
    EXPECT_EQ(std::count_if(places.begin(), places.end(),
                            [&](const HostCachePlace& q) { return q.path == p.path; }),
              1)
        << p.path;
  }
  const auto odd = HostCachePlaces({"/home/u", "", "", "rel", "", "/x/../c"});
  EXPECT_EQ(KeyOf(odd, "/x/../c"), "<none>");
  EXPECT_EQ(KeyOf(odd, "/c"), "<none>");
  EXPECT_TRUE(HostCachePlaces({"relative", "", "", "", "", ""}).empty());
  // A credential location in a cache is hidden by the shadow (the command sees the sandbox
  // home's); only RubyGems keeps one there.
  for (const auto& p : HostCachePlaces({"/home/u", "", "", "", "", ""})) {
    for (const auto& c : HomeCredentialPaths({"/home/u", "", "", "", "", ""})) {
      if (c == "/home/u/.gem/credentials") continue;
      EXPECT_FALSE(PathIsWithin(c, p.path)) << c << " in " << p.path;
    }
  }
}

TEST(HostCaches, TheAutorunPlanShadowsAHeldCacheAndMakesAMissingOne) {
  const FakeFs fs({{"/home/u/.cache/pip", Dir()},
                   {"/home/u/.cargo/bin", Dir()},
                   {"/home/u/go", Link("/data/go")},
                   {"/data/go/pkg/mod", Dir()},
                   {"/home/u/.npm", File()},
                   {"/home/u/.bashrc", File()}});
  const std::vector<std::string> caches = {"/home/u/.cache", "/home/u/.cargo/registry",
                                           "/home/u/go/pkg", "/home/u/.npm",
                                           "/home/u/.m2/repository"};
  auto plan = PlanAutorunShield({"/home/u/.bashrc", "/home/u/.cache/x/autorun"}, {"/home/u"}, {},
                                fs.Fs(), {}, caches);
  ASSERT_TRUE(plan) << plan.error().ToString();
  // An existing directory: shadowed, with the way to it pinned.
  EXPECT_EQ(plan->shadowed, (std::vector<AutorunShadow>{{"/home/u/.cache", "/home/u/.cache"}}));
  // Missing: made as directories (the last one too), to be shadowed in the next round.
  EXPECT_EQ(plan->make, (std::vector<AutorunMake>{{"/home/u/.cargo", "registry", true},
                                                  {"/home/u", ".m2", true}}));
  // Not a directory: kept as it is. Outside the roots (through a link): none of the run's.
  EXPECT_EQ(plan->read_only, (std::vector<std::string>{"/home/u/.npm", "/home/u/.bashrc"}));
  EXPECT_EQ(plan->pinned_links, (std::vector<std::string>{"/home/u/go"}));
  // A place beneath a shadowed cache is the sandbox home's too: nothing to make there.
  for (const auto& m : plan->make) EXPECT_NE(m.parent, "/home/u/.cache") << m.name;
  // A writable root that is the cache (a profile's): the user's choice, not shadowed.
  plan = PlanAutorunShield({}, {"/home/u", "/home/u/.cache"}, {}, fs.Fs(), {}, caches);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->shadowed.empty());
  // A workspace below the home holds none of them.
  plan = PlanAutorunShield({}, {"/home/u/proj"}, {}, fs.Fs(), {}, caches);
  ASSERT_TRUE(plan);
  EXPECT_TRUE(plan->shadowed.empty());
  EXPECT_TRUE(plan->make.empty());
}

TEST(HostCaches, TheViewKeepsNothingOfItsOwnBeneathAShadowButAProfilesRoot) {
  FileView view;
  view.writable_roots = {{"/home/u", {"/home/u/.git", "/home/u/.cache/pre-commit/r/.git"}},
                         {"/home/u/.cache/pip", {"/home/u/.cache/pip/sub/.git"}}};
  view.pinned_dirs = {"/home/u/.cache/pre-commit", "/home/u/.config"};
  view.pinned_links = {"/home/u/.cache/l"};
  view.masked_files = {"/home/u/.cache/sock", "/home/u/.cache/pip/sock", "/home/u/.aws/x"};
  view.mapped_binds = {{"/s/old", "/home/u/.cache", false, 0, 0}};
  const std::vector<MappedBind> binds = {{"/sbx/.cache", "/home/u/.cache", true, 1, 2}};
  const auto points = ShadowCachesInView(view, binds);
  EXPECT_EQ(points, (std::vector<ShadowMountPoint>{{"/sbx/.cache", "pip"}}));
  EXPECT_EQ(view.writable_roots[0].read_only_subpaths, (std::vector<std::string>{"/home/u/.git"}));
  EXPECT_EQ(view.writable_roots[1].read_only_subpaths,
            (std::vector<std::string>{"/home/u/.cache/pip/sub/.git"}));
  EXPECT_EQ(view.pinned_dirs, (std::vector<std::string>{"/home/u/.config"}));
  EXPECT_TRUE(view.pinned_links.empty());
  EXPECT_EQ(view.masked_files,
            (std::vector<std::string>{"/home/u/.cache/pip/sock", "/home/u/.aws/x"}));
  ASSERT_EQ(view.mapped_binds.size(), 1u);
  EXPECT_EQ(view.mapped_binds[0].source, "/sbx/.cache");
  EXPECT_TRUE(view.mapped_binds[0].writable);
  // No binds: nothing changes.
  FileView same = view;
  EXPECT_TRUE(ShadowCachesInView(same, {}).empty());
  EXPECT_EQ(same.masked_files, view.masked_files);
}

}  // namespace
}  // namespace host_caches_test
}  // namespace anvil
