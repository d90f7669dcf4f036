// T2 attack catalogue: hostile responses from a granted server. A redirect is returned, never
// followed; a gzip bomb, an oversized body, oversized headers and a slow-loris server each hit
// their cap; a plugin cannot hold more gateway fetches than its share. After each, the gateway
// keeps serving the benign request next to it.
#include <chrono>
#include <thread>

#include "t2_fetch_fixture.h"

namespace anvil::testing {
namespace t2_fetch_responses_test {
namespace {

using T2Responses = T2FetchTest;
using Clock = std::chrono::steady_clock;

TEST_F(T2Responses, RedirectIsReturnedAsIsAndNotFollowed) {
  StartNet({"api.anvil.test"});
  auto f = Fetch(Url("api.anvil.test", "/redirect"));
  ASSERT_TRUE(f.ok) << f.code << ": " << f.message;
  EXPECT_EQ(f.status, 302);
  EXPECT_EQ(f.headers.value("location", ""),
            "https://api.anvil.test:" + std::to_string(port_) + "/hello");
  EXPECT_EQ(f.body, "moved");
  const auto lines = allowed_->RequestLines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "GET /redirect HTTP/1.1");
  ExpectGrantedUrlWorks();
}

TEST_F(T2Responses, GzipBombStopsAtTheDecompressedBodyCap) {
  StartNet({"api.anvil.test"}, false, {"--net-max-body-bytes", "1048576"});
  auto f = Fetch(Url("api.anvil.test", "/gzip-bomb"));  // ~64 KiB on the wire, 64 MiB inflated
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.code, "limit") << f.message;
  EXPECT_NE(f.message.find("1048576"), std::string::npos) << f.message;
  ExpectGrantedUrlWorks();
}

TEST_F(T2Responses, OversizedBodyStopsAtTheCapWithOrWithoutContentLength) {
  StartNet({"api.anvil.test"}, false, {"--net-max-body-bytes", "100000"});
  EXPECT_EQ(Fetch(Url("api.anvil.test", "/bytes/100001")).code, "limit");
  EXPECT_EQ(Fetch(Url("api.anvil.test", "/stream/300000")).code, "limit");
  auto head = Fetch(Url("api.anvil.test", "/bytes/100001"), "HEAD");  // no body: no cap
  EXPECT_TRUE(head.ok) << head.code << ": " << head.message;
  auto at_cap = Fetch(Url("api.anvil.test", "/bytes/100000"));
  EXPECT_TRUE(at_cap.ok) << at_cap.code << ": " << at_cap.message;
  EXPECT_EQ(at_cap.body.size(), 100000u);
}

TEST_F(T2Responses, OversizedHeadersAreRefused) {
  StartNet({"api.anvil.test"});  // default cap 64 KiB; the server sends ~256 KiB of headers
  auto f = Fetch(Url("api.anvil.test", "/big-headers"));
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.code, "limit") << f.message;
  EXPECT_NE(f.message.find("headers"), std::string::npos) << f.message;
  ExpectGrantedUrlWorks();
}

TEST_F(T2Responses, SlowLorisHitsTheTotalTimeCap) {
  StartNet({"api.anvil.test"}, false, {"--net-timeout-ms", "1500"});
  const auto start = Clock::now();
  auto f = Fetch(Url("api.anvil.test", "/slow"));
  const auto took = Clock::now() - start;
  EXPECT_FALSE(f.ok);
  EXPECT_EQ(f.code, "timeout") << f.message;
  EXPECT_LT(took, std::chrono::seconds(10)) << "the cap did not bound the fetch";
  ExpectGrantedUrlWorks();
}

TEST_F(T2Responses, SlowLorisHitsTheLowSpeedFloorBeforeTheTotalCap) {
  StartNet({"api.anvil.test"}, false, {"--net-low-speed-time", "1"});  // total cap stays 30 s
  const auto start = Clock::now();
  auto f = Fetch(Url("api.anvil.test", "/slow"));
  EXPECT_EQ(f.code, "timeout") << f.message;
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
}

