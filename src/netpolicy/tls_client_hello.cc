#include "netpolicy/tls_client_hello.h"

#include <algorithm>
#include <cstdint>
#include <set>

#include "common/ascii.h"

namespace anvil {
namespace {

constexpr uint8_t kHandshakeRecord = 0x16;
constexpr uint8_t kClientHelloType = 0x01;
constexpr uint8_t kServerHelloType = 0x02;
constexpr uint8_t kChangeCipherSpecRecord = 0x14;
constexpr uint8_t kAlertRecord = 0x15;
constexpr uint8_t kApplicationDataRecord = 0x17;
// TLS 1.3 ciphertext records carry at most 2^14 + 256 bytes (RFC 8446 5.2).
constexpr size_t kMaxCiphertextPayload = 16384 + 256;
constexpr uint16_t kServerNameExtension = 0;
constexpr uint16_t kEarlyDataExtension = 42;
// Encrypted Client Hello (RFC 9849 draft numbering, as deployed) and its predecessor, encrypted
// SNI: the outer name is a public front, the site the server picks is encrypted.
constexpr uint16_t kEncryptedClientHello = 0xfe0d;
constexpr uint16_t kEncryptedServerName = 0xffce;
constexpr uint8_t kHostNameType = 0;
constexpr size_t kRecordHeader = 5;
constexpr size_t kMaxRecordPayload = 16384;

// A bounds-checked reader over one message; every read past the end fails and sticks.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool U8(uint8_t& out) {
    if (!Need(1)) return false;
    out = static_cast<uint8_t>(data_[pos_++]);
    return true;
  }
  bool U16(uint16_t& out) {
    if (!Need(2)) return false;
    out = static_cast<uint16_t>((static_cast<uint8_t>(data_[pos_]) << 8) |
                                static_cast<uint8_t>(data_[pos_ + 1]));
    pos_ += 2;
    return true;
  }
  bool U24(uint32_t& out) {
    if (!Need(3)) return false;
    out = (static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_])) << 16) |
          (static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + 1])) << 8) |
          static_cast<uint32_t>(static_cast<uint8_t>(data_[pos_ + 2]));
    pos_ += 3;
    return true;
  }
  bool Bytes(size_t n, std::string_view& out) {
    if (!Need(n)) return false;
    out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool Skip(size_t n) {
    std::string_view ignored;
    return Bytes(n, ignored);
  }
  size_t left() const { return data_.size() - pos_; }

 private:
  bool Need(size_t n) const { return data_.size() - pos_ >= n; }
  std::string_view data_;
  size_t pos_ = 0;
};

ClientHello Malformed(std::string error) {
  ClientHello hello;
  hello.status = ClientHelloStatus::kMalformed;
  hello.error = std::move(error);
  return hello;
}

// A DNS host name as SNI carries it (RFC 6066 3: no trailing dot, ASCII only).
bool ValidHostName(std::string_view name) {
  if (name.empty() || name.size() > 253 || name.front() == '.' || name.back() == '.') return false;
  size_t label = 0;
  for (char c : name) {
    if (c == '.') {
      if (label == 0) return false;
      label = 0;
      continue;
    }
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok || ++label > 63) return false;
  }
  return true;
}

// The server_name extension's body: a list holding at most one host_name.
bool ParseServerName(std::string_view body, std::optional<std::string>& name, std::string& error) {
  Reader r(body);
  uint16_t list_length = 0;
  if (!r.U16(list_length) || list_length != r.left() || list_length == 0) {
    error = "server_name list length";
    return false;
  }
  while (r.left() > 0) {
    uint8_t type = 0;
    uint16_t length = 0;
    std::string_view value;
    if (!r.U8(type) || !r.U16(length) || !r.Bytes(length, value)) {
      error = "server_name entry length";
      return false;
    }
    if (type != kHostNameType) continue;  // no other name type is defined; ignored as RFC 6066 says
    if (name) {
      error = "two host names in server_name";
      return false;
    }
    if (!ValidHostName(value)) {
      error = "server name is not a host name";
      return false;
    }
    name = AsciiLower(value);
  }
  return true;
}

}  // namespace

