// A tunnel's first bytes (net/tunnel_hello.h, DecideTunnelStart): bytes that reach the read
// limit and still decide nothing are refused with a reason that says so, not as the client
// closing; below the limit the same bytes wait for more, and the ordinary starts pass.
#include <gtest/gtest.h>

#include <string>

#include "net/tunnel_hello.h"

namespace anvil::proxy {
namespace tunnel_start_test {
namespace {

ProxyTarget Target(uint16_t port) { return ProxyTarget{"example.com", port, std::nullopt}; }

struct Seen {
  TunnelStartStep step;
  std::string reason;
  TunnelHello tls;
};

Seen Decide(uint16_t port, std::string first, size_t limit = kMaxClientHelloBytes) {
  Seen s{};
  s.step = DecideTunnelStart(Target(port), first, s.tls, s.reason, limit);
  return s;
}

// A TLS record header announcing 16 KiB, and only part of its payload.
std::string PartialTlsRecord(size_t payload) {
  return std::string("\x16\x03\x01\x40\x00", 5) + std::string(payload, '\x01');
}

TEST(TunnelStart, UndecidedAtTheReadLimitIsRefusedForWhatItIs) {
  Seen tls = Decide(443, PartialTlsRecord(200), 200);
  EXPECT_EQ(tls.step, TunnelStartStep::kDeny);
  EXPECT_EQ(tls.reason,
            "denied: the tunnel's first 200 bytes still do not show what it carries (a TLS "
            "record that does not end)");
  Seen line = Decide(8080, "GET /" + std::string(300, 'a'), 200);
  EXPECT_EQ(line.step, TunnelStartStep::kDeny);
  EXPECT_EQ(line.reason,
            "denied: the tunnel's first 200 bytes still do not show what it carries (a first "
            "line that does not end)");
  Seen head =
      Decide(8080, "GET / HTTP/1.1\r\nHost: example.com\r\nX: " + std::string(300, 'a'), 200);
  EXPECT_EQ(head.step, TunnelStartStep::kDeny);
  EXPECT_EQ(head.reason, "denied: plain HTTP inside a tunnel: request head over 200 bytes");
  for (const Seen& s : {tls, line, head}) {
    EXPECT_EQ(s.reason.find("closed"), std::string::npos) << s.reason;
  }
}

// The benign neighbours: the same bytes below the limit wait for more; the starts that decide
// pass or are refused as before.
TEST(TunnelStart, BelowTheLimitItWaitsAndOrdinaryStartsPass) {
  EXPECT_EQ(Decide(443, PartialTlsRecord(200)).step, TunnelStartStep::kNeedMore);
  EXPECT_EQ(Decide(8080, "GET /" + std::string(300, 'a')).step, TunnelStartStep::kNeedMore);
  EXPECT_EQ(Decide(443, "").step, TunnelStartStep::kNeedMore);
  EXPECT_EQ(Decide(22, "SSH-2.0-OpenSSH_9.6\r\n").step, TunnelStartStep::kPass);
  Seen plain = Decide(8080, "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n");
  EXPECT_EQ(plain.step, TunnelStartStep::kPass);
  EXPECT_TRUE(plain.tls.plain_http);
  Seen not_tls = Decide(443, "GET / HTTP/1.1\r\n\r\n");
  EXPECT_EQ(not_tls.step, TunnelStartStep::kDeny);
  EXPECT_EQ(not_tls.reason, "denied: a tunnel to port 443 must begin with a TLS ClientHello");
  Seen http09 = Decide(8080, "GET /\r\n");
  EXPECT_EQ(http09.step, TunnelStartStep::kDeny);
  EXPECT_EQ(http09.reason,
            "denied: an HTTP/0.9 request (a request line without a version) inside a tunnel "
            "names no host to check; send HTTP/1.1");
  EXPECT_EQ(Decide(8080, "GET /").step, TunnelStartStep::kNeedMore);
  EXPECT_EQ(Decide(6379, "GET key\r\n").step, TunnelStartStep::kPass);
  Seen bad = Decide(443, std::string("\x16\x03\x01\x00\x00", 5));
  EXPECT_EQ(bad.step, TunnelStartStep::kDeny);
  EXPECT_EQ(bad.reason, "denied: TLS ClientHello refused: record length");
}

}  // namespace
}  // namespace tunnel_start_test
}  // namespace anvil::proxy
