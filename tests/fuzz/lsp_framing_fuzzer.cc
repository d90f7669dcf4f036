// The JSON-RPC reader of `anvil serve` (src/session/lsp_framing: LSP base-protocol framing over
// stdio), fed in 1-256 byte chunks. Invariants: the reader terminates, never yields more
// messages than "Content-Length" headers could frame, and every message it yields re-encodes
// (EncodeLspMessage) to a frame that a fresh reader yields as the same JSON value.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "session/lsp_framing.h"

using anvil::fuzz::Require;
using anvil::session::EncodeLspMessage;
using anvil::session::LspReader;

namespace {
// JSON text can overflow a double ("1e400" parses as infinity), which JSON cannot carry back: it
// dumps as null. Such a message does not round-trip by construction.
bool HasNonFinite(const nlohmann::json& value) {
  if (value.is_number_float()) return !std::isfinite(value.get<double>());
  if (value.is_object() || value.is_array()) {
    for (const auto& child : value) {
      if (HasNonFinite(child)) return true;
    }
  }
  return false;
}

void CheckRoundTrip(const nlohmann::json& message) {
  if (HasNonFinite(message)) return;
  std::string frame = EncodeLspMessage(message);
  LspReader fresh(1u << 20);
  fresh.Append(frame.data(), frame.size());
  auto event = fresh.Next();
  Require(event && event->message && *event->message == message, "message round trip",
          message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  Require(!fresh.Next(), "one frame yielded two events");
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t chunk = static_cast<size_t>(data[0]) + 1;
  const char* p = reinterpret_cast<const char*>(data + 1);
  size_t left = size - 1;
  LspReader reader(64 * 1024);
  size_t events = 0;
  while (true) {
    auto event = reader.Next();
    if (event) {
      Require(++events <= size, "more events than input bytes");
      if (event->message) {
        CheckRoundTrip(*event->message);
      } else {
        Require(event->error_code == -32700 || event->error_code == -32600, "error code");
        Require(!event->error_text.empty(), "error without text");
      }
      continue;
    }
    if (left == 0) break;
    size_t n = left < chunk ? left : chunk;
    reader.Append(p, n);
    p += n;
    left -= n;
  }
  (void)reader.AtEof();
  return 0;
}