ClientHello ParseClientHello(std::string_view bytes) {
  ClientHello hello;
  if (bytes.empty()) return hello;  // kNeedMore
  if (static_cast<uint8_t>(bytes[0]) != kHandshakeRecord) {
    hello.status = ClientHelloStatus::kNotTls;
    return hello;
  }
  if (bytes.size() < kRecordHeader) return hello;
  Reader record(bytes.substr(0, kRecordHeader));
  uint8_t type = 0, major = 0, minor = 0;
  uint16_t length = 0;
  record.U8(type);
  record.U8(major);
  record.U8(minor);
  record.U16(length);
  if (major != 3 || minor > 4) return Malformed("record version");
  if (length == 0 || length > kMaxRecordPayload) return Malformed("record length");
  if (bytes.size() < kRecordHeader + length) return hello;  // kNeedMore
  hello.record_size = kRecordHeader + length;
  // Bytes after the first record (the client may already send more) are not looked at.
  Reader msg(bytes.substr(kRecordHeader, length));
  uint8_t msg_type = 0;
  uint32_t msg_length = 0;
  if (!msg.U8(msg_type) || !msg.U24(msg_length)) return Malformed("handshake header");
  if (msg_type != kClientHelloType)
    return Malformed("first handshake message is not a ClientHello");
  if (msg_length > msg.left()) return Malformed("ClientHello split across records");
  if (msg_length < msg.left()) return Malformed("bytes after the ClientHello in its record");
  uint16_t legacy_version = 0;
  uint8_t session_id_length = 0, compression_length = 0;
  uint16_t suites_length = 0;
  if (!msg.U16(legacy_version) || (legacy_version >> 8) != 3) return Malformed("hello version");
  if (!msg.Skip(32)) return Malformed("random");
  if (!msg.U8(session_id_length) || session_id_length > 32 || !msg.Skip(session_id_length)) {
    return Malformed("session id");
  }
  if (!msg.U16(suites_length) || suites_length < 2 || suites_length % 2 != 0 ||
      !msg.Skip(suites_length)) {
    return Malformed("cipher suites");
  }
  if (!msg.U8(compression_length) || compression_length < 1 || !msg.Skip(compression_length)) {
    return Malformed("compression methods");
  }
  hello.status = ClientHelloStatus::kOk;
  if (msg.left() == 0) return hello;  // no extensions at all: no server name
  uint16_t extensions_length = 0;
  if (!msg.U16(extensions_length) || extensions_length != msg.left()) {
    return Malformed("extensions length");
  }
  std::set<uint16_t> seen;
  while (msg.left() > 0) {
    uint16_t ext_type = 0, ext_length = 0;
    std::string_view body;
    if (!msg.U16(ext_type) || !msg.U16(ext_length) || !msg.Bytes(ext_length, body)) {
      return Malformed("extension length");
    }
    if (!seen.insert(ext_type).second) return Malformed("an extension appears twice");
    if (ext_type == kEncryptedClientHello || ext_type == kEncryptedServerName) {
      return Malformed("encrypted Client Hello hides the server name");
    }
    if (ext_type == kEarlyDataExtension) hello.offers_early_data = true;
    if (ext_type == kServerNameExtension) {
      std::string error;
      if (!ParseServerName(body, hello.server_name, error)) return Malformed(error);
    }
  }
  return hello;
}

