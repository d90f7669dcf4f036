#include "policy/sandbox_policy.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "linux/real_host.h"

namespace anvil {
namespace sandbox_policy_test {
namespace {

// A fake host: `existing` paths resolve to themselves (or to a mapped target).
HostFs FakeHost(std::set<std::string> existing, std::map<std::string, std::string> links = {},
                std::map<std::string, std::string> gitdirs = {}) {
  HostFs fs;
  fs.resolve = [existing, links](const std::string& p) -> std::optional<std::string> {
    if (auto it = links.find(p); it != links.end()) return it->second;
    if (existing.count(p)) return p;
    return std::nullopt;
  };
  fs.read_gitdir_pointer = [gitdirs](const std::string& p) -> std::optional<std::string> {
    if (auto it = gitdirs.find(p); it != gitdirs.end()) return it->second;
    return std::nullopt;
  };
  fs.is_symlink = [links](const std::string& p) { return links.count(p) > 0; };
  // What the fake knows, as it says; the platform's read roots and masked files as the real
  // host has them.
  fs.lstat_kind = [existing, links, gitdirs](const std::string& p) {
    if (gitdirs.count(p)) return HostFs::Kind::kRegular;
    if (existing.count(p) || links.count(p)) return HostFs::Kind::kOther;
    return RealHostFs({}).lstat_kind(p);
  };
  return fs;
}

TEST(PathIsWithin, ComponentWise) {
  EXPECT_TRUE(PathIsWithin("/ws", "/ws"));
  EXPECT_TRUE(PathIsWithin("/ws/a", "/ws"));
  EXPECT_FALSE(PathIsWithin("/ws2", "/ws"));
  EXPECT_FALSE(PathIsWithin("/w", "/ws"));
  EXPECT_TRUE(PathIsWithin("/anything", "/"));
}

// The directories of the view's own on the way down to the workspace: strictly between the
// sandbox home (or the view's /tmp) and the workspace, down to the first that another mount
// shows. The home and /tmp themselves stay writable.
TEST(WorkspaceWays, StrictlyBetweenTheHomeOrTmpAndTheWorkspace) {
  auto ways = [](const std::string& workspace, const std::string& home,
                 std::vector<std::string> extra_roots = {}, std::vector<MappedBind> binds = {}) {
    FileView v;
    v.workspace = workspace;
    v.read_roots = {"/usr", "/etc"};
    v.writable_roots = {{workspace, {workspace + "/.git"}}};
    for (const auto& r : extra_roots) v.writable_roots.push_back({r, {}});
    v.home_base = home;
    if (!home.empty()) v.mapped_binds.push_back({"/state/home", home, true, 0, 0});
    v.tmp_bind = v.mapped_binds.size();
    v.mapped_binds.push_back({"/state/tmp", "/tmp", true, 0, 0});
    for (const auto& b : binds) v.mapped_binds.push_back(b);
    return WorkspaceWays(v);
  };
  using V = std::vector<std::string>;
  // A workspace directly in the home or /tmp: no way of its own, the home's top stays writable.
  EXPECT_EQ(ways("/home/u/proj", "/home/u"), V{});
  EXPECT_EQ(ways("/tmp/app", "/home/u"), V{});
  // Beneath: each directory on the way.
  EXPECT_EQ(ways("/home/u/code/app", "/home/u"), V{"/home/u/code"});
  EXPECT_EQ(ways("/home/u/a/b/app", "/home/u"), (V{"/home/u/a", "/home/u/a/b"}));
  EXPECT_EQ(ways("/tmp/x/app", "/home/u"), V{"/tmp/x"});
  EXPECT_EQ(ways("/tmp/x/app", ""), V{"/tmp/x"});
  // Outside both: the view's read-only root holds the way (nothing to do).
  EXPECT_EQ(ways("/srv/code/app", "/home/u"), V{});
  // The workspace is the home: no sandbox home.
  EXPECT_EQ(ways("/home/u", ""), V{});
  // A root or bind that shows the host's directory on the way: the way stops above it.
  EXPECT_EQ(ways("/home/u/code/app", "/home/u", {"/home/u/code"}), V{});
  EXPECT_EQ(ways("/home/u/a/b/app", "/home/u", {"/home/u/a/b"}), V{"/home/u/a"});
  EXPECT_EQ(ways("/home/u/.pyenv/plugins/x", "/home/u", {},
                 {{"/home/u/.pyenv", "/home/u/.pyenv", false, 0, 0}}),
            V{});
  // A root beside the way (a toolchain, another writable root) does not change it.
  EXPECT_EQ(ways("/home/u/code/app", "/home/u", {"/home/u/code/lib"},
                 {{"/opt/rustup", "/home/u/.rustup", false, 0, 0}}),
            V{"/home/u/code"});
  // The host's /tmp shown by a root: /tmp is not the view's own, nothing is made in it.
  EXPECT_EQ(ways("/tmp/x/app", "/home/u", {"/tmp"}), V{});
  // No workspace (a view made without a policy): nothing.
  EXPECT_EQ(WorkspaceWays(FileView{}), V{});
}

// The workspace's logical path (a symlink on the host leads there): shown as a link to the
// workspace only in the view's own directories, never where a mount shows the host's.
TEST(WorkspaceLinkFor, OnlyInTheViewsOwnDirectories) {
  FileView v;
  v.workspace = "/tmp/real-proj";
  v.read_roots = {"/usr", "/etc", "/opt/tools"};
  v.writable_roots = {{"/tmp/real-proj", {"/tmp/real-proj/.git"}}, {"/srv/scratch", {}}};
  v.home_base = "/home/u";
  v.mapped_binds = {{"/state/home", "/home/u", true, 0, 0},
                    {"/state/tmp", "/tmp", true, 0, 0},
                    {"/opt/rustup", "/home/u/.rustup", false, 0, 0}};
  v.tmp_bind = 1;
  v.masked_dirs = {"/home/u/.config/gh"};
  // In /tmp, the home, the view's root: yes.
  for (const char* yes : {"/tmp/link-proj", "/tmp/links/proj", "/home/u/proj", "/home/u/a/b",
                          "/work/link-proj", "/link"}) {
    EXPECT_EQ(WorkspaceLinkFor(v, yes), yes);
  }
  // In a writable root (never made on the host), a read root or bind (the host's own path is
  // shown), at or above a mount, in /dev or /proc, the workspace itself, beside or inside it,
  // not lexically normal: no.
  for (const char* no : {"/srv/scratch/link",
                         "/srv/scratch",
                         "/usr/local/proj",
                         "/opt/tools/p",
                         "/home/u/.rustup/p",
                         "/home/u/.config/gh/p",
                         "/home/u/.config",
                         "/opt",
                         "/tmp",
                         "/home/u",
                         "/home",
                         "/",
                         "/dev/p",
                         "/proc/p",
                         "/tmp/real-proj",
                         "/tmp/real-proj/sub",
                         "/tmp/link/../x",
                         "/tmp/./link",
                         "/tmp//link",
                         "/tmp/link/",
                         "tmp/link",
                         ""}) {
    EXPECT_EQ(WorkspaceLinkFor(v, no), "") << no;
  }
  // The way down to it is made like the workspace's: /tmp/links, read-only.
  v.workspace_link = "/tmp/links/proj";
  EXPECT_EQ(WorkspaceWays(v), std::vector<std::string>{"/tmp/links"});
  v.workspace_link = "/home/u/a/b";
  EXPECT_EQ(WorkspaceWays(v), (std::vector<std::string>{"/home/u/a"}));
  // Full read: the host's root shows the host's link outside the home and /tmp.
  v.full_read = true;
  EXPECT_EQ(WorkspaceLinkFor(v, "/work/link-proj"), "");
  EXPECT_EQ(WorkspaceLinkFor(v, "/tmp/link-proj"), "/tmp/link-proj");
}

TEST(ComputeFileView, TheLogicalPathOfTheWorkspaceIsShownWhereItCanBe) {
  SandboxPolicy p;
  p.workspace = "/ws";
  p.workspace_logical = "/lnk/ws";
  auto view = ComputeFileView(p, FakeHost({"/ws", "/usr"}));
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_EQ(view->workspace, "/ws");
  EXPECT_EQ(view->workspace_link, "/lnk/ws");
  p.workspace_logical = "/usr/ws";  // the host's own, shown as it is
  view = ComputeFileView(p, FakeHost({"/ws", "/usr"}));
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_EQ(view->workspace_link, "");
}

TEST(ComputeFileView, WorkspaceWriteProtectsGitAndAnvil) {
  SandboxPolicy p;
  p.workspace = "/ws";
  auto view = ComputeFileView(p, FakeHost({"/ws", "/ws/.git", "/ws/.anvil"}));
  ASSERT_TRUE(view) << view.error().ToString();
  ASSERT_EQ(view->writable_roots.size(), 1u);
  EXPECT_EQ(view->writable_roots[0].root, "/ws");
  EXPECT_EQ(view->writable_roots[0].read_only_subpaths,
            (std::vector<std::string>{"/ws/.git", "/ws/.anvil"}));
  EXPECT_FALSE(view->full_read);
}

// Every protected name of the table (fs/protected_names.h) at the top of every writable root.
// Each name of the table, and each file of kProtectedFilesIn in its directory; --writable-git
// opens every repository's metadata (git's and the other version control systems') only.
TEST(ComputeFileView, EveryProtectedNameAtTheTopOfARootIsReadOnly) {
  SandboxPolicy p;
  p.workspace = "/ws";
  p.extra_writable_roots = {"/cache"};
  std::vector<std::pair<std::string, ProtectedNameKind>> names;
  for (const ProtectedName& name : kProtectedNames) names.emplace_back(name.name, name.kind);
  for (const ProtectedFileIn& f : kProtectedFilesIn) {
    names.emplace_back(std::string(f.dir) + "/" + std::string(f.name), f.kind);
  }
  std::set<std::string> existing = {"/ws", "/cache"};
  for (const auto& [name, kind] : names) {
    existing.insert("/ws/" + name);
    existing.insert("/cache/" + name);
  }
  for (const bool writable_git : {false, true}) {
    p.writable_git = writable_git;
    auto view = ComputeFileView(p, FakeHost(existing));
    ASSERT_TRUE(view) << view.error().ToString();
    ASSERT_EQ(view->writable_roots.size(), 2u);
    for (const auto& wr : view->writable_roots) {
      for (const auto& [name, kind] : names) {
        const std::string path = wr.root + "/" + name;
        const bool kept = std::find(wr.read_only_subpaths.begin(), wr.read_only_subpaths.end(),
                                    path) != wr.read_only_subpaths.end();
        EXPECT_EQ(kept, !(writable_git && IsRepositoryMetadata(kind)))
            << path << " writable_git=" << writable_git;
      }
    }
  }
}

// anvil.lock and Anvil.toml are read by Anvil without following a link (a link is refused): a
// link by those names is left as it is, where a symlinked .git or .anvil refuses the run.
TEST(ComputeFileView, SymlinkedLockOrConfigIsLeftAlone) {
  SandboxPolicy p;
  p.workspace = "/ws";
  auto view = ComputeFileView(
      p, FakeHost({"/ws", "/elsewhere/lock", "/elsewhere/toml"},
                  {{"/ws/anvil.lock", "/elsewhere/lock"}, {"/ws/Anvil.toml", "/elsewhere/toml"}}));
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_TRUE(view->writable_roots[0].read_only_subpaths.empty());
  auto anvil = ComputeFileView(p, FakeHost({"/ws", "/elsewhere"}, {{"/ws/.anvil", "/elsewhere"}}));
  ASSERT_FALSE(anvil);
  EXPECT_NE(anvil.error().message.find("symbolic link"), std::string::npos);
}

TEST(PinDirs, OnlyInsideAWritableRootAndOutsideItsReadOnlyPaths) {
  FileView view;
  view.writable_roots = {{"/ws", {"/ws/.git", "/ws/ro"}}, {"/ws/inner", {}}};
  PinDirs(view, {"/ws/a", "/ws/a/b", "/ws/a", "/ws/ro", "/ws/ro/deeper", "/ws/.git/hooks", "/ws",
                 "/elsewhere", "/ws/inner/c"});
  EXPECT_EQ(view.pinned_dirs, (std::vector<std::string>{"/ws/a", "/ws/a/b", "/ws/inner/c"}));
}

TEST(ComputeFileView, DiscoveredGitMetadataIsReadOnlyInItsRoot) {
  SandboxPolicy p;
  p.workspace = "/ws";
  p.extra_writable_roots = {"/cache"};
  auto view = ComputeFileView(p, FakeHost({"/ws", "/cache"}),
                              {"/ws/vendor/lib/.git", "/cache/x/.git", "/elsewhere/.git"});
  ASSERT_TRUE(view) << view.error().ToString();
  ASSERT_EQ(view->writable_roots.size(), 2u);
  EXPECT_EQ(view->writable_roots[0].read_only_subpaths,
            (std::vector<std::string>{"/ws/vendor/lib/.git"}));
  EXPECT_EQ(view->writable_roots[1].read_only_subpaths,
            (std::vector<std::string>{"/cache/x/.git"}));
  // A root that must be read-only as a whole cannot be a writable root.
  EXPECT_FALSE(ComputeFileView(p, FakeHost({"/ws", "/cache"}), {"/cache"}));
}

TEST(ComputeFileView, GitFilePointerTargetIsProtectedToo) {
  SandboxPolicy p;
  p.workspace = "/ws";
  p.extra_writable_roots = {"/repo"};
  auto view = ComputeFileView(p, FakeHost({"/ws", "/ws/.git", "/repo", "/repo/.git/worktrees/x"},
                                          {}, {{"/ws/.git", "/repo/.git/worktrees/x"}}));
  ASSERT_TRUE(view);
  ASSERT_EQ(view->writable_roots.size(), 2u);
  EXPECT_EQ(view->writable_roots[1].read_only_subpaths,
            (std::vector<std::string>{"/repo/.git/worktrees/x"}));
}

TEST(ComputeFileView, WritableGitDropsOnlyGit) {
  SandboxPolicy p;
  p.workspace = "/ws";
  p.writable_git = true;
  auto view = ComputeFileView(p, FakeHost({"/ws", "/ws/.git", "/ws/.anvil"}));
  ASSERT_TRUE(view);
  EXPECT_EQ(view->writable_roots[0].read_only_subpaths, std::vector<std::string>{"/ws/.anvil"});
}

TEST(ComputeFileView, ReadOnlyHasNoWritableRoots) {
  SandboxPolicy p;
  p.kind = PolicyKind::kReadOnly;
  p.workspace = "/ws";
  auto view = ComputeFileView(p, FakeHost({"/ws"}));
  ASSERT_TRUE(view);
  EXPECT_TRUE(view->writable_roots.empty());
  EXPECT_NE(std::find(view->read_roots.begin(), view->read_roots.end(), "/ws"),
            view->read_roots.end());
  p.extra_writable_roots = {"/x"};
  EXPECT_FALSE(ComputeFileView(p, FakeHost({"/ws", "/x"})));
}

TEST(ComputeFileView, ReadableSubpathsReplaceTheWholeWorkspace) {
  SandboxPolicy p;
  p.kind = PolicyKind::kReadOnly;
  p.workspace = "/ws";
  p.workspace_read_subpaths = std::vector<std::string>{"src", "docs/api", "src"};
  auto view = ComputeFileView(p, FakeHost({"/ws"}));
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_EQ(std::count(view->read_roots.begin(), view->read_roots.end(), "/ws"), 0);
  EXPECT_EQ(view->workspace_base, "/ws");
  EXPECT_EQ(view->workspace_read_subpaths, (std::vector<std::string>{"src", "docs/api"}));
  // Nothing readable at all is a valid (empty) view.
  p.workspace_read_subpaths = std::vector<std::string>{};
  view = ComputeFileView(p, FakeHost({"/ws"}));
  ASSERT_TRUE(view);
  EXPECT_TRUE(view->workspace_read_subpaths.empty());
  EXPECT_EQ(view->workspace_base, "/ws");
}

TEST(ComputeFileView, ReadableSubpathsMustBeRelativeAndStayBeneath) {
  SandboxPolicy p;
  p.kind = PolicyKind::kReadOnly;
  p.workspace = "/ws";
  for (std::string bad : {"/etc", "..", "a/../..", "a//b", "./a", "a/", ""}) {
    p.workspace_read_subpaths = std::vector<std::string>{bad};
    EXPECT_FALSE(ComputeFileView(p, FakeHost({"/ws"}))) << bad;
  }
  // Only for a read-only policy: a writable workspace is bound whole.
  p.kind = PolicyKind::kWorkspaceWrite;
  p.workspace_read_subpaths = std::vector<std::string>{"src"};
  EXPECT_FALSE(ComputeFileView(p, FakeHost({"/ws"})));
}

TEST(ComputeFileView, SymlinkedGitFailsClosedUnlessGitIsWritable) {
  SandboxPolicy p;
  p.workspace = "/ws";
  // The link itself could be replaced by a directory with hooks: refuse to run.
  auto view = ComputeFileView(p, FakeHost({"/ws"}, {{"/ws/.git", "/home/u/repo.git"}}));
  ASSERT_FALSE(view);
  EXPECT_EQ(view.error().code, "invalid");
  EXPECT_NE(view.error().message.find("--writable-git"), std::string::npos);
  p.writable_git = true;
  EXPECT_TRUE(ComputeFileView(p, FakeHost({"/ws"}, {{"/ws/.git", "/home/u/repo.git"}})));
  // .anvil as a link is refused even then.
  EXPECT_FALSE(ComputeFileView(p, FakeHost({"/ws"}, {{"/ws/.anvil", "/tmp/x"}})));
}

TEST(ComputeFileView, GitLinkedToTheRootItselfFailsClosed) {
  SandboxPolicy p;
  p.workspace = "/ws";
  EXPECT_FALSE(ComputeFileView(p, FakeHost({"/ws"}, {{"/ws/.git", "/ws"}})));
}

// A writable root that is a file once failed the start deep in the set-up ("open writable root
// ...: Not a directory"); ~/.gitconfig named as one, the same. Now each is refused by name
// before anything is made, the git configuration as the credential location it is, with the
// copy the sandbox shows. Beside them: a directory root still resolves.
TEST(WritableRootsOf, AFileOrTheGitConfigIsRefusedByName) {
  HostFs host = FakeHost({"/ws", "/x", "/x/notes.txt", "/home/u/.gitconfig",
                          "/home/u/.config/git/config", "/home/u/dots/gitconfig"},
                         {{"/home/u/gc-link", "/home/u/.gitconfig"}});
  auto base_kind = host.lstat_kind;
  host.lstat_kind = [base_kind](const std::string& p) {
    if (p == "/x/notes.txt" || p.ends_with("config")) return HostFs::Kind::kRegular;
    return base_kind(p);
  };
  SandboxPolicy p;
  p.kind = PolicyKind::kWorkspaceWrite;
  p.workspace = "/ws";
  p.extra_writable_roots = {"/x/notes.txt"};
  auto file = WritableRootsOf(p, host);
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error().message,
            "writable root /x/notes.txt is a file; a writable root is a directory (fix: name the "
            "directory that holds it)");
  for (const char* gitconfig :
       {"/home/u/.gitconfig", "/home/u/.config/git/config", "/home/u/gc-link"}) {
    p.extra_writable_roots = {gitconfig};
    auto r = WritableRootsOf(p, host);
    ASSERT_FALSE(r) << gitconfig;
    EXPECT_EQ(r.error().message.find("writable root " + std::string(gitconfig) +
                                     " is your git configuration, which may hold credentials"),
              0u)
        << r.error().message;
    EXPECT_NE(r.error().message.find("sanitized copy"), std::string::npos);
  }
  p.extra_writable_roots = {"/home/u/dots/gitconfig"};  // not where git reads it: a plain file
  EXPECT_NE(WritableRootsOf(p, host).error().message.find(" is a file;"), std::string::npos);
  p.extra_writable_roots = {"/x"};
  auto dir = WritableRootsOf(p, host);
  ASSERT_TRUE(dir) << dir.error().message;
  EXPECT_EQ(*dir, (std::vector<std::string>{"/ws", "/x"}));
}

// What a start computes before its view (the roots it makes placeholders in and walks): the
// view's writable roots, and every refusal of the policy the view would make, with its message.
// A workspace inside a credential location is refused by name under every policy that
// confines files (read-only once showed it as the empty mask and ran); one beside it is not.
TEST(WritableRootsOf, AWorkspaceInsideACredentialLocationIsRefusedUnderEveryPolicy) {
  const HostFs host = FakeHost({"/home/u/.ssh/proj", "/home/u/.sshproj", "/home/u/proj"});
  for (PolicyKind kind : {PolicyKind::kReadOnly, PolicyKind::kWorkspaceWrite}) {
    for (ReadAccess read : {ReadAccess::kRestricted, ReadAccess::kFull}) {
      SandboxPolicy p;
      p.kind = kind;
      p.read_access = read;
      p.home.credentials = {{"/home/u/.ssh", true}};
      p.workspace = "/home/u/.ssh/proj";
      auto refused = WritableRootsOf(p, host);
      ASSERT_FALSE(refused.has_value()) << ToString(kind);
      EXPECT_EQ(refused.error().message,
                "the workspace /home/u/.ssh/proj lies inside /home/u/.ssh, where credentials "
                "live; Anvil never shows those (fix: name the directory the command needs, "
                "outside it)");
      EXPECT_FALSE(ComputeFileView(p, host).has_value()) << ToString(kind);
      for (const char* benign : {"/home/u/proj", "/home/u/.sshproj"}) {
        p.workspace = benign;
        EXPECT_TRUE(WritableRootsOf(p, host).has_value()) << ToString(kind) << " " << benign;
      }
    }
  }
}

TEST(WritableRootsOf, TheViewsRootsAndItsRefusalsOfThePolicy) {
  struct Case {
    std::string name;
    SandboxPolicy policy;
    HostFs host;
  };
  auto policy = [](PolicyKind kind, std::string ws) {
    SandboxPolicy p;
    p.kind = kind;
    p.workspace = std::move(ws);
    return p;
  };
  std::vector<Case> cases;
  cases.push_back({"workspace", policy(PolicyKind::kWorkspaceWrite, "/ws"), FakeHost({"/ws"})});
  {
    auto p = policy(PolicyKind::kWorkspaceWrite, "/ws");
    p.extra_writable_roots = {"/x", "/y-link", "/x"};
    cases.push_back(
        {"extra roots, resolved, once", p, FakeHost({"/ws", "/x", "/y"}, {{"/y-link", "/y"}})});
    p.extra_writable_roots = {"/missing"};
    cases.push_back({"missing extra root", p, FakeHost({"/ws"})});
  }
  cases.push_back({"read-only", policy(PolicyKind::kReadOnly, "/ws"), FakeHost({"/ws"})});
  {
    auto p = policy(PolicyKind::kReadOnly, "/ws");
    p.extra_writable_roots = {"/x"};
    cases.push_back({"extra root without workspace-write", p, FakeHost({"/ws", "/x"})});
    p.extra_writable_roots = {};
    p.workspace_read_subpaths = std::vector<std::string>{"a/../.."};
    cases.push_back({"bad readable subpath", p, FakeHost({"/ws"})});
    p.workspace_read_subpaths = std::vector<std::string>{};
    p.runtime_from_call = true;
    cases.push_back({"runtime from the call", p, FakeHost({"/ws"})});
    p.read_access = ReadAccess::kFull;
    cases.push_back({"runtime from the call, full read", p, FakeHost({"/ws"})});
  }
  {
    auto p = policy(PolicyKind::kWorkspaceWrite, "/ws");
    p.workspace_read_subpaths = std::vector<std::string>{"src"};
    cases.push_back({"readable subpaths of a writable workspace", p, FakeHost({"/ws"})});
  }
  cases.push_back({"unconfined", policy(PolicyKind::kDangerFullAccess, "/ws"), FakeHost({"/ws"})});
  cases.push_back({"relative", policy(PolicyKind::kWorkspaceWrite, "ws"), FakeHost({"ws"})});
  cases.push_back({".git a link", policy(PolicyKind::kWorkspaceWrite, "/ws"),
                   FakeHost({"/ws"}, {{"/ws/.git", "/home/u/repo.git"}})});
  {
    auto p = policy(PolicyKind::kWorkspaceWrite, "/ws");
    p.writable_git = true;
    cases.push_back(
        {".git a link, --writable-git", p, FakeHost({"/ws"}, {{"/ws/.git", "/home/u/repo.git"}})});
    cases.push_back(
        {".anvil a link, --writable-git", p, FakeHost({"/ws"}, {{"/ws/.anvil", "/tmp/x"}})});
    p.writable_git = false;
    p.extra_writable_roots = {"/x"};
    cases.push_back({".git a link in the second root", p,
                     FakeHost({"/ws", "/x"}, {{"/x/.git", "/home/u/repo.git"}})});
  }
  {
    auto p = policy(PolicyKind::kWorkspaceWrite, "/ws");
    p.extra_read_only_subpaths = {"/ws/docs"};
    cases.push_back({"read-only subpath", p, FakeHost({"/ws", "/ws/docs"})});
    p.extra_read_only_subpaths = {"/ws/nope"};
    cases.push_back({"missing read-only subpath", p, FakeHost({"/ws"})});
    p.extra_read_only_subpaths = {"/ws"};
    cases.push_back({"the root read-only", p, FakeHost({"/ws"})});
  }
  for (const auto& c : cases) {
    const auto roots = WritableRootsOf(c.policy, c.host);
    const auto view = ComputeFileView(c.policy, c.host);
    ASSERT_EQ(roots.has_value(), view.has_value()) << c.name;
    if (!view) {
      EXPECT_EQ(roots.error().code, view.error().code) << c.name;
      EXPECT_EQ(roots.error().message, view.error().message) << c.name;
      continue;
    }
    std::vector<std::string> want;
    for (const auto& wr : view->writable_roots) want.push_back(wr.root);
    EXPECT_EQ(*roots, want) << c.name;
  }
}

TEST(ComputeFileView, RefusesUnconfinedPoliciesAndRelativeWorkspace) {
  SandboxPolicy p;
  p.kind = PolicyKind::kDangerFullAccess;
  p.workspace = "/ws";
  EXPECT_FALSE(ComputeFileView(p, FakeHost({"/ws"})));
  p.kind = PolicyKind::kWorkspaceWrite;
  p.workspace = "ws";
  EXPECT_FALSE(ComputeFileView(p, FakeHost({"ws"})));
}

TEST(ComputeFileView, HostSocketsAreMaskedWhereTheViewShowsThem) {
  const std::vector<std::string> sockets = {"/home/u/.gnupg/S.gpg-agent", "/run/docker.sock",
                                            "/tmp/.X11-unix/X0",          "/ws/dev.sock",
                                            "/usr/lib/odd.sock",          "/var/lib/d/api.sock"};
  auto host = FakeHost({"/ws"});
  host.bound_unix_sockets = [&](const FileView&) { return HostSocketMasks{sockets, {}}; };
  SandboxPolicy p;
  p.workspace = "/ws";
  // Restricted read access: only what lies beneath a bound root is visible.
  auto view = ComputeFileView(p, host);
  ASSERT_TRUE(view) << view.error().ToString();
  std::set<std::string> masked(view->masked_files.begin(), view->masked_files.end());
  EXPECT_TRUE(masked.count("/ws/dev.sock"));
  EXPECT_TRUE(masked.count("/usr/lib/odd.sock"));
  EXPECT_FALSE(masked.count("/home/u/.gnupg/S.gpg-agent"));  // not in this view at all
  EXPECT_FALSE(masked.count("/run/docker.sock"));
  // Full read: everything but what the view replaces (/run, /tmp, /dev, /proc).
  p.read_access = ReadAccess::kFull;
  view = ComputeFileView(p, host);
  ASSERT_TRUE(view) << view.error().ToString();
  masked = std::set<std::string>(view->masked_files.begin(), view->masked_files.end());
  EXPECT_EQ(masked, (std::set<std::string>{"/home/u/.gnupg/S.gpg-agent", "/ws/dev.sock",
                                           "/usr/lib/odd.sock", "/var/lib/d/api.sock"}));
  // A workspace under /tmp is bound over the private /tmp: its sockets are visible again.
  p.workspace = "/tmp/ws";
  host = FakeHost({"/tmp/ws"});
  host.bound_unix_sockets = [](const FileView&) {
    return HostSocketMasks{{"/tmp/ws/a.sock", "/tmp/other.sock"}, {}};
  };
  view = ComputeFileView(p, host);
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_EQ(view->masked_files, (std::vector<std::string>{"/tmp/ws/a.sock"}));
  // Readable workspace subpaths (sys.exec) are opened beneath the workspace later: no masks there.
  SandboxPolicy ro;
  ro.kind = PolicyKind::kReadOnly;
  ro.workspace = "/ws";
  ro.workspace_read_subpaths = std::vector<std::string>{"src"};
  host = FakeHost({"/ws"});
  host.bound_unix_sockets = [](const FileView&) {
    return HostSocketMasks{{"/ws/src/a.sock"}, {"/ws/src/closed"}};
  };
  view = ComputeFileView(ro, host);
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_TRUE(view->masked_files.empty() ||
              std::none_of(view->masked_files.begin(), view->masked_files.end(),
                           [](const std::string& m) { return PathIsWithin(m, "/ws"); }));
  EXPECT_TRUE(view->masked_dirs.empty()) << view->masked_dirs.front();
}

TEST(ComputeFileView, LockedDirectoriesASocketMayBeBeneathAreMaskedWhereTheViewShowsThem) {
  // The caller's own directory it may not search: covered by an empty read-only directory, as
  // a credential directory is, where the view shows it.
  auto host = FakeHost({"/ws"});
  host.bound_unix_sockets = [](const FileView&) {
    return HostSocketMasks{{"/ws/a.sock"}, {"/ws/closed", "/home/u/closed", "/tmp/closed"}};
  };
  SandboxPolicy p;
  p.workspace = "/ws";
  auto view = ComputeFileView(p, host);
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_EQ(view->masked_files.back(), "/ws/a.sock");
  EXPECT_EQ(view->masked_dirs, (std::vector<std::string>{"/ws/closed"}));
  EXPECT_TRUE(view->credential_masks.empty());
  p.read_access = ReadAccess::kFull;
  view = ComputeFileView(p, host);
  ASSERT_TRUE(view) << view.error().ToString();
  EXPECT_EQ(view->masked_dirs, (std::vector<std::string>{"/ws/closed", "/home/u/closed"}));
}

TEST(ParsePolicy, NamesRoundTripAndUnknownIsAnError) {
  for (auto name : {"read-only", "workspace-write", "danger-full-access", "external-sandbox"}) {
    auto k = ParsePolicyKind(name);
    ASSERT_TRUE(k);
    EXPECT_EQ(ToString(*k), name);
  }
  auto bad = ParsePolicyKind("full");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, "invalid");
  EXPECT_FALSE(ParseNetworkMode("on"));
  EXPECT_FALSE(ParseReadAccess("all"));
}

// Package metadata (dpkg's database, apt's lists) is shown read-only where it is the system's:
// a directory at every step from /var down, owned by root, writable by no one else.
TEST(SystemOwnedDirectory, RootsAtEveryStepAndWritableByNoOneElse) {
  using Facts = std::map<std::string, PathOwner>;
  const PathOwner sys{0, S_IFDIR | 0755};
  const Facts good = {{"/var", sys}, {"/var/lib", sys}, {"/var/lib/dpkg", sys}};
  auto with = [&](Facts f, const std::string& path, PathOwner o) {
    f[path] = o;
    return f;
  };
  struct Row {
    const char* name;
    Facts facts;
    bool shown;
  };
  const Row rows[] = {
      {"the system's", good, true},
      {"missing", {{"/var", sys}, {"/var/lib", sys}}, false},
      {"owned by a user", with(good, "/var/lib/dpkg", {1000, S_IFDIR | 0755}), false},
      {"group-writable", with(good, "/var/lib/dpkg", {0, S_IFDIR | 0775}), false},
      {"world-writable", with(good, "/var/lib/dpkg", {0, S_IFDIR | 0777}), false},
      {"a symlink", with(good, "/var/lib/dpkg", {0, S_IFLNK | 0777}), false},
      {"a file", with(good, "/var/lib/dpkg", {0, S_IFREG | 0644}), false},
      {"a parent a user owns", with(good, "/var/lib", {1000, S_IFDIR | 0755}), false},
      {"a parent others may write", with(good, "/var", {0, S_IFDIR | 01777}), false},
  };
  for (const Row& row : rows) {
    auto owner = [&](const std::string& p) -> std::optional<PathOwner> {
      auto it = row.facts.find(p);
      if (it == row.facts.end()) return std::nullopt;
      return it->second;
    };
    EXPECT_EQ(SystemOwnedDirectory("/var/lib/dpkg", owner), row.shown) << row.name;
  }
  EXPECT_FALSE(SystemOwnedDirectory("/", [&](const std::string&) { return sys; }));
}

TEST(ComputeFileView, PackageMetadataIsAReadRootWhereItIsTheSystems) {
  SandboxPolicy p;
  p.workspace = "/ws";
  HostFs host = FakeHost({"/ws"});
  // Without owner facts nothing of /var is shown.
  auto none = ComputeFileView(p, host);
  ASSERT_TRUE(none);
  for (const auto& r : none->read_roots) EXPECT_FALSE(PathIsWithin(r, "/var")) << r;
  host.owner = [](const std::string& path) -> std::optional<PathOwner> {
    if (path == "/var/lib/apt/lists") return PathOwner{100, S_IFDIR | 0755};  // not root's
    if (PathIsWithin("/var/lib/apt/lists", path) || PathIsWithin("/var/lib/dpkg", path)) {
      return PathOwner{0, S_IFDIR | 0755};
    }
    return std::nullopt;
  };
  auto view = ComputeFileView(p, host);
  ASSERT_TRUE(view);
  EXPECT_NE(std::find(view->read_roots.begin(), view->read_roots.end(), "/var/lib/dpkg"),
            view->read_roots.end());
  EXPECT_EQ(std::find(view->read_roots.begin(), view->read_roots.end(), "/var/lib/apt/lists"),
            view->read_roots.end());
  // Not with full read access (the whole root is shown), nor for a warm runner.
  p.read_access = ReadAccess::kFull;
  auto full = ComputeFileView(p, host);
  ASSERT_TRUE(full);
  EXPECT_EQ(std::find(full->read_roots.begin(), full->read_roots.end(), "/var/lib/dpkg"),
            full->read_roots.end());
  // The system's trees, for the refusal summary and root's idmapping.
  EXPECT_TRUE(InSystemRoot("/var/lib/dpkg/status"));
  EXPECT_TRUE(InSystemRoot("/usr/bin"));
  EXPECT_FALSE(InSystemRoot("/var/lib"));
  EXPECT_FALSE(InSystemRoot("/var/lib/apt"));
}

}  // namespace
}  // namespace sandbox_policy_test
}  // namespace anvil
