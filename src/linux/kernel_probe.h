// What the running kernel offers each sandbox layer, for `anvil doctor` and for error messages.
#pragma once

#include <string>
#include <vector>

namespace anvil {

struct LayerProbe {
  std::string name;  // "landlock", "seccomp", "user-namespaces", ...
  bool available = false;
  bool required = true;  // untrusted plugins/commands cannot run without it
  std::string detail;    // what was found ("ABI 7"), or why it is missing
  std::string fix;       // what to do when missing
  std::string check;     // a shell command that shows the fact this probe looked at
};

struct KernelProbe {
  std::vector<LayerProbe> layers;
  int landlock_abi = 0;
  bool AllRequiredAvailable() const;
};

KernelProbe ProbeKernel();

}  // namespace anvil
