// A real anvil-gateway on a temp workspace, with this test process registered as the plugin
// host (its pid and uid), and helpers to talk to it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ipc/capability_token.h"
#include "ipc/gateway_client.h"
#include "policy/grant.h"
#include "sandbox_harness.h"
#include "session/gateway_process.h"

namespace anvil::testing {

class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Starts the gateway (extra flags go to anvil-gateway, or to `binary`, a helper's name).
  void StartGateway(const std::vector<std::string>& extra = {},
                    const std::string& binary = "anvil-gateway");
  // Registers a fresh token for `plugin` bound to `pid` (default: this process).
  ipc::CapabilityToken RegisterPlugin(const std::string& plugin, const Grant& grant, pid_t pid = 0);
  // A connected, hello'd client for `plugin` with `token`.
  std::unique_ptr<ipc::GatewayClient> Client(const ipc::CapabilityToken& token,
                                             const std::string& plugin);
  std::vector<nlohmann::json> AuditLines();
  // The started gateway; throws when there is none (StartGateway failed or was not called).
  session::GatewayProcess& Gateway();

  std::unique_ptr<TempDir> ws_;
  std::unique_ptr<session::GatewayProcess> gateway_;
  std::string workspace_;  // canonical
};

Grant ReadWriteGrant();

// Resident set size of a process in KiB (VmRSS), -1 when unknown.
long RssKib(pid_t pid);

}  // namespace anvil::testing
