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
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
