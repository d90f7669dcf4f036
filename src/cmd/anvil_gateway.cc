// anvil-gateway: the per-session policy enforcement point. Started by the trusted side only.
// Its main is GatewayMain; `anvil` links this file too (with ANVIL_GATEWAY_IN_PROCESS, no main
// of its own) to run the offline gateway in a forked child (session/gateway_process.h).
#include <iostream>
#include <string>
#include <vector>

#include "common/std_fds.h"
#include "gateway/gateway.h"
#include "gateway/gateway_flags.h"
#include "linux/helper_executable.h"

int anvil::gateway::GatewayMain(int argc, char** argv) {
  // Before anything opens a descriptor (common/std_fds.h).
  if (!anvil::EnsureStandardDescriptors()) return 125;
  anvil::gateway::GatewayOptions o;
  // Beside this program (libexec/anvil/, or the build tree), never through PATH.
  if (auto runner = anvil::FindHelper("anvil-exec-runner")) {
    o.exec_runner = runner->path;
  } else {
    o.exec_unavailable = runner.error().ToString();
  }
  anvil::CommandSpec spec = anvil::gateway::GatewayFlags(o);
#ifdef ANVIL_TEST_HOOKS
  spec.flags.push_back(
      anvil::Text("--unsafe-test-exec-fail-layer", "LAYER", "", [&o](const std::string& v) {
        o.exec_fail_layer_for_testing = v;
        return anvil::Ok();
      }).Hidden());
  spec.flags.push_back(
      anvil::Count(
          "--unsafe-test-inline-delay-ms", "MS", "", anvil::Between(0, 60000),
          [&o](uint64_t ms) { o.inline_answer_delay_ms_for_testing = static_cast<uint32_t>(ms); })
          .Hidden());
  spec.flags.push_back(
      anvil::Count(
          "--unsafe-test-io-wait-fail-after", "EVENTS", "", anvil::Between(1, 1000000),
          [&o](uint64_t n) { o.io_wait_fail_after_for_testing = static_cast<uint32_t>(n); })
          .Hidden());
  spec.flags.push_back(
      anvil::Count("--unsafe-test-rearm-delay-ms", "MS", "", anvil::Between(0, 60000),
                   [&o](uint64_t ms) { o.rearm_delay_ms_for_testing = static_cast<uint32_t>(ms); })
          .Hidden());
#endif
  auto parsed = anvil::ParseFlags(spec, std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed) {
    std::cerr << "anvil-gateway: " << parsed.error().ToString() << "\n";
    return 2;
  }
  if (parsed->help) {
    std::cout << anvil::RenderHelp(spec);
    return 0;
  }
  if (o.workspace.empty() || o.control_fd < 0) {
    std::cerr << "anvil-gateway: invalid: --workspace and --control-fd are required\n"
              << anvil::RenderHelp(spec);
    return 2;
  }
  if (o.exec_runner.empty() && !o.exec_unavailable.empty()) {
    std::cerr << "anvil-gateway: sys.exec unavailable: " << o.exec_unavailable << "\n";
  }
  return anvil::gateway::RunGateway(o);
}

#ifndef ANVIL_GATEWAY_IN_PROCESS
int main(int argc, char** argv) { return anvil::gateway::GatewayMain(argc, argv); }
#endif
