// What of the workspace a tool started by sys.exec can see (threat model T3): exactly what
// sys.fs.read lets the same grant read, decided here as a pure function of the grant and facts
// about the workspace's directories, and enforced by the runner's mount view and Landlock (both
// built from the same plan).
//
// sys.fs.read of a path is allowed when a glob matches the path (path_glob.h), the path is valid
// (workspace_path.h), it is a regular file with a single hard link (unless the gateway allows
// hard-linked reads: another name of the inode may live outside the workspace), and any symlink on
// the way stays inside the workspace and leads to a granted name. The plan reproduces that:
//   - a directory whose every descendant is granted ("src" under "src/**", the root under "**") is
//     bound whole, read-only; what sys.fs.read would still refuse beneath it is masked: hard-linked
//     files, FIFOs, sockets and devices behind an empty read-only file, entries whose names no
//     sys.fs path can spell (bad UTF-8, control characters, too long) behind an empty file or
//     directory;
//   - any other directory the grant can reach is the view's own empty directory, holding only
//     the granted regular files (each bound), the granted symlinks (recreated with the same text,
//     so they resolve inside the view, where only granted files are) and the directories beneath
//     that the grant reaches; everything else is absent, names included.
// Symlinks inside a whole-bound directory stay as they are: the tools never follow them while
// walking (rg/fd -L are refused) and what they point at resolves inside the view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

enum class EntryKind : std::uint8_t { kFile, kDir, kSymlink, kOther };

// One entry of a workspace directory as a walk found it (lstat: a symlink is kSymlink).
struct WalkEntry {
  std::string name;
  EntryKind kind = EntryKind::kOther;
  bool valid_name = true;   // ValidatePathComponent accepts it (a sys.fs path can spell it)
  std::uint64_t nlink = 1;  // kFile: hard links to the inode
  std::string link_target;  // kSymlink: the link's text
  bool operator==(const WalkEntry&) const = default;
};
using DirFacts = std::vector<WalkEntry>;  // sorted by name

// The facts of the workspace directory `path` ("." is the root). nullptr: it is not there as a
// directory (it vanished, became something else, or cannot be read): it is then absent from the
// view (or masked, beneath a whole-bound directory). An error (e.g. "limit": the walk's bounds)
// fails the plan. The planner asks only for directories the grant reaches; the pointer must stay
// valid until the planner returns.
using DirFactsLookup = std::function<Result<const DirFacts*>(const std::string& path)>;

enum class ReadOpKind : char {
  kDir = 'd',       // the view's own empty directory (the root "." is the workspace directory)
  kBindDir = 'D',   // the workspace directory, bound read-only with everything beneath it
  kBindFile = 'f',  // one regular file of the workspace with a single link, bound read-only
  kBindLinkedFile = 'F',  // one regular file bound whatever its link count (the gateway allows
                          // hard-linked reads)
  kSymlink = 'l',         // a symlink of the view's own, with `target` as its text
  kMaskFile = 'm',        // beneath a kBindDir: an empty read-only file over a non-directory
  kMaskDir = 'M',         // beneath a kBindDir: an empty read-only directory over a directory
};

struct ReadOp {
  ReadOpKind kind = ReadOpKind::kDir;
  std::string path;    // "." or a normalized workspace path
  std::string target;  // kSymlink only
  bool operator==(const ReadOp&) const = default;
};

struct ReadPlanOptions {
  bool follow_symlinks = true;    // false: the gateway follows none (--no-symlinks)
  bool allow_hardlinked = false;  // the gateway reads hard-linked files (--allow-hardlinked-reads)
  std::size_t max_mounts = 4096;  // binds and masks: each is a mount in the runner
  std::size_t max_ops = 65536;
  std::size_t max_depth = 256;
};

// Parents before children; the first op is the root ("." as kDir or kBindDir). Errors: "limit"
// past a bound of `options` (the message names it and the fix), or the lookup's own.
Result<std::vector<ReadOp>> PlanWorkspaceReads(const std::vector<std::string>& globs,
                                               const DirFactsLookup& facts,
                                               const ReadPlanOptions& options = {});

// Number of ops that are mounts in the runner (binds and masks).
std::size_t CountReadPlanMounts(const std::vector<ReadOp>& ops);

// The receiving side's check of a plan it did not compute (exec broker, runner): every path valid,
// the root first, parents before children, every bind, link and directory inside a directory of
// the view's own, every mask beneath a whole-bound directory, nothing else beneath a bind or a
// link, no path twice, at most `max_ops` ops. "invalid" otherwise.
Status ValidateReadPlan(const std::vector<ReadOp>& ops, std::size_t max_ops = 65536);

// Wire form: two strings per op, the kind's letter followed by the path, then the target.
std::vector<std::string> EncodeReadPlan(const std::vector<ReadOp>& ops);
Result<std::vector<ReadOp>> DecodeReadPlan(const std::vector<std::string>& strings);

}  // namespace anvil
