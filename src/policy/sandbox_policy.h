// The command sandbox policy (Codex's SandboxPolicy, adapted) and the pure function that turns
// it into the file view a sandboxed command sees. Nothing here touches the kernel: the mount
// namespace builder and the Landlock layer both consume the FileView computed here, so the
// two walls always enforce the same decision.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "fs/protected_names.h"
#include "fs/read_plan.h"
#include "policy/home_view.h"
#include "policy/host_sockets.h"

namespace anvil {

enum class PolicyKind { kReadOnly, kWorkspaceWrite, kDangerFullAccess, kExternalSandbox };
enum class NetworkMode { kNone, kProxy, kFull };
enum class ReadAccess { kRestricted, kFull };

Result<PolicyKind> ParsePolicyKind(std::string_view text);
Result<NetworkMode> ParseNetworkMode(std::string_view text);
Result<ReadAccess> ParseReadAccess(std::string_view text);
std::string_view ToString(PolicyKind kind);
std::string_view ToString(NetworkMode mode);
std::string_view ToString(ReadAccess access);

struct SandboxPolicy {
  PolicyKind kind = PolicyKind::kWorkspaceWrite;
  std::string workspace;                          // absolute, canonical (symlinks resolved once)
  std::vector<std::string> extra_writable_roots;  // absolute, canonical
  std::vector<std::string> extra_read_only_subpaths;  // absolute, canonical
  bool writable_git = false;                          // deliberately drop the .git protection
  ReadAccess read_access = ReadAccess::kRestricted;
  NetworkMode network = NetworkMode::kNone;
  // read-only policy only (sys.exec): when set, only these workspace paths are readable instead
  // of the whole workspace — relative, '/'-separated, no "."/".." components; an empty list
  // leaves the workspace an empty directory. Derived from a plugin's fs.read grant.
  std::optional<std::vector<std::string>> workspace_read_subpaths;
  // sys.exec's warm runner: none of the runtime roots (/usr, /etc, ...) and no /proc are in the
  // view; the call names the only system files the tool sees (its executable, loader, libraries,
  // ld.so.cache: FileView::runtime_files) and the workspace's read plan. Read-only policy with
  // an empty workspace_read_subpaths list only.
  bool runtime_from_call = false;
  // The command's home (anvil sandbox; policy/sandbox_home.h plans it). Empty: no home.
  HomeView home;
  // The path the user reached the workspace by, when a symlink leads there ($PWD, as `pwd -L`
  // shows it; absolute, lexically normal, resolving to `workspace`): shown in the view too when
  // it can be (WorkspaceLinkFor). Empty: none.
  std::string workspace_logical;

