// LSP base-protocol framing for `anvil serve` (JSON-RPC 2.0 over stdio):
//
//   Content-Length: <decimal bytes>\r\n
//   [Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n]
//   \r\n
//   <body: exactly that many bytes of UTF-8 JSON>
//
// The editor side is trusted, but its input is still parsed strictly and bounded: a bad header,
// a missing or malformed length, an oversized message or invalid JSON is reported as a JSON-RPC
// error and the reader resynchronises at the next "Content-Length:" line; nothing is buffered
// beyond the caps, and nothing here can throw.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace anvil::session {

inline constexpr std::size_t kMaxHeaderBytes = 8 * 1024;
inline constexpr std::size_t kDefaultMaxMessageBytes = 16u << 20;

// One step of the reader: a parsed message, or a framing error to report (JSON-RPC code and
// text). `id` is set when the body parsed far enough to know the request id.
struct LspEvent {
  std::optional<nlohmann::json> message;
  int error_code = 0;  // -32700 parse error, -32600 invalid request (framing)
  std::string error_text;
};

class LspReader {
 public:
  explicit LspReader(std::size_t max_message_bytes = kDefaultMaxMessageBytes)
      : max_message_(max_message_bytes) {}
  void Append(const char* data, std::size_t size);
  // The next complete message or error; nullopt when more bytes are needed.
  std::optional<LspEvent> Next();
  // What to say when the input ends: an error when it ended inside a message, else nullopt.
  std::optional<LspEvent> AtEof() const;

 private:
  std::optional<LspEvent> Fail(std::string text, int code = -32600);
  void Compact();

  std::size_t max_message_;
  std::string buffer_;
  std::size_t offset_ = 0;
  std::size_t skip_ = 0;  // bytes of an oversized body still to discard
  bool resync_ = false;   // after a bad header: drop bytes until "Content-Length:"
  std::optional<std::size_t> body_length_;  // header parsed, waiting for the body
};

// One framed message (the JSON is dumped with invalid UTF-8 replaced, so it cannot throw).
std::string EncodeLspMessage(const nlohmann::json& message);

}  // namespace anvil::session
