// The Landlock wall of a command, stated exactly: for each kind of view (workspace-write with
// its protected .git, extra writable roots, read-only, full read, sys.exec's readable paths and
// its warm runner, a home), each set of namespaces the clone can end up with, each network mode
// and each Landlock ABI, the rule set LandlockRulesFor plans — the one the command child applies
// as it is (linux/landlock_rules.h). No kernel is involved; the security tests prove the rules
// hold on a real one.
#include "linux/landlock_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "linux/landlock.h"
#include "linux/real_host.h"

namespace anvil::landlock {
namespace landlock_rules_test {
namespace {

constexpr uint16_t kPort = 3128;
constexpr int kPid = 4242;
const Namespaces kAll{/*mount=*/true, /*pid=*/true, /*net=*/true};
const Namespaces kNone{};

// Rights as names: "all" when every right the ABI handles, else the rights one by one.
std::string Rights(uint64_t rights, int abi) {
  if (rights == FsRightsForAbi(abi)) return "all";
  static const std::pair<uint64_t, const char*> kNames[] = {
      {kFsExecute, "x"},     {kFsWriteFile, "wf"},  {kFsReadFile, "rf"},
      {kFsReadDir, "rd"},    {kFsRemoveDir, "rmd"}, {kFsRemoveFile, "rmf"},
      {kFsMakeChar, "mkc"},  {kFsMakeDir, "mkd"},   {kFsMakeReg, "mkr"},
      {kFsMakeSock, "mks"},  {kFsMakeFifo, "mkf"},  {kFsMakeBlock, "mkb"},
      {kFsMakeSym, "mksym"}, {kFsRefer, "refer"},   {kFsTruncate, "trunc"},
      {kFsIoctlDev, "ioctl"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((rights & bit) == 0) continue;
    if (!out.empty()) out += ",";
    out += name;
  }
  return out.empty() ? "none" : out;
}

// One line per rule: "<kind> <path> <rights>[ optional]", with the base for the opened-beneath
// kinds ("beneath /ws:src read").
std::vector<std::string> Lines(const RulesetPlan& plan) {
  std::vector<std::string> out;
  for (const Rule& r : plan.rules) {
    std::string line;
    switch (r.kind) {
      case RuleKind::kPath:
        line = "path " + r.path;
        break;
      case RuleKind::kBeneath:
        line = "beneath " + r.base + ":" + r.path;
        break;
      case RuleKind::kPlanDir:
        line = "plan-dir " + r.base + ":" + r.path;
        break;
      case RuleKind::kPlanFile:
        line = "plan-file " + r.base + ":" + r.path;
        break;
      case RuleKind::kPlanLinkedFile:
        line = "plan-linked-file " + r.base + ":" + r.path;
        break;
    }
    line += " " + Rights(r.rights, plan.abi);
    if (r.optional) line += " optional";
    out.push_back(line);
  }
  return out;
}

// The devices every command gets, whatever its view.
std::vector<std::string> Devices(int abi) {
  const std::string rw = abi >= 5 ? "wf,rf,trunc,ioctl" : abi >= 3 ? "wf,rf,trunc" : "wf,rf";
  return {"path /dev rd optional",
          "path /dev/null " + rw + " optional",
          "path /dev/zero " + rw + " optional",
          "path /dev/full " + rw + " optional",
          "path /dev/tty " + rw + " optional",
          "path /dev/random rf optional",
          "path /dev/urandom rf optional"};
}

std::vector<std::string> Concat(std::initializer_list<std::vector<std::string>> parts) {
  std::vector<std::string> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

// `anvil sandbox` in a repository: workspace-write, its .git (made as a placeholder when
// missing) and .anvil kept read-only by the mount view, the runtime roots readable.
FileView WorkspaceWriteView() {
  FileView v;
  v.read_roots = {"/bin", "/usr", "/etc", "/lib"};
  v.writable_roots = {{"/ws", {"/ws/.git", "/ws/.anvil"}}};
  v.masked_files = {"/etc/shadow"};
  return v;
}

TEST(LandlockRulesFor, WorkspaceWriteWithEveryNamespace) {
  auto plan = LandlockRulesFor(WorkspaceWriteView(), NetworkMode::kNone, 7, kAll, kPid, kPort);
  EXPECT_EQ(plan.abi, 7);
  EXPECT_EQ(plan.handled_fs, FsRightsForAbi(7));
  // Its own network namespace: its loopback reaches nothing outside, TCP stays allowed there.
  EXPECT_FALSE(plan.handle_net);
  EXPECT_TRUE(plan.tcp_connect_ports.empty());
  EXPECT_EQ(plan.scopes, kScopeAbstractUnixSocket | kScopeSignal);
  // .git and .anvil have no rule of their own: the writable root's rights reach them, and their
  // read-only mounts (mount_plan.h) refuse the writes.
  EXPECT_EQ(Lines(plan),
            Concat({{"path /bin x,rf,rd optional", "path /usr x,rf,rd optional",
                     "path /etc x,rf,rd optional", "path /lib x,rf,rd optional", "path /ws all",
                     "path / rd", "path /tmp all", "path /dev/shm all optional"},
                    Devices(7),
                    {"path /dev/pts wf,rf,rd,ioctl optional", "path /proc x,rf,rd"}}));
}

TEST(LandlockRulesFor, WithoutNamespacesOnlyTheHostsOwnPathsAndThisProcessEntry) {
  // The read-only fallback when no namespace can be made: no /tmp, /dev/shm or devpts of the
  // sandbox's own, no view root to list, and only the command's own /proc entry.
  FileView v;
  v.read_roots = {"/usr", "/ws"};
  auto plan = LandlockRulesFor(v, NetworkMode::kNone, 7, kNone, kPid, kPort);
  EXPECT_TRUE(plan.handle_net);  // no namespace: TCP refused by Landlock too
  EXPECT_TRUE(plan.tcp_connect_ports.empty());
  EXPECT_EQ(Lines(plan), Concat({{"path /usr x,rf,rd optional", "path /ws x,rf,rd optional"},
                                 Devices(7),
                                 {"path /proc/4242 x,rf,rd"}}));
}

TEST(LandlockRulesFor, EachAbiHandlesItsOwnRightsAndNoMore) {
  struct Row {
    int abi;
    NetworkMode network;
    Namespaces ns;
    uint64_t handled_fs;
    bool handle_net;
    std::vector<uint16_t> ports;
    uint64_t scopes;
    std::string writable;  // the rights of the writable root
  };
  const uint64_t abi1 = (1ULL << 13) - 1;
  const uint64_t scoped = kScopeAbstractUnixSocket | kScopeSignal;
  const Namespaces no_net{true, true, false};
  const std::vector<Row> rows = {
      {1, NetworkMode::kNone, no_net, abi1, false, {}, 0, "all"},
      {2, NetworkMode::kNone, no_net, abi1 | kFsRefer, false, {}, 0, "all"},
      {3, NetworkMode::kNone, no_net, abi1 | kFsRefer | kFsTruncate, false, {}, 0, "all"},
      // ABI 4: TCP is handled under none without a network namespace, and under proxy.
      {4, NetworkMode::kNone, no_net, abi1 | kFsRefer | kFsTruncate, true, {}, 0, "all"},
      {4, NetworkMode::kNone, kAll, abi1 | kFsRefer | kFsTruncate, false, {}, 0, "all"},
      {4, NetworkMode::kProxy, kAll, abi1 | kFsRefer | kFsTruncate, true, {kPort}, 0, "all"},
      {4, NetworkMode::kFull, no_net, abi1 | kFsRefer | kFsTruncate, false, {}, 0, "all"},
      {5, NetworkMode::kProxy, kAll, FsRightsForAbi(4) | kFsIoctlDev, true, {kPort}, 0, "all"},
      {6, NetworkMode::kProxy, kAll, FsRightsForAbi(5), true, {kPort}, scoped, "all"},
      {7, NetworkMode::kFull, kAll, FsRightsForAbi(5), false, {}, scoped, "all"},
      // Before ABI 4 a proxy's port cannot be stated (the launcher's own namespace and seccomp
      // filter still keep the command off everything but loopback).
      {3, NetworkMode::kProxy, kAll, abi1 | kFsRefer | kFsTruncate, false, {}, 0, "all"},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE("abi " + std::to_string(row.abi) + " network " +
                 std::string(ToString(row.network)) + (row.ns.net ? " own netns" : ""));
    auto plan = LandlockRulesFor(WorkspaceWriteView(), row.network, row.abi, row.ns, kPid, kPort);
    EXPECT_EQ(plan.handled_fs, row.handled_fs);
    EXPECT_EQ(plan.handle_net, row.handle_net);
    EXPECT_EQ(plan.tcp_connect_ports, row.ports);
    EXPECT_EQ(plan.scopes, row.scopes);
    // No rule ever grants a right the ABI does not handle (the kernel would refuse it).
    for (const Rule& r : plan.rules) EXPECT_EQ(r.rights & ~row.handled_fs, 0u) << r.path;
    const auto lines = Lines(plan);
    EXPECT_NE(std::find(lines.begin(), lines.end(), "path /ws " + row.writable), lines.end());
    const auto devices = Devices(row.abi);
    EXPECT_NE(std::search(lines.begin(), lines.end(), devices.begin(), devices.end()), lines.end());
  }
}

TEST(LandlockRulesFor, ExtraWritableRootsEachGetEveryRight) {
  FileView v = WorkspaceWriteView();
  v.writable_roots.push_back({"/cache", {}});
  v.writable_roots.push_back({"/srv/out", {"/srv/out/.git"}});
  v.pinned_dirs = {"/ws/vendor"};  // a mount only: its root's rule covers it
  auto plan = LandlockRulesFor(v, NetworkMode::kFull, 3, kAll, kPid, kPort);
  EXPECT_EQ(Lines(plan), Concat({{"path /bin x,rf,rd optional", "path /usr x,rf,rd optional",
                                  "path /etc x,rf,rd optional", "path /lib x,rf,rd optional",
                                  "path /ws all", "path /cache all", "path /srv/out all",
                                  "path / rd", "path /tmp all", "path /dev/shm all optional"},
                                 Devices(3),
                                 {"path /dev/pts wf,rf,rd optional", "path /proc x,rf,rd"}}));
}

TEST(LandlockRulesFor, FullReadAllowsReadingEverythingAndWritingOnlyTheRoots) {
  FileView v;
  v.full_read = true;
  v.writable_roots = {{"/ws", {"/ws/.git"}}};
  auto plan = LandlockRulesFor(v, NetworkMode::kProxy, 6, kAll, kPid, kPort);
  EXPECT_EQ(plan.tcp_connect_ports, std::vector<uint16_t>{kPort});
  EXPECT_EQ(Lines(plan), Concat({{"path / x,rf,rd", "path /ws all", "path / rd", "path /tmp all",
                                  "path /dev/shm all optional"},
                                 Devices(6),
                                 {"path /dev/pts wf,rf,rd,ioctl optional", "path /proc x,rf,rd"}}));
}

TEST(LandlockRulesFor, ReadableWorkspacePathsAreOpenedBeneathTheWorkspace) {
  // sys.exec with a grant (cold start): the workspace is an empty directory of the view, and
  // each readable path is opened beneath it, so a symlink there never widens a rule.
  FileView v;
  v.read_roots = {"/usr"};
  v.workspace_base = "/ws";
  v.workspace_read_subpaths = {"src", "docs/a.md"};
  auto plan = LandlockRulesFor(v, NetworkMode::kNone, 2, kAll, kPid, kPort);
  EXPECT_EQ(Lines(plan), Concat({{"path /usr x,rf,rd optional", "beneath /ws:src x,rf,rd",
                                  "beneath /ws:docs/a.md x,rf,rd", "path /ws rd", "path / rd",
                                  "path /tmp all", "path /dev/shm all optional"},
                                 Devices(2),
                                 {"path /dev/pts wf,rf,rd optional", "path /proc x,rf,rd"}}));
  // Without a mount view the workspace directory is the host's own: not listable.
  auto bare = LandlockRulesFor(v, NetworkMode::kNone, 2, kNone, kPid, kPort);
  EXPECT_EQ(Lines(bare), Concat({{"path /usr x,rf,rd optional", "beneath /ws:src x,rf,rd",
                                  "beneath /ws:docs/a.md x,rf,rd"},
                                 Devices(2),
                                 {"path /proc/4242 x,rf,rd"}}));
}

TEST(LandlockRulesFor, WarmToolGetsItsReadPlanAndRuntimeFilesOnly) {
  // sys.exec's warm runner: no runtime roots, no /proc; the call's read plan and the tool's
  // files are the only things to read.
  FileView v;
  v.runtime_from_call = true;
  v.workspace_base = "/ws";
  v.workspace_plan = {{ReadOpKind::kDir, ".", ""},
                      {ReadOpKind::kBindDir, "src", ""},
                      {ReadOpKind::kBindFile, "README.md", ""},
                      {ReadOpKind::kBindLinkedFile, "linked", ""},
                      {ReadOpKind::kSymlink, "latest", "src"},
                      {ReadOpKind::kMaskFile, "src/fifo", ""}};
  v.runtime_files = {"/usr/bin/rg", "/lib64/ld-linux-x86-64.so.2"};
  auto plan = LandlockRulesFor(v, NetworkMode::kNone, 7, kAll, kPid, kPort);
  EXPECT_EQ(Lines(plan), Concat({{"plan-dir /ws:src x,rf,rd", "plan-file /ws:README.md x,rf,rd",
                                  "plan-linked-file /ws:linked x,rf,rd", "path /usr/bin/rg x,rf",
                                  "path /lib64/ld-linux-x86-64.so.2 x,rf", "path /ws rd",
                                  "path / rd", "path /tmp all", "path /dev/shm all optional"},
                                 Devices(7),
                                 {"path /dev/pts wf,rf,rd,ioctl optional"}}));
}

TEST(LandlockRulesFor, HomeExistsOnlyInTheMountView) {
  FileView v = WorkspaceWriteView();
  v.home_tmpfs = "/home/u";
  v.mapped_binds = {{"/home/u/.cache/anvil/home", "/home/u/.local", true, 0, 0},
                    {"/opt/toolchain", "/home/u/.cargo", false, 0, 0}};
  v.read_roots.push_back("/home/u/.config/git");
  v.read_roots.push_back("/home/u/.ssh-agent-free");
  v.credential_masks = {"/home/u/.ssh-agent-free/id_ed25519"};
  auto plan = LandlockRulesFor(v, NetworkMode::kNone, 7, kAll, kPid, kPort);
  EXPECT_EQ(Lines(plan), Concat({{"path /bin x,rf,rd optional", "path /usr x,rf,rd optional",
                                  "path /etc x,rf,rd optional", "path /lib x,rf,rd optional",
                                  "path /home/u/.config/git x,rf,rd optional",
                                  "path /home/u/.ssh-agent-free x,rf,rd optional", "path /ws all",
                                  "path /home/u all", "path /home/u/.local all optional",
                                  "path /home/u/.cargo x,rf,rd optional", "path / rd",
                                  "path /tmp all", "path /dev/shm all optional"},
                                 Devices(7),
                                 {"path /dev/pts wf,rf,rd,ioctl optional", "path /proc x,rf,rd"}}));
  // Without a mount namespace those paths would be the host's: no rule for them, and a read
  // root holding a credential nothing can cover is left out.
  auto bare = LandlockRulesFor(v, NetworkMode::kNone, 7, kNone, kPid, kPort);
  EXPECT_EQ(Lines(bare), Concat({{"path /bin x,rf,rd optional", "path /usr x,rf,rd optional",
                                  "path /etc x,rf,rd optional", "path /lib x,rf,rd optional",
                                  "path /home/u/.config/git x,rf,rd optional", "path /ws all"},
                                 Devices(7),
                                 {"path /proc/4242 x,rf,rd"}}));
}

TEST(LandlockRulesFor, ViewsFromThePolicyKeepTheirShape) {
  // The same decision from ComputeFileView's own output (its runtime roots pinned: it looks at
  // the real host for them): workspace-write's placeholder .git and read-only's workspace.
  HostFs host;
  const std::set<std::string> existing = {"/ws", "/ws/.git", "/cache"};
  host.resolve = [existing](const std::string& p) -> std::optional<std::string> {
    if (existing.count(p)) return p;
    return std::nullopt;
  };
  host.read_gitdir_pointer = [](const std::string&) { return std::nullopt; };
  host.is_symlink = [](const std::string&) { return false; };
  // What exists, as the fake says; the platform's read roots and masked files as the real host
  // has them.
  host.lstat_kind = [existing](const std::string& p) {
    if (existing.count(p)) return HostFs::Kind::kOther;
    return RealHostFs({}).lstat_kind(p);
  };
  auto pinned = [](FileView view) {
    std::vector<std::string> roots;
    for (const auto& r : view.read_roots) {
      bool platform = false;
      for (auto p : kPlatformReadRoots) platform = platform || r == p;
      if (!platform) roots.push_back(r);
    }
    view.read_roots = roots;
    return view;
  };
  SandboxPolicy write;
  write.workspace = "/ws";
  write.extra_writable_roots = {"/cache"};
  auto wv = ComputeFileView(write, host);
  ASSERT_TRUE(wv) << wv.error().ToString();
  auto plan = LandlockRulesFor(pinned(*wv), NetworkMode::kNone, 7, kAll, kPid, kPort);
  EXPECT_EQ(Lines(plan), Concat({{"path /ws all", "path /cache all", "path / rd", "path /tmp all",
                                  "path /dev/shm all optional"},
                                 Devices(7),
                                 {"path /dev/pts wf,rf,rd,ioctl optional", "path /proc x,rf,rd"}}));
  SandboxPolicy read;
  read.kind = PolicyKind::kReadOnly;
  read.workspace = "/ws";
  auto rv = ComputeFileView(read, host);
  ASSERT_TRUE(rv) << rv.error().ToString();
  plan = LandlockRulesFor(pinned(*rv), NetworkMode::kNone, 7, kAll, kPid, kPort);
  EXPECT_EQ(Lines(plan), Concat({{"path /ws x,rf,rd optional", "path / rd", "path /tmp all",
                                  "path /dev/shm all optional"},
                                 Devices(7),
                                 {"path /dev/pts wf,rf,rd,ioctl optional", "path /proc x,rf,rd"}}));
}

}  // namespace
}  // namespace landlock_rules_test
}  // namespace anvil::landlock
