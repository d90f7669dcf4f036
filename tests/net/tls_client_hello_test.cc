#include "netpolicy/tls_client_hello.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "test_pki.h"
#include "tls_hello.h"

namespace anvil {
namespace tls_client_hello_test {
namespace {

using testing::RealClientHello;

std::string U16(size_t v) { return {static_cast<char>(v >> 8), static_cast<char>(v & 0xff)}; }

// A minimal hand-built hello: the given extensions block (already encoded), in one record.
std::string Hello(const std::string& extensions, bool with_extensions = true) {
  std::string body = "\x03\x03" + std::string(32, 'r') + std::string(1, '\0') +  // no session id
                     U16(2) + "\x13\x01" + std::string("\x01\x00", 2);
  if (with_extensions) body += U16(extensions.size()) + extensions;
  std::string msg = std::string(1, '\x01') + std::string(1, '\0') + U16(body.size()) + body;
  return std::string("\x16\x03\x01", 3) + U16(msg.size()) + msg;
}

std::string SniExtension(const std::vector<std::pair<uint8_t, std::string>>& names) {
  std::string list;
  for (const auto& [type, name] : names)
    list += std::string(1, static_cast<char>(type)) + U16(name.size()) + name;
  std::string body = U16(list.size()) + list;
  return U16(0) + U16(body.size()) + body;
}

TEST(ParseClientHello, ARealHelloGivesItsServerNameLowerCased) {
  std::string hello = RealClientHello("Api.Example.ORG");
  ASSERT_GT(hello.size(), 100u);
  auto parsed = ParseClientHello(hello);
  ASSERT_EQ(parsed.status, ClientHelloStatus::kOk) << parsed.error;
  EXPECT_EQ(parsed.server_name, "api.example.org");
  // Without SNI: a complete hello with no name.
  parsed = ParseClientHello(RealClientHello(""));
  ASSERT_EQ(parsed.status, ClientHelloStatus::kOk) << parsed.error;
  EXPECT_FALSE(parsed.server_name);
  // Every proper prefix asks for more; bytes after the first record are not looked at.
  for (size_t cut = 0; cut < hello.size(); cut += 7) {
    EXPECT_EQ(ParseClientHello(hello.substr(0, cut)).status, ClientHelloStatus::kNeedMore) << cut;
  }
  EXPECT_EQ(ParseClientHello(hello + "\x17\x03\x03junk").server_name, "api.example.org");
}

TEST(ParseClientHello, OtherProtocolsAreNotTls) {
  for (std::string first : {"GET / HTTP/1.1\r\n", "SSH-2.0-OpenSSH_9.2\r\n", "\x80\x2e\x01"}) {
    EXPECT_EQ(ParseClientHello(first).status, ClientHelloStatus::kNotTls) << first;
  }
}

TEST(ParseClientHello, HandBuiltHellosParseAndMalformedOnesAreRefused) {
  auto ok = ParseClientHello(Hello(SniExtension({{0, "a.test"}})));
  ASSERT_EQ(ok.status, ClientHelloStatus::kOk) << ok.error;
  EXPECT_EQ(ok.server_name, "a.test");
  ok = ParseClientHello(Hello("", false));  // TLS 1.2 allows no extensions block at all
  ASSERT_EQ(ok.status, ClientHelloStatus::kOk) << ok.error;
  EXPECT_FALSE(ok.server_name);

  const std::string good = Hello(SniExtension({{0, "a.test"}}));
  struct Case {
    const char* what;
    std::string bytes;
  } cases[] = {
      {"record version", std::string("\x16\x02\x00", 3) + good.substr(3)},
      {"not a ClientHello", good.substr(0, 5) + "\x02" + good.substr(6)},
      {"split across records",
       [&] {  // the record claims less than the handshake message needs
         std::string b = good;
         size_t len = b.size() - 5 - 10;
         b[3] = static_cast<char>(len >> 8);
         b[4] = static_cast<char>(len & 0xff);
         return b.substr(0, 5 + len);
       }()},
      {"two host names", Hello(SniExtension({{0, "a.test"}, {0, "b.test"}}))},
      {"extension twice", Hello(SniExtension({{0, "a.test"}}) + SniExtension({{0, "a.test"}}))},
      {"name with a space", Hello(SniExtension({{0, "a test"}}))},
      {"name with a NUL", Hello(SniExtension({{0, std::string("a.test\0evil", 11)}}))},
      {"trailing dot", Hello(SniExtension({{0, "a.test."}}))},
      {"empty name", Hello(SniExtension({{0, ""}}))},
      {"empty list", Hello(U16(0) + U16(2) + U16(0))},
      {"encrypted Client Hello",
       Hello(SniExtension({{0, "a.test"}}) + U16(0xfe0d) + U16(4) + "ech!")},
      {"encrypted SNI", Hello(SniExtension({{0, "a.test"}}) + U16(0xffce) + U16(2) + "es")},
      {"extensions length",
       [&] {
         std::string b = good;
         b[b.size() - SniExtension({{0, "a.test"}}).size() - 1] ^= 1;
         return b;
       }()},
  };
  for (const auto& c : cases) {
    auto parsed = ParseClientHello(c.bytes);
    EXPECT_EQ(parsed.status, ClientHelloStatus::kMalformed) << c.what;
    EXPECT_FALSE(parsed.error.empty()) << c.what;
  }
  // A name type other than host_name is skipped, not taken for the host.
  auto other = ParseClientHello(Hello(SniExtension({{1, "x.test"}, {0, "a.test"}})));
  ASSERT_EQ(other.status, ClientHelloStatus::kOk) << other.error;
  EXPECT_EQ(other.server_name, "a.test");
}

// What a real OpenSSL client and server send each other in memory: the first hello, the
// server's first flight, and what the client sends after it. With `retry` the server accepts
// only P-256 while the client's first hello carries only an X25519 key share, so the server
// answers with a HelloRetryRequest and the client sends a second hello.
struct Exchange {
  std::string hello, server_first, client_next;
};

std::string Drain(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  (void)BIO_reset(bio);
  return out;
}

Exchange RealExchange(const char* sni, bool retry) {
  Exchange e;
  auto* pki = testing::TestPki::Shared();
  if (!pki) return e;
  const auto leaf = pki->Leaf("api");
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  SSL_CTX* sctx = SSL_CTX_new(TLS_server_method());
  SSL_CTX_set1_groups_list(cctx, "X25519:P-256");
  SSL_CTX_set1_groups_list(sctx, retry ? "P-256" : "X25519:P-256");
  EXPECT_EQ(SSL_CTX_use_certificate_chain_file(sctx, leaf.cert_path.c_str()), 1);
  EXPECT_EQ(SSL_CTX_use_PrivateKey_file(sctx, leaf.key_path.c_str(), SSL_FILETYPE_PEM), 1);
  SSL* c = SSL_new(cctx);
  SSL* sv = SSL_new(sctx);
  BIO* c_in = BIO_new(BIO_s_mem());
  BIO* c_out = BIO_new(BIO_s_mem());
  BIO* s_in = BIO_new(BIO_s_mem());
  BIO* s_out = BIO_new(BIO_s_mem());
  SSL_set_bio(c, c_in, c_out);
  SSL_set_bio(sv, s_in, s_out);
  if (sni[0] != '\0') SSL_set_tlsext_host_name(c, sni);
  SSL_connect(c);
  e.hello = Drain(c_out);
  BIO_write(s_in, e.hello.data(), static_cast<int>(e.hello.size()));
  SSL_accept(sv);
  e.server_first = Drain(s_out);
  BIO_write(c_in, e.server_first.data(), static_cast<int>(e.server_first.size()));
  SSL_connect(c);
  e.client_next = Drain(c_out);
  SSL_free(c);
  SSL_free(sv);
  SSL_CTX_free(cctx);
  SSL_CTX_free(sctx);
  return e;
}

TEST(HelloRetry, ARealHelloRetryRequestIsRecognisedAndTheSecondHelloRead) {
  Exchange e = RealExchange("api.anvil.test", true);
  ASSERT_EQ(ParseClientHello(e.hello).server_name, "api.anvil.test");
  ASSERT_GE(e.server_first.size(), kServerHelloPrefixBytes);
  EXPECT_EQ(ClassifyServerFirst(e.server_first), ServerFirst::kHelloRetryRequest);
  for (size_t cut = 0; cut < kServerHelloPrefixBytes; ++cut) {
    EXPECT_EQ(ClassifyServerFirst(e.server_first.substr(0, cut)), ServerFirst::kNeedMore) << cut;
  }
  // OpenSSL sends the compatibility ChangeCipherSpec first, then the second hello.
  ASSERT_EQ(e.client_next.rfind(std::string("\x14\x03\x03\x00\x01\x01", 6), 0), 0u);
  auto second = ParseSecondClientHello(e.client_next, false);
  ASSERT_EQ(second.status, ClientHelloStatus::kOk) << second.error;
  EXPECT_EQ(second.server_name, "api.anvil.test");
  for (size_t cut = 0; cut < e.client_next.size(); cut += 5) {
    EXPECT_EQ(ParseSecondClientHello(e.client_next.substr(0, cut), false).status,
              ClientHelloStatus::kNeedMore)
        << cut;
  }
  // Without the ChangeCipherSpec (a client not in compatibility mode) it reads the same.
  second = ParseSecondClientHello(e.client_next.substr(6), false);
  ASSERT_EQ(second.status, ClientHelloStatus::kOk) << second.error;
  EXPECT_EQ(second.server_name, "api.anvil.test");
}

TEST(HelloRetry, AnOrdinaryServerHelloOrAnAlertMeansNoSecondHello) {
  Exchange e = RealExchange("api.anvil.test", false);
  ASSERT_GE(e.server_first.size(), kServerHelloPrefixBytes);
  EXPECT_EQ(ClassifyServerFirst(e.server_first), ServerFirst::kOther);
  EXPECT_EQ(ClassifyServerFirst(std::string("\x15\x03\x03\x00\x02\x02\x28", 7)),
            ServerFirst::kOther);                                        // an alert
  EXPECT_EQ(ClassifyServerFirst("SSH-2.0-x\r\n"), ServerFirst::kOther);  // not TLS
  // A handshake record too short to hold a ServerHello, or holding another message.
  EXPECT_EQ(ClassifyServerFirst(std::string("\x16\x03\x03\x00\x04", 5)), ServerFirst::kOther);
  EXPECT_EQ(ClassifyServerFirst(std::string("\x16\x03\x03\x00\x40\x0b", 6)), ServerFirst::kOther);
}

TEST(HelloRetry, ARealRetryRequestEndsWhereItsRecordDoesEvenWhenSplitAcrossRecords) {
  Exchange e = RealExchange("api.anvil.test", true);
  const size_t length = (static_cast<size_t>(static_cast<uint8_t>(e.server_first[3])) << 8) |
                        static_cast<uint8_t>(e.server_first[4]);
  const std::string record = e.server_first.substr(0, 5 + length);
  EXPECT_EQ(FirstHandshakeMessageEnd(e.server_first), 5 + length);  // the CCS after it not read
  for (size_t cut = 0; cut < record.size(); ++cut) {
    EXPECT_FALSE(FirstHandshakeMessageEnd(record.substr(0, cut))) << cut;
  }
  // The same message in three records (a server may fragment): it ends with the third.
  const std::string message = record.substr(5);
  auto wrap = [](const std::string& part) {
    return std::string("\x16\x03\x03", 3) + static_cast<char>(part.size() >> 8) +
           static_cast<char>(part.size() & 0xff) + part;
  };
  const std::string split = wrap(message.substr(0, 2)) + wrap(message.substr(2, 30)) +
                            wrap(message.substr(32)) + std::string("\x14\x03\x03\x00\x01\x01", 6);
  EXPECT_EQ(ClassifyServerFirst(wrap(message)), ServerFirst::kHelloRetryRequest);
  EXPECT_EQ(FirstHandshakeMessageEnd(split), split.size() - 6);
  EXPECT_FALSE(FirstHandshakeMessageEnd(split.substr(0, split.size() - 7)));
  // Another record type on the way, or an empty record, is not a handshake.
  EXPECT_EQ(FirstHandshakeMessageEnd(wrap(message.substr(0, 2)) +
                                     std::string("\x15\x03\x03\x00\x02\x02\x28", 7)),
            kNotAHandshake);
  EXPECT_EQ(FirstHandshakeMessageEnd(std::string("\x16\x03\x03\x00\x00", 5)), kNotAHandshake);
}

TEST(HelloRetry, AfterARetryOnlyACompatibilityChangeCipherSpecMayPrecedeTheSecondHello) {
  const std::string hello = RealClientHello("a.test");
  const std::string ccs("\x14\x03\x03\x00\x01\x01", 6);
  const std::string early(
      "\x17\x03\x03\x00\x05"
      "abcde",
      10);
  for (const std::string& before :
       {std::string("\x14\x03\x03\x00\x01\x02", 6), std::string("\x14\x03\x01\x00\x01\x01", 6),
        early, ccs + ccs, ccs + early}) {
    EXPECT_EQ(ParseSecondClientHello(before + hello, false).status, ClientHelloStatus::kMalformed)
        << before.size();
  }
  EXPECT_EQ(ParseSecondClientHello("GET / HTTP/1.1\r\n\r\n", false).status,
            ClientHelloStatus::kMalformed);
  EXPECT_EQ(ParseSecondClientHello(std::string("\x14\x03\x04", 3), false).status,
            ClientHelloStatus::kMalformed);
  // Nothing may follow the second hello: a client waits for the server's answer.
  for (const std::string& after : {RealClientHello("evil.test"), early, ccs}) {
    EXPECT_EQ(ParseSecondClientHello(ccs + hello + after, false).status,
              ClientHelloStatus::kMalformed);
  }
  // A client that gives up (it cannot use the group the server asked for) sends an alert.
  auto alert = ParseSecondClientHello(ccs + std::string("\x15\x03\x03\x00\x02\x02\x28", 7), false);
  EXPECT_EQ(alert.status, ClientHelloStatus::kAlert);
  auto ok = ParseSecondClientHello(ccs + hello, false);
  ASSERT_EQ(ok.status, ClientHelloStatus::kOk) << ok.error;
  EXPECT_EQ(ok.server_name, "a.test");
  EXPECT_EQ(ok.record_size, hello.size());
}

TEST(HelloRetry, EarlyDataBeforeTheSecondHelloIsSkippedOnlyAfterA0RttOfferAndBounded) {
  const std::string hello = RealClientHello("a.test");
  const std::string ccs("\x14\x03\x03\x00\x01\x01", 6);
  const std::string record = std::string("\x17\x03\x03\x10\x00", 5) + std::string(4096, 'e');
  for (const std::string& before : {record, ccs + record + record, record + ccs + record}) {
    auto ok = ParseSecondClientHello(before + hello, true);
    ASSERT_EQ(ok.status, ClientHelloStatus::kOk) << ok.error;
    EXPECT_EQ(ok.server_name, "a.test");
    EXPECT_EQ(ParseSecondClientHello(before + hello, false).status, ClientHelloStatus::kMalformed);
    EXPECT_EQ(ParseSecondClientHello(before + hello.substr(0, 10), true).status,
              ClientHelloStatus::kNeedMore);
  }
  std::string flood;
  while (flood.size() <= kMaxEarlyDataBeforeSecondHello) flood += record;
  EXPECT_EQ(ParseSecondClientHello(flood + hello, true).status, ClientHelloStatus::kMalformed);
  // A record longer than TLS 1.3 allows is not early data.
  EXPECT_EQ(ParseSecondClientHello(std::string("\x17\x03\x03\x41\x01", 5), true).status,
            ClientHelloStatus::kMalformed);
  // The first hello says whether it offered 0-RTT (the early_data extension, 42).
  EXPECT_FALSE(ParseClientHello(hello).offers_early_data);
  const std::string with_early = Hello(std::string("\x00\x2a\x00\x00", 4));
  auto offered = ParseClientHello(with_early);
  ASSERT_EQ(offered.status, ClientHelloStatus::kOk) << offered.error;
  EXPECT_TRUE(offered.offers_early_data);
  EXPECT_EQ(offered.record_size, with_early.size());
}

}  // namespace
}  // namespace tls_client_hello_test
}  // namespace anvil
