// References from the writable roots into the places a sandboxed command writes that no check
// walks: every sandbox home and kept /tmp under Anvil's state dir
// ($XDG_STATE_HOME/anvil/homes/<name>/{home,tmp}, policy/sandbox_home.h). Both outlive the run
// and the host can reach them, so a repository there may hold any hook or config the command
// chose; what leads the user's git there from the judged space — a symlink in a writable root, a
// repository's remote URL — is treated like a `.git` pointer out of the roots (policy/
// git_metadata.h, step 3): the link is moved aside, the repository's config is not inert.
//
// Compared by object, not by name: the directory a path reaches (the realpath of its longest
// existing prefix) and each directory above it are compared by (st_dev, st_ino) with the homes
// directory and every <name>, home and tmp in it, so neither another path to the same place (a
// bind mount, a symlinked $XDG_STATE_HOME) nor a relative `../..` spelling dodges it. The part of
// a path that does not exist yet is taken lexically from there. Every look goes through the
// injected GitFs; the rest is pure (tests/unit/git_territory_test.cc).
//
// Here too: the links of the roots the command made that lead into what the run kept read-only
// (a repository's `.git`, a protected name; GitLinkIntoProtected, below), and the one
// link-by-link walk (FollowGitWay) every check of where a link leads shares.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/file_identity.h"
#include "policy/git_metadata.h"

namespace anvil {

// GitTerritory: policy/git_metadata.h.

// The territory of the homes directories `homes_dirs` (absolute; a missing one is kept by name:
// what is made there later is the command's too).
GitTerritory GitTerritoryOf(const std::vector<std::string>& homes_dirs, const GitFs& fs);

// What a walk memo is kept with (linux/git_walk_cache.h): the territory its links were judged
// against, as the set of its homes directories, each by its canonical name and the object
// (device, inode) it is, or by name alone while missing. A memo judged against one territory
// vouches for no link under another: a run with another state dir, or none (""), or a homes
// directory removed and made again, has another key and lists every directory anew. Pure.
std::string GitTerritoryKey(const GitTerritory& territory);

// Judges paths against one territory; remembers the directories it compared.
class GitTerritoryJudge {
 public:
  GitTerritoryJudge(const GitTerritory& territory, const GitFs& fs)
      : territory_(territory), fs_(fs) {}

  // The homes directory `path` (absolute, as written: no symlink or `..` followed yet) leads
  // into, or nullopt. A path through a magic link (GitMagicLinkPath: as written, or the way to
  // it as the host resolves it, whose resolution refuses magic links) leads anywhere: its
  // prefix ("/proc") then, which is no homes directory.
  std::optional<std::string> Path(const std::string& path);
  // The same for the symlink at `link` (absolute, its directory as the host resolves it): its
  // target, relative ones taken from the link's directory; nullopt when it is no symlink.
  std::optional<std::string> Symlink(const std::string& link);

 private:
  std::optional<std::string> Within(const std::string& real);  // by object, walking up
  void ListHomes();  // the ids of every <name>, home and tmp in the homes directories
  std::optional<std::string> PathAt(const std::string& path, int depth);

