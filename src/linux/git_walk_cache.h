// The git metadata walk of one run kept for the next (policy/git_metadata.h, GitWalkMemo), so
// that a start in an unchanged workspace lists no directory again: it only asks each directory
// for its identity and ctime (one statx) and takes its entries from the memo where they match.
//
// What makes it safe to trust a file on disk with that decision:
//   - Where it lives: /tmp/anvil-cache-UID (the caller's effective uid), a directory the caller
//     owns with mode 0700, reached without a symlink in its last component. A fixed place, not
//     one from $HOME or $XDG_CACHE_HOME, so that every sandbox of the caller knows where it is
//     whatever its environment says; anything else found there (a symlink, a file, a group- or
//     world-writable directory) is moved aside, and one owned by another user is not used.
//   - No sandboxed command can write it: every run whose writable roots contain it binds it
//     read-only in the view, and binds each directory between the writable root and it onto
//     itself, so that none of them can be renamed or removed (the kernel refuses to move a mount
//     point) to put another directory in its place (ShieldGitWalkCache). A writable root inside
//     it, or the directory itself as a writable root, is refused. It is made before the view is
//     computed, so a command can never be the one that creates it.
//   - What a memo entry vouches for: a directory's (device, inode, mount, ctime to the
//     nanosecond) on a filesystem where every change of its entries sets the ctime, recorded
//     only when the ctime was more than a second older than the walk. Any later entry made,
//     removed or renamed into place sets a newer ctime; touch(1) cannot set a ctime; a
//     hard link is an entry too. The file also names the boot (the kernel's boot id) and the
//     exact writable roots it was made for; anything else is ignored, and a file that does not
//     parse is as good as none.
//   - Whom it vouches for: the memo keeps no symlink (the check after a run judges those of the
//     directories it lists anew against the sandbox homes, policy/git_territory.h), so a memo
//     vouches that the links of its directories were judged against the territory in force
//     when it was saved. It names that territory (GitTerritoryKey), is saved only when the check
//     after the run judged against the territory it was loaded for, and is used only by a run
//     whose territory is the same: a run with another state dir, or none, lists every
//     directory anew.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/git_metadata.h"

namespace anvil {

// ---- pure -------------------------------------------------------------------------------------

// "/tmp/anvil-cache-UID".
std::string GitWalkCacheDirFor(uid_t uid);

// What the view must do so that no command can write, replace or move the cache directory
// (`cache_dir`, canonical) given the run's writable roots (canonical): keep it read-only when
// a root shows it, and pin (bind onto itself) every directory strictly between that root and
// it. A root does not show it when one of `covered` (what the view mounts afresh, such as its
// private /tmp) lies between the two. An error ("invalid") when a writable root is the
// directory or lies inside it.
struct GitWalkCacheShield {
  std::vector<std::string> read_only;
  std::vector<std::string> pinned;
};
// Adds what `more` keeps read-only and pins to `into`, each path once.
void MergeShield(GitWalkCacheShield& into, const GitWalkCacheShield& more);
Result<GitWalkCacheShield> ShieldGitWalkCache(const std::string& cache_dir,
                                              const std::vector<std::string>& writable_roots,
                                              const std::vector<std::string>& covered = {});

// The file of one set of writable roots: "walk-" and 32 hex digits of SHA-256 of the roots.
std::string GitWalkCacheFileName(const std::vector<std::string>& roots);

// How many memos the cache keeps: one per set of writable roots run in this boot, so a caller
// who works in many places (or a test suite that makes a workspace per test) would otherwise
// fill the directory without end.
inline constexpr size_t kGitWalkCacheMaxMemos = 64;

// One file of the cache directory and when it was last written.
struct GitWalkCacheFile {
  std::string name;
  int64_t mtime_ns = 0;
};
// Which files to remove when a new memo has been added: the memos written longest ago beyond
// the `keep` newest, and temporary files older than `stale_ns` (left by a run that died while
// saving). Names that are neither a memo nor a temporary file of the cache are left alone.
std::vector<std::string> GitWalkCacheFilesToPrune(std::vector<GitWalkCacheFile> files, size_t keep,
                                                  int64_t now_ns, int64_t stale_ns);

// Encoding of a memo with what it was made for: the boot, the roots and the territory its links
// were judged against (`territory`: GitTerritoryKey). Decode returns nullopt for anything that
// is not exactly a memo of `boot_id`, `roots` and `territory` (a torn, truncated, foreign or
// malformed file, or one judged against another territory).
std::string EncodeGitWalkMemo(std::string_view boot_id, const std::vector<std::string>& roots,
                              std::string_view territory, const GitWalkMemo& memo);
std::optional<GitWalkMemo> DecodeGitWalkMemo(std::string_view data, std::string_view boot_id,
                                             const std::vector<std::string>& roots,
                                             std::string_view territory);

// Whether a run must write its memo: there was none to load (`loaded` null), or the walks kept
// something else (a directory added, dropped, or seen with another ctime, mount or entries).
// A walk that listed only directories it may not remember (a workspace whose ctime the run's own
// .git placeholder has just set) keeps what was loaded, and the file already holds it.
bool GitWalkMemoNeedsSave(const GitWalkMemo* loaded, const GitWalkMemo& now);

// Whether a run may keep its memo at all: the check after it ran to the end and judged the
// links against `judged` (GitTerritoryKey; nullopt: no check, or one that failed before it
// judged anything), the territory the memo was loaded for (`loaded_for`). Otherwise the
// directories it took from the loaded memo were vouched for under another territory, and the
// ones it listed were not judged.
bool GitWalkMemoMayBeSaved(std::string_view loaded_for, const std::optional<std::string>& judged);

// ---- I/O --------------------------------------------------------------------------------------

class GitWalkCache {
 public:
  // Makes the caller's cache directory when it is missing (moving aside what is there and
  // unfit), then opens it. Never fails: Usable() says whether it can be read and written, and
  // Dir() names the directory the view must shield ("" only when none could be made).
  static GitWalkCache Open();
  // For tests: the same at another path.
  static GitWalkCache OpenAt(const std::string& path);

  const std::string& Dir() const { return dir_; }
  bool Usable() const { return static_cast<bool>(fd_); }
  // The directory could not be made where a writable root could make it: the run must not
  // start, since a command could then create it (the message names why and the fix).
  const std::string& Problem() const { return problem_; }

  // The memo of `roots` from an earlier run of this boot whose check judged against
  // `territory` (GitTerritoryKey); nullopt when there is none usable.
  std::optional<GitWalkMemo> Load(const std::vector<std::string>& roots,
                                  std::string_view territory) const;
  // Replaces the memo of `roots` (a new file exchanged with the old one, or renamed into place:
  // a reader sees the old or the new one whole). Best effort: a cache that cannot be written
  // only costs time. A memo of roots that had none makes the cache drop its oldest memos past
  // kGitWalkCacheMaxMemos.
  void Save(const std::vector<std::string>& roots, std::string_view territory,
            const GitWalkMemo& memo) const;

 private:
  void Prune() const;

  UniqueFd fd_;
  std::string dir_;
  std::string problem_;
  std::string boot_id_;
};

// The shield of the caller's cache directory for a run (sandbox_launch.cc joins it to the
// view); an error when no directory could be made there and a writable root would show the
// place, where the command could make one.
Result<GitWalkCacheShield> ShieldFor(const GitWalkCache& cache,
                                     const std::vector<std::string>& writable_roots,
                                     const std::vector<std::string>& covered);

}  // namespace anvil
