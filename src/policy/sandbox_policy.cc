#include "policy/sandbox_policy.h"

#include <algorithm>
#include <memory>
#include <set>
#include <utility>

#include "policy/sandbox_home.h"
#include "policy/tree_alias.h"

namespace anvil {

Result<PolicyKind> ParsePolicyKind(std::string_view text) {
  if (text == "read-only") return PolicyKind::kReadOnly;
  if (text == "workspace-write") return PolicyKind::kWorkspaceWrite;
  if (text == "danger-full-access") return PolicyKind::kDangerFullAccess;
  if (text == "external-sandbox") return PolicyKind::kExternalSandbox;
  return Fail("invalid", "unknown policy '" + std::string(text) +
                             "' (expected read-only, workspace-write, danger-full-access or "
                             "external-sandbox)");
}

Result<NetworkMode> ParseNetworkMode(std::string_view text) {
  if (text == "none") return NetworkMode::kNone;
  if (text == "proxy") return NetworkMode::kProxy;
  if (text == "full") return NetworkMode::kFull;
  return Fail("invalid",
              "unknown network mode '" + std::string(text) + "' (expected none, proxy or full)");
}

Result<ReadAccess> ParseReadAccess(std::string_view text) {
  if (text == "restricted") return ReadAccess::kRestricted;
  if (text == "full") return ReadAccess::kFull;
  return Fail("invalid",
              "unknown read access '" + std::string(text) + "' (expected restricted or full)");
}

std::string_view ToString(PolicyKind kind) {
  switch (kind) {
    case PolicyKind::kReadOnly:
      return "read-only";
    case PolicyKind::kWorkspaceWrite:
      return "workspace-write";
    case PolicyKind::kDangerFullAccess:
      return "danger-full-access";
    case PolicyKind::kExternalSandbox:
      return "external-sandbox";
  }
  return "?";
}

std::string_view ToString(NetworkMode mode) {
  switch (mode) {
    case NetworkMode::kNone:
      return "none";
    case NetworkMode::kProxy:
      return "proxy";
    case NetworkMode::kFull:
      return "full";
  }
  return "?";
}

std::string_view ToString(ReadAccess access) {
  return access == ReadAccess::kFull ? "full" : "restricted";
}

namespace {

void AddUnique(std::vector<std::string>& list, const std::string& value) {
  if (std::find(list.begin(), list.end(), value) == list.end()) list.push_back(value);
}

}  // namespace

bool PathIsWithin(std::string_view path, std::string_view root) {
  if (root == "/") return !path.empty() && path[0] == '/';
  if (path.size() < root.size() || path.compare(0, root.size(), root) != 0) return false;
  return path.size() == root.size() || path[root.size()] == '/';
}

std::vector<std::string> PathComponents(std::string_view path) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    if (end > start) out.emplace_back(path.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

namespace {

// The mounts of the view other than the bases of WorkspaceWays (the sandbox home's bind or
// tmpfs, the kept /tmp's bind): a directory at or beneath one is that mount's, not the base's.
std::vector<std::string_view> OtherMounts(const FileView& view) {
  std::vector<std::string_view> mounts;
  for (const auto& r : view.read_roots) mounts.push_back(r);
  for (const auto& w : view.writable_roots) mounts.push_back(w.root);
  for (const auto& d : view.pinned_dirs) mounts.push_back(d);
  for (const auto& l : view.pinned_links) mounts.push_back(l);
  for (const auto& d : view.masked_dirs) mounts.push_back(d);
  for (const auto& f : view.masked_files) mounts.push_back(f);
  if (!view.workspace_base.empty()) mounts.push_back(view.workspace_base);
  for (size_t i = 0; i < view.mapped_binds.size(); ++i) {
    const MappedBind& m = view.mapped_binds[i];
    if (view.tmp_bind && *view.tmp_bind == i) continue;
    if (!view.home_base.empty() && m.target == view.home_base && m.writable) continue;
    mounts.push_back(m.target);
  }
  return mounts;
}

bool AtOrBeneathAny(std::string_view path, const std::vector<std::string_view>& mounts) {
  return std::any_of(mounts.begin(), mounts.end(),
                     [&](std::string_view m) { return PathIsWithin(path, m); });
}

// The deepest base that holds `path` strictly: the sandbox home, or /tmp where it is the view's
// own (no root of the host's shows it). "" for none.
std::string BaseOf(const FileView& view, const std::vector<std::string_view>& mounts,
                   const std::string& path) {
  if (!view.home_base.empty() && path != view.home_base && PathIsWithin(path, view.home_base)) {
    return view.home_base;
  }
  if (view.private_tmp && path != "/tmp" && PathIsWithin(path, "/tmp") &&
      !AtOrBeneathAny("/tmp", mounts)) {
    return "/tmp";
  }
  return "";
}

// Absolute, without empty, "." or ".." components, and not "/".
bool LexicallyNormal(const std::string& path) {
  if (path.size() < 2 || path[0] != '/' || path.back() == '/') return false;
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string_view part(path.data() + start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

std::vector<std::string> WorkspaceWays(const FileView& view) {
  std::vector<std::string> ways;
  if (view.workspace.empty() || view.workspace[0] != '/') return ways;
  const std::vector<std::string_view> mounts = OtherMounts(view);
  for (const std::string* target : {&view.workspace, &view.workspace_link}) {
    if (target->empty()) continue;
    const std::string base = BaseOf(view, mounts, *target);
    if (base.empty()) continue;
    for (size_t slash = target->find('/', base.size() + 1); slash != std::string::npos;
         slash = target->find('/', slash + 1)) {
      std::string dir = target->substr(0, slash);
      if (AtOrBeneathAny(dir, mounts)) break;
      if (std::find(ways.begin(), ways.end(), dir) == ways.end()) ways.push_back(std::move(dir));
    }
  }
  std::stable_sort(ways.begin(), ways.end(), [](const std::string& a, const std::string& b) {
    return std::count(a.begin(), a.end(), '/') < std::count(b.begin(), b.end(), '/');
  });
  return ways;
}

std::string WorkspaceLinkFor(const FileView& view, const std::string& logical) {
  const std::string& ws = view.workspace;
  if (logical.empty() || ws.empty() || !LexicallyNormal(logical)) return "";
  if (PathIsWithin(logical, ws) || PathIsWithin(ws, logical)) return "";
  if (PathIsWithin(logical, "/dev") || PathIsWithin(logical, "/proc")) return "";
  const std::vector<std::string_view> mounts = OtherMounts(view);
  for (std::string_view m : mounts) {
    if (PathIsWithin(logical, m) || PathIsWithin(m, logical)) return "";
  }
  if (view.full_read && BaseOf(view, mounts, logical).empty()) return "";
  return logical;
}

bool InSystemRoot(std::string_view path) {
  for (auto root : kPlatformReadRoots) {
    if (PathIsWithin(path, root)) return true;
  }
  for (auto root : kSystemMetadataRoots) {
    if (PathIsWithin(path, root)) return true;
  }
  return false;
}

bool SystemOwnedDirectory(const std::string& path, const PathOwnerOf& owner) {
  if (path.size() < 2 || path[0] != '/' || path.back() == '/') return false;
  for (size_t end = path.find('/', 1);; end = path.find('/', end + 1)) {
    const auto facts = owner(path.substr(0, end));
    // st_mode's type bits (S_IFMT, S_IFDIR: the same on every Linux) without <sys/stat.h>.
    constexpr uint32_t kTypeBits = 0170000;
    constexpr uint32_t kDirectory = 0040000;
    if (!facts || (facts->mode & kTypeBits) != kDirectory || facts->uid != 0 ||
        (facts->mode & 022) != 0) {
      return false;
    }
    if (end == std::string::npos) return true;
  }
}

Status ValidateWorkspaceSubpath(const std::string& sub) {
  if (sub.empty() || sub.size() > 4096 || sub[0] == '/' || sub.back() == '/') {
    return Fail("invalid", "readable workspace path must be relative: '" + sub + "'");
  }
  size_t start = 0;
  while (start <= sub.size()) {
    size_t end = sub.find('/', start);
    if (end == std::string::npos) end = sub.size();
    std::string_view part(sub.data() + start, end - start);
    if (part.empty() || part == "." || part == ".." || part.find('\0') != std::string_view::npos) {
      return Fail("invalid", "readable workspace path has an empty, '.' or '..' component: " + sub);
    }
    start = end + 1;
  }
  return Ok();
}

namespace {

// Whether `path` (canonical) is part of what the command sees: beneath a bound root, or, with
// full read, anywhere but the places the view replaces with its own (/dev, /proc, /tmp, /run).
bool VisibleInView(const FileView& view, const std::string& path) {
  auto within_any = [&](const std::vector<std::string>& roots) {
    return std::any_of(roots.begin(), roots.end(),
                       [&](const std::string& r) { return PathIsWithin(path, r); });
  };
  if (within_any(view.read_roots)) return true;
  for (const auto& wr : view.writable_roots) {
    if (PathIsWithin(path, wr.root)) return true;
  }
  if (!view.full_read) return false;
  for (const char* replaced : {"/dev", "/proc", "/tmp", "/run"}) {
    if (PathIsWithin(path, replaced)) return false;
  }
  return true;
}

}  // namespace

void PinDirs(FileView& view, const std::vector<std::string>& dirs) {
  view.pinned_dirs.clear();
  for (const auto& dir : dirs) {
    bool in_root = false, read_only = false;
    for (const auto& wr : view.writable_roots) {
      if (dir == wr.root || !PathIsWithin(dir, wr.root)) continue;
      in_root = true;
      for (const auto& sub : wr.read_only_subpaths) read_only = read_only || PathIsWithin(dir, sub);
    }
    if (in_root && !read_only) AddUnique(view.pinned_dirs, dir);
  }
}

void MaskHostSockets(FileView& view, const std::vector<std::string>& sockets,
                     const std::vector<std::string>& locked_dirs) {
  for (bool dirs : {false, true}) {
    for (const auto& path : dirs ? locked_dirs : sockets) {
      if (path.empty() || path[0] != '/') continue;
      // Paths of a workspace bound piece by piece (sys.exec's readable subpaths) are opened
      // beneath the workspace later; nothing else of the view may lie there.
      if (!view.workspace_base.empty() && PathIsWithin(path, view.workspace_base)) continue;
      if (VisibleInView(view, path)) AddUnique(dirs ? view.masked_dirs : view.masked_files, path);
    }
  }
}

namespace {

// A protected directory at the top of a writable root that is a symbolic link cannot be kept
// read-only: its target can be bound read-only, but the link itself is a plain entry of the
// writable root, so the command could replace it with a directory of its own (hooks,
// core.fsmonitor) that git runs later outside the sandbox. Refuse rather than pretend.
Error SymlinkedProtectedDirectory(const std::string& candidate, bool git) {
  return Error("invalid", candidate +
                              " is a symbolic link, which cannot be kept read-only"
                              " in a writable root; replace the link with the directory" +
                              std::string(git ? " or pass --writable-git" : ""));
}

}  // namespace

bool IsGitConfigPath(std::string_view path) {
  return path.ends_with("/.gitconfig") || path.ends_with("/.config/git/config");
}

Error GitConfigRootRefused(std::string_view kind, const std::string& path) {
  return Error("invalid",
               std::string(kind) + " root " + path +
                   " is your git configuration, which may hold credentials (credential "
                   "helpers, tokens in url.*.insteadOf or http.extraHeader) and is never shown, "
                   "even when named; the sandbox's ~/.gitconfig is a sanitized copy of it "
                   "(identity, aliases, everyday settings) (fix: drop the root; for a setting "
                   "the copy leaves out, `git -c KEY=VALUE` or `git config --global` inside, "
                   "for that run)");
}

Result<std::vector<std::string>> WritableRootsOf(const SandboxPolicy& policy, const HostFs& host) {
  if (!policy.ConfinesFilesystem()) {
    return Fail("invalid", "policy " + std::string(ToString(policy.kind)) +
                               " does not confine the filesystem");
  }
  if (policy.workspace.empty() || policy.workspace[0] != '/') {
    return Fail("invalid", "workspace must be an absolute path");
  }
  const bool full_read = policy.read_access == ReadAccess::kFull;
  if (policy.runtime_from_call &&
      (policy.kind != PolicyKind::kReadOnly || full_read || !policy.workspace_read_subpaths ||
       !policy.workspace_read_subpaths->empty())) {
    return Fail("invalid",
                "runtime files from the call need the read-only policy, restricted read access "
                "and a workspace the call fills in");
  }
  std::vector<std::string> writable;
  // A writable root inside a credential location: what is there is never shown (it stays
  // hidden beneath the root), so the root cannot be what the user meant; refused before
  // anything is made for the run, as a readable root there is.
  auto inside_credential = [&](const std::string& what, const std::string& root,
                               const std::string& resolved) -> Status {
    for (const auto& c : policy.home.credentials) {
      if (!PathIsWithin(resolved, c.path)) continue;
      return Fail("invalid", what + " " + root + " lies inside " + c.path +
                                 ", where credentials live; Anvil never shows those (fix: name "
                                 "the directory the command needs, outside it)");
    }
    return Ok();
  };
  // The workspace under every policy that confines files: read-only would otherwise show it as
  // the empty directory that masks the credential location, and the command would run on as if
  // the project were empty.
  ANVIL_RETURN_IF_ERROR(inside_credential("the workspace", policy.workspace, policy.workspace));
  if (policy.kind == PolicyKind::kWorkspaceWrite) {
    writable.push_back(policy.workspace);
    for (const auto& root : policy.extra_writable_roots) {
      auto resolved = host.resolve(root);
      if (!resolved) return Fail("invalid", "writable root does not exist: " + root);
      if (IsGitConfigPath(root) || IsGitConfigPath(*resolved)) {
        return tl::unexpected(GitConfigRootRefused("writable", root));
      }
      ANVIL_RETURN_IF_ERROR(inside_credential("writable root", root, *resolved));
      // A file cannot be bound writable with what is kept read-only in it (a writable root is
      // a directory); said here rather than as an open(2) error of the set-up.
      if (host.lstat_kind && host.lstat_kind(*resolved) == HostFs::Kind::kRegular) {
        return Fail("invalid", "writable root " + root +
                                   " is a file; a writable root is a directory (fix: name the "
                                   "directory that holds it)");
      }
      AddUnique(writable, *resolved);
    }
  } else {
    if (!policy.extra_writable_roots.empty()) {
      return Fail("invalid", "--writable-root needs the workspace-write policy");
    }
  }
  // The same for a root that is another name (a bind mount) of a directory inside one: what
  // the mount table says, where no path string shows it (policy/tree_alias.h).
  if (!writable.empty() && host.mounts && !policy.home.credentials.empty()) {
    std::vector<std::string> credentials;
    for (const auto& c : policy.home.credentials) credentials.push_back(c.path);
    const std::vector<TreeAlias> aliases = RootAliases(host.mounts(), writable, credentials);
    for (const auto& root : writable) {
      auto inside = RootInsideByAlias(aliases, root, credentials);
      if (!inside) continue;
      return Fail("invalid", (root == policy.workspace ? "the workspace " : "writable root ") +
                                 root + " is another name (a bind mount) of " + inside->host +
                                 ", which lies inside " + inside->place +
                                 ", where credentials live; Anvil never shows those (fix: name "
                                 "the directory the command needs, outside it)");
    }
  }
  if (policy.workspace_read_subpaths) {
    if (policy.kind != PolicyKind::kReadOnly || full_read) {
      return Fail("invalid",
                  "readable workspace subpaths need the read-only policy with "
                  "restricted read access");
    }
    for (const auto& sub : *policy.workspace_read_subpaths) {
      ANVIL_RETURN_IF_ERROR(ValidateWorkspaceSubpath(sub));
    }
  }
  for (const auto& root : writable) {
    for (const ProtectedName& protected_name : kProtectedNames) {
      const bool git = protected_name.kind == ProtectedNameKind::kGitMetadata;
      if (git && policy.writable_git) continue;
      if (!git && protected_name.kind != ProtectedNameKind::kAnvilState) continue;
      const std::string candidate = root + "/" + std::string(protected_name.name);
      if (host.is_symlink && host.is_symlink(candidate)) {
        return tl::unexpected(SymlinkedProtectedDirectory(candidate, git));
      }
    }
  }
  std::vector<std::string> read_only;
  for (const auto& sub : policy.extra_read_only_subpaths) {
    auto resolved = host.resolve(sub);
    // A path that does not exist yet cannot be bound read-only, and skipping it would let the
    // command create it: refuse instead of running with less protection than asked for.
    if (!resolved) return Fail("invalid", "--read-only-subpath does not exist: " + sub);
    read_only.push_back(*resolved);
  }
  for (const auto& root : writable) {
    if (std::find(read_only.begin(), read_only.end(), root) != read_only.end()) {
      return Fail("invalid", "writable root is also read-only: " + root);
    }
  }
  return writable;
}

Result<FileView> ComputeFileView(const SandboxPolicy& policy, const HostFs& host,
                                 const std::vector<std::string>& discovered_read_only) {
  // Every check of the policy first, in the order they always came.
  ANVIL_TRY(writable_roots, WritableRootsOf(policy, host));
  const std::vector<std::string>& writable = *writable_roots;
  FileView view;
  view.workspace = policy.workspace;
  view.full_read = policy.read_access == ReadAccess::kFull;
  view.runtime_from_call = policy.runtime_from_call;
  if (!view.full_read && !policy.runtime_from_call) {
    for (auto root : kPlatformReadRoots) {
      std::string r(root);
      // Keep the name as the host has it: /bin may be a symlink to usr/bin and is recreated
      // as that symlink inside the view.
      if (host.lstat_kind(r) != HostFs::Kind::kMissing) AddUnique(view.read_roots, r);
    }
    if (host.owner) {
      for (auto root : kSystemMetadataRoots) {
        std::string r(root);
        if (SystemOwnedDirectory(r, host.owner)) AddUnique(view.read_roots, r);
      }
    }
    for (auto masked : kMaskedFiles) {
      std::string m(masked);
      if (host.lstat_kind(m) == HostFs::Kind::kRegular) view.masked_files.push_back(m);
    }
  }
  if (policy.workspace_read_subpaths) {
    for (const auto& sub : *policy.workspace_read_subpaths) {
      AddUnique(view.workspace_read_subpaths, sub);
    }
    view.workspace_base = policy.workspace;
    // The workspace itself is an empty directory of the view; only the subpaths are bound.
  } else if (writable.empty()) {
    // A writable workspace is bound once, read-write; only a read-only one is a read root
    // (with full read access too: root's sandbox sees it through its own idmapped tree).
    AddUnique(view.read_roots, policy.workspace);
  }

  std::vector<std::string> read_only;  // absolute canonical paths that must stay read-only
  // Each name at the top of a root, and each file of kProtectedFilesIn in its directory there.
  std::vector<std::pair<std::string, ProtectedNameKind>> top_names;
  for (const ProtectedName& p : kProtectedNames) top_names.emplace_back(p.name, p.kind);
  for (const ProtectedFileIn& f : kProtectedFilesIn) {
    top_names.emplace_back(std::string(f.dir) + "/" + std::string(f.name), f.kind);
  }
  for (const auto& root : writable) {
    for (const auto& [name, kind] : top_names) {
      const bool git = kind == ProtectedNameKind::kGitMetadata;
      // --writable-git: the user trusts the command with every repository's metadata.
      if (IsRepositoryMetadata(kind) && policy.writable_git) continue;
      const std::string candidate = root + "/" + name;
      const bool directory = git || kind == ProtectedNameKind::kAnvilState;
      const bool agent = FollowedThroughLinks(kind);
      // Most names are missing: one lstat, not a resolution of every component of the root.
      if (host.lstat_kind && host.lstat_kind(candidate) == HostFs::Kind::kMissing) continue;
      if (host.is_symlink && host.is_symlink(candidate)) {
        if (agent) {
          // An agent (hg, jj, VS Code) follows the link: what it leads to is kept read-only
          // where this root holds it (a target elsewhere is not the command's to write).
          auto target = host.resolve(candidate);
          if (target && PathIsWithin(*target, root) && *target != root) {
            read_only.push_back(*target);
          }
          continue;
        }
        // A file Anvil reads by this name is opened without following a link (a link there is
        // refused), so the link protects nothing and hides nothing: left as it is.
        if (!directory) continue;
        // One made since WritableRootsOf looked.
        return tl::unexpected(SymlinkedProtectedDirectory(candidate, git));
      }
      auto resolved = host.resolve(candidate);
      if (!resolved) continue;
      read_only.push_back(*resolved);
      // A .git *file* (worktree, submodule) points at the real git dir; protect that too.
      if (git) {
        if (auto gitdir = host.read_gitdir_pointer(candidate)) {
          if (auto r = host.resolve(*gitdir)) read_only.push_back(*r);
        }
      }
    }
  }
  // A linked worktree as a root: its git dir lies elsewhere (the main repository's
  // .git/worktrees/NAME), and git needs it and the common dir it names. Shown read-only, as a
  // checkout's own .git is (git's read commands work); with --writable-git, writable, as a
  // checkout's own .git then is (commits work).
  std::vector<std::string> linked_git;
  if (!policy.runtime_from_call) {
    auto outside = [&](const std::string& p) {
      return std::none_of(writable.begin(), writable.end(),
                          [&](const std::string& w) { return PathIsWithin(p, w); });
    };
    for (const auto& root : writable) {
      const std::string dotgit = root + "/.git";
      if (!host.lstat_kind || host.lstat_kind(dotgit) != HostFs::Kind::kRegular) continue;
      const auto dotgit_resolved = host.resolve(dotgit);
      if (!dotgit_resolved) continue;
      const std::string& dotgit_real = *dotgit_resolved;
      auto pointer = host.read_gitdir_pointer(dotgit);
      auto gitdir = pointer ? host.resolve(*pointer) : std::nullopt;
      if (!gitdir || !outside(*gitdir)) continue;
      // Only a linked worktree git itself made for this root, proven by git's own links both
      // ways: the git dir's `gitdir` file names this root's .git, and the common dir its
      // `commondir` names holds it as worktrees/NAME. A pointer the root's .git file merely
      // claims (a planted one, or one an earlier command rewrote with --writable-git) must not
      // make any other directory readable, or writable.
      if (!host.read_git_line || host.lstat_kind(*gitdir + "/HEAD") != HostFs::Kind::kRegular) {
        continue;
      }
      const auto back = host.read_git_line(*gitdir + "/gitdir");
      const auto common = host.read_git_line(*gitdir + "/commondir");
      if (!back || !common) continue;
      const auto back_to = host.resolve((*back)[0] == '/' ? *back : *gitdir + "/" + *back);
      if (!back_to || *back_to != dotgit_real) continue;
      const auto c = host.resolve((*common)[0] == '/' ? *common : *gitdir + "/" + *common);
      const std::string name = gitdir->substr(gitdir->rfind('/') + 1);
      if (!c || host.resolve(*c + "/worktrees/" + name) != *gitdir) continue;
      AddUnique(linked_git, *gitdir);
      if (outside(*c)) AddUnique(linked_git, *c);
    }
  }
  view.linked_git_dirs = linked_git;
  if (!policy.writable_git && !view.full_read) {
    for (const auto& g : linked_git) AddUnique(view.read_roots, g);
  }
  for (const auto& sub : policy.extra_read_only_subpaths) {
    auto resolved = host.resolve(sub);
    // A path that does not exist yet cannot be bound read-only, and skipping it would let the
    // command create it: refuse instead of running with less protection than asked for.
    if (!resolved) return Fail("invalid", "--read-only-subpath does not exist: " + sub);
    read_only.push_back(*resolved);
  }
  for (const auto& path : discovered_read_only) {
    if (!path.empty() && path[0] == '/') {
      read_only.push_back(path);
      view.git_protected.push_back(path);
    }
  }
  for (const auto& root : writable) {
    WritableRoot wr{root, {}};
    for (const auto& ro : read_only) {
      if (PathIsWithin(ro, root) && ro != root) AddUnique(wr.read_only_subpaths, ro);
      if (ro == root) return Fail("invalid", "writable root is also read-only: " + root);
    }
    view.writable_roots.push_back(std::move(wr));
  }
  if (policy.writable_git) {
    for (const auto& g : linked_git) {
      const bool inside = std::any_of(linked_git.begin(), linked_git.end(),
                                      [&](const auto& o) { return o != g && PathIsWithin(g, o); });
      if (!inside) view.writable_roots.push_back(WritableRoot{g, {}});
    }
  }
  ANVIL_RETURN_IF_ERROR(ApplyHomeView(policy.home, host, view));
  if (host.bound_unix_sockets) {
    ANVIL_TRY(masks, host.bound_unix_sockets(view));
    MaskHostSockets(view, masks->sockets, masks->locked_dirs);
    MaskSocketsInMappedBinds(view, masks->sockets, masks->locked_dirs);
  }
  if (!policy.runtime_from_call) {
    view.workspace_link = WorkspaceLinkFor(view, policy.workspace_logical);
  }
  return view;
}

}  // namespace anvil
