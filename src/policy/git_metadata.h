// What git executes or follows, kept out of a sandboxed command's reach.
//
// git runs code from many places besides <root>/.git/hooks: the hooks and config of every
// repository nested anywhere in a writable root (git uses the nearest `.git` above its working
// directory, and `git status` recurses into submodules), the gitdir a `.git` *file* points at,
// and any path a repository's config — or what it includes, or the user's global and system
// config — names for git to execute (`core.hooksPath`, `core.fsmonitor`, `diff.*.textconv`,
// `filter.*.process`, `credential.helper`, `alias.x = !cmd`, ...) or to read as more config
// (`include.path`). A command that can write any of them gets code run on the host the next
// time the user (or an editor polling `git status`) runs git there.
//
// Three steps, each split into I/O behind an injected GitFs and a pure decision (the real GitFs:
// linux/git_real_fs.h; one file per step: git_scan.cc, git_plan.cc with git_config_keys.cc,
// git_check.cc):
//   1. ScanGitMetadata walks every writable root (bounded: entries, depth, time; past a bound
//      it fails, and the sandbox does not start; after the run it skips and names what lies
//      past the bound instead: GitBoundMode) and reads each repository's pointers, config
//      chain and hooks, and the user's config chain.
//   2. PlanGitProtection turns a scan into the paths the view binds read-only and the
//      placeholders (empty, read-only, removed after the run) for config-named paths that do not
//      exist yet — with the missing directories on the way to them made and pinned — and the
//      directories on the way to a config file git reads, pinned.
//   3. After the run, a second scan and DecideGitQuarantine find what the command created or
//      swapped in that git would execute or follow: a repository that did not exist (or whose
//      `.git` was replaced, or whose gitdir pointer now leads elsewhere) and carries a hook,
//      or any config key but the inert ones git init and clone write (policy/git_inert_keys.h),
//      or in its git dir anything but what git writes there, or a symlink or FIFO
//      (policy/git_dir_closed.h); a config-named path that is not the object that was
//      protected; a config file git reads (the user's, an include) that is not what it was
//      before the run, existing or not.
//      ApplyGitQuarantine (linux/git_quarantine.h) moves each aside (`NAME.anvil-quarantine`) so
//      that git no longer finds it. A fresh `git init` or `git clone` is left alone.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/file_identity.h"
#include "common/result.h"
#include "policy/git_config.h"

