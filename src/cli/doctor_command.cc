#include "cli/doctor_command.h"

#include <iostream>
#include <nlohmann/json.hpp>

#include "linux/kernel_probe.h"
#include "linux/seccomp.h"

namespace anvil::cli {

int RunDoctorCommand(const std::vector<std::string>& args) {
  bool json = false;
  for (const auto& a : args) {
    if (a == "--json") {
      json = true;
    } else if (a == "--help" || a == "-h") {
      std::cout
          << "usage: anvil doctor [--json]\n\nProbe the kernel for every sandbox layer "
             "Anvil uses. Exit 0 when untrusted plugins and commands can run with every "
             "required layer, 1 when they cannot (the output says which layer and how to "
             "fix it).\n\n"
             "  --json   print one JSON object: ok, landlock_abi, and per layer its name,\n"
             "           whether it is available and required, what was found, the fix and\n"
             "           a shell command to check it by hand\n\n"
             "Examples:\n"
             "  anvil doctor                       # a line per layer: ok, degraded, MISSING\n"
             "  anvil doctor --json | jq .layers   # for scripts\n";
      return 0;
    } else {
      std::cerr << "anvil doctor: invalid: unknown option " << a << "\n";
      return 2;
    }
  }
  KernelProbe probe = ProbeKernel();
  bool ok = probe.AllRequiredAvailable();
  if (json) {
    nlohmann::json out;
    out["ok"] = ok;
    out["landlock_abi"] = probe.landlock_abi;
    for (const auto& l : probe.layers) {
      out["layers"].push_back({{"name", l.name},
                               {"available", l.available},
                               {"required", l.required},
                               {"detail", l.detail},
                               {"fix", l.fix},
                               {"check", l.check}});
    }
    std::cout << out.dump(2) << "\n";
    return ok ? 0 : 1;
  }
  for (const auto& l : probe.layers) {
    const char* mark = l.available ? "ok      " : (l.required ? "MISSING " : "degraded");
    std::cout << mark << "  " << l.name << ": " << l.detail << "\n";
    if (!l.available && !l.fix.empty()) std::cout << "          fix: " << l.fix << "\n";
    if (!l.available && !l.check.empty()) std::cout << "          check: " << l.check << "\n";
  }
  std::cout << "\n"
            << (ok ? "Untrusted plugins and commands can run with every required layer.\n"
                   : "Untrusted plugins and commands will NOT run: a required layer is missing "
                     "(fail closed).\n");
  return ok ? 0 : 1;
}

}  // namespace anvil::cli
