// T2, the benign side: what sys.net.fetch must do for a plugin with a grant -- real DNS, real
// TLS with Host/SNI/certificate checks, GET, HEAD, POST (with net.post), headers both ways, a
// binary body -- and that every decision is one audit line naming host, verdict and reason.
#include "t2_fetch_fixture.h"

namespace anvil::testing {
namespace t2_fetch_allowed_test {
namespace {

using T2Allowed = T2FetchTest;

TEST_F(T2Allowed, GetOfAGrantedHostWorksOverRealDnsAndTls) {
  StartNet({"api.anvil.test"});
  auto f = Fetch(Url("api.anvil.test", "/hello"));
  ASSERT_TRUE(f.ok) << f.code << ": " << f.message;
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(f.body, "hello from allowed");
  EXPECT_EQ(f.headers.value("content-type", ""), "text/plain");
  EXPECT_EQ(allowed_->Connections(), 1);
  EXPECT_EQ(forbidden_->Connections(), 0);
  EXPECT_GE(dns_->Queries("api.anvil.test", 1), 1);
  EXPECT_GE(dns_->Queries("api.anvil.test", 28), 1) << "AAAA must be asked too";
}

TEST_F(T2Allowed, HeadReturnsHeadersWithoutBody) {
  StartNet({"api.anvil.test"});
  auto f = Fetch(Url("api.anvil.test", "/bytes/4096"), "HEAD");
  ASSERT_TRUE(f.ok) << f.code << ": " << f.message;
  EXPECT_EQ(f.status, 200);
  EXPECT_EQ(f.body, "");
  EXPECT_EQ(f.headers.value("content-length", ""), "4096");
}

TEST_F(T2Allowed, PostNeedsNetPostAndThenSendsTheBody) {
  StartNet({"api.anvil.test"}, /*post=*/false);
  auto refused = Fetch(Url("api.anvil.test", "/echo"), "POST", "{}", "payload");
  EXPECT_FALSE(refused.ok);
  EXPECT_EQ(refused.code, "denied") << refused.message;
  EXPECT_EQ(allowed_->Connections(), 0);

  Grant with_post;
  with_post.net_hosts = {"api.anvil.test"};
  with_post.net_post = true;
  auto token = RegisterPlugin("t2.poster", with_post);
  auto poster = Client(token, "t2.poster");
  auto f = FetchWith(*poster, Url("api.anvil.test", "/echo"), "POST",
                     R"({"Content-Type": "application/json"})", R"({"n":1})");
  ASSERT_TRUE(f.ok) << f.code << ": " << f.message;
  EXPECT_EQ(f.body, R"({"n":1})");
  EXPECT_EQ(f.headers.value("x-method", ""), "POST");
}

TEST_F(T2Allowed, RequestHeadersAreSentAndResponseHeadersComeBackAsJson) {
  StartNet({"api.anvil.test"});
  auto f = Fetch(Url("api.anvil.test", "/headers"), "GET",
                 R"({"X-Api-Key": "k1", "Accept": "text/plain"})");
  ASSERT_TRUE(f.ok) << f.code << ": " << f.message;
  EXPECT_NE(f.body.find("X-Api-Key: k1\r\n"), std::string::npos) << f.body;
  EXPECT_NE(f.body.find("Host: api.anvil.test:" + std::to_string(port_)), std::string::npos);
  EXPECT_EQ(f.headers.value("x-multi", ""), "one, two");
}

TEST_F(T2Allowed, BinaryBodyArrivesByteForByte) {
  StartNet({"api.anvil.test"});
  auto f = Fetch(Url("api.anvil.test", "/binary"));
  ASSERT_TRUE(f.ok) << f.code << ": " << f.message;
  ASSERT_EQ(f.body.size(), 256u);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(static_cast<unsigned char>(f.body[i]), i);
}

TEST_F(T2Allowed, EveryDecisionIsOneAuditLineWithHostVerdictAndReason) {
  StartNet({"api.anvil.test"});
  ASSERT_TRUE(Fetch(Url("api.anvil.test", "/hello")).ok);
  EXPECT_FALSE(Fetch(Url("evil.anvil.test", "/hello")).ok);
  auto lines = FetchAudit();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0]["verdict"], "allow");
  EXPECT_NE(lines[0]["target"].get<std::string>().find("api.anvil.test"), std::string::npos);
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("host api.anvil.test via 127.0.0.2"),
            std::string::npos)
      << lines[0].dump();
  EXPECT_EQ(lines[1]["verdict"], "deny");
  EXPECT_NE(lines[1]["target"].get<std::string>().find("evil.anvil.test"), std::string::npos);
  EXPECT_NE(lines[1]["reason"].get<std::string>().find("not granted"), std::string::npos)
      << lines[1].dump();
}

}  // namespace
}  // namespace t2_fetch_allowed_test
}  // namespace anvil::testing
