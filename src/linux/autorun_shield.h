// A run's shield of what the host runs from the home (policy/host_autorun.h): plans it, makes
// what a writable root could otherwise let the command make (the placeholder links, and the
// directories missing on the way to them), holds them for as long as the run lasts and removes
// them after, so that nothing is left in the user's home.
//
// Concurrent runs in one home share placeholders. Removing a name that is a mount point in
// another mount namespace succeeds and silently detaches that mount (Linux 3.18+), which would
// take the other run's protection away mid-run. A symbolic link cannot be locked, so a run
// holds a shared flock(2) on each directory that holds a placeholder link and on each
// placeholder directory (one open file per directory) for as long as it runs, and takes it
// before it looks there. At the end, deepest first, a directory whose lock turns exclusive
// without waiting is used by no other run: every placeholder link in it goes, then the
// directory itself if it is a placeholder and still empty (something put there meanwhile makes
// it the user's). A placeholder directory is marked with kPlaceholderXattr (as .git's are), so
// that one a killed run left behind is taken over and removed by the next — a directory on the
// way and a cache place the run shadows alike; a placeholder link is recognised by its target.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/host_autorun.h"

namespace anvil {

class AutorunShield {
 public:
  // Plans, makes what the plan asks for and plans again until nothing is missing (each round
  // makes one more level). `places`: HostAutorunPaths; `writable_roots` canonical; `covered`:
  // what the view mounts afresh (its private /tmp); `caches`: the cache places
  // (policy/host_caches.h), shadowed rather than kept read-only.
  // A file to keep that has other hard links: the writable roots are searched for its other
  // names (at most `link_search_entries` directory entries, the git walk's bound), and each
  // found joins read_only; a link cannot be made from a read-only bind (EXDEV), so the names
  // the file has are all it will have while the run lasts. A "sandbox" error for a place the
  // caller cannot settle (a search cut short, a directory that cannot be opened), with nothing
  // made left behind.
  static Result<AutorunShield> Prepare(const std::vector<std::string>& places,
                                       const std::vector<std::string>& writable_roots,
                                       const std::vector<std::string>& covered,
                                       const std::vector<std::string>& caches = {},
                                       size_t link_search_entries = kLinkSearchEntries);
  static constexpr size_t kLinkSearchEntries = 1000000;

  AutorunShield() = default;
  AutorunShield(AutorunShield&&) = default;
  AutorunShield& operator=(AutorunShield&& other) noexcept;
  AutorunShield(const AutorunShield&) = delete;
  AutorunShield& operator=(const AutorunShield&) = delete;
  // Removes the placeholders no other run holds; releases the locks.
  ~AutorunShield();

  // The settled plan: what the view keeps read-only and pins.
  const AutorunShieldPlan& Plan() const { return plan_; }
  // The paths this run made (placeholder links and directories).
  std::vector<std::string> Made() const;

 private:
  enum class Outcome { kMade, kChanged, kCannot };
  struct HeldDir {
    std::string path;
    UniqueFd fd;               // the directory (O_RDONLY), flock()ed shared
    UniqueFd parent;           // a placeholder directory's parent, held open for its removal
    bool placeholder = false;  // made by this run or marked by an earlier one
    bool made = false;
    bool holds_links = false;  // placeholder links in it this run uses
  };
  // The held directory at `path` (one open file per inode), locked shared; -1 when it is gone,
  // -2 when the caller can neither open it nor make a name in it.
  Result<int> Hold(const std::string& path);
  Result<Outcome> MakeLink(const AutorunMake& make);
  Result<Outcome> MakeDirectory(const AutorunMake& make);
  // A placeholder link the plan met: held (true), or gone or replaced meanwhile (false).
  Result<bool> HoldLink(const std::string& path, bool pinned);
  // A directory on the way, or a shadowed cache place, that an earlier run made and marked:
  // taken over.
  Status AdoptMarked(const std::string& dir);
  void Release();

  std::vector<HeldDir> dirs_;
  std::vector<std::string> made_links_;
  AutorunShieldPlan plan_;
};

// lstat(2) and readlink(2) of the host.
AutorunFs RealAutorunFs();

// The same answers as RealAutorunFs, from one listing (getdents) per directory asked about: a
// missing name (most places) costs no syscall of its own; one that exists costs a readlink (a
// symbolic link) or an lstat (a file, for its hard links; an entry of unknown type). A directory
// that cannot be listed (not readable, gone, or more than kListedEntries names) is asked name by
// name with lstat. Each listing is kept for the life of the returned object: one per plan.
AutorunFs ListingAutorunFs();
inline constexpr size_t kListedEntries = 4096;

// The other names of the regular file `path` beneath `roots` (canonical), not looking beneath
// `skip` (what the view covers or shadows): walked without following a symbolic link, at most
// `max_entries` directory entries. A "sandbox" error when the walk was cut short or `path` is
// gone; it ends early once all of its other names are found.
Result<std::vector<std::string>> OtherHardLinks(const std::string& path,
                                                const std::vector<std::string>& roots,
                                                const std::vector<std::string>& skip,
                                                size_t max_entries);

}  // namespace anvil
