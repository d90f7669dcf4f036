// `anvil exec`'s flags as one table: its parser (ParseExecArgs, src/cli/exec_command.cc), its
// --help, man page and shell completions (src/cli/command_docs.h) all come from it. Every other
// option is `anvil sandbox`'s: the table forwards it, with its value, to that parser.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/flag_set.h"
#include "policy/approval.h"

namespace anvil::cli {

// What `anvil exec`'s own flags say, before ParseExecArgs checks them against the sandbox's
// policy.
struct ExecFlagValues {
  std::optional<ApprovalMode> mode;
  std::vector<std::string> rules_files;
  std::optional<std::string> widen;
  std::string reason;
  bool json = false;
  int ask_fd = -1;
  std::optional<std::string> requester;  // sanitized, 1 to 64 characters
  std::optional<std::string> rules_workspace;
};

// The table, its handlers storing into `into`.
CommandSpec ExecFlags(ExecFlagValues& into);
// The same table for the documentation (its values are dropped).
CommandSpec ExecCommandSpec();

}  // namespace anvil::cli
