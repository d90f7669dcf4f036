// anvil-plugin-host: one plugin per locked-down process. Started by the trusted side only.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "common/std_fds.h"
#include "host/plugin_host.h"

namespace {

constexpr char kUsage[] = R"(usage: anvil-plugin-host --plugin-dir DIR --runtime lua|js --entry FILE
                         --plugin-id ID --workspace DIR
                         --gateway-fd N --session-fd N --token-fd N [limits]

Runs one plugin. Started by `anvil run` / `anvil serve`; not meant to be run by hand.
  --memory-limit BYTES   VM heap budget (default 64 MiB)
  --instructions N       instruction budget per load and per command
  --deadline-ms MS       wall-clock budget per command (the trusted side also kills at it)
  --address-space BYTES  RLIMIT_AS of the host (default 1 GiB)
)";

bool Number(const std::string* v, uint64_t& out) {
  if (!v || v->empty() || (*v)[0] == '-') return false;
  char* end = nullptr;
  out = std::strtoull(v->c_str(), &end, 10);
  return *end == '\0';
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything opens a descriptor (common/std_fds.h).
  if (!anvil::EnsureStandardDescriptors()) return 125;
  anvil::host::HostOptions o;
  std::vector<std::string> args(argv + 1, argv + argc);
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const std::string* v = i + 1 < args.size() ? &args[i + 1] : nullptr;
    uint64_t n = 0;
    bool ok = true;
    auto take_string = [&](std::string& field) {
      if (!v) return false;
      field = *v;
      ++i;
      return true;
    };
    auto take_number = [&](auto& field) {
      if (!Number(v, n)) return false;
      field = static_cast<std::remove_reference_t<decltype(field)>>(n);
      ++i;
      return true;
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage;
      return 0;
    } else if (a == "--plugin-dir") {
      ok = take_string(o.plugin_dir);
    } else if (a == "--runtime") {
      ok = take_string(o.runtime);
    } else if (a == "--entry") {
      ok = take_string(o.entry);
    } else if (a == "--plugin-id") {
      ok = take_string(o.plugin_id);
    } else if (a == "--workspace") {
      ok = take_string(o.workspace);
    } else if (a == "--gateway-fd") {
      ok = take_number(o.gateway_fd);
    } else if (a == "--session-fd") {
      ok = take_number(o.session_fd);
    } else if (a == "--token-fd") {
      ok = take_number(o.token_fd);
    } else if (a == "--memory-limit") {
      ok = take_number(o.limits.memory_bytes);
    } else if (a == "--instructions") {
      ok = take_number(o.limits.instructions);
    } else if (a == "--deadline-ms") {
      uint64_t ms = 0;
      ok = take_number(ms);
      o.limits.deadline = std::chrono::milliseconds(ms);
    } else if (a == "--address-space") {
      ok = take_number(o.lockdown.address_space);
#ifdef ANVIL_TEST_HOOKS
    } else if (a == "--test-attack-after-lockdown") {
      ok = take_string(o.test_attack_after_lockdown);
    } else if (a == "--test-fail-layer") {
      ok = take_string(o.lockdown.fail_step_for_testing);
#endif
    } else {
      std::cerr << "anvil-plugin-host: invalid: unknown option " << a << "\n";
      return 2;
    }
    if (!ok) {
      std::cerr << "anvil-plugin-host: invalid: " << a << " needs a valid value\n";
      return 2;
    }
  }
  return anvil::host::RunPluginHost(o);
}
