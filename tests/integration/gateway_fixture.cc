#include "gateway_fixture.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace anvil::testing {

Grant ReadWriteGrant() {
  Grant g;
  g.fs_read = {"**"};
  g.fs_write = {"notes/**", "out.txt"};
  return g;
}

long RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

void GatewayTest::SetUp() {
  ws_ = std::make_unique<TempDir>("anvil-gw");
  char buf[PATH_MAX];
  ASSERT_NE(realpath(ws_->path().c_str(), buf), nullptr);
  workspace_ = buf;
}

void GatewayTest::TearDown() {
  if (gateway_) {
    // A longer grace than the default: on a loaded machine a clean exit can take a while, and
    // the test checks that it is clean.
    auto status = gateway_->Stop(10000);
    EXPECT_TRUE(status.has_value());
    if (status) {
      EXPECT_EQ(*status, 0) << "gateway exit status";
    }
  }
  // The runtime directory (the audit log stays in it after the gateway stops) is the test's.
  std::error_code ignored;
  std::filesystem::remove_all(ws_->path() + "-run", ignored);
}

void GatewayTest::StartGateway(const std::vector<std::string>& extra, const std::string& binary) {
  session::GatewayConfig config;
  config.binary = BinDir() + "/" + binary;
  config.workspace = workspace_;
  config.extra_args = {"--runtime-dir", ws_->path() + "-run"};
  config.extra_args.insert(config.extra_args.end(), extra.begin(), extra.end());
  auto g = session::GatewayProcess::Start(config);
  // Thrown, not ASSERTed: an ASSERT returns from this helper only, and the test would go on to
  // use the gateway it does not have. gtest reports the exception as the test's failure.
  if (!g) throw std::runtime_error("the gateway did not start: " + g.error().ToString());
  gateway_ = std::move(*g);
}

session::GatewayProcess& GatewayTest::Gateway() {
  if (!gateway_) throw std::runtime_error("no gateway: the test did not start one");
  return *gateway_;
}

ipc::CapabilityToken GatewayTest::RegisterPlugin(const std::string& plugin, const Grant& grant,
                                                 pid_t pid) {
  auto token = ipc::CapabilityToken::Generate();
  if (!token) throw std::runtime_error("no capability token: " + token.error().ToString());
  auto s = Gateway().Register(*token, plugin, pid ? pid : getpid(), geteuid(), grant);
  EXPECT_TRUE(s) << s.error().ToString();
  return *token;
}

std::unique_ptr<ipc::GatewayClient> GatewayTest::Client(const ipc::CapabilityToken& token,
                                                        const std::string& plugin) {
  auto fd = Gateway().Connect();
  if (!fd) throw std::runtime_error("no connection to the gateway: " + fd.error().ToString());
  auto client = std::make_unique<ipc::GatewayClient>(std::move(*fd), token.bytes());
  auto hello = client->Hello(plugin, workspace_);
  EXPECT_TRUE(hello) << hello.error().ToString();
  return client;
}

std::vector<nlohmann::json> GatewayTest::AuditLines() {
  std::vector<nlohmann::json> lines;
  std::ifstream in(gateway_->audit_log());
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace anvil::testing
