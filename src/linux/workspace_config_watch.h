// The workspace's Anvil.toml in a workspace-write run (policy/protected_names_plan.h has the what
// and why): what is there is recorded before the command starts, and after every process of the
// command is gone, whatever is there that is not that entry unchanged is moved aside to
// Anvil.toml.anvil-quarantine (a numbered name when that one is taken; nothing is ever replaced).
// The workspace directory is held open from the start, so a renamed or swapped workspace path
// cannot redirect the check, and the name is looked up in it alone (a symbolic link at the name
// is the entry itself, never followed), with the lookup Anvil itself reads the file through (a
// case-folding directory's other spellings included). Whether the run compares the ctime too,
// and the lock it holds on the workspace directory meanwhile (OFD read locks: they work on a
// directory opened for reading and do not meet the flock(2) locks of the placeholders), is
// protected_names_plan.h's "The workspace's Anvil.toml".
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/unique_fd.h"
#include "policy/protected_names_plan.h"

namespace anvil {

class WorkspaceConfigWatch {
 public:
  // Before the run: opens `workspace` (canonical, absolute) and records its Anvil.toml. Fails
  // (the sandbox must not start) when the workspace cannot be opened or the name not looked at.
  static Result<WorkspaceConfigWatch> Start(const std::string& workspace);

  WorkspaceConfigWatch(WorkspaceConfigWatch&&) = default;
  WorkspaceConfigWatch& operator=(WorkspaceConfigWatch&&) = default;

  // After the run (once every process of the command has ended): nullopt when the name holds
  // what it held before, or nothing; else what was moved aside, or why it could not be.
  // Releases the run's lock afterwards.
  std::optional<ConfigQuarantine> CheckAfterRun();

  // The entry at the name now (lstat beneath the held directory).
  static Result<ConfigEntry> Look(int dir, const std::string& name);

  // Whether `dir` (opened for reading) has a read lock held at any byte but `except` (F_OFD_GETLK
  // with a write lock on either side of it); true when that cannot be told.
  static bool OtherLockHeld(int dir, int64_t except);
  // Read-locks the byte `offset` of `dir` for as long as the open file lives (F_OFD_SETLK).
  static bool LockByte(int dir, int64_t offset);

  bool strict() const { return strict_; }

  // The Anvil.toml found at the start is not taken as the user's: another run over this
  // workspace, still going or killed, had not seen it (its command may have made it;
  // GitGuard::Distrusts). Whatever is there after the run is moved aside, saying `why`.
  void Distrust(std::string why) { distrusted_ = std::move(why); }

 private:
  WorkspaceConfigWatch() = default;

  UniqueFd dir_;   // the workspace, O_PATH
  UniqueFd lock_;  // the workspace again, read-only: holds the run's lock until its check
  std::string workspace_;
  ConfigEntry before_;
  bool strict_ = false;
  std::string distrusted_;  // why the entry found at the start is not the user's ("": it is)
};

// Moves the entry `name` of the directory `dir` (held open; `dir_path` names it in the line)
// aside to the first free ConfigQuarantineName, never replacing anything: fills q.moved_to, or
// q.failure when it could not. False when the name was gone by then (nothing to move).
bool MoveConfigAside(int dir, const std::string& dir_path, const std::string& name,
                     ConfigQuarantine& q);

// After the run: each of `moves` (NewProtectedNames, protected_names_plan.h) moved aside as
// above, its directory opened beneath its root (the owner's permissions given back for the
// move when the command took them). One entry for each that was still there.
std::vector<ConfigQuarantine> QuarantineProtectedNames(const std::vector<ProtectedNameMove>& moves);

}  // namespace anvil
