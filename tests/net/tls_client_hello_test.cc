#include "net/tls_client_hello.h"

#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include <cstdint>
#include <string>
#include <vector>

namespace anvil {
namespace {

// The first bytes a real TLS client (OpenSSL, TLS 1.2-1.3) sends, with `sni` ("" = none).
std::string RealClientHello(const char* sni) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  if (sni[0] != '\0') SSL_set_tlsext_host_name(ssl, sni);
  SSL_connect(ssl);  // writes the hello into `out`, then wants to read
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  std::string hello(data, static_cast<size_t>(n));
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

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

}  // namespace
}  // namespace anvil
