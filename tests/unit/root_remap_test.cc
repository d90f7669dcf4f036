// Root's sandbox: which roots of a view are the caller's own (attached idmapped) and which host
// directories above them the view covers because the sandbox's id cannot search them.
#include "linux/root_remap.h"

#include <gtest/gtest.h>

#include <map>

namespace anvil {
namespace root_remap_test {
namespace {

using Paths = std::vector<std::string>;

FileView RestrictedView() {
  FileView view;
  view.read_roots = {"/bin", "/usr", "/etc", "/lib", "/lib64"};
  return view;
}

TEST(IdmappedRoots, WritableRootsAndTheReadOnlyWorkspaceNotTheRuntimeRoots) {
  FileView view = RestrictedView();
  view.writable_roots = {{"/home/u/ws", {"/home/u/ws/.git"}}, {"/srv/cache", {}}};
  EXPECT_EQ(IdmappedRoots(view), (Paths{"/home/u/ws", "/srv/cache"}));

  FileView read_only = RestrictedView();
  read_only.read_roots.push_back("/home/u/ws");
  EXPECT_EQ(IdmappedRoots(read_only), (Paths{"/home/u/ws"}));

  FileView runner = RestrictedView();  // sys.exec: the workspace's paths come one by one
  runner.workspace_base = "/home/u/ws";
  runner.workspace_read_subpaths = {"src"};
  EXPECT_EQ(IdmappedRoots(runner), (Paths{"/home/u/ws"}));
}

TEST(IdmappedRoots, EveryNamedRootIsIdmappedOnItsOwnEvenBeneathAnother) {
  // Only a tree's own mount is idmapped (a file system mounted beneath it keeps the host's
  // owners), so a root named beneath another one, which may be such a mount (a tmpfs of the
  // caller's named --writable-root), gets a tree of its own.
  FileView view = RestrictedView();
  view.writable_roots = {{"/ws", {}}, {"/ws/sub", {}}, {"/ws", {}}};
  EXPECT_EQ(IdmappedRoots(view), (Paths{"/ws", "/ws/sub"}));
}

TEST(IdmappedRoots, AWorkspaceThatIsARuntimeRootStaysTheHosts) {
  // read-only in /etc: /etc is a runtime root, shown as the host's, root-only files hidden.
  FileView view = RestrictedView();
  EXPECT_EQ(IdmappedRoots(view), Paths{});
}

TEST(IdmappedRoots, AReadOnlyWorkspaceInsideARuntimeRootStaysTheHosts) {
  // read-only in /etc/ssl: the system's tree, shown as /etc shows it (private/ stays root's);
  // elsewhere a read-only workspace is the caller's own.
  for (const char* inside : {"/etc/ssl", "/usr/share/doc", "/lib/modules"}) {
    FileView view = RestrictedView();
    view.read_roots.push_back(inside);
    EXPECT_EQ(IdmappedRoots(view), Paths{}) << inside;
  }
  FileView full;  // full read access: the same rule
  full.full_read = true;
  full.read_roots = {"/etc/ssl"};
  EXPECT_EQ(IdmappedRoots(full), Paths{});
  // Not a runtime root, only a name that starts like one.
  FileView beside = RestrictedView();
  beside.read_roots.push_back("/etcetera/ws");
  EXPECT_EQ(IdmappedRoots(beside), (Paths{"/etcetera/ws"}));
}

TEST(IdmappedRoots, AWritableRootInsideARuntimeRootIsTheCallersGrant) {
  // --writable-root /etc/app (or workspace-write in it): the caller gives the command that tree
  // to change, which only an idmapped tree lets root's command do.
  FileView view = RestrictedView();
  view.writable_roots = {{"/etc/app", {}}};
  EXPECT_EQ(IdmappedRoots(view), (Paths{"/etc/app"}));
}

std::function<std::optional<mode_t>(const std::string&)> Modes(
    std::map<std::string, mode_t> modes) {
  return [modes](const std::string& path) -> std::optional<mode_t> {
    auto it = modes.find(path);
    if (it == modes.end()) return std::nullopt;
    return it->second;
  };
}

TEST(UnsearchableAncestors, FullReadCoversTheHighestDirectoryOthersCannotSearch) {
  FileView view;
  view.full_read = true;
  view.writable_roots = {{"/root/src/ws", {}}};
  auto modes = Modes({{"/root", 040700}, {"/root/src", 040700}});
  EXPECT_EQ(UnsearchableAncestors(view, {"/root/src/ws"}, modes), Paths{"/root"});
  // 0711 and 0701 can be searched by others: nothing to cover.
  modes = Modes({{"/root", 040711}, {"/root/src", 040701}});
  EXPECT_EQ(UnsearchableAncestors(view, {"/root/src/ws"}, modes), Paths{});
  // 0750 (group only) cannot, one level down.
  modes = Modes({{"/root", 040755}, {"/root/src", 040750}});
  EXPECT_EQ(UnsearchableAncestors(view, {"/root/src/ws"}, modes), Paths{"/root/src"});
}

TEST(UnsearchableAncestors, DirectoriesTheViewMakesItselfAreNeverCovered) {
  // Restricted read: /home is not part of the view; its directories are the view's own.
  FileView view = RestrictedView();
  view.writable_roots = {{"/home/u/ws", {}}};
  auto modes = Modes({{"/home", 040700}, {"/home/u", 040700}});
  EXPECT_EQ(UnsearchableAncestors(view, {"/home/u/ws"}, modes), Paths{});
  // With full read, /tmp, /run, /dev and /proc are the view's own as well.
  FileView full;
  full.full_read = true;
  full.writable_roots = {{"/tmp/x/ws", {}}};
  EXPECT_EQ(UnsearchableAncestors(full, {"/tmp/x/ws"}, Modes({{"/tmp/x", 040700}})), Paths{});
}

TEST(UnsearchableAncestors, BelowARuntimeRootAndInsideTheCallersOwnTree) {
  FileView view = RestrictedView();
  view.writable_roots = {{"/etc/app/ws", {}}};
  auto modes = Modes({{"/etc", 040755}, {"/etc/app", 040700}});
  EXPECT_EQ(UnsearchableAncestors(view, {"/etc/app/ws"}, modes), Paths{"/etc/app"});
  // A root nested in another idmapped root: its ancestors there are the caller's own.
  FileView nested;
  nested.full_read = true;
  nested.writable_roots = {{"/srv/ws", {}}, {"/srv/ws/a/b", {}}};
  modes = Modes({{"/srv", 040755}, {"/srv/ws/a", 040700}});
  EXPECT_EQ(UnsearchableAncestors(nested, {"/srv/ws", "/srv/ws/a/b"}, modes), Paths{});
}

TEST(UnsearchableAncestors, AMissingAncestorIsLeftToTheBind) {
  FileView view;
  view.full_read = true;
  EXPECT_EQ(UnsearchableAncestors(view, {"/gone/ws"}, Modes({})), Paths{});
}

TEST(IdMapCovers, TheHostsMapCoversTheSandboxIdAContainersDoesNot) {
  EXPECT_TRUE(IdMapCovers("         0          0 4294967295\n", kRootSandboxHostId));
  // A rootless container: its root is the user's id, the rest a subordinate range.
  const std::string container = "0 1000 1\n1 100000 65536\n";
  EXPECT_FALSE(IdMapCovers(container, kRootSandboxHostId));
  EXPECT_TRUE(IdMapCovers(container, 0));
  EXPECT_TRUE(IdMapCovers(container, 65536));
  EXPECT_FALSE(IdMapCovers(container, 65537));
  EXPECT_FALSE(IdMapCovers("", 0));
  EXPECT_FALSE(IdMapCovers("garbage\n", 0));
}

TEST(IdmappedRoots, WhatTheCommandsHomeShowsByItsHostPath) {
  FileView view = RestrictedView();
  view.writable_roots = {{"/root/ws", {}}};
  view.mapped_binds = {{"/root/.local/state/anvil/homes/ws-1/home", "/root", true, 0, 0},
                       {"/root/.pyenv", "/root/.pyenv", false, 0, 0}};
  EXPECT_EQ(IdmappedRoots(view),
            (Paths{"/root/ws", "/root/.local/state/anvil/homes/ws-1/home", "/root/.pyenv"}));
}

TEST(UnsearchableAncestors, TheCommandsHomeOverAnUnsearchableDirectoryIsNeverCovered) {
  // Full read, root's home 0700, the workspace beneath it: /root shows the sandbox home (the
  // caller's own, idmapped), not the host's /root, so there is nothing to cover there, and the
  // home's own host path is not a path of the view at all.
  FileView view;
  view.full_read = true;
  view.writable_roots = {{"/root/src/ws", {}}};
  const std::string home = "/root/.local/state/anvil/homes/ws-1/home";
  view.mapped_binds = {{home, "/root", true, 0, 0}};
  auto modes = Modes({{"/root", 040700}, {"/root/src", 040700}});
  EXPECT_EQ(UnsearchableAncestors(view, {"/root/src/ws", home}, modes), Paths{});
}

}  // namespace
}  // namespace root_remap_test
}  // namespace anvil
