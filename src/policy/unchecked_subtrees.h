// What a command sandbox's check after the run could not vouch for, kept for the plugin side
// (threat models T1 and T8).
//
// The check after a workspace-write run (linux/git_guard.h) has the walk's bounds, which the
// command's own files can push it past: it then skips and names the subtrees it did not walk,
// and the run exits 125. The next sandbox there does not start until they are within the
// bounds, but `anvil run`, `anvil serve` and `anvil mcp` walk nothing: an Anvil.toml, anvil.lock,
// `.anvil` or plugin code the command left there would be read by the next plugin started in
// it. So the run writes what it could not check to a record in Anvil's state directory (which
// no sandboxed command can write: linux/trust_shield.h), and plugin admission
// (session/plugin_admission.h) refuses a plugin whose workspace lies in such a subtree or holds
// one, or whose directory lies in one — as the next sandbox refuses to start.
//
// A subtree is resolved by the next sandbox run whose writable roots hold it: its walk before
// the run must get through it (within the bounds, as for any start), and it takes what the
// subtree holds as made by a command (SuspectUncheckedSubtrees: moved aside after the run like
// anything a command makes, when it runs code or is a protected name), so nothing left there is
// blessed by a later walk that merely found it. Once that run's check is complete, the subtree
// leaves the record.
//
// Pure decisions first, then the record files (read and written through fs/).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/git_metadata.h"

