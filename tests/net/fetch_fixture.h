// In-process fixture for the fetcher and resolver unit tests: a test CA, HTTPS servers on
// 127.0.0.2 (allowed through an --unsafe-test-allow-address-style exemption) and 127.0.0.1
// (never allowed) on the same port, and a ConnectPolicy that knows no local addresses.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "net/curl_url_check.h"
#include "net/fetcher.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/fetch_plan.h"
#include "netpolicy/resolver.h"
#include "test_https_server.h"
#include "test_pki.h"

namespace anvil::testing {

inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FetchFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = TestPki::Shared();
    ASSERT_TRUE(pki_);
    TestLeaf leaf = pki_->Leaf("api");
    wrong_leaf_ = pki_->Leaf("wrong");
    // The same port on both loopback addresses, so only the address tells them apart.
    for (int attempt = 0; attempt < 20 && !forbidden_; ++attempt) {
      allowed_ = TestHttpsServer::Start("127.0.0.2", 0, leaf, "allowed");
      ASSERT_TRUE(allowed_);
      forbidden_ = TestHttpsServer::Start("127.0.0.1", allowed_->port(), leaf, "forbidden");
    }
    ASSERT_TRUE(forbidden_);
    port_ = allowed_->port();
    UnsafeTestOptions unsafe;
    unsafe.allow_addresses.push_back({IpAddress::V4(127, 0, 0, 2), port_});
    policy_ = std::make_unique<ConnectPolicy>(std::vector<IpAddress>{}, unsafe);
    resolver_.AddAddress("api.anvil.test", IpAddress::V4(127, 0, 0, 2));
    resolver_.AddAddress("other.anvil.test", IpAddress::V4(127, 0, 0, 2));
    ca_pem_ = ReadWholeFile(pki_->ca_path());
  }

  std::string Url(const std::string& host, const std::string& path) const {
    return "https://" + host + ":" + std::to_string(port_) + path;
  }

  Result<FetchPlan> Plan(const std::string& path, const std::string& method = "GET",
                         const std::string& host = "api.anvil.test", bool post = false) {
    NetGrant grant;
    grant.hosts = *HostAllowlist::Create({"api.anvil.test", "other.anvil.test"});
    grant.post = post;
    return PlanFetch(Url(host, path), method, grant, resolver_, *policy_);
  }

  Result<FetchResponse> Get(const std::string& path, FetchLimits limits = {}) {
    auto plan = Plan(path);
    if (!plan) return tl::unexpected(plan.error());
    Fetcher fetcher(limits, ca_pem_);
    return fetcher.Fetch(*plan, {}, "", *policy_);
  }

  TestPki* pki_ = nullptr;
  TestLeaf wrong_leaf_;
  std::unique_ptr<TestHttpsServer> allowed_, forbidden_;
  std::uint16_t port_ = 0;
  std::unique_ptr<ConnectPolicy> policy_;
  StaticResolver resolver_;
  std::string ca_pem_;
};

}  // namespace anvil::testing
