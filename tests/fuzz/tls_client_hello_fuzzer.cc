// The TLS ClientHello reader of anvil-proxy's CONNECT tunnels (src/netpolicy/tls_client_hello;
// issue 8, threat model T2). Invariants: no read outside the input (ASan); a name is only ever
// reported for a complete hello and is a lower-case host name; a complete hello's verdict does not
// change when more bytes follow it, and every proper prefix of it asks for more. The same
// bytes also go through the second-hello reader (after a HelloRetryRequest: the verdict on a
// hello behind the compatibility ChangeCipherSpec is the first reader's, except that nothing
// may follow a second hello) and the server-first
// classifier (a verdict other than "need more" never changes with more bytes); a handshake
// message's end is inside the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "netpolicy/tls_client_hello.h"

using anvil::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto hello = anvil::ParseClientHello(bytes);
  if (hello.server_name) {
    Require(hello.status == anvil::ClientHelloStatus::kOk, "a name from an incomplete hello",
            bytes);
    for (char c : *hello.server_name) {
      Require((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.',
              "a server name that is not a lower-case host name", bytes);
    }
  }
  if (hello.status == anvil::ClientHelloStatus::kOk ||
      hello.status == anvil::ClientHelloStatus::kMalformed) {
    std::string longer(bytes);
    longer += "\x17\x03\x03\x00\x01x";
    auto again = anvil::ParseClientHello(longer);
    Require(again.status == hello.status && again.server_name == hello.server_name,
            "trailing bytes changed the verdict", bytes);
  }
  const bool exactly_one_record =
      size >= 5 && size == 5 + ((static_cast<size_t>(data[3]) << 8) | data[4]);
  if (hello.status == anvil::ClientHelloStatus::kOk && exactly_one_record) {
    auto prefix = anvil::ParseClientHello(bytes.substr(0, size - 1));
    Require(prefix.status == anvil::ClientHelloStatus::kNeedMore,
            "a proper prefix of a complete hello did not ask for more", bytes);
  }
  const std::string ccs("\x14\x03\x03\x00\x01\x01", 6);
  auto second = anvil::ParseSecondClientHello(ccs + std::string(bytes), false);
  if (hello.status == anvil::ClientHelloStatus::kOk && size > hello.record_size) {
    Require(second.status == anvil::ClientHelloStatus::kMalformed,
            "bytes after a second hello were not refused", bytes);
  } else if (hello.status != anvil::ClientHelloStatus::kNotTls) {
    Require(second.status == hello.status && second.server_name == hello.server_name,
            "a second hello behind the ChangeCipherSpec read differently", bytes);
  } else {
    // An alert record means the client gave up; anything else that is not a hello is refused.
    Require(second.status == anvil::ClientHelloStatus::kMalformed ||
                (second.status == anvil::ClientHelloStatus::kAlert && data[0] == 0x15),
            "a second hello that is not TLS was not refused", bytes);
  }
  // With 0-RTT offered, early-data records may come first; a hello found is a whole one.
  auto after_early = anvil::ParseSecondClientHello(bytes, true);
  Require(after_early.status != anvil::ClientHelloStatus::kOk || after_early.record_size <= size,
          "a second hello longer than the input", bytes);
  if (auto end = anvil::FirstHandshakeMessageEnd(bytes); end && *end != anvil::kNotAHandshake) {
    Require(*end >= 5 && *end <= size, "a handshake message ending outside the input", bytes);
  }
  const auto kind = anvil::ClassifyServerFirst(bytes);
  if (kind != anvil::ServerFirst::kNeedMore) {
    Require(anvil::ClassifyServerFirst(std::string(bytes) + "xyz") == kind,
            "more server bytes changed the verdict", bytes);
  } else {
    Require(size < anvil::kServerHelloPrefixBytes, "a full prefix still asks for more", bytes);
  }
  return 0;
}