  const GitTerritory& territory_;
  const GitFs& fs_;
  std::map<std::string, std::optional<std::string>> seen_;  // canonical dir -> Within()
  bool listed_ = false;
  GitIdentitySet ids_;
};

// ---- The way of a path, link by link ------------------------------------------------------------
// The one walk every check of where a link leads shares (the territory's, the roots', the
// protected places'): component by component as the kernel follows it, a `..` taken from where
// the way is (after a link, from where the link led), at most 40 links.
enum class GitWayEnd {
  kReached,  // `at` is where the way ends (it exists)
  kMissing,  // `at` is the deepest existing directory; `rest` the components not followed
  kNowhere,  // a link that leads nowhere (empty), more than 40 links, or no readlink/resolve
  kStopped,  // `on_link` said to stop, at the link in the directory `at`
  kMagic,    // (only when asked) a component that is a magic link path: `at` is that path
};
struct GitWay {
  GitWayEnd end = GitWayEnd::kReached;
  std::string at;
  std::vector<std::string> rest;  // kMissing: the missing component first
};
// Follows `path` from the canonical directory `from` (an absolute `path` from "/"). `on_link`:
// each symbolic link met, with its canonical directory and its target as written; false stops
// the walk. `stop_at_magic`: a component whose path GitMagicLinkPath names ends the walk.
GitWay FollowGitWay(
    const std::string& from, const std::string& path, const GitFs& fs,
    const std::function<bool(const std::string& dir, const std::string& target)>& on_link,
    bool stop_at_magic = false);

// Whether `target`, a symlink's target as written, is a process's own standard stream by name
// (a log file linked to /dev/stdout, as containers do): the terminal, pipe or file of whoever
// writes it, never a way into a directory. Pure.
bool IsStandardStreamTarget(std::string_view target);

// ---- Links into what the run kept read-only ----------------------------------------------------
// A symlink the command made in a writable root may lead into what the run kept read-only: a
// repository's `.git` (`notes.txt -> .git/config`, `out -> .git/hooks`, `build -> ../.git`),
// a path a config names (a hooks directory), or one of Anvil's protected names
// (`tasks -> .vscode/tasks.json`). The command cannot write through it, but a host tool that
// later does (an editor saving `notes.txt`, a build writing `out/pre-commit`) writes the
// repository's config or hooks, and git, the editor or an agent then runs what it was given. So
// such a link the command could have made is moved aside after the run, as a link into the
// territory is; one that was there before the run, unchanged, is the user's and stays.

// Where the symlink `link` (absolute, its directory as the host resolves it) leads that is
// protected, or nullopt: its target followed as the host follows it (relative to the link's
// directory, every further link on the way, the not-yet-existing rest taken lexically: a link
// to a hook not made yet leads there too) ends in or below one of `places` (canonical: what the
// run kept read-only), or names on its way — as any link on it writes it, or where it ends — a
// protected name other than `.git` below a root of `roots` (fs/protected_names.h: `.hg`,
// `.claude`, `.vscode/tasks.json`, `Anvil.toml`, ...; a `.git` counts only as one of `places`:
// a repository the command made is its own, judged as such); or its way goes through a magic
// link (`/proc/self/cwd/...`), which leads wherever the process following it is. Names the
// place ("/w/.git", "/w/.vscode/tasks.json", "/proc/self"). Pure but for the facts of GitFs.
std::optional<std::string> GitLinkIntoProtected(const std::string& link,
                                                const std::vector<std::string>& places,
                                                const std::vector<std::string>& roots,
                                                const GitFs& fs);

// What the walk before the run saw of the links of the roots, to tell those the command could
// have made from those that were there.
struct GitLinksBefore {
  // Each link it listed, as it was then (lstat: the object and its ctime).
  std::map<std::string, FileIdentity> listed;
  // Each directory it took unchanged from an earlier walk's memo (whose links it did not list;
  // only on a filesystem whose ctimes track changes), by object, with the path it had then: one
  // the command moved (or one above it) is not where its links meant what they did.
  std::map<GitFileId, std::string> remembered_dirs;
  // When that walk started (wall clock, seconds).
  int64_t walk_start = 0;
  // Nothing found before the run is taken as the user's (another run over these roots was
  // going, or a killed one left a subtree unchecked): every link may be new.
  bool trust_none = false;
};
// Whether the symlink `link` (now `now`, in the directory `dir_now`) may be one the command made:
// not when the walk before the run listed it at this path as the same object with the same
// ctime (a link is never changed in place: made, renamed or linked anew it has a new ctime), nor
// when it lies in a directory that walk took unchanged from the memo and its ctime is older than
// that walk by more than a second (one made, renamed or linked there since is not; a second for
// the timestamps' granularity, as the memo itself takes). Pure.
bool GitLinkMayBeNew(const std::string& link, const GitFileFacts& now, const GitFileFacts& dir_now,
                     const GitLinksBefore& before);

// Whether `path` (absolute, as written or as resolved) goes through a magic link: a path in
// /proc/self, /proc/thread-self or /proc/PID (`/proc/self/cwd`, `/proc/PID/root`,
// `/proc/self/fd/N`, ...) or /dev/fd, /dev/stdin,
// /dev/stdout, /dev/stderr (links into /proc/self/fd). Such a link leads wherever the process
// that follows it is: the check would resolve it in its own process, git on the host in its own
// (another working directory, other descriptors), so it leads anywhere. The prefix ("/proc/self",
// "/proc/1234", "/dev/fd", ...; itself such a path) when the way reaches one at any step, as
// written (a `..` after a magic link leaves from where the link led: "/proc/self/cwd/../x" goes
// through it); nullopt when not. Pure.
std::optional<std::string> GitMagicLinkPath(const std::string& path);

// The local paths git would open as a repository for `value`, a remote URL or path
// (remote.*.url, remote.*.pushurl, submodule.*.url, branch.*.remote): `file://PATH` (and its
// %-decoded form), an absolute path, or a relative one, which git takes from the directory it
// runs in — any directory of the working tree — or, for a submodule, from the superproject's
// remote: so every `bases` directory and each directory above it, with the value's leading
// `./` and `../` taken off as well as kept. Empty for a URL git fetches over a network
// (`scheme://`, the scp-like `host:path`) and for `~` forms (the caller expands them first).
// Pure.
std::vector<std::string> GitLocalRepoPaths(std::string_view value,
                                           const std::vector<std::string>& bases);

}  // namespace anvil
