// The mount wall of a command, stated exactly: for each kind of view, the ordered list of mounts
// PlanMounts gives BuildMountView (linux/mount_plan.h), the way Codex states its exact bwrap
// argv. No kernel is involved; the security tests prove the view holds on a real one.
#include "linux/mount_plan.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "linux/mount_view.h"

namespace anvil {
namespace mount_plan_test {
namespace {

std::string KindName(MountOpKind kind) {
  switch (kind) {
    case MountOpKind::kReadOnly:
      return "ro";
    case MountOpKind::kWritable:
      return "rw";
    case MountOpKind::kPinLink:
      return "pin-link";
    case MountOpKind::kMask:
      return "mask";
    case MountOpKind::kMaskDir:
      return "mask-dir";
    case MountOpKind::kTmp:
      return "tmp";
    case MountOpKind::kRun:
      return "run";
    case MountOpKind::kDev:
      return "dev";
    case MountOpKind::kProc:
      return "proc";
    case MountOpKind::kWorkspaceDir:
      return "workspace-dir";
    case MountOpKind::kBeneath:
      return "beneath";
    case MountOpKind::kCover:
      return "cover";
    case MountOpKind::kMapped:
      return "mapped";
    case MountOpKind::kHomeTmpfs:
      return "home-tmpfs";
    case MountOpKind::kWay:
      return "way";
    case MountOpKind::kHomeStartupDir:
      return "home-startup-dir";
  }
  return "?";
}

// "<kind> <path>", and "#<index>" for a mapped bind.
std::vector<std::string> Lines(const std::vector<MountOp>& ops) {
  std::vector<std::string> out;
  for (const MountOp& op : ops) {
    std::string line = KindName(op.kind) + " " + op.path;
    if (op.kind == MountOpKind::kMapped) line += " #" + std::to_string(op.index);
    out.push_back(line);
  }
  return out;
}

// A host where every directory is an ordinary, searchable one (and /run exists).
std::optional<mode_t> OrdinaryHost(const std::string&) { return S_IFDIR | 0755; }

std::vector<std::string> Plan(const FileView& view, const MountPlanOptions& options = {},
                              const HostModeFn& host = OrdinaryHost) {
  auto ops = PlanMounts(view, options, host);
  EXPECT_TRUE(ops) << ops.error().ToString();
  return ops ? Lines(*ops) : std::vector<std::string>{};
}

FileView WorkspaceWriteView() {
  FileView v;
  v.read_roots = {"/bin", "/usr", "/etc", "/lib"};
  v.writable_roots = {{"/ws", {"/ws/.git", "/ws/.anvil"}}};
  v.masked_files = {"/etc/shadow", "/etc/ssh/ssh_host_ed25519_key"};
  return v;
}

TEST(PlanMounts, WorkspaceWriteBindsGitAndAnvilReadOnlyOnTopOfTheRoot) {
  // The .git a placeholder made (when missing) is in the view as any other: read-only over the
  // writable root, one level deeper, so after it.
  EXPECT_EQ(
      Plan(WorkspaceWriteView()),
      (std::vector<std::string>{"dev /dev", "proc /proc", "tmp /tmp", "ro /bin", "ro /usr",
                                "ro /etc", "ro /lib", "rw /ws", "ro /ws/.git", "ro /ws/.anvil",
                                "mask /etc/shadow", "mask /etc/ssh/ssh_host_ed25519_key"}));
}

TEST(PlanMounts, WithoutAPidNamespaceThereIsNoProc) {
  MountPlanOptions options;
  options.mount_proc = false;
  EXPECT_EQ(Plan(WorkspaceWriteView(), options),
            (std::vector<std::string>{"dev /dev", "tmp /tmp", "ro /bin", "ro /usr", "ro /etc",
                                      "ro /lib", "rw /ws", "ro /ws/.git", "ro /ws/.anvil",
                                      "mask /etc/shadow", "mask /etc/ssh/ssh_host_ed25519_key"}));
}

TEST(PlanMounts, ExtraWritableRootsAndPinnedDirectories) {
  FileView v = WorkspaceWriteView();
  v.masked_files.clear();
  v.writable_roots.push_back({"/tmp/build", {"/tmp/build/.git"}});
  v.pinned_dirs = {"/ws/vendor", "/ws/vendor/lib"};
  v.writable_roots[0].read_only_subpaths.push_back("/ws/vendor/lib/.git");
  // /tmp/build is bound over the fresh /tmp; at each depth the writable roots, then the
  // pinned directories, then the read-only paths.
  EXPECT_EQ(Plan(v),
            (std::vector<std::string>{
                "dev /dev", "proc /proc", "tmp /tmp", "ro /bin", "ro /usr", "ro /etc", "ro /lib",
                "rw /ws", "rw /tmp/build", "rw /ws/vendor", "ro /ws/.git", "ro /ws/.anvil",
                "rw /ws/vendor/lib", "ro /tmp/build/.git", "ro /ws/vendor/lib/.git"}));
}

TEST(PlanMounts, PinnedLinksComeAfterTheirDirectoriesAndBeforeTheReadOnlyPaths) {
  // A workspace of the home (policy/host_autorun.h): ~/.bashrc read-only, ~/.zshrc a pinned
  // placeholder, ~/.local/bin a pinned link to a directory kept read-only.
  FileView v;
  v.writable_roots = {{"/home/u", {"/home/u/.bashrc", "/home/u/.git", "/home/u/opt/bin"}}};
  v.pinned_dirs = {"/home/u/.local", "/home/u/opt"};
  v.pinned_links = {"/home/u/.zshrc", "/home/u/.local/bin"};
  EXPECT_EQ(Plan(v), (std::vector<std::string>{
                         "dev /dev", "proc /proc", "tmp /tmp", "rw /home/u", "rw /home/u/.local",
                         "rw /home/u/opt", "pin-link /home/u/.zshrc", "ro /home/u/.bashrc",
                         "ro /home/u/.git", "pin-link /home/u/.local/bin", "ro /home/u/opt/bin"}));
}

TEST(PlanMounts, ReadOnlyWorkspaceIsAReadRoot) {
  FileView v;
  v.read_roots = {"/usr", "/etc", "/home/u/proj"};
  v.masked_files = {"/etc/shadow", "/home/u/proj/agent.sock"};
  EXPECT_EQ(Plan(v), (std::vector<std::string>{"dev /dev", "proc /proc", "tmp /tmp", "ro /usr",
                                               "ro /etc", "mask /etc/shadow", "ro /home/u/proj",
                                               "mask /home/u/proj/agent.sock"}));
}

TEST(PlanMounts, FullReadBindsTheRootAndHidesRunWhenTheHostHasIt) {
  FileView v;
  v.full_read = true;
  v.writable_roots = {{"/ws", {"/ws/.git"}}};
  EXPECT_EQ(Plan(v), (std::vector<std::string>{"ro /", "dev /dev", "proc /proc", "tmp /tmp",
                                               "run /run", "rw /ws", "ro /ws/.git"}));
  auto no_run = [](const std::string& path) -> std::optional<mode_t> {
    if (path == "/run") return std::nullopt;
    return S_IFDIR | 0755;
  };
  EXPECT_EQ(Plan(v, {}, no_run), (std::vector<std::string>{"ro /", "dev /dev", "proc /proc",
                                                           "tmp /tmp", "rw /ws", "ro /ws/.git"}));
  auto run_link = [](const std::string& path) -> std::optional<mode_t> {
    return path == "/run" ? S_IFLNK | 0777 : S_IFDIR | 0755;
  };
  EXPECT_EQ(Plan(v, {}, run_link), (std::vector<std::string>{"ro /", "dev /dev", "proc /proc",
                                                             "tmp /tmp", "rw /ws", "ro /ws/.git"}));
}

TEST(PlanMounts, ReadableWorkspacePathsAreBoundBeneathAnEmptyDirectory) {
  FileView v;
  v.read_roots = {"/usr"};
  v.workspace_base = "/ws";
  v.workspace_read_subpaths = {"src", "docs/a.md"};
  EXPECT_EQ(Plan(v), (std::vector<std::string>{"dev /dev", "proc /proc", "tmp /tmp", "ro /usr",
                                               "workspace-dir /ws", "beneath /ws/src",
                                               "beneath /ws/docs/a.md"}));
}

TEST(PlanMounts, WarmRunnerDefersTheWorkspaceAndHasNoProc) {
  FileView v;
  v.runtime_from_call = true;
  v.workspace_base = "/ws";
  MountPlanOptions options;
  options.mount_proc = false;
  options.defer_workspace_paths = true;
  EXPECT_EQ(Plan(v, options),
            (std::vector<std::string>{"dev /dev", "tmp /tmp", "workspace-dir /ws"}));
}

TEST(PlanMounts, ADeferredWorkspaceRefusesAnythingBeneathIt) {
  MountPlanOptions options;
  options.defer_workspace_paths = true;
  FileView with_paths;
  with_paths.workspace_base = "/ws";
  with_paths.workspace_read_subpaths = {"src"};
  auto ops = PlanMounts(with_paths, options, OrdinaryHost);
  ASSERT_FALSE(ops);
  EXPECT_NE(ops.error().message.find("empty workspace directory"), std::string::npos);
  FileView no_workspace;
  EXPECT_FALSE(PlanMounts(no_workspace, options, OrdinaryHost));
  FileView masked;
  masked.workspace_base = "/ws";
  masked.masked_files = {"/ws/agent.sock"};
  ops = PlanMounts(masked, options, OrdinaryHost);
  ASSERT_FALSE(ops);
  EXPECT_NE(ops.error().message.find("/ws/agent.sock"), std::string::npos);
}

TEST(PlanMounts, HomeTmpfsMappedBindsAndCredentialMasks) {
  FileView v = WorkspaceWriteView();
  v.masked_files = {"/etc/shadow"};
  v.home_tmpfs = "/home/u";
  v.home_base = "/home/u";
  v.read_roots.push_back("/home/u/.config/git");
  v.mapped_binds = {{"/home/u/.cache/anvil/home", "/home/u/.local", true, 0, 0},
                    {"/opt/rust", "/home/u/.cargo", false, 0, 0}};
  v.masked_dirs = {"/home/u/.config/git/credentials.d"};
  v.masked_files.push_back("/home/u/.config/git/credentials");
  EXPECT_EQ(Plan(v), (std::vector<std::string>{
                         "dev /dev", "proc /proc", "tmp /tmp", "ro /bin", "ro /usr", "ro /etc",
                         "ro /lib", "rw /ws", "ro /ws/.git", "ro /ws/.anvil", "home-tmpfs /home/u",
                         "mask /etc/shadow", "mapped /home/u/.local #0", "mapped /home/u/.cargo #1",
                         "ro /home/u/.config/git", "mask /home/u/.config/git/credentials",
                         "mask-dir /home/u/.config/git/credentials.d"}));
}

// fish's directories of the sandbox home are each an empty tmpfs of the run's own where the
// sandbox home itself holds the place (what an earlier run could have written: fail closed),
// after the mounts above them; where another mount shows the host's own directory there (a
// readable root of ~/.config, a writable root the user named, a toolchain bind), that mount is
// what the command sees: a read-only one has no room for a mount point, and the user's own fish
// configuration is theirs, not planted.
TEST(PlanMounts, FishsDirectoriesAreTheRunsOwnOnlyWhereTheSandboxHomeHoldsThem) {
  const std::string cfg = "home-startup-dir /home/u/.config/fish";
  const std::string data = "home-startup-dir /home/u/.local/share/fish";
  struct Row {
    const char* name;
    std::function<void(FileView&)> shape;
    std::vector<std::string> startup;  // the kHomeStartupDir ops, in order
  };
  const std::vector<Row> rows = {
      // The sandbox home's own places: an earlier run could have planted conf.d there.
      {"tmpfs home", [](FileView&) {}, {cfg, data}},
      {"persistent home (a writable bind of Anvil's state at the home)",
       [](FileView& v) {
         v.home_tmpfs.clear();
         v.mapped_binds = {{"/h/state/home", "/home/u", true, 0, 0}};
       },
       {cfg, data}},
      {"a cache's shadow over ~/.local/share (the sandbox home's, writable)",
       [](FileView& v) {
         v.mapped_binds = {{"/h/state/home/.cache", "/home/u/.local/share", true, 0, 0}};
       },
       {cfg, data}},
      {"a workspace directory of the view's own at ~/.config (made in the sandbox home)",
       [](FileView& v) {
         v.workspace_base = "/home/u/.config";
         v.workspace_read_subpaths = {"nvim"};
       },
       {cfg, data}},
      {"a readable root beneath fish's directory (bound on top of the tmpfs)",
       [](FileView& v) {
         v.mapped_binds = {
             {"/home/u/.config/fish/functions", "/home/u/.config/fish/functions", false, 0, 0}};
       },
       {cfg, data}},
      {"a root beside, not above (~/.config2, ~/.local/share/uv)",
       [](FileView& v) {
         v.mapped_binds = {{"/home/u/.config2", "/home/u/.config2", false, 0, 0},
                           {"/home/u/.local/share/uv", "/home/u/.local/share/uv", false, 0, 0}};
       },
       {cfg, data}},
      // The host's own directory, shown by another mount: left as that mount shows it.
      {"--readable-root ~/.config",
       [](FileView& v) {
         v.mapped_binds = {{"/home/u/.config", "/home/u/.config", false, 0, 0}};
       },
       {data}},
      {"--readable-root ~/.local/share/fish (a symlink's target)",
       [](FileView& v) {
         v.mapped_binds = {{"/srv/fish", "/home/u/.local/share/fish", false, 0, 0}};
       },
       {cfg}},
      {"--readable-root ~/.local and ~/.config/fish",
       [](FileView& v) {
         v.mapped_binds = {{"/home/u/.local", "/home/u/.local", false, 0, 0},
                           {"/home/u/.config/fish", "/home/u/.config/fish", false, 0, 0}};
       },
       {}},
      {"--writable-root ~/.config",
       [](FileView& v) {
         v.writable_roots.push_back({"/home/u/.config", {}});
       },
       {data}},
      {"a read-only workspace of ~/.local/share",
       [](FileView& v) { v.read_roots.push_back("/home/u/.local/share"); },
       {cfg}},
      {"a readable workspace path at ~/.config/fish",
       [](FileView& v) {
         v.workspace_base = "/home/u/.config";
         v.workspace_read_subpaths = {"fish"};
       },
       {data}},
      {"a shadow of the sandbox home's at ~/.config/fish beneath a host bind: the deepest decides",
       [](FileView& v) {
         v.mapped_binds = {{"/home/u/.config", "/home/u/.config", false, 0, 0},
                           {"/h/state/home/fish", "/home/u/.config/fish", true, 0, 0}};
       },
       {cfg, data}},
  };
  for (const Row& row : rows) {
    FileView v;
    v.read_roots = {"/usr"};
    v.home_tmpfs = "/home/u";
    v.home_base = "/home/u";
    v.home_startup_dirs = {".config/fish", ".local/share/fish"};
    row.shape(v);
    auto ops = PlanMounts(v, {}, OrdinaryHost);
    ASSERT_TRUE(ops) << row.name << ": " << ops.error().ToString();
    std::vector<std::string> startup;
    for (const std::string& line : Lines(*ops)) {
      if (line.rfind("home-startup-dir ", 0) == 0) startup.push_back(line);
    }
    EXPECT_EQ(startup, row.startup) << row.name;
    // Each after every mount above it or at its place, before every mount beneath it.
    const auto lines = Lines(*ops);
    for (const std::string& dir : row.startup) {
      const auto at = std::find(lines.begin(), lines.end(), dir) - lines.begin();
      const std::string path = dir.substr(dir.find(' ') + 1);
      for (std::size_t i = 0; i < ops->size(); ++i) {
        const MountOp& op = (*ops)[i];
        if (op.kind == MountOpKind::kHomeStartupDir) continue;
        if (PathIsWithin(path, op.path)) {
          EXPECT_LT(static_cast<std::ptrdiff_t>(i), at) << row.name << ": " << lines[i];
        }
        if (op.path != path && PathIsWithin(op.path, path)) {
          EXPECT_GT(static_cast<std::ptrdiff_t>(i), at) << row.name << ": " << lines[i];
        }
      }
    }
  }
  // No sandbox home: nothing of it.
  FileView none;
  none.home_startup_dirs = {".config/fish"};
  EXPECT_EQ(Plan(none), (std::vector<std::string>{"dev /dev", "proc /proc", "tmp /tmp"}));
}

// The shells' start-up files follow the same rule as fish's directories (HomePlaceIsTheHomes):
// written only where the sandbox home itself holds the place; where another mount shows the
// host's own file (or a directory above it), it is the user's own, left as that mount shows it
// (writing it would fail: a bind's mount point cannot be replaced).
TEST(PlanMounts, StartupFilesAreWrittenOnlyWhereTheSandboxHomeHoldsThem) {
  struct Row {
    const char* name;
    std::function<void(FileView&)> shape;
    std::vector<std::string> written;  // the paths of HomeFilesToWrite, in order
  };
  const std::vector<Row> rows = {
      // The sandbox home's own places: an earlier run could have planted them.
      {"tmpfs home", [](FileView&) {}, {".bashrc", ".zshenv", ".profile"}},
      {"persistent home (a writable bind of Anvil's state at the home)",
       [](FileView& v) {
         v.home_tmpfs.clear();
         v.mapped_binds = {{"/h/state/home", "/home/u", true, 0, 0}};
       },
       {".bashrc", ".zshenv", ".profile"}},
      {"a root beside, not over (~/.bashrc.d, ~/.config)",
       [](FileView& v) {
         v.mapped_binds = {{"/home/u/.bashrc.d", "/home/u/.bashrc.d", false, 0, 0},
                           {"/home/u/.config", "/home/u/.config", false, 0, 0}};
       },
       {".bashrc", ".zshenv", ".profile"}},
      {"a workspace directory of the view's own in the home",
       [](FileView& v) {
         v.workspace_base = "/home/u/src";
         v.workspace_read_subpaths = {"a"};
       },
       {".bashrc", ".zshenv", ".profile"}},
      // The host's own file, shown by another mount: left as that mount shows it.
      {"--readable-root ~/.bashrc",
       [](FileView& v) {
         v.mapped_binds = {{"/home/u/.bashrc", "/home/u/.bashrc", false, 0, 0}};
       },
       {".zshenv", ".profile"}},
      {"--readable-root ~/.zshenv (a symlink's target)",
       [](FileView& v) {
         v.mapped_binds = {{"/home/u/dotfiles/zshenv", "/home/u/.zshenv", false, 0, 0}};
       },
       {".bashrc", ".profile"}},
      {"--readable-root ~/.bashrc and ~/.profile",
       [](FileView& v) {
         v.mapped_binds = {{"/home/u/.bashrc", "/home/u/.bashrc", false, 0, 0},
                           {"/home/u/.profile", "/home/u/.profile", false, 0, 0}};
       },
       {".zshenv"}},
      {"--writable-root ~/.bashrc",
       [](FileView& v) {
         v.writable_roots.push_back({"/home/u/.bashrc", {}});
       },
       {".zshenv", ".profile"}},
      {"a read-only root (a read-only workspace) at ~/.zshenv",
       [](FileView& v) { v.read_roots.push_back("/home/u/.zshenv"); },
       {".bashrc", ".profile"}},
      {"a mask over ~/.profile",
       [](FileView& v) { v.masked_files.push_back("/home/u/.profile"); },
       {".bashrc", ".zshenv"}},
      {"a mask directory over ~/.zshenv (a directory the host holds there)",
       [](FileView& v) { v.masked_dirs.push_back("/home/u/.zshenv"); },
       {".bashrc", ".profile"}},
      {"a writable shadow of the sandbox home's at ~/.bashrc: still the home's",
       [](FileView& v) {
         v.mapped_binds = {{"/h/state/home/.bashrc", "/home/u/.bashrc", true, 0, 0}};
       },
       {".bashrc", ".zshenv", ".profile"}},
      {"a mount at the home itself is the home, not one beneath it",
       [](FileView& v) { v.read_roots.push_back("/home/u"); },
       {".bashrc", ".zshenv", ".profile"}},
  };
  for (const Row& row : rows) {
    FileView v;
    v.read_roots = {"/usr"};
    v.home_tmpfs = "/home/u";
    v.home_base = "/home/u";
    v.home_files = {{".bashrc", ""}, {".zshenv", ""}, {".profile", "PATH=/usr/bin; export PATH\n"}};
    row.shape(v);
    auto ops = PlanMounts(v, {}, OrdinaryHost);
    ASSERT_TRUE(ops) << row.name << ": " << ops.error().ToString();
    std::vector<std::string> written;
    for (const HomeFile& file : HomeFilesToWrite(v, *ops)) {
      written.push_back(file.path);
      // Written as the view says, content and all.
      EXPECT_NE(std::find(v.home_files.begin(), v.home_files.end(), file), v.home_files.end());
    }
    EXPECT_EQ(written, row.written) << row.name;
  }
  // No sandbox home: nothing of it.
  FileView none;
  none.home_files = {{".bashrc", ""}};
  auto ops = PlanMounts(none, {}, OrdinaryHost);
  ASSERT_TRUE(ops);
  EXPECT_TRUE(HomeFilesToWrite(none, *ops).empty());
}

// The workspace's kept /tmp is bound where the tmpfs would be mounted: before a workspace that
// lies in it, and not again with the other mapped binds. Root's sandbox covers nothing in it.
TEST(PlanMounts, AKeptTmpIsBoundFirstInPlaceOfTheTmpfs) {
  FileView v;
  v.writable_roots = {{"/tmp/x/ws", {}}};
  v.mapped_binds = {{"/h/state/home", "/home/u", true, 0, 0}, {"/h/state/tmp", "/tmp", true, 0, 0}};
  v.tmp_bind = 1;
  MountPlanOptions options;
  options.idmapped_roots = {"/tmp/x/ws", "/h/state/home", "/h/state/tmp"};
  auto host = [](const std::string& path) -> std::optional<mode_t> {
    return path == "/tmp/x" ? S_IFDIR | 0700 : S_IFDIR | 0755;
  };
  EXPECT_EQ(Plan(v, options, host),
            (std::vector<std::string>{"dev /dev", "proc /proc", "mapped /tmp #1",
                                      "mapped /home/u #0", "rw /tmp/x/ws"}));
}

// The way down to a workspace beneath the sandbox home or the kept /tmp (WorkspaceWays): an
// empty tmpfs per directory, after the home and before the workspace and anything else beneath
// it, so that every mount point beneath it is made in it.
TEST(PlanMounts, TheWayDownToTheWorkspaceComesBeforeWhatLiesBeneathIt) {
  FileView v;
  v.workspace = "/home/u/code/app";
  v.home_base = "/home/u";
  v.writable_roots = {{"/home/u/code/app", {"/home/u/code/app/.git"}}, {"/home/u/code/lib", {}}};
  v.mapped_binds = {{"/h/state/home", "/home/u", true, 0, 0}, {"/h/state/tmp", "/tmp", true, 0, 0}};
  v.tmp_bind = 1;
  EXPECT_EQ(Plan(v),
            (std::vector<std::string>{
                "dev /dev", "proc /proc", "mapped /tmp #1", "mapped /home/u #0", "way /home/u/code",
                "rw /home/u/code/app", "rw /home/u/code/lib", "ro /home/u/code/app/.git"}));
  v.workspace = "/tmp/x/y/app";
  v.writable_roots = {{"/tmp/x/y/app", {}}};
  EXPECT_EQ(Plan(v), (std::vector<std::string>{"dev /dev", "proc /proc", "mapped /tmp #1",
                                               "mapped /home/u #0", "way /tmp/x", "way /tmp/x/y",
                                               "rw /tmp/x/y/app"}));
}

TEST(PlanMounts, RootsSandboxCoversUnsearchableDirectoriesAboveItsTrees) {
  // Root's sandbox with full read: its workspace under /root (0700) is reachable only through
  // a cover of /root holding the way down.
  FileView v;
  v.full_read = true;
  v.writable_roots = {{"/root/ws", {"/root/ws/.git"}}};
  MountPlanOptions options;
  options.idmapped_roots = {"/root/ws"};
  auto host = [](const std::string& path) -> std::optional<mode_t> {
    return path == "/root" ? S_IFDIR | 0700 : S_IFDIR | 0755;
  };
  EXPECT_EQ(Plan(v, options, host),
            (std::vector<std::string>{"ro /", "dev /dev", "proc /proc", "tmp /tmp", "run /run",
                                      "cover /root", "rw /root/ws", "ro /root/ws/.git"}));
  // Not root's sandbox: nothing is covered.
  EXPECT_EQ(Plan(v, {}, host),
            (std::vector<std::string>{"ro /", "dev /dev", "proc /proc", "tmp /tmp", "run /run",
                                      "rw /root/ws", "ro /root/ws/.git"}));
}

}  // namespace
}  // namespace mount_plan_test
}  // namespace anvil

namespace anvil {
namespace mount_plan_test {
namespace {

// Every tmpfs of the view bounds its inodes as well as its size: one inode per page of the
// size, at least kMinTmpfsInodes; a size of 0 (which a tmpfs reads as unbounded) is one page.
TEST(TmpfsOptions, BoundTheSizeAndTheInodes) {
  EXPECT_EQ(TmpfsOptions("1777", 1ULL << 30), "mode=1777,size=1073741824,nr_inodes=262144");
  EXPECT_EQ(TmpfsOptions("0755", 1 << 20), "mode=0755,size=1048576,nr_inodes=4096");
  EXPECT_EQ(TmpfsOptions("0755", 64 << 10), "mode=0755,size=65536,nr_inodes=4096");
  EXPECT_EQ(TmpfsOptions("0700", 0), "mode=0700,size=4096,nr_inodes=4096");
  EXPECT_EQ(TmpfsOptions("1777", 64ULL << 20), "mode=1777,size=67108864,nr_inodes=16384");
}

}  // namespace
}  // namespace mount_plan_test
}  // namespace anvil
