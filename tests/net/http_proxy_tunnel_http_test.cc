// Plain HTTP inside a CONNECT tunnel. A plain request sent to the proxy goes on with Host set to
// the allowed authority, so that a shared server (virtual hosting, a CDN front end) cannot be
// steered to another site. A tunnel to a port other than 443 may carry what is not TLS; were
// plain HTTP among it relayed as it is, its own Host header would pick the site on such a
// server, past the allowlist. So a tunnel that begins with an HTTP request line is handled as a
// plain request for the tunnel's host: Host set to it, one request, its announced body, and
// every spelling a lenient server would read as a request but the strict grammar does not is
// cut before a byte of it reaches the server. Anything else (a server that speaks first, a
// protocol of its own, TLS) goes on as before.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "proxy_test_support.h"

namespace anvil::testing {
namespace http_proxy_tunnel_http_test {
namespace {

struct Sent {
  std::string at_origin;  // what the origin received
  std::string answer;     // what the client received after the 200
  std::vector<ProxyAuditRecord> records;
};

// A tunnel to the origin, then `parts` one after another (100 ms apart). The origin answers
// "pong" once the client is done (or 1.5 s passed).
Sent ThroughATunnel(const std::vector<std::string>& parts, uint16_t* port = nullptr) {
  Sent out;
  {
    Origin origin([&](int fd) {
      out.at_origin = ReadAll(fd, 1500ms);
      ::send(fd, "pong", 4, MSG_NOSIGNAL);
    });
    if (port) *port = origin.port();
    Proxy proxy(origin.port(), {});
    UniqueFd client = proxy.Tunnel(origin.port());
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i > 0) std::this_thread::sleep_for(100ms);
      ::send(client.Get(), parts[i].data(), parts[i].size(), MSG_NOSIGNAL);
    }
    out.answer = ReadAll(client.Get(), 3000ms);
    client.Reset();
    out.records = proxy.Records();
  }
  return out;
}

TEST(HttpProxyTunnelHttp, APlainRequestInATunnelGoesOnWithTheTunnelsHost) {
  const std::string smuggled = "GET /other HTTP/1.1\r\nHost: evil.example\r\n\r\n";
  const std::vector<std::vector<std::string>> attacks = {
      {"GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n"},
      {"GET /x HTTP/1.1\r\nHost: evil.example\r\n\r\n" + smuggled},
      // The request line in pieces.
      {"GE", "T /x HT", "TP/1.1\r\nHost: evil.example\r\n\r\n"},
      {"POST /x HTTP/1.1\r\nHost: evil.example\r\nContent-Length: 4\r\n\r\nbody" + smuggled},
  };
  for (const auto& parts : attacks) {
    uint16_t port = 0;
    const Sent sent = ThroughATunnel(parts, &port);
    EXPECT_EQ(sent.at_origin.find("evil"), std::string::npos) << sent.at_origin;
    EXPECT_EQ(sent.at_origin.find("/other"), std::string::npos) << sent.at_origin;
    EXPECT_NE(
        sent.at_origin.find(" /x HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n"),
        std::string::npos)
        << sent.at_origin;
    EXPECT_NE(sent.at_origin.find("Connection: close\r\n"), std::string::npos) << sent.at_origin;
    EXPECT_EQ(sent.answer, "pong");
    ASSERT_EQ(sent.records.size(), 1u);
    EXPECT_EQ(sent.records[0].verdict, "allow") << sent.records[0].reason;
  }
}

TEST(HttpProxyTunnelHttp, LenientRequestLinesInATunnelAreCutBeforeTheyReachTheServer) {
  const std::vector<std::vector<std::string>> attacks = {
      // Empty lines before the request line, which servers skip (RFC 9112 2.2).
      {"\r\n\r\nGET / HTTP/1.1\r\nHost: evil.example\r\n\r\n"},
      // Lenient spellings: tabs, several spaces, a lower-case version, a blank in the target,
      // bare LF line ends, a header with a bare LF.
      {"GET\t/\tHTTP/1.1\r\nHost: evil.example\r\n\r\n"},
      {"GET  /  http/1.1\r\nHost: evil.example\r\n\r\n"},
      {"GET /a b HTTP/1.1\r\nHost: evil.example\r\n\r\n"},
      {"POST /upload HTTP/1.0\nHost: evil.example\n\n"},
      {"GET / HTTP/1.1\r\nX: y\nHost: evil.example\r\n\r\n"},
      // Absolute-form names a host of its own; "*" and HTTP/2 with prior knowledge (its
      // :authority picks the site).
      {"GET http://evil.example/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"},
      {"OPTIONS * HTTP/1.1\r\nHost: evil.example\r\n\r\n"},
      {std::string("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")},
  };
  for (const auto& parts : attacks) {
    const Sent sent = ThroughATunnel(parts);
    EXPECT_EQ(sent.at_origin, "") << parts[0];
    EXPECT_EQ(sent.answer.find("pong"), std::string::npos) << parts[0];
    ASSERT_EQ(sent.records.size(), 1u) << parts[0];
    EXPECT_EQ(sent.records[0].verdict, "deny") << parts[0];
    EXPECT_NE(sent.records[0].reason.find("plain HTTP inside a tunnel"), std::string::npos)
        << sent.records[0].reason;
    EXPECT_EQ(sent.records[0].bytes_up, 0u) << parts[0];
  }
}

// An HTTP/0.9 request names no host at all: a server that still reads one answers from its
// default site, which need not be the tunnel's. Refused before a byte reaches the server.
TEST(HttpProxyTunnelHttp, AnHttp09RequestInATunnelIsRefusedUnsent) {
  for (const std::vector<std::string>& parts :
       std::vector<std::vector<std::string>>{{"GET /\r\n"}, {"GET /secret", "\n"}}) {
    const Sent sent = ThroughATunnel(parts);
    EXPECT_EQ(sent.at_origin, "") << parts[0];
    EXPECT_EQ(sent.answer.find("pong"), std::string::npos) << parts[0];
    ASSERT_EQ(sent.records.size(), 1u) << parts[0];
    EXPECT_EQ(sent.records[0].verdict, "deny") << parts[0];
    EXPECT_NE(sent.records[0].reason.find("HTTP/0.9"), std::string::npos) << sent.records[0].reason;
  }
}

// Benign: what is not an HTTP request line goes on byte for byte and the answer comes back.
TEST(HttpProxyTunnelHttp, OtherProtocolsStillGoThroughATunnelUnchanged) {
  const std::vector<std::vector<std::string>> benign = {
      {"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"},
      {"EHLO client.example\r\n"},
      {"*1\r\n$4\r\nPING\r\n"},
      {"GET key\r\n"},
      {std::string("\x00\x01\x02 binary HTTP/1.1", sizeof("\x00\x01\x02 binary HTTP/1.1") - 1)},
      {"hello", " world\r\n"},
  };
  for (const auto& parts : benign) {
    std::string all;
    for (const auto& p : parts) all += p;
    const Sent sent = ThroughATunnel(parts);
    EXPECT_EQ(sent.at_origin, all);
    EXPECT_EQ(sent.answer, "pong");
    ASSERT_EQ(sent.records.size(), 1u);
    EXPECT_EQ(sent.records[0].verdict, "allow") << sent.records[0].reason;
  }
}

}  // namespace
}  // namespace http_proxy_tunnel_http_test
}  // namespace anvil::testing
