// The request parser (src/ipc/frame: DecodeRequest, DecodeResponse, DecodeCancel) on one frame
// body, without the stream layer. Invariants: bounds (op, token, field count) hold for anything
// accepted, and encode(decode(x)) == x.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "ipc/frame.h"

using anvil::fuzz::Require;
using namespace anvil::ipc;

namespace {
std::string Header(FrameKind kind, size_t body) {
  std::string out;
  uint32_t len = static_cast<uint32_t>(body + 1);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out.push_back(static_cast<char>(kind));
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body = anvil::fuzz::AsView(data, size);
  if (auto r = DecodeRequest(body)) {
    Require(!r->op.empty() && r->op.size() <= kMaxOpLength, "op length");
    Require(r->token.size() <= kMaxTokenLength, "token length");
    Require(r->args.size() <= kMaxFields, "field count");
    Require(EncodeRequest(*r) == Header(FrameKind::kRequest, size) + std::string(body),
            "request round trip");
  }
  if (auto r = DecodeResponse(body)) {
    Require(r->fields.size() <= kMaxFields, "field count");
    // An error is {code, message} or {code, message, trace} (ipc/plugin_trace.h).
    Require(r->ok || r->fields.size() == 2 || r->fields.size() == 3, "error response shape");
    Require(EncodeResponse(*r) == Header(FrameKind::kResponse, size) + std::string(body),
            "response round trip");
  }
  if (auto r = DecodeCancel(body)) {
    Require(size == 8, "cancel size");
    Require(EncodeCancel(*r) == Header(FrameKind::kCancel, size) + std::string(body),
            "cancel round trip");
  }
  return 0;
}
