// The runtime roots (policy/sandbox_policy.h, kPlatformReadRoots): what --read-access restricted
// shows of the system, from a fake host. /opt is one of them where it exists and is treated as
// /usr is by every consumer of the list: a read-only bind, the same Landlock rule, searched for
// host sockets, a system area for refusals, credentials of a home inside it covered. What the
// policy hides (/root, /var) stays out. The services' own list stays without /opt. The
// end-to-end half is tests/security/t1_sandbox_runtime_roots_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/escalation.h"
#include "linux/landlock.h"
#include "linux/landlock_rules.h"
#include "linux/mount_plan.h"
#include "policy/host_sockets.h"
#include "policy/refusals.h"
#include "policy/sandbox_home.h"
#include "policy/sandbox_policy.h"

namespace anvil {
namespace {

// A host where exactly `existing` exists (each resolving to itself); nothing of the real host
// is asked.
HostFs FakeHost(std::set<std::string> existing) {
  HostFs fs;
  fs.resolve = [existing](const std::string& p) -> std::optional<std::string> {
    if (existing.count(p)) return p;
    return std::nullopt;
  };
  fs.read_gitdir_pointer = [](const std::string&) { return std::nullopt; };
  fs.is_symlink = [](const std::string&) { return false; };
  fs.lstat_kind = [existing](const std::string& p) {
    return existing.count(p) ? HostFs::Kind::kOther : HostFs::Kind::kMissing;
  };
  return fs;
}

const std::set<std::string> kDebianLike = {"/bin",   "/sbin", "/usr",  "/etc", "/lib",
                                           "/lib64", "/opt",  "/root", "/var", "/ws"};

bool Has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

FileView ViewOf(PolicyKind kind, const std::set<std::string>& existing,
                ReadAccess access = ReadAccess::kRestricted) {
  SandboxPolicy p;
  p.kind = kind;
  p.workspace = "/ws";
  p.read_access = access;
  auto view = ComputeFileView(p, FakeHost(existing));
  EXPECT_TRUE(view) << view.error().ToString();
  return view ? *view : FileView{};
}

TEST(RuntimeRoots, OptIsOneWhereItExistsAndTheHiddenPlacesStayOut) {
  for (PolicyKind kind : {PolicyKind::kWorkspaceWrite, PolicyKind::kReadOnly}) {
    SCOPED_TRACE(std::string(ToString(kind)));
    FileView view = ViewOf(kind, kDebianLike);
    std::vector<std::string> system = view.read_roots;
    std::erase(system, "/ws");  // read-only's workspace
    EXPECT_EQ(system, (std::vector<std::string>{"/bin", "/sbin", "/usr", "/etc", "/lib", "/lib64",
                                                "/opt"}));
    EXPECT_FALSE(Has(view.read_roots, "/root"));
    EXPECT_FALSE(Has(view.read_roots, "/var"));
    // A host without /opt: nothing to show, nothing made.
    std::set<std::string> no_opt = kDebianLike;
    no_opt.erase("/opt");
    EXPECT_FALSE(Has(ViewOf(kind, no_opt).read_roots, "/opt"));
  }
  // Full read shows all of / anyway; no root of its own.
  FileView full = ViewOf(PolicyKind::kWorkspaceWrite, kDebianLike, ReadAccess::kFull);
  EXPECT_TRUE(full.full_read);
  EXPECT_FALSE(Has(full.read_roots, "/opt"));
}

TEST(RuntimeRoots, OptIsMountedAndAllowedExactlyAsUsr) {
  FileView view = ViewOf(PolicyKind::kWorkspaceWrite, kDebianLike);
  auto ops = PlanMounts(view, {},
                        [](const std::string&) -> std::optional<mode_t> { return S_IFDIR | 0755; });
  ASSERT_TRUE(ops) << ops.error().ToString();
  auto kind_at = [&](const std::string& path) -> std::optional<MountOpKind> {
    for (const MountOp& op : *ops) {
      if (op.path == path) return op.kind;
    }
    return std::nullopt;
  };
  EXPECT_EQ(kind_at("/usr"), MountOpKind::kReadOnly);
  EXPECT_EQ(kind_at("/opt"), MountOpKind::kReadOnly);
  EXPECT_EQ(kind_at("/ws"), MountOpKind::kWritable);
  EXPECT_EQ(kind_at("/root"), std::nullopt);
  EXPECT_EQ(kind_at("/var"), std::nullopt);

  auto plan =
      landlock::LandlockRulesFor(view, NetworkMode::kNone, 7, {true, true, true}, 4242, 3128);
  auto rule_at = [&](const std::string& path) -> std::optional<landlock::Rule> {
    for (const auto& r : plan.rules) {
      if (r.path == path) return r;
    }
    return std::nullopt;
  };
  ASSERT_TRUE(rule_at("/usr"));
  ASSERT_TRUE(rule_at("/opt"));
  EXPECT_EQ(rule_at("/opt")->rights, rule_at("/usr")->rights);
  EXPECT_EQ(rule_at("/opt")->rights & landlock::kFsWriteFile, 0u) << "/opt must stay read-only";
  EXPECT_TRUE(rule_at("/opt")->optional);
  EXPECT_FALSE(rule_at("/root"));
  EXPECT_FALSE(rule_at("/var"));
}

TEST(RuntimeRoots, HostSocketsUnderOptAreSearchedForAndCovered) {
  FileView view = ViewOf(PolicyKind::kWorkspaceWrite, kDebianLike);
  auto regions = ViewRegionsOf(view);
  EXPECT_TRUE(std::any_of(regions.begin(), regions.end(),
                          [](const ViewRegion& r) { return r.root == "/opt"; }));
  HostFs host = FakeHost(kDebianLike);
  host.bound_unix_sockets = [](const FileView&) {
    return HostSocketMasks{{"/opt/vendor/agent.sock", "/var/run/other.sock"}, {"/opt/locked"}};
  };
  SandboxPolicy p;
  p.workspace = "/ws";
  auto masked = ComputeFileView(p, host);
  ASSERT_TRUE(masked) << masked.error().ToString();
  EXPECT_TRUE(Has(masked->masked_files, "/opt/vendor/agent.sock"));
  EXPECT_FALSE(Has(masked->masked_files, "/var/run/other.sock"));  // not in this view at all
  EXPECT_TRUE(Has(masked->masked_dirs, "/opt/locked"));
}

TEST(RuntimeRoots, AWriteUnderOptIsASystemRefusal) {
  FileView view = ViewOf(PolicyKind::kWorkspaceWrite, kDebianLike);
  SandboxPolicy p;
  p.workspace = "/ws";
  auto c = ClassifyWrite(view, p, "/opt/google/chrome/x");
  EXPECT_EQ(c.area, WriteArea::kSystem);
  EXPECT_EQ(c.root, "/opt");
  EXPECT_EQ(ClassifyWrite(view, p, "/usr/lib/x").area, WriteArea::kSystem);
  EXPECT_EQ(ClassifyWrite(view, p, "/var/lib/x").area, WriteArea::kOutside);
}

TEST(RuntimeRoots, OptIsNeverOfferedAsAWritableRoot) {
  // An agent's escalation: a refusal under /opt earns no widening, as one under /usr.
  agent::EscalationContext context;
  context.workspace = "/home/u/proj";
  context.home = "/home/u";
  auto is_dir = [](const std::string&) { return true; };
  for (const char* dir : {"/opt", "/opt/conda", "/opt/google/chrome", "/usr/local"}) {
    auto s = agent::CheckWidening({agent::WideningKind::kWritableRoot, dir}, context, is_dir);
    ASSERT_FALSE(s) << dir;
    EXPECT_NE(s.error().message.find("system directories stay read-only"), std::string::npos)
        << dir << ": " << s.error().message;
  }
  // Its benign neighbour: a cache outside the home's top still may be.
  EXPECT_TRUE(
      agent::CheckWidening({agent::WideningKind::kWritableRoot, "/var/tmp"}, context, is_dir));
}

TEST(RuntimeRoots, AHomeInsideOptIsNotReplacedButItsCredentialsAreCovered) {
  // A service account's home in /opt: shown read-only with /opt, as a home in /usr is.
  HomeHost home_host;
  const std::map<std::string, HomeHost::Kind> entries = {
      {"/opt/svc", HomeHost::Kind::kDirectory},
      {"/opt/svc/.ssh", HomeHost::Kind::kDirectory},
      {"/opt/svc/.netrc", HomeHost::Kind::kFile},
      {"/opt/svc/bin", HomeHost::Kind::kDirectory}};
  home_host.lstat_kind = [entries](const std::string& p) {
    auto it = entries.find(p);
    return it == entries.end() ? HomeHost::Kind::kMissing : it->second;
  };
  home_host.resolve = [entries](const std::string& p) -> std::optional<std::string> {
    if (entries.count(p)) return p;
    return std::nullopt;
  };
  home_host.list_dir = [](const std::string&) { return std::vector<std::string>{}; };
  for (const char* home : {"/opt/svc", "/usr/local/svc"}) {
    SCOPED_TRACE(home);
    HomePlanInput in;
    in.home = home;
    in.sandbox_home = "/state/home";
    auto plan = PlanHomeView(in, home_host);
    ASSERT_TRUE(plan) << plan.error().ToString();
    EXPECT_EQ(plan->kind, HomeKind::kNone);
    if (std::string(home) != "/opt/svc") continue;
    SandboxPolicy p;
    p.workspace = "/ws";
    p.home = *plan;
    auto view = ComputeFileView(p, FakeHost(kDebianLike));
    ASSERT_TRUE(view) << view.error().ToString();
    EXPECT_TRUE(Has(view->masked_dirs, "/opt/svc/.ssh"));
    EXPECT_TRUE(Has(view->masked_files, "/opt/svc/.netrc"));
    EXPECT_TRUE(Has(view->credential_masks, "/opt/svc/.ssh"));
    // What is not a credential stays readable: nothing covers the home's bin.
    EXPECT_FALSE(Has(view->masked_dirs, "/opt/svc/bin"));
    EXPECT_TRUE(view->home_base.empty());
  }
}

TEST(RuntimeRoots, TheServicesListIsTheSystemsTreesWithoutOpt) {
  std::vector<std::string_view> runtime(std::begin(kPlatformReadRoots),
                                        std::end(kPlatformReadRoots));
  for (auto root : kServiceReadRoots) {
    EXPECT_NE(std::find(runtime.begin(), runtime.end(), root), runtime.end()) << root;
    EXPECT_NE(root, "/opt");
  }
  EXPECT_EQ(runtime.size(), std::size(kServiceReadRoots) + 1);
  EXPECT_EQ(runtime.back(), "/opt");
}

}  // namespace
}  // namespace anvil
