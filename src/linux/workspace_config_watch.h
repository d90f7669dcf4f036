// The workspace's Anvil.toml in a workspace-write run (policy/protected_names_plan.h has the what
// and why): what is there is recorded before the command starts, and after every process of the
// command is gone, whatever is there that is not that entry unchanged is moved aside to
// Anvil.toml.anvil-quarantine (a numbered name when that one is taken; nothing is ever replaced).
// The workspace directory is held open from the start, so a renamed or swapped workspace path
// cannot redirect the check, and the name is looked up in it alone (a symbolic link at the name
// is the entry itself, never followed), with the lookup Anvil itself reads the file through (a
// case-folding directory's other spellings included).
#pragma once

#include <optional>
#include <string>

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
  std::optional<ConfigQuarantine> CheckAfterRun() const;

  // The entry at the name now (lstat beneath the held directory).
  static Result<ConfigEntry> Look(int dir, const std::string& name);

 private:
  WorkspaceConfigWatch() = default;

  UniqueFd dir_;  // the workspace, O_PATH
  std::string workspace_;
  ConfigEntry before_;
};

}  // namespace anvil
