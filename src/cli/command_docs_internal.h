// What command_docs.cc and command_completions.cc share: the text helpers both renderers use.
// Private to those two files.
#pragma once

#include <string>
#include <vector>

#include "common/flag_set.h"

namespace anvil::cli::docs_internal {

// The flags shown anywhere (hidden ones left out), in table order.
std::vector<const Flag*> VisibleFlags(const std::vector<Flag>& flags);

// The help text on one line (completions and descriptions in lists).
std::string OneLine(const std::string& help);

}  // namespace anvil::cli::docs_internal