namespace anvil {

// ---- Facts about files, injected -------------------------------------------------------------

enum class GitFileType { kMissing, kDir, kFile, kSymlink, kOther };

// Its device, inode and ctime (common/file_identity.h), and:
struct GitFileFacts : FileIdentity {
  GitFileType type = GitFileType::kMissing;
  // The mount it was reached through (statx: the unique mount id, never reused within a boot,
  // where the kernel has it; else the plain one; 0 when unknown). A memo of a directory is
  // only trusted on the same mount: another filesystem attached where the device number is
  // reused cannot pass for it.
  uint64_t mnt_id = 0;
  // On this filesystem every change of a directory's entries sets the directory's ctime
  // (local filesystems: ext2/3/4, xfs, btrfs, tmpfs, f2fs, zfs, bcachefs); not assumed of others
  // (network, FUSE, overlay).
  bool ctime_tracks_entries = false;
  // A regular file with an execute bit: access(X_OK) may accept it (as git's is_git_directory
  // accepts one as `objects` or `refs`).
  bool executable = false;
  // Its number of hard links: a file with more than one may be written through another name.
  uint64_t nlink = 1;
  bool exists() const { return type != GitFileType::kMissing; }
};

struct GitDirEntry {
  std::string name;
  GitFileType type = GitFileType::kOther;  // of the entry itself (a symlink is kSymlink)
};

struct GitDirListing {
  GitFileFacts dir;  // of the directory, taken before its entries were read
  std::vector<GitDirEntry> entries;
};

struct GitFs {
  // Entries of directory `dir` (no "." or ".."), never through a symlink at `dir` itself.
  // Error code "denied" when it cannot be listed for lack of permission.
  std::function<Result<GitDirListing>(const std::string& dir)> list_dir;
  // lstat(2): the entry itself, a symlink not followed.
  std::function<GitFileFacts(const std::string& path)> lstat;
  // Canonical absolute path (every symlink resolved), or nullopt when `path` does not exist.
  std::function<std::optional<std::string>(const std::string& path)> resolve;
  // The contents of a regular file (symlinks followed, as git follows them); nullopt when there
  // is no regular file there; a "limit" error when it is larger than `max_bytes`.
  std::function<Result<std::optional<std::string>>(const std::string& path, size_t max_bytes)>
      read_file;
  // readlink(2): a symlink's target as written; nullopt when `path` is no symlink (or when
  // unset: a link that cannot be read is followed no further).
  std::function<std::optional<std::string>(const std::string& path)> readlink;
  // Whether the caller could create entries in directory `dir` (asked for a directory it cannot
  // list: what the command cannot write either needs no look).
  std::function<bool(const std::string& dir)> writable;
  std::function<std::chrono::steady_clock::time_point()> now;
  // The wall clock, in seconds (ctimes are wall-clock times).
  std::function<int64_t()> wall_seconds;
  // rename(2) of `from` to `to` that never replaces an existing `to` (ApplyGitQuarantine only);
  // an existing `to` is an error with sys_errno EEXIST.
  std::function<Status(const std::string& from, const std::string& to)> rename_noreplace;
  // Replaces the symlink `link` by a new regular file `to` in the same directory holding the
  // link's target (ApplyGitQuarantine only: a link renamed aside would still lead where it
  // did); never replaces an existing `to` (an error with sys_errno EEXIST).
  std::function<Status(const std::string& link, const std::string& to)> link_to_file;
  // The check after the run only (may be unset): lets the caller list, search and rename in
  // directory `dir`, which the caller owns but cannot list (the command, running as the caller,
  // can chmod such a directory open, fill it and close it again; git on the host finds what it
  // holds all the same), by adding the owner's rwx bits to its mode. "denied" when the caller
  // does not own it (a symlink is never followed). `close_up` puts every mode back, the last
  // opened first.
  std::function<Status(const std::string& dir)> open_up;
  std::function<void()> close_up;
};
// The real one: linux/git_real_fs.h.

// The environment through which the user's own git finds its config, home and templates.
struct GitEnv {
  std::string home;                         // $HOME ("" when unset)
  std::string xdg_config_home;              // $XDG_CONFIG_HOME
  std::string config_global;                // $GIT_CONFIG_GLOBAL
  std::string config_system;                // $GIT_CONFIG_SYSTEM
  std::string template_dir;                 // $GIT_TEMPLATE_DIR
  std::string passwd_file = "/etc/passwd";  // for `~user/` in config paths
  // Anvil's sandbox homes directories ($XDG_STATE_HOME/anvil/homes, policy/sandbox_home.h):
  // what a command writes there outlives the run and no check walks it (policy/git_territory.h).
  std::vector<std::string> sandbox_homes;
};

// ---- Bounds ---------------------------------------------------------------------------------

struct GitScanLimits {
  size_t entries = 1000000;  // directory entries walked, over all writable roots
  size_t depth = 128;        // directory levels below a writable root
  double seconds = 10;       // wall time of one walk
  size_t paths = 4096;       // read-only paths (one bind mount each) plus placeholders
};
// "NAME=VALUE" of `--git-scan-limit`: entries, depth, seconds, paths.
Status ApplyGitScanLimit(std::string_view flag_value, GitScanLimits& limits);

// ---- 1. The scan (I/O through GitFs) ---------------------------------------------------------

struct GitConfigFile {
  std::string path;           // absolute, as git opens it (lexical, ~ expanded)
  std::string included_from;  // the config that includes it ("" for a top-level one)
  int include_line = 0;
  bool exists = false;
  std::vector<GitConfigEntry> entries;
  std::string error;  // why it could not be read or parsed; git refuses such a config too
};

enum class GitMarkerKind {
  kGitDir,   // a directory named .git (any case)
  kGitFile,  // a file named .git: `gitdir: PATH`
  kGitLink,  // a symlink named .git
  kBareDir,  // a directory holding HEAD, objects/ and refs/: git uses it as a git dir
};

struct GitRepo {
  std::string marker;  // the .git entry, or the directory that is itself a git dir
  GitMarkerKind kind = GitMarkerKind::kGitDir;
  // Found above a writable root, not in it: the repository git uses when it starts in the root
  // and finds no .git on the way (its config may name paths in the root).
  bool encloses_root = false;
  std::string top;            // the working tree (directory holding .git); "" for kBareDir
  std::string gitdir;         // absolute; "" when a pointer leads nowhere git could use
  std::string commondir;      // gitdir/commondir's target, else gitdir
  std::string core_worktree;  // core.worktree, absolute, when the config sets it
  // The .git files of linked worktrees: gitdir/gitdir and commondir/worktrees/*/gitdir.
  std::vector<std::string> worktree_dotgits;
  std::vector<GitConfigFile> configs;  // commondir/config, gitdir/config.worktree + includes
  // Hooks git would run: entries of the hooks directories that do not end in ".sample" and are
  // not byte-identical to the template's hook of the same name (what `git init` copies).
  std::vector<std::string> hooks;
  bool hooks_unknown = false;  // a hooks directory that is a symlink or cannot be listed
  // Why it could not be read in full (the walk after the run, past a bound): it is then judged
  // as one that runs code. "" when it was.
  std::string unread;
  // The walk after the run: the git dirs of submodules under commondir/modules (nested ones
  // too), which `git submodule update` on the host takes as they are, hooks and config. Judged
  // with the repository when it is new; `modules_unread` says why they were not all read.
  struct Module {
    std::string gitdir;
    std::vector<GitConfigFile> configs;  // its config and config.worktree, with their includes
    std::vector<std::string> hooks;
    bool hooks_unknown = false;
  };
  std::vector<Module> modules;
  std::string modules_unread;
};

// What a walk saw of each directory it listed whose ctime tracks its entries and is older than
// the walk (by more than a second, against timestamp granularity): a later walk that finds the
// same directory (device, inode) with the same ctime takes its entries from here instead of
// listing it again — its entries cannot have changed. Only what the walk acts on is kept
// (subdirectories, `.git`, HEAD/objects/refs, Anvil's protected names).
// The memo is also kept between runs (linux/git_walk_cache.h), where no command can write it.
struct GitWalkMemo {
  struct Dir {
    int64_t ctime_sec = 0;
    int64_t ctime_nsec = 0;
    uint64_t mnt_id = 0;
    uint64_t entries = 0;  // all of its entries: they count toward the 'entries' bound
    std::vector<GitDirEntry> kept;
    // Where it was listed. A directory whose own entries did not change still means something
    // else once a directory above it is renamed (its links' relative targets lead elsewhere):
    // found at another path, it is listed anew.
    std::string path = {};
  };
  std::map<std::pair<uint64_t, uint64_t>, Dir> dirs;
};

struct GitScan {
  std::vector<std::string> roots;  // the writable roots (canonical)
  // In the roots, and every repository found above a root (from its parent up to /, as git's
  // own discovery goes up from a directory with no .git).
  std::vector<GitRepo> repos;
  // Every directory or regular file in the roots named as one of Anvil's protected names other
  // than .git (fs/protected_names.h: .anvil, anvil.lock, Anvil.toml, compared as the plugin
  // side compares them), at any depth the walk reaches (in every directory it lists, a git dir
  // by shape too; it enters no `.git`: policy/git_walk_step.h): what the view
  // keeps read-only (policy/protected_names_plan.h). Canonical: the walk follows no link.
  std::vector<std::string> protected_names;
  // Every symlink in the roots the walk met, but `.git` ones (repos): the check after the run
  // moves aside those that lead into the sandbox homes (policy/git_territory.h).
  std::vector<std::string> symlinks;
  // Those of them in directories this walk listed, not taken from an earlier walk's memo (which
  // keeps no symlink but `.git` ones: `symlinks` holds only these then): only these can be new
  // since that walk (a link is changed only by replacing it, which changes its directory).
  std::vector<std::string> listed_symlinks;
  // $GIT_CONFIG_SYSTEM, /etc/gitconfig, $GIT_CONFIG_GLOBAL, ~/.gitconfig,
  // $XDG_CONFIG_HOME/git/config (or ~/.config/git/config), and their includes.
  std::vector<GitConfigFile> user_configs;
  // Directory entries walked, whether listed or taken from `previous` (the 'entries' bound
  // applies to these: a memo never lets a walk past the bound that a listing would stop).
  size_t entries = 0;
  size_t listed = 0;     // of them, entries actually listed
  size_t memo_dirs = 0;  // directories taken from `previous` instead of being listed
  size_t opened_up = 0;  // directories the caller owns but could not list, opened (GitFs::open_up)
  double seconds = 0;
  // For a later walk of the same roots: every directory listed or taken from `previous` that
  // may be remembered.
  GitWalkMemo memo;
  // GitBoundMode::kSkipAndName: the subtrees not walked (the first 100), and how many in all.
  struct Unwalked {
    std::string path;
    std::string why;  // "past the 'depth' bound (128)", "cannot be listed (...)"
  };
  std::vector<Unwalked> unwalked;
  size_t unwalked_total = 0;
};

// How a walk meets a bound. Before the run (kFail) it fails, and the sandbox does not start.
// After the run (kSkipAndName) a bound the command's own files can push it past never stops the
// check: what lies past the bound is skipped and named (GitScan::unwalked), everything found is
// still read and judged, and a repository that cannot be read in full counts as one that runs
// code.
enum class GitBoundMode { kFail, kSkipAndName };

// The path in a pointer file, as git reads it (the part of the file before any NUL): a `.git`
// file's "gitdir: PATH" (setup.c read_gitfile_gently: exactly that prefix, the rest of the file
// with the line ends at its end stripped, blanks and inner lines kept), a git dir's `commondir`
// (the same, no prefix), a linked worktree's `gitdir` back pointer (trailing blanks stripped).
// nullopt when git finds no path there. Relative paths are left to the caller.
enum class GitPointerKind { kDotGitFile, kCommonDir, kBackPointer };
std::optional<std::string> ParseGitPointer(std::string_view text, GitPointerKind kind);

// Fails ("limit") past a bound, naming it, its value and the way out; ("sandbox") for a
// directory in a writable root that cannot be listed but could be written.
// `previous`: the memo of an earlier walk of the same roots (the walk after the run reuses the
// one before it).
Result<GitScan> ScanGitMetadata(const std::vector<std::string>& roots, const GitEnv& env,
                                const GitFs& fs, const GitScanLimits& limits,
                                const GitWalkMemo* previous = nullptr,
                                GitBoundMode mode = GitBoundMode::kFail);

// ---- 2. The plan (pure, given the scan and the facts of GitFs) -------------------------------

enum class GitKeyUse {
  kNone,
  kInclude,        // include.path, includeIf.*.path: another config file
  kHooksDir,       // core.hooksPath: a directory of hooks
  kTemplateDir,    // init.templateDir: hooks copied into new repositories
  kCommand,        // a shell command line git runs
  kCommandOrBool,  // a command, or a boolean (core.fsmonitor, pager.*)
  kBangCommand,    // a command only when the value starts with '!' (alias.*, submodule.*.update)
};
GitKeyUse ClassifyGitConfigKey(const GitConfigEntry& entry);
// Whether the entry makes git run or read something (a command, a path), not a boolean/empty.
bool GitEntryIsActive(const GitConfigEntry& entry);
// The words of a shell command line, conservatively: quotes and escapes removed, split at blanks
// and at ; & | ( ) < > ` and line ends, a quoted word holding blanks split again (sh -c "..."),
// and the part after '=' of a word added (--file=PATH, VAR=PATH).
struct GitCommandWord {
  std::string text;
  bool program = false;  // in the place of a program (first of a simple command)
};
std::vector<GitCommandWord> GitCommandWords(std::string_view command);

struct GitNamedPath {
  std::string path;    // absolute, lexical: what git would open or run
  std::string reason;  // "core.hooksPath in /w/.git/config:3"
  int repo = -1;       // index of the repository whose own config names it; -1: user config
  // The protected name, a symlink, that leads here ("" when named otherwise): what it leads to
  // is named for what lies behind the name, which may be anything the user had.
  std::string via = {};
};

struct GitPlaceholder {
  std::string parent;  // canonical, inside a writable root (or a placeholder made before it)
  std::string name;
  bool directory = false;
  // A missing directory on the way down to a named path whose parent is missing too: made
  // empty, left writable, but pinned (bound onto itself) so that it cannot be renamed or
  // removed while the command runs. The named path itself is the last placeholder of the chain.
  bool on_the_way = false;
  std::string reason;
};

struct GitProtectionPlan {
  std::vector<std::string> read_only;  // canonical, each inside a writable root, none nested
  std::vector<GitPlaceholder> placeholders;
  std::vector<GitNamedPath> named;  // every config-named path in a writable root (or missing)
  // Existing directories strictly inside a writable root on the way down to a config file git
  // reads there (one of the user's, or an include target), and the placeholders on the way
  // (on_the_way): bound onto themselves (still writable), so that none can be renamed or
  // removed to put another config file at that path while the command runs.
  std::vector<std::string> pinned;
  // Hooks (regular files git runs, found through every link on the way) and config files git
  // reads that have other hard links: the view keeps read-only every other name a writable root
  // shows for each (linux/git_guard.h searches for them), since one written there changes the
  // hook or the config.
  std::vector<std::string> hard_linked;
  // What the view cannot keep read-only and the sandbox must not start with (fail closed):
  // unparseable configs, a hooks directory that is a writable root, too many paths.
  std::vector<Error> problems;
  // Planning stopped at the time bound (one of the problems): `named` is not the whole list.
  bool incomplete = false;
};
// `skip_configs`: repositories (indices into scan.repos) whose configs are not looked through
// for named paths — the walk after the run skips the ones it moves aside anyway.
GitProtectionPlan PlanGitProtection(const GitScan& scan, const GitEnv& env, const GitFs& fs,
                                    const GitScanLimits& limits,
                                    const std::set<int>& skip_configs = {});

// ---- 3. After the run ------------------------------------------------------------------------

using GitFileId = std::pair<uint64_t, uint64_t>;  // (st_dev, st_ino)
using GitIdentitySet = std::set<GitFileId>;

// `fs` whose resolve asks each path once and gives the same answer after that (a missing path
// too): for a stretch in which the run itself makes nothing, such as recording the identities
// below once its placeholders are made, where the same paths (the user's config files, their
// directories) are resolved several times. The answers are of one moment, as a single pass
// would take them; a change made after it is what the check after the run looks for.
GitFs ResolvingOnce(GitFs fs);

// The identities of everything the scan and plan looked at (markers, gitdirs, configs, named
// paths and their parent directories, placeholders once made), recorded before the run.
GitIdentitySet GitIdentities(const GitScan& scan, const GitProtectionPlan& plan, const GitFs& fs);

// Of the identities GitIdentities records, those of what lies in one of `subtrees` (a path, or
// what it resolves to): a run that takes what those subtrees hold as a command's work (a record
// of subtrees an earlier run's check did not walk: policy/unchecked_subtrees.h) drops them from
// its set, so the check after it judges them as new. Never what lies in a root's own top `.git`
// (scan.roots): every run binds it read-only (or holds a placeholder there), so no command made
// it, and a record that names a whole root would otherwise move the user's repository aside.
GitIdentitySet GitIdentitiesWithin(const GitScan& scan, const GitProtectionPlan& plan,
                                   const GitFs& fs, const std::vector<std::string>& subtrees);

// What each config file git reads (the user's own configs and every include target, of the
// user's configs or a repository's: as git opens them, existing or not) led to before the run.
// A repository's own config and config.worktree are not here: they lie in its git dir, whose
// identity NewGitReposThatRunCode compares.
struct GitWatchedConfig {
  std::string reason;           // "git's user config", "include in /w/.git/config:3"
  std::optional<GitFileId> id;  // the object it resolved to; nullopt: nothing was there
};
using GitWatchedConfigs = std::map<std::string, GitWatchedConfig>;
GitWatchedConfigs GitConfigIdentities(const GitScan& scan, const GitFs& fs);

// The command-writable places that outlive the run and that no check walks: every sandbox home
// and kept /tmp (policy/git_territory.h: what leads there, and how it is compared).
struct GitTerritory {
  std::vector<std::string> paths;  // each homes directory, canonical where it exists
  // Each of them; each <name>, <name>/home, <name>/tmp in them is added by the judge the first
  // time it is asked (policy/git_territory.h), so that a run with nothing to judge lists none.
  GitIdentitySet ids;
  bool empty() const { return paths.empty(); }
};

// Why a local repository path a config value names (remote.*.url, ...) is not inert: it leads
// into the territory. `bases`: what a relative value is taken from. nullopt: it does not.
using GitRefCheck = std::function<std::optional<std::string>(
    std::string_view value, const std::vector<std::string>& bases)>;

// Why git may run code because of `repo`, a repository made or changed during the run (a hook,
// a config it cannot parse, any config key that is not inert: policy/git_inert_keys.h, a local
// repository path that `refs` finds leads where no check walks, not read in full); nullopt when
// it holds only what git init, clone and friends write.
std::optional<std::string> GitRepoRunsCode(const GitRepo& repo, const GitRefCheck& refs = {});

// The GitRefCheck of `territory` (`~` forms expanded by `env`), for the check after the run.
GitRefCheck TerritoryRefCheck(const GitTerritory& territory, const GitEnv& env, const GitFs& fs,
                              const std::vector<std::string>& roots);

// The repositories (indices into after.repos, with why) that are not what was there before the
// run — new, swapped in, or pointing elsewhere — and would run code, or whose `.git` file or
// link, or any git dir's commondir (a `.git` directory's or a bare one's too), leads outside
// the roots to what was not there and protected before (or nowhere, or through a magic link),
// or whose new git dir is not closed (policy/git_dir_closed.h): to be moved aside.
std::map<int, std::string> NewGitReposThatRunCode(const GitIdentitySet& before,
                                                  const GitScan& after, const GitFs& fs,
                                                  const GitRefCheck& refs = {});

// The links of the roots a command may have made that must not lead into what the run kept
// read-only (policy/git_territory.h, GitLinkIntoProtected).
struct GitLinkCheck {
  // Of GitScan::symlinks, those the command could have made (GitLinkMayBeNew).
  std::vector<std::string> new_links;
  // Canonical, each in a writable root: what the run kept read-only (the plan's read-only paths,
  // the other names of hard-linked hooks, the placeholders, Anvil's protected names).
  std::vector<std::string> places;
};

struct GitQuarantineAction {
  std::string path;      // to move aside (ApplyGitQuarantine reports one whose parent no
                         // longer resolves inside a writable root as a failure)
  bool git_dir = false;  // a git directory: its HEAD is moved aside too, so git sees none
  std::string reason;
  // A symlink into a sandbox home: replaced by a file NAME.anvil-quarantine holding its target
  // (GitFs::link_to_file), since under any name it would still lead there.
  bool link = false;
};
// Pure: given the identities recorded before the run and a scan and plan made after it.
// `configs`: what each config file led to before the run; one that now leads to another
// object (made where nothing was, or swapped in) is moved aside, as is a config file of the
// scan after the run that is new (an include of the user's config or of a repository that
// stays). `territory`: a symlink of the roots (GitScan::symlinks) that leads into it is moved
// aside as a `.git` pointer out of the roots is, and a new repository's local repository paths
// are judged against it (TerritoryRefCheck, with `env`). `links`: each link the command may have
// made that leads into what the run kept read-only, or onto a protected name, is moved aside the
// same way (but a link that is itself a protected name: NewProtectedNames judges those).
std::vector<GitQuarantineAction> DecideGitQuarantine(
    const GitIdentitySet& before, const GitWatchedConfigs& configs, const GitScan& after,
    const GitProtectionPlan& after_plan, const GitFs& fs, const GitTerritory& territory = {},
    const GitEnv& env = {}, const GitLinkCheck& links = {});
// The moves themselves (ApplyGitQuarantine): linux/git_quarantine.h.

}  // namespace anvil