TEST_F(T2Responses, ConcurrentFetchesPerPluginAreCappedWithBusy) {
  StartNet({"api.anvil.test"}, false, {"--workers", "4", "--net-max-fetches-per-plugin", "1"});
  auto slow = client_->Send("net.fetch", {Url("api.anvil.test", "/sleep/1500"), "GET", "{}", ""});
  ASSERT_TRUE(slow);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the first one is in flight
  auto second = Fetch(Url("api.anvil.test", "/hello"));
  EXPECT_FALSE(second.ok);
  EXPECT_EQ(second.code, "busy") << second.message;
  auto first = client_->Receive();
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->ok) << first->ErrorText();
  ExpectGrantedUrlWorks();  // the slot was given back
}

TEST_F(T2Responses, ConcurrentFetchesPerSessionAreCappedWithBusy) {
  StartNet({"api.anvil.test"}, false, {"--workers", "4", "--net-max-fetches", "1"});
  Grant grant;
  grant.net_hosts = {"api.anvil.test"};
  auto other_token = RegisterPlugin("t2.other", grant);
  auto other = Client(other_token, "t2.other");
  auto slow = client_->Send("net.fetch", {Url("api.anvil.test", "/sleep/1500"), "GET", "{}", ""});
  ASSERT_TRUE(slow);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto f = FetchWith(*other, Url("api.anvil.test", "/hello"));
  EXPECT_EQ(f.code, "busy") << f.message;
  ASSERT_TRUE(client_->Receive());
  auto after = FetchWith(*other, Url("api.anvil.test", "/hello"));
  EXPECT_TRUE(after.ok) << after.code << ": " << after.message;
}

TEST_F(T2Responses, SlowFetchesNeverHoldTheLastGatewayWorker) {
  StartNet({"api.anvil.test"});  // default: two workers, so one fetch at a time per session
  ASSERT_TRUE(client_->Send("net.fetch", {Url("api.anvil.test", "/sleep/1500"), "GET", "{}", ""}));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // While the slow fetch holds one worker, the other still serves this plugin...
  auto ping_id = client_->Send("ping", {});
  ASSERT_TRUE(ping_id);
  auto ping = client_->Receive();
  ASSERT_TRUE(ping);
  EXPECT_TRUE(ping->ok) << ping->ErrorText();
  EXPECT_EQ(ping->id, *ping_id) << "ping waited for the slow fetch";
  // ...and a second fetch is refused rather than taking it.
  ASSERT_TRUE(client_->Send("net.fetch", {Url("api.anvil.test", "/hello"), "GET", "{}", ""}));
  auto busy = client_->Receive();
  ASSERT_TRUE(busy);
  EXPECT_EQ(busy->ErrorText().rfind("busy: ", 0), 0u) << busy->ErrorText();
  auto slow = client_->Receive();
  ASSERT_TRUE(slow);
  EXPECT_TRUE(slow->ok) << slow->ErrorText();
}

TEST_F(T2Responses, CancelStopsAnInFlightFetchAtOnce) {
  StartNet({"api.anvil.test"});
  auto id = client_->Send("net.fetch", {Url("api.anvil.test", "/sleep/20000"), "GET", "{}", ""});
  ASSERT_TRUE(id);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto start = Clock::now();
  ASSERT_TRUE(client_->SendCancel(*id));
  auto r = client_->Receive();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->ErrorText().rfind("cancelled: ", 0), 0u) << r->ErrorText();
  // Answered when the cancel arrived, not when the 20 s server finally replied.
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(8));
  ExpectGrantedUrlWorks();  // and its slot and worker are free again
}

TEST_F(T2Responses, ErrorStatusesAreAnswersNotFailures) {
  StartNet({"api.anvil.test"});
  auto f = Fetch(Url("api.anvil.test", "/status/404"));
  ASSERT_TRUE(f.ok) << f.code << ": " << f.message;
  EXPECT_EQ(f.status, 404);
  auto g = Fetch(Url("api.anvil.test", "/status/503"));
  ASSERT_TRUE(g.ok);
  EXPECT_EQ(g.status, 503);
}

}  // namespace
}  // namespace t2_fetch_responses_test
}  // namespace anvil::testing
