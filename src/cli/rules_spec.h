// `anvil rules`'s flags as one table: `anvil rules check` parses with it
// (src/cli/rules_command.cc), and its --help, man page and shell completions come from it
// (src/cli/command_docs.h).
#pragma once

#include "common/flag_set.h"
#include "policy/command_rules.h"

namespace anvil::cli {

// What `anvil rules check`'s flags say: the rules files to read, and the output.
struct RulesFlagValues {
  RulesLocations where;  // user_files and workspace_dir from the flags
  bool json = false;
};

// The table, its handlers storing into `into`.
CommandSpec RulesFlags(RulesFlagValues& into);
// The same table for the documentation (its values are dropped).
CommandSpec RulesCommandSpec();

}  // namespace anvil::cli
