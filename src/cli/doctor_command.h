#pragma once

#include <string>
#include <vector>

#include "common/flag_set.h"

namespace anvil::cli {

// `anvil doctor [--json]`: exit 0 when every required layer is available, 1 otherwise.
int RunDoctorCommand(const std::vector<std::string>& args);
CommandSpec DoctorCommandSpec();

}  // namespace anvil::cli