ClientHello ParseSecondClientHello(std::string_view bytes, bool early_data) {
  // TLS 1.3's middlebox-compatibility ChangeCipherSpec record (RFC 8446 D.4).
  constexpr std::string_view kCompatCcs("\x14\x03\x03\x00\x01\x01", 6);
  bool seen_ccs = false;
  size_t skipped_early_data = 0;
  while (true) {
    if (bytes.empty()) return ClientHello{};  // kNeedMore
    const auto type = static_cast<uint8_t>(bytes[0]);
    if (type == kChangeCipherSpecRecord) {
      const size_t have = std::min(bytes.size(), kCompatCcs.size());
      if (seen_ccs || bytes.substr(0, have) != kCompatCcs.substr(0, have)) {
        return Malformed(
            "a ChangeCipherSpec record other than one compatibility record before "
            "the second ClientHello");
      }
      if (have < kCompatCcs.size()) return ClientHello{};  // kNeedMore
      seen_ccs = true;
      bytes.remove_prefix(kCompatCcs.size());
      continue;
    }
    if (type == kApplicationDataRecord && early_data) {
      // 0-RTT data the client sent before it saw the retry request: encrypted, and a server
      // that asked for a retry skips it (RFC 8446 4.2.10). Skipped, bounded.
      if (bytes.size() < kRecordHeader) return ClientHello{};
      const size_t length = (static_cast<size_t>(static_cast<uint8_t>(bytes[3])) << 8) |
                            static_cast<uint8_t>(bytes[4]);
      if (length == 0 || length > kMaxCiphertextPayload)
        return Malformed("early data record length");
      skipped_early_data += kRecordHeader + length;
      if (skipped_early_data > kMaxEarlyDataBeforeSecondHello) {
        return Malformed("more early data than the proxy holds before the second ClientHello");
      }
      if (bytes.size() < kRecordHeader + length) return ClientHello{};
      bytes.remove_prefix(kRecordHeader + length);
      continue;
    }
    if (type == kAlertRecord) {
      ClientHello ended;
      ended.status = ClientHelloStatus::kAlert;
      ended.error = "the client ended the handshake with a TLS alert after a HelloRetryRequest";
      return ended;
    }
    break;
  }
  ClientHello hello = ParseClientHello(bytes);
  if (hello.status == ClientHelloStatus::kNotTls) {
    return Malformed(
        "after a HelloRetryRequest the client sent something other than a ClientHello");
  }
  if (hello.status == ClientHelloStatus::kOk && bytes.size() > hello.record_size) {
    // Nothing may follow it before the server answers.
    return Malformed("bytes after the second ClientHello");
  }
  return hello;
}

std::optional<size_t> FirstHandshakeMessageEnd(std::string_view bytes) {
  size_t pos = 0;
  std::string header;  // the message's 4-byte handshake header, gathered across records
  size_t payload = 0;  // handshake payload bytes seen so far
  while (true) {
    if (bytes.size() - pos < kRecordHeader) return std::nullopt;
    if (static_cast<uint8_t>(bytes[pos]) != kHandshakeRecord) return kNotAHandshake;
    const size_t length = (static_cast<size_t>(static_cast<uint8_t>(bytes[pos + 3])) << 8) |
                          static_cast<uint8_t>(bytes[pos + 4]);
    if (length == 0 || length > kMaxRecordPayload) return kNotAHandshake;
    if (bytes.size() - pos < kRecordHeader + length) return std::nullopt;
    const std::string_view body = bytes.substr(pos + kRecordHeader, length);
    for (size_t i = 0; i < body.size() && header.size() < 4; ++i) header.push_back(body[i]);
    payload += length;
    pos += kRecordHeader + length;
    if (header.size() == 4) {
      const size_t message = 4 + ((static_cast<size_t>(static_cast<uint8_t>(header[1])) << 16) |
                                  (static_cast<size_t>(static_cast<uint8_t>(header[2])) << 8) |
                                  static_cast<uint8_t>(header[3]));
      if (payload >= message) return pos;
    }
  }
}

ServerFirst ClassifyServerFirst(std::string_view bytes) {
  // RFC 8446 4.1.3: SHA-256("HelloRetryRequest").
  constexpr std::string_view kHelloRetryRandom(
      "\xcf\x21\xad\x74\xe5\x9a\x61\x11\xbe\x1d\x8c\x02\x1e\x65\xb8\x91"
      "\xc2\xa2\x11\x16\x7a\xbb\x8c\x5e\x07\x9e\x09\xe2\xc8\xa8\x33\x9c",
      32);
  if (bytes.empty()) return ServerFirst::kNeedMore;
  if (static_cast<uint8_t>(bytes[0]) != kHandshakeRecord) return ServerFirst::kOther;
  if (bytes.size() >= kRecordHeader) {
    const size_t length =
        (static_cast<size_t>(static_cast<uint8_t>(bytes[3])) << 8) | static_cast<uint8_t>(bytes[4]);
    if (length < kServerHelloPrefixBytes - kRecordHeader) return ServerFirst::kOther;
  }
  if (bytes.size() > kRecordHeader && static_cast<uint8_t>(bytes[5]) != kServerHelloType) {
    return ServerFirst::kOther;
  }
  if (bytes.size() < kServerHelloPrefixBytes) return ServerFirst::kNeedMore;
  return bytes.substr(kRecordHeader + 4 + 2, 32) == kHelloRetryRandom
             ? ServerFirst::kHelloRetryRequest
             : ServerFirst::kOther;
}

}  // namespace anvil
