// The server name (SNI) a TLS client asks for, read from the first bytes it sends through a
// `--network proxy` CONNECT tunnel (issue 8). The proxy cannot see the request inside TLS, but
// the ClientHello names the site in clear; a tunnel to an allowed host whose hello names
// another site (domain fronting through a shared front end) is refused before a byte is
// forwarded. Pure: bytes in, verdict out; bounded, no allocation beyond the name.
//
// Only the first TLS record is read, and it must hold the whole ClientHello (every real client
// sends a hello of a few KiB in one record; a hello split across records is refused as
// malformed rather than reassembled). A hello with Encrypted Client Hello (or the older
// encrypted SNI) is refused as kMalformed: its clear name is a public front, the real one is
// hidden. Only the first hello is read: a second one after a HelloRetryRequest is not checked.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace anvil {

enum class ClientHelloStatus {
  kNeedMore,   // a prefix of a TLS handshake record: read more (up to kMaxClientHelloBytes)
  kNotTls,     // the first byte is not a TLS handshake record: some other protocol
  kMalformed,  // a TLS handshake record that is not a well-formed ClientHello
  kOk,         // a complete ClientHello; server_name says whether it names a host
};

struct ClientHello {
  ClientHelloStatus status = ClientHelloStatus::kNeedMore;
  std::optional<std::string> server_name;  // lower-cased host_name from the SNI extension
  std::string error;                       // for kMalformed: what was wrong
};

// The most bytes a first record can take (5-byte header + 2^14 payload).
inline constexpr size_t kMaxClientHelloBytes = 5 + 16384;

// Parses the bytes a client sent first. kNeedMore until a whole record is there.
ClientHello ParseClientHello(std::string_view bytes);

}  // namespace anvil
