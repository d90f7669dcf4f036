// The gateway wire format: length-prefixed binary frames, binary-safe (file contents are not
// text), cheap to parse, and bounded before anything is allocated.
//
//   frame    = u32 length (LE, of everything after it) | u8 kind | body
//   request  = u64 id | u8 token_len | token | u8 op_len | op | u16 n | n × (u32 len | bytes)
//   response = u64 id | u8 status (0 ok, 1 error) | u16 n | n × (u32 len | bytes)
//              an error response has exactly two fields: stable code, human message
//   cancel   = u64 id                      (cancel that request of this connection)
//   control  = JSON text                   (trusted control channel only)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil::ipc {

inline constexpr uint32_t kMaxFrameBytes = 16u << 20;  // 16 MiB: 8 MiB write cap + headroom
inline constexpr size_t kMaxFields = 64;
inline constexpr size_t kMaxOpLength = 64;
inline constexpr size_t kMaxTokenLength = 64;

enum class FrameKind : uint8_t { kRequest = 1, kResponse = 2, kCancel = 3, kControl = 4 };

struct Request {
  uint64_t id = 0;
  std::string token;
  std::string op;  // "fs.read", "fs.write", ...
  std::vector<std::string> args;
};

struct Response {
  uint64_t id = 0;
  bool ok = true;
  std::vector<std::string> fields;  // ok: results; error: {code, message[, trace JSON]}

  static Response Error(uint64_t id, std::string code, std::string message) {
    return Response{id, false, {std::move(code), std::move(message)}};
  }
  // With the plugin error's trace (ipc/plugin_trace.h) as a third field when there is one.
  static Response Error(uint64_t id, const anvil::Error& e) {
    Response r = Error(id, e.code, e.message);
    if (!e.trace.empty()) r.fields.push_back(e.trace);
    return r;
  }
  // The error of an error response, its trace included.
  anvil::Error ToError() const;
  // "code: message" of an error response.
  std::string ErrorText() const;
};

struct Frame {
  FrameKind kind;
  std::string body;  // everything after the kind byte
};

std::string EncodeRequest(const Request& request);
std::string EncodeResponse(const Response& response);
std::string EncodeCancel(uint64_t id);
std::string EncodeControl(std::string_view json);

// Whether an encoded frame fits a reader with cap `max_frame` (its length field is at most the
// cap). A sender checks before writing: a frame over the peer's cap makes the peer close the
// connection, so an oversized request must fail on its own ("limit") and the channel live on.
Status CheckFrameFits(const std::string& encoded, uint32_t max_frame = kMaxFrameBytes);

Result<Request> DecodeRequest(std::string_view body);
Result<Response> DecodeResponse(std::string_view body);
Result<uint64_t> DecodeCancel(std::string_view body);

// Incremental decoder for a byte stream. Feed whatever recv() returned; Next() yields complete
// frames. A length over `max_frame` or a zero length is an error before any allocation: the
// caller closes that connection.
class FrameReader {
 public:
  explicit FrameReader(uint32_t max_frame = kMaxFrameBytes) : max_frame_(max_frame) {}
  void Append(const char* data, size_t size) { buffer_.append(data, size); }
  Result<std::optional<Frame>> Next();
  size_t Buffered() const { return buffer_.size() - offset_; }

 private:
  uint32_t max_frame_;
  std::string buffer_;
  size_t offset_ = 0;
};

}  // namespace anvil::ipc
