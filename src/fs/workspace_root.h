// The workspace file layer of the policy gateway (threat model T1): every sys.fs operation of a
// session goes through one WorkspaceRoot, which holds one O_PATH fd of the workspace directory
// and resolves every plugin path with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS
// [| RESOLVE_NO_SYMLINKS]) relative to it. Paths are validated (workspace_path.h) before any
// syscall; an opened object is inspected through its fd and used through that same fd, never
// re-resolved by name.
//
// Grants are not checked here (see path_glob.h); the gateway checks GrantAllows on the
// normalized path and then calls these operations. Read and List can additionally check the
// path of the object actually opened (ResolvedPathCheck) so that an in-workspace symlink cannot
// carry a narrow grant ("docs/**") to a file outside it ("docs/l -> ../.env"). Mutations never
// follow symlinks at all (see Write).
//
// Thread-safe: all operations are const and share only the root fd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "fs/git_dir_guard.h"

namespace anvil {

class PendingWrites;  // fs/pending_writes.h

struct WorkspaceOptions {
  // Adds RESOLVE_NO_SYMLINKS to every resolution: no symlink is followed anywhere, even one
  // that stays inside the workspace.
  bool no_symlinks = false;
  // Regular files with st_nlink > 1 may share their inode with a file outside the workspace;
  // reading them is refused unless the workspace owner allows it. Writes always refuse them.
  bool allow_hardlinked_reads = false;
  std::uint64_t max_read_bytes = 16u << 20;
  std::uint64_t max_write_bytes = 16u << 20;
  std::size_t max_list_entries = 10000;
  // Where Write records the temporary names it creates, for the supervising process to sweep if
  // this process dies mid-write (pending_writes.h). Not owned; outlives the root. Null: none.
  PendingWrites* pending_writes = nullptr;
};

enum class FileType { kFile, kDir, kSymlink, kOther };
std::string_view ToString(FileType type);  // "file", "dir", "symlink", "other"

struct DirEntry {
  std::string name;
  FileType type = FileType::kOther;
};

struct DirListing {
  std::vector<DirEntry> entries;  // sorted by name (byte order)
  // Entries whose names are not valid workspace path components (bad UTF-8, control
  // characters): not returned — they could not be named back, and would corrupt a JSON reply or
  // a terminal — but counted, so a listing never silently looks complete.
  std::size_t omitted = 0;
};

struct FileInfo {
  FileType type = FileType::kOther;
  std::uint64_t size = 0;
  std::int64_t mtime_sec = 0;
  std::int64_t mtime_nsec = 0;
};

// Called with the normalized workspace-relative path of the object actually opened, after any
// in-workspace symlinks were followed; returning false refuses the operation ("denied"). The
// gateway passes its grant check here. Not called when no symlink was on the path (the requested
// path is then the resolved one). Finding the resolved name needs /proc; without it a path that
// goes through a symlink is refused.
using ResolvedPathCheck = std::function<bool(std::string_view resolved_path)>;

// What WorkspaceRoot::Write did, for the caller's accounting (the gateway's write budget).
struct WriteOutcome {
  // The new data is at the name: an error after it (a failed fsync of the directory) does not
  // undo that.
  bool placed = false;
  // The name did not exist when the data took it, as the rename that put it there found
  // (DecidePlacement), not as a look before the write found.
  bool created = false;
};

// The step after renameat2(RENAME_NOREPLACE) of the write's temporary file to its name returned
// `noreplace_errno` (0: it made the name). EEXIST: a plain rename over what is there (a directory
// there refuses it, EISDIR), made or not as RenameOverMadeTheName finds. EINVAL or ENOSYS (the
// file system or kernel has no RENAME_NOREPLACE): the plain rename, made or not as the look
// before the write (`existed`) saw it. Anything else: the write fails with that errno, nothing
// placed.
struct Placement {
  bool done = false;            // the data is at the name
  bool rename_over = false;     // next: renameat, replacing what is there
  bool watch_replaced = false;  // hold what is at the name (O_PATH) across that rename
  bool created = false;         // once placed, unless watched: the write made the name
};
Placement DecidePlacement(int noreplace_errno, bool existed);

// Whether a rename over the name made it, from what was at the name just before it (`found`: it
// could be opened, O_PATH) and that entry's link counts before and after it. Found and one link
// fewer: the rename replaced it, a rewrite (a file with other hard links keeps those). Nothing
// found, or as many links as before (moved away, to another name, between RENAME_NOREPLACE and
// the rename): the name was made. A rename can also find the name
// removed in between, and count the name it makes as a rewrite; that removal took away an entry
// counted when it was made, so the entries there never outnumber the count.
bool RenameOverMadeTheName(bool found, std::uint64_t links_before, std::uint64_t links_after);

class WorkspaceRoot {
 public:
  // Opens the workspace once per session. A root that is itself a symlink is resolved here and
  // pinned: later swaps of that link do not move the session. Fails closed ("sandbox") when the
  // kernel has no openat2.
  static Result<WorkspaceRoot> Open(const std::string& path, const WorkspaceOptions& options = {});