namespace anvil {

// A record file's size at most (a pending record with what its run trusts included).
inline constexpr size_t kMaxUncheckedRecordBytes = 8 << 20;
// Subtrees named in one record at most; past it the record names the roots themselves.
inline constexpr size_t kMaxUncheckedSubtrees = 100;

struct UncheckedSubtree {
  std::string path;  // canonical, absolute: a directory (or a file) the check did not vouch for
  std::string why;
};

// What a run still going takes as the user's in its roots (a pending record says it once the
// walk before its run is done, before its command starts): the identities that walk recorded
// (GitIdentities, less what the run takes as a command's work) and Anvil's protected names it
// found. A run that starts meanwhile over overlapping roots takes nothing else found there as
// the user's: what the first run's command made is not in it, and the first run's own check may
// never see it (a second command can hide it from that check and put it back afterwards).
struct RunTrust {
  std::vector<GitFileId> ids;
  std::vector<std::string> names;
};
// Past these a run says it trusts nothing (everything in its roots is judged by a run that
// starts meanwhile): the record stays bounded whatever the roots hold. A repository counts a
// few identities; the walk's own bounds (entries) stop well before either.
inline constexpr size_t kMaxTrustedIds = 200000;
inline constexpr size_t kMaxTrustedNames = 20000;

struct UncheckedRecord {
  std::vector<std::string> roots;  // the run's writable roots (canonical)
  std::vector<UncheckedSubtree> subtrees;
  // Only in the pending record of a run still going, once its walk before the run is done.
  std::optional<RunTrust> trusted = std::nullopt;
};

// A pending record of another run still going whose roots overlap this run's (one lies within
// the other): `trusted` unset while that run has not yet said it (its command has not started).
struct LiveRun {
  std::vector<std::string> roots;
  std::optional<RunTrust> trusted = std::nullopt;
};

// `trust` bounded (kMaxTrustedIds, kMaxTrustedNames): past either bound, nothing.
RunTrust BoundedRunTrust(RunTrust trust);

// Whether `a` and `b` overlap: some root of one lies within (or is) a root of the other.
bool RootsOverlap(const std::vector<std::string>& a, const std::vector<std::string>& b);

// What a run's check after it left unchecked, when anything: the subtrees it did not walk
// (`unwalked`, of `unwalked_total`), the protected names it could not move aside
// (`names_left`, each path with why), and — when the list is incomplete (more than were named),
// the planning ran out of time (`check_error`) or something that runs code could not be moved
// aside (`quarantine_failures`) — every root. nullopt: everything was checked.
struct UncheckedFacts {
  std::vector<std::string> roots;
  std::vector<UncheckedSubtree> unwalked;
  size_t unwalked_total = 0;
  std::vector<UncheckedSubtree> names_left;
  std::string check_error;
  std::vector<std::string> quarantine_failures;
};
std::optional<UncheckedRecord> UncheckedAfterRun(const UncheckedFacts& facts);

// `older` (the same roots' earlier record, still unresolved) joined with `newer`: each path once;
// past kMaxUncheckedSubtrees, the roots.
UncheckedRecord MergeUncheckedRecords(const UncheckedRecord& older, const UncheckedRecord& newer);

std::string EncodeUncheckedRecord(const UncheckedRecord& record);
// nullopt for anything that is not a record (torn, foreign, malformed, a relative path).
std::optional<UncheckedRecord> DecodeUncheckedRecord(std::string_view text);

// "unchecked-" and 32 hex digits of SHA-256 of the roots, ".json".
std::string UncheckedRecordFileName(const std::vector<std::string>& roots);
bool IsUncheckedRecordFileName(std::string_view name);

// The first subtree of `records` that keeps a plugin from running in `workspace` from
// `plugin_dir` (both canonical): one the workspace lies in, one the workspace holds, or one the
// plugin directory lies in; with the record's root that holds it.
struct UncheckedHit {
  UncheckedSubtree subtree;
  std::string root;
};
std::optional<UncheckedHit> UncheckedSubtreeFor(const std::vector<UncheckedRecord>& records,
                                                std::string_view workspace,
                                                std::string_view plugin_dir);

// The refusal for `hit`, naming the subtree, why, and what to do.
std::string UncheckedRefusal(const UncheckedHit& hit);

// Of `records`, the subtrees lying in one of `roots` (a run's writable roots): what that run
// takes as a command's work (its walk before the run records nothing found in them).
std::vector<std::string> SuspectUncheckedSubtrees(const std::vector<UncheckedRecord>& records,
                                                  const std::vector<std::string>& roots);

// What of `record` a run over `roots` whose check was complete leaves unresolved: the subtrees
// lying in none of them; nullopt when none is left.
std::optional<UncheckedRecord> UncheckedLeftAfter(const UncheckedRecord& record,
                                                  const std::vector<std::string>& roots);

// ---- the record files ---------------------------------------------------------------------

// Where the records live: the grant store's directory's `unchecked` (policy/grant_store.h,
// ${XDG_STATE_HOME:-$HOME/.local/state}/anvil/unchecked); "" when no home is known.
std::string UncheckedRecordsDir();

struct LoadedUncheckedRecord {
  std::string file;  // the name in the directory
  std::string text;  // as read (a later removal removes only this)
  UncheckedRecord record;
};

// Every record in `dir` (none when it does not exist or this user may not open it: no run of
// this user could have written one there). A record that is not the caller's, not
// a regular file, or does not decode is an error naming it (fail closed: it may stand for an
// unchecked subtree).
// `live(dir_fd, name)`: the file is the pending record of a run still going (linux/
// unchecked_run.h), which that run resolves itself: left out. A record none of whose roots
// exists any more is nothing to refuse for and is left out too; `gone`, when given, gets those
// whose roots were all in /tmp, /var/tmp or /dev/shm (RemoveGoneUncheckedRecords): a workspace
// elsewhere may be back (a drive mounted again), and its record then applies again.
using UncheckedLiveFn = std::function<bool(int dir_fd, const std::string& name)>;
Result<std::vector<LoadedUncheckedRecord>> LoadUncheckedRecords(
    const std::string& dir, const UncheckedLiveFn& live = {},
    std::vector<LoadedUncheckedRecord>* gone = nullptr);

// Removes the records LoadUncheckedRecords found gone, each only while the file still holds
// what was loaded and its roots are still all missing (best effort: one left is read, and left
// out, by the next load). Otherwise every later load would read them again, for nothing.
void RemoveGoneUncheckedRecords(const std::string& dir,
                                const std::vector<LoadedUncheckedRecord>& gone);

// Makes `dir` (0700) where missing, only in a tree the caller owns: its deepest existing
// directory must be the caller's ("invalid" otherwise: nothing is made in another user's home).
Status MakeUncheckedRecordsDir(const std::string& dir);

// Adds `record` to `dir` (MakeUncheckedRecordsDir), joined with what is there for its roots.
Status SaveUncheckedRecord(const std::string& dir, const UncheckedRecord& record);

// After a run over `roots` whose check was complete: `loaded` keeps only UncheckedLeftAfter
// (removed when nothing is left), when the file still holds what was loaded (a record a
// concurrent run wrote since stays as it is).
Status ResolveUncheckedRecord(const std::string& dir, const LoadedUncheckedRecord& loaded,
                              const std::vector<std::string>& roots);

}  // namespace anvil
