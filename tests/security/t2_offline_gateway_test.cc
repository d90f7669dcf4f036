// T2: anvil-gateway-offline, the gateway a session gets when none of its plugins may fetch
// (session/gateway_serves.h), has no network code at all: a registration that grants net.hosts
// anyway (a trusted side that picked the wrong gateway) gets every net.fetch refused, not
// performed; and the executable loads no network library. Its benign neighbour: the same
// gateway serves sys.fs as anvil-gateway does.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace t2_offline_gateway_test {
namespace {

class T2OfflineGateway : public GatewayTest {};

TEST_F(T2OfflineGateway, FetchIsRefusedEvenWhenTheGrantAllowsIt) {
  StartGateway({}, "anvil-gateway-offline");
  Grant grant;
  grant.fs_read = {"**"};
  grant.net_hosts = {"example.com"};
  auto token = RegisterPlugin("p.net", grant);
  auto client = Client(token, "p.net");
  auto r = client->Call("net.fetch", {"https://example.com/", "GET", "{}", ""});
  ASSERT_TRUE(r) << r.error().ToString();
  EXPECT_FALSE(r->ok) << "an offline gateway performed a fetch";
  EXPECT_EQ(r->ToError().code, "denied");
  EXPECT_NE(r->ToError().message.find("not available"), std::string::npos) << r->ToError().message;
  ASSERT_TRUE(gateway_->Control({{"op", "status"}}));
  bool audited = false;
  for (const auto& line : AuditLines()) {
    if (line.value("op", "") != "net.fetch") continue;
    EXPECT_EQ(line.value("verdict", ""), "deny") << line.dump();
    audited = true;
  }
  EXPECT_TRUE(audited) << "the refused fetch has no audit line";
}

TEST_F(T2OfflineGateway, LinksNoNetworkLibrary) {
  // No libcurl, c-ares or TLS library to load (or to be swapped).
  std::ifstream in(BinDir() + "/anvil-gateway-offline", std::ios::binary);
  ASSERT_TRUE(in);
  std::string bytes;
  in.seekg(0, std::ios::end);
  bytes.resize(static_cast<size_t>(in.tellg()));
  in.seekg(0);
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(in);
  for (const char* library : {"libcurl.so", "libcares.so", "libssl.so", "libcrypto.so"}) {
    EXPECT_EQ(bytes.find(library), std::string::npos) << "anvil-gateway-offline names " << library;
  }
}

TEST_F(T2OfflineGateway, ServesFileReadsLikeTheFullGateway) {
  WriteFile(*ws_ / "a.txt", "content");
  StartGateway({}, "anvil-gateway-offline");
  auto token = RegisterPlugin("p.read", ReadWriteGrant());
  auto r = Client(token, "p.read")->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r && r->ok) << (r ? r->ToError().ToString() : r.error().ToString());
  EXPECT_EQ(r->fields[0], "content");
}

}  // namespace
}  // namespace t2_offline_gateway_test
}  // namespace anvil::testing