  WorkspaceRoot(WorkspaceRoot&&) noexcept = default;
  WorkspaceRoot& operator=(WorkspaceRoot&&) noexcept = default;
  WorkspaceRoot(const WorkspaceRoot&) = delete;
  WorkspaceRoot& operator=(const WorkspaceRoot&) = delete;

  // Whole contents of a regular file. "limit" over max_read_bytes, "denied" for a hard-linked
  // file (unless allowed), "invalid" for a directory or special file.
  Result<std::string> Read(std::string_view path, const ResolvedPathCheck& check = {}) const;

  // Atomically replaces (or creates) a regular file: the data goes to an unnamed temporary file
  // in the same directory (O_TMPFILE; a uniquely named O_EXCL file where unsupported), is
  // fsynced, and is renamed to the final name (RENAME_NOREPLACE first, then over what is there).
  // Readers see the old or the new file, never a torn one, even if the writer is killed. A
  // symlink at the final name is replaced, never followed. The parent is resolved with
  // RESOLVE_NO_SYMLINKS whatever the options say: a write through "notes/l -> ../.git/hooks" would
  // otherwise escape both the grant and the protected names. `outcome`, when given, says what was
  // done, also when an error is returned.
  Status Write(std::string_view path, std::string_view data, WriteOutcome* outcome = nullptr) const;

  // Entries of a directory ("." is the root), sorted, at most max_list_entries ("limit" beyond).
  Result<DirListing> List(std::string_view dir, const ResolvedPathCheck& check = {}) const;

  // lstat semantics on the final component: a symlink is reported as kSymlink ("." is the root).
  Result<FileInfo> Stat(std::string_view path, const ResolvedPathCheck& check = {}) const;

  // Where `path` ("." is the root) leads, following symlinks under the same rules as Read (beneath
  // the root; none at all with no_symlinks): the normalized name of the object opened, its type
  // and link count. For sys.exec's path operands, which the tool opens itself.
  struct Resolved {
    std::string path;  // == the input when no symlink was on the way
    FileType type = FileType::kOther;
    std::uint64_t nlink = 1;
  };
  Result<Resolved> Resolve(std::string_view path) const;

  // Creates one directory (parents must exist). Parent resolved without symlinks, as for Write.
  Status Mkdir(std::string_view path) const;

  // Creates directory `path` and each missing directory above it, top down; an existing
  // directory is fine. Each level is resolved without symlinks, as for Write: a symlink on the
  // way is refused ("denied"), never followed, and a file on the way is "invalid".
  // `may_create` is asked about each directory before it is made (the gateway's grant check);
  // its error stops the walk, leaving what was made before it.
  Status MakeDirs(std::string_view path,
                  const std::function<Status(std::string_view dir)>& may_create) const;

  // Removes a file, a symlink (not its target) or an empty directory.
  Status Remove(std::string_view path) const;

