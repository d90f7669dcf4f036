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
// hidden. A server may answer the first hello with a HelloRetryRequest, and the client then
// sends a second hello, also in clear, which could name another site: ClassifyServerFirst tells
// the proxy when that happens, and ParseSecondClientHello reads that hello to be checked like
// the first.
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
  kAlert,      // (second hello only) the client sent a TLS alert: it gave up the handshake
};

struct ClientHello {
  ClientHelloStatus status = ClientHelloStatus::kNeedMore;
  std::optional<std::string> server_name;  // lower-cased host_name from the SNI extension
  std::string error;                       // for kMalformed: what was wrong
  size_t record_size = 0;                  // for kOk: the bytes of the record holding it
  bool offers_early_data = false;          // for kOk: the early_data extension (0-RTT)
};

// The most bytes a first record can take (5-byte header + 2^14 payload).
inline constexpr size_t kMaxClientHelloBytes = 5 + 16384;

// Parses the bytes a client sent first. kNeedMore until a whole record is there.
ClientHello ParseClientHello(std::string_view bytes);

// Parses what a client sends after a HelloRetryRequest: at most one TLS 1.3 compatibility
// ChangeCipherSpec record (14 03 03 00 01 01) and, when its first hello offered 0-RTT
// (`early_data`), the encrypted early-data records it may have sent before it saw the retry
// request (skipped, at most kMaxEarlyDataBeforeSecondHello bytes), then a ClientHello as
// ParseClientHello reads it, with nothing after it (the client must wait for the server). A TLS
// alert is kAlert; anything else is kMalformed: TLS allows nothing else there.
ClientHello ParseSecondClientHello(std::string_view bytes, bool early_data);
inline constexpr size_t kMaxEarlyDataBeforeSecondHello = 64 * 1024;
inline constexpr size_t kMaxSecondClientHelloBytes =
    6 + kMaxEarlyDataBeforeSecondHello + kMaxClientHelloBytes;

// Where the first handshake message in `bytes` ends: the offset just past the handshake record
// that completes it (a message may span records). nullopt while more bytes are needed;
// kNotAHandshake when a record on the way is not a handshake record or is malformed.
inline constexpr size_t kNotAHandshake = static_cast<size_t>(-1);
std::optional<size_t> FirstHandshakeMessageEnd(std::string_view bytes);

// What a TLS server sent first, after the client's hello.
enum class ServerFirst {
  kNeedMore,           // a prefix of a ServerHello record: read more (up to the prefix below)
  kHelloRetryRequest,  // a ServerHello with RFC 8446's HelloRetryRequest random: a second
                       // ClientHello follows
  kOther,              // anything else (a ServerHello, an alert, not TLS): no second hello
};
// The bytes that decide it: record header, handshake header, legacy_version and random.
inline constexpr size_t kServerHelloPrefixBytes = 5 + 4 + 2 + 32;
ServerFirst ClassifyServerFirst(std::string_view bytes);

}  // namespace anvil
