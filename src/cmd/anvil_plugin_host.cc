// anvil-plugin-host: one plugin per locked-down process. Started by the trusted side only.
#include <iostream>
#include <string>
#include <vector>

#include "common/std_fds.h"
#include "host/host_flags.h"
#include "host/plugin_host.h"

int main(int argc, char** argv) {
  // Before anything opens a descriptor (common/std_fds.h).
  if (!anvil::EnsureStandardDescriptors()) return 125;
  anvil::host::HostOptions o;
  anvil::CommandSpec spec = anvil::host::HostFlags(o);
#ifdef ANVIL_TEST_HOOKS
  auto hook = [](std::string name, std::string& field) {
    return anvil::Text(std::move(name), "WHAT", "",
                       [&field](const std::string& v) {
                         field = v;
                         return anvil::Ok();
                       })
        .Hidden();
  };
  spec.flags.push_back(hook("--test-attack-after-lockdown", o.test_attack_after_lockdown));
  spec.flags.push_back(hook("--test-fail-layer", o.lockdown.fail_step_for_testing));
#endif
  auto parsed = anvil::ParseFlags(spec, std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed) {
    std::cerr << "anvil-plugin-host: " << parsed.error().ToString() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << anvil::RenderHelp(spec);
    return 0;
  }
  return anvil::host::RunPluginHost(o);
}