  // Removes directory `path` with everything beneath it (a file or symlink at `path` is removed
  // as Remove does). A walk by descriptors that never follows a symlink; an entry whose name
  // `refuse`s stops it ("denied"), as do more than `max_entries` entries or `max_depth` levels
  // ("limit"), and so does a directory on another mount than `path`'s parent ("denied",
  // checked before anything inside it is touched). Meant to run after FindBeneath found nothing
  // to refuse, so that a refusal normally removes nothing. Implemented in workspace_walk.cc.
  Status RemoveTree(std::string_view path, const std::function<bool(std::string_view name)>& refuse,
                    std::size_t max_entries, std::size_t max_depth) const;

  // Renames within the workspace. Without `replace`, an existing destination is an error
  // (RENAME_NOREPLACE, atomic); with it, a destination file is replaced. Neither name's final
  // symlink is followed.
  Status Rename(std::string_view from, std::string_view to, bool replace = false) const;

  // Looks through the tree beneath directory `dir` (its entries, their entries, ...; never
  // following a symlink, never `dir`'s own name) for an entry that `match`es (its raw name, and
  // its path relative to `dir`), and returns that entry's path relative to `dir`, or nullopt
  // when there is none. A `dir` that is not a directory (a file, a symlink) holds nothing:
  // nullopt. Meant for guards, so it fails closed: "limit" past `max_entries` entries in all or
  // `max_depth` levels, an entry that cannot be opened or read is an error, never skipped, and
  // `dir` or a directory beneath it on another mount (a mount point) is "denied": what is on
  // another mount is not the workspace's to move or remove. Implemented in workspace_walk.cc.
  Result<std::optional<std::string>> FindBeneath(
      std::string_view dir,
      const std::function<bool(std::string_view name, std::string_view path)>& match,
      std::size_t max_entries, std::size_t max_depth) const;

  // For the git-dir guard (git_dir_guard.h; implemented in git_dir_guard.cc). The directories
  // from the root down to normalized directory `dir` ("." for the root alone), each probed for
  // git's names without following a symlink, as far as they exist: `complete` is false when a
  // component is missing (or is not a directory), and the probes stop before it.
  struct GitDirWay {
    std::vector<GitDirProbe> dirs;
    bool complete = true;
  };
  Result<GitDirWay> ProbeGitDirs(std::string_view dir) const;
  // The kind of the entry at `path` (not followed); kMissing when there is none.
  Result<GitDirEntryKind> GitEntryKind(std::string_view path) const;
  // The git-dir guard's rule for one op on normalized path `target` (the gateway's fs ops,
  // `anvil serve`'s buffer edits): "ok", or "denied" when a directory on the way already is a
  // git dir, or when the entry `made` (kMissing: none) would complete that shape in its
  // directory. A path through a protected name (.git, ...) is the protected-name rule's: "ok".
  Status CheckGitDirs(std::string_view op, std::string_view target, GitDirEntryKind made) const;
  // Looks through directory `dir` and every directory beneath it (never through a symlink) for
  // one git would take for a git dir; returns its path relative to `dir` ("" for `dir` itself)
  // or nullopt. Bounded and failing closed as FindBeneath is.
  Result<std::optional<std::string>> FindGitDirBeneath(std::string_view dir,
                                                       std::size_t max_entries,
                                                       std::size_t max_depth) const;

  // The root's absolute path as resolved at Open (for messages and logs only; never re-resolved).
  const std::string& path() const { return path_; }
  const WorkspaceOptions& options() const { return options_; }
  int fd() const { return root_.Get(); }

 private:
  WorkspaceRoot(UniqueFd root, std::string path, const WorkspaceOptions& options)
      : root_(std::move(root)), path_(std::move(path)), options_(options) {}

  Result<UniqueFd> OpenBeneath(std::string_view normalized, std::uint64_t flags,
                               std::uint64_t resolve) const;
  Result<UniqueFd> OpenChecked(std::string_view normalized, std::uint64_t flags,
                               const ResolvedPathCheck& check) const;
  Result<UniqueFd> OpenParentForMutation(std::string_view normalized) const;
  Result<std::string> ResolvedPathOf(int fd) const;
  std::uint64_t BaseResolve() const;

  UniqueFd root_;
  std::string path_;
  WorkspaceOptions options_;
};

}  // namespace anvil
