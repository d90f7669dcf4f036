// `anvil rules check`: how the command rules (src/policy/command_rules.h) judge a command, and
// what each approval mode would do with it. Nothing is run.
#pragma once

#include <string>
#include <vector>

namespace anvil::cli {

// Exit 0 when the rules were read (whatever the decision), 2 on bad usage or a rules file that
// does not load.
int RunRulesCommand(const std::vector<std::string>& args);

}  // namespace anvil::cli