  // Whether the filesystem is confined at all (read-only and workspace-write).
  bool ConfinesFilesystem() const {
    return kind == PolicyKind::kReadOnly || kind == PolicyKind::kWorkspaceWrite;
  }
};

// Read access outside the writable roots under --read-access restricted.
inline constexpr std::string_view kPlatformReadRoots[] = {
    "/bin", "/sbin", "/usr", "/etc", "/lib", "/lib64", "/nix/store", "/run/current-system/sw"};

// System package metadata, read-only under --read-access restricted where it is the system's
// (SystemOwnedDirectory): dpkg's database (`dpkg -s`, `dpkg -S`, `dpkg -L`) and apt's package
// lists (`apt-cache policy`, `apt list`). World-readable, root's, and no credential lives there
// (apt's own are in /etc/apt/auth.conf*, kept as /etc is: 0600, unreadable in the view).
inline constexpr std::string_view kSystemMetadataRoots[] = {"/var/lib/dpkg", "/var/lib/apt/lists"};

// True when `path` lies at or beneath a runtime root or a system metadata root: the system's
// trees, shown as the host has them (never idmapped for root, "system" in the refusal summary).
bool InSystemRoot(std::string_view path);

// Owner and mode (type bits included) of a path as lstat(2) sees it.
struct PathOwner {
  uint32_t uid = 0;
  uint32_t mode = 0;  // st_mode: the type bits (S_IFMT) and the permission bits
};
using PathOwnerOf = std::function<std::optional<PathOwner>(const std::string&)>;

// Whether `path` (absolute, lexical, not "/") is the system's: it and every directory above it
// up to "/" a directory (not a symbolic link), owned by root, writable by no one else (group or
// others). Pure.
bool SystemOwnedDirectory(const std::string& path, const PathOwnerOf& owner);

// Files under the runtime roots that hold credentials; hidden (an empty file mounted over them)
// in restricted read mode so that even a sandbox run by root cannot read them.
inline constexpr std::string_view kMaskedFiles[] = {"/etc/shadow",
                                                    "/etc/gshadow",
                                                    "/etc/shadow-",
                                                    "/etc/gshadow-",
                                                    "/etc/sudoers",
                                                    "/etc/ssh/ssh_host_rsa_key",
                                                    "/etc/ssh/ssh_host_ecdsa_key",
                                                    "/etc/ssh/ssh_host_ed25519_key"};

struct WritableRoot {
  std::string root;
  std::vector<std::string> read_only_subpaths;  // absolute, each beneath root
};

// A file Anvil writes into the command's home (FileView::home_files): `path` relative to it.
struct HomeFile {
  std::string path;
  std::string content;
  bool operator==(const HomeFile&) const = default;
};

// What the sandboxed command can see and change. Derived from SandboxPolicy by ComputeFileView.
struct FileView {
  bool full_read = false;               // whole filesystem readable (read-only)
  std::vector<std::string> read_roots;  // readable, not writable (existing paths only)
  std::vector<WritableRoot> writable_roots;
  // Existing files to hide behind an empty read-only file: credential files, and every Unix
  // socket a host process has bound where the view would show it (connect(2) ignores read-only
  // mounts, so a visible socket of the agent, a daemon or the editor would be a way out).
  // masked_dirs (below) likewise hides credential directories and the caller's locked
  // directories a host socket may be beneath (HostSocketMasks::locked_dirs).
  std::vector<std::string> masked_files;
  // Readable paths inside `workspace_base` (relative), opened beneath it (openat2
  // RESOLVE_BENEATH) when they are bound and when Landlock rules are added, so a symlink in the
  // workspace can never widen them to something outside. Used instead of binding the whole
  // workspace when the policy names workspace_read_subpaths.
  std::string workspace_base;
  std::vector<std::string> workspace_read_subpaths;
  bool private_tmp = true;  // /tmp is the view's own, never the host's
  // The index in mapped_binds of the workspace's persistent /tmp (policy/sandbox_home.h), bound
  // where the throw-away tmpfs would be mounted; beneath it, as beneath home_base, every mount
  // point is made and opened without following a symlink. nullopt: the tmpfs.
  std::optional<size_t> tmp_bind;
  // Directories inside writable roots bound onto themselves (still writable), so that the
  // command cannot rename or remove them: the way down to something kept read-only beneath
  // them (linux/git_walk_cache.h).
  std::vector<std::string> pinned_dirs;
  // Symbolic links inside writable roots bound onto themselves (read-only), so that the command
  // cannot remove or replace them: a link on the way to something the host runs, or the
  // placeholder that stands for a missing one (policy/host_autorun.h).
  std::vector<std::string> pinned_links;
  // What the view keeps read-only or pins because the host runs it (policy/host_autorun.h):
  // the refusal summary's "host_autorun" area.
  std::vector<std::string> host_autorun;
  // The credential locations among the places the host runs (policy/host_autorun.h,
  // HomeCredentialPaths; lexical): what of host_autorun lies at or beneath one is the refusal
  // summary's "credential" area, which no flag opens, as for a credential that is covered.
  std::vector<std::string> host_credentials;
  // What the view keeps read-only because it is Anvil's own state on the host (the trust
  // directories: command rules, trusted keys, config, grants; the git walk cache): the refusal
  // summary's "anvil" area.
  std::vector<std::string> anvil_state;
  // SandboxPolicy::runtime_from_call: filled from the call. What of the workspace the view holds
  // (fs/read_plan.h; opened beneath workspace_base, never through a symlink) and the system
  // files of the tool (absolute host paths, shown at the same paths with their symlinks).
  bool runtime_from_call = false;
  std::vector<ReadOp> workspace_plan;
  std::vector<std::string> runtime_files;
  // The command's home (policy/sandbox_home.h): binds whose view path differs from the host's
  // (the persistent home, symlinked toolchains, generated files), a tmpfs home, credential
  // directories covered by an empty read-only directory. Beneath `home_base` every mount point
  // is made and opened without following a symlink: the persistent home is a directory that
  // earlier commands wrote.
  std::vector<MappedBind> mapped_binds;
  std::string home_tmpfs;
  std::vector<std::string> masked_dirs;
  std::vector<std::string> credential_masks;  // the masked paths that are credentials
  std::string home_base;
  // The discovered_read_only paths of ComputeFileView (repositories' metadata and what their
  // configs name): read-only because git would run or follow them (policy/refusals.h).
  std::vector<std::string> git_protected;
  // The git dir (and common dir) of a linked worktree that is a writable root, lying outside
  // every root: read roots (writable roots with --writable-git).
  std::vector<std::string> linked_git_dirs;
  // Written to home_base/.gitconfig once the home is built, unless the file there is exactly
  // Anvil's: its content, mode, owner and one link (HoldsHomeFile, linux/mount_view.cc). A file
  // of the home, not a bind: one mount less per start; what a command changes there lasts until
  // the next run writes the copy again.
  std::string home_gitconfig;
  // The shells' start-up files (policy/sandbox_home.h, kHomeStartupFiles), written beneath
  // home_base the same way at every start: the PATH put back for login shells, nothing
  // otherwise. Only where the sandbox home itself holds the place: one another mount shows
  // (`--readable-root ~/.bashrc`) is the user's own file, left as that mount shows it
  // (HomeFilesToWrite, linux/mount_plan.h).
  std::vector<HomeFile> home_files;
  // Directories of home_base a shell loads code from by name (kHomeStartupDirs: fish's), each an
  // empty tmpfs of its own in every run where the sandbox home itself holds the place; where
  // another mount shows the host's own directory there (`--readable-root ~/.config`), that
  // stays (PlanMounts, linux/mount_plan.h).
  std::vector<std::string> home_startup_dirs;
  // Directories of home_base shown as an empty tmpfs of the view's own, read-only once the mount
  // points beneath them are made (as WorkspaceWays), holding only what other mounts of the view
  // show there: ~/.local/lib while the host's ~/.local/bin is shown (UserSiteSealed,
  // policy/sandbox_home.h), so pip --user fails at its first write instead of leaving a package
  // in the sandbox home whose command it could not write.
  std::vector<std::string> sealed_home_dirs;
  // A workspace of $HOME (no home_base): the masked path (in masked_files) of the user's git
  // config, covered by a read-only file holding home_gitconfig instead of an empty one.
  std::string gitconfig_mask;
  // The workspace (SandboxPolicy::workspace): where WorkspaceWays leads.
  std::string workspace;
  // The workspace's logical path (SandboxPolicy::workspace_logical) where the view shows it
  // (WorkspaceLinkFor): a symbolic link to `workspace`, made in the view's own directories.
  std::string workspace_link;
};

// The directories of the view's own on the way down to the workspace: each directory strictly
// between the sandbox home (home_base) or the view's /tmp and the workspace, from the top down to
// the first one another mount of the view shows (a root, a bind, a mask), exclusive. The host's
// directory of that name is not in the view (only the way down is), so a write there would land
// in the sandbox home or the view's /tmp, out of sight: the view makes each an empty tmpfs,
// read-only once the mount points beneath it are made, and a write beside the workspace fails
// (EROFS). The home and /tmp themselves are never among them: they stay writable. The same for
// the way down to workspace_link, where the link is made. Parents first.
std::vector<std::string> WorkspaceWays(const FileView& view);

// `logical` (SandboxPolicy::workspace_logical) when the view can show it as a symbolic link to
// the workspace, else "": only in the view's own directories — its root, the sandbox home, the
// view's /tmp (the way down made as in WorkspaceWays) — never at, above or beneath anything
// another mount shows (a writable root of the host's above all: nothing is ever made there; a
// read root or bind, which shows the host's own path as it is; a mask), nor in /dev or /proc,
// nor beside or inside the workspace itself; with full read only in the home or /tmp (the
// host's root, read-only, already shows the host's link). The link leads only to the
// workspace, which the view shows anyway: it opens nothing the workspace's own path does not.
std::string WorkspaceLinkFor(const FileView& view, const std::string& logical);

// The facts about the host filesystem that ComputeFileView needs; injected so the decision
// stays a pure, unit-testable function.
struct HostFs {
  // Canonical absolute path if `path` exists (symlinks resolved), nullopt otherwise.
  std::function<std::optional<std::string>(const std::string&)> resolve;
  // For a `.git` *file* (worktrees, submodules): the gitdir it points at, if any.
  std::function<std::optional<std::string>(const std::string&)> read_gitdir_pointer;
  // The first line of a small regular file git keeps in a git dir (`commondir`, a linked
  // worktree's `gitdir` back-pointer), as written (trimmed); nullopt when there is none. May be
  // unset.
  std::function<std::optional<std::string>(const std::string&)> read_git_line;
  // True if `path` itself is a symbolic link (lstat).
  std::function<bool(const std::string&)> is_symlink;
  // What `path` itself is (lstat, no link followed): the platform's read roots are kept where
  // they exist, the files the view masks where they are regular files.
  enum class Kind { kMissing, kRegular, kOther };
  std::function<Kind(const std::string&)> lstat_kind;
  // lstat(2)'s owner and mode of `path`, nullopt when missing: the system metadata roots are
  // shown where they are the system's (SystemOwnedDirectory). Unset: none is shown.
  PathOwnerOf owner;
  // The canonical paths at which `view` (all but its masks) shows a Unix socket bound on the
  // host, found by the socket's device and inode, and the locked directories one may be beneath
  // (policy/host_sockets.h). Empty function: none are masked. An error fails the view.
  std::function<Result<HostSocketMasks>(const FileView&)> bound_unix_sockets;
  // The host's mounts (/proc/self/mountinfo): a root that shows a protected place by another
  // name, through a bind mount, keeps it there too (policy/tree_alias.h). Empty function: no
  // aliases are looked for.
  std::function<std::vector<HostMount>()> mounts;
};

// True when `path` equals `root` or lies beneath it (component-wise, both canonical).
bool PathIsWithin(std::string_view path, std::string_view root);

// The non-empty components of `path`, in order ("/a//b/" -> {"a", "b"}).
std::vector<std::string> PathComponents(std::string_view path);

// Whether `path` names a user's git configuration (…/.gitconfig, …/.config/git/config): a
// credential location (credential helpers, tokens in url.*.insteadOf or http.extraHeader) that
// the sandbox shows only as a sanitized copy, never as it is.
bool IsGitConfigPath(std::string_view path);
// The error for `path`, such a file, named as a `kind` ("readable", "writable") root: refused
// even when named, with the copy the sandbox shows instead and the ways to change a setting.
Error GitConfigRootRefused(std::string_view kind, const std::string& path);

// The writable roots of `policy`, canonical, the workspace first, once each, after every check
// of the policy that ComputeFileView makes (the same errors, in the same order, up to and
// including a protected directory at a root's top that is a symbolic link): what a run needs
// before the view, whose read-only paths are found in these roots (placeholders, shields, the
// git walk). Empty for a policy without writable roots. ComputeFileView calls it first.
Result<std::vector<std::string>> WritableRootsOf(const SandboxPolicy& policy, const HostFs& host);

// Every writable root keeps the protected names at its top (fs/protected_names.h) read-only:
// .git (but with --writable-git) and .anvil, which must not be symbolic links there (the link
// could be replaced: an error), and anvil.lock and Anvil.toml when they are a directory or a
// regular file (a link by those names is one Anvil's readers refuse anyway). Those deeper in
// the tree come from the walk, with `discovered_read_only`.
// `discovered_read_only`: canonical paths that must also stay read-only inside the writable
// roots, found on the host before the view is computed (every repository's git metadata and
// what its config names, policy/git_metadata.h; the protected names anywhere in the roots,
// policy/protected_names_plan.h).
Result<FileView> ComputeFileView(const SandboxPolicy& policy, const HostFs& host,
                                 const std::vector<std::string>& discovered_read_only = {});

// Sets view.pinned_dirs: each of `dirs` (canonical) that lies strictly inside a writable root
// and in none of its read-only paths, once. A read-only mount keeps what is in it from being
// moved already, and a writable bind of a directory inside one would make that part writable
// again.
void PinDirs(FileView& view, const std::vector<std::string>& dirs);

// Adds to view.masked_files each of `sockets`, and to view.masked_dirs each of `locked_dirs`
// (canonical paths), that the view would show.
void MaskHostSockets(FileView& view, const std::vector<std::string>& sockets,
                     const std::vector<std::string>& locked_dirs = {});

// The check ComputeFileView applies to each readable workspace subpath (relative, no empty,
// "." or ".." component); also used by a warm runner for the paths a call brings.
Status ValidateWorkspaceSubpath(const std::string& sub);

}  // namespace anvil
