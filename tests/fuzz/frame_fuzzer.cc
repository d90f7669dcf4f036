// The gateway's stream decoder (src/ipc/frame): bytes from a hostile peer, fed in arbitrary
// chunks. Invariants: the reader never yields more bytes than it was given, a frame is never over
// the cap, and every frame body that decodes re-encodes to exactly the bytes it came from
// (one encoding per message, so what the gateway checked is what it acts on).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "ipc/frame.h"

namespace {

using anvil::fuzz::Require;
using namespace anvil::ipc;

std::string Framed(FrameKind kind, std::string_view body) {
  std::string out;
  uint32_t len = static_cast<uint32_t>(body.size() + 1);
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  out.push_back(static_cast<char>(kind));
  out += body;
  return out;
}

void CheckFrame(const Frame& frame) {
  switch (frame.kind) {
    case FrameKind::kRequest:
      if (auto r = DecodeRequest(frame.body)) {
        Require(EncodeRequest(*r) == Framed(frame.kind, frame.body), "request round trip");
      }
      break;
    case FrameKind::kResponse:
      if (auto r = DecodeResponse(frame.body)) {
        Require(EncodeResponse(*r) == Framed(frame.kind, frame.body), "response round trip");
      }
      break;
    case FrameKind::kCancel:
      if (auto r = DecodeCancel(frame.body)) {
        Require(EncodeCancel(*r) == Framed(frame.kind, frame.body), "cancel round trip");
      }
      break;
    case FrameKind::kControl:
      Require(EncodeControl(frame.body) == Framed(frame.kind, frame.body), "control round trip");
      break;
    default:
      Require(false, "unknown frame kind yielded");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // First byte: chunk size for Append (1..256), so frames straddle recv() boundaries. A small
  // cap (64 KiB) keeps the "over the cap" path reachable.
  size_t chunk = static_cast<size_t>(data[0]) + 1;
  const char* p = reinterpret_cast<const char*>(data + 1);
  size_t left = size - 1;
  constexpr uint32_t kCap = 64 * 1024;
  FrameReader reader(kCap);
  size_t fed = 0, consumed = 0;
  while (true) {
    auto next = reader.Next();
    if (!next) return 0;  // the gateway closes the connection here
    if (*next) {
      const Frame& frame = **next;
      Require(frame.body.size() + 1 <= kCap, "frame over the cap");
      consumed += 5 + frame.body.size();
      Require(consumed <= fed, "reader yielded more than it was given");
      Require(reader.Buffered() == fed - consumed, "buffered count");
      CheckFrame(frame);
      continue;
    }
    if (left == 0) break;
    size_t n = left < chunk ? left : chunk;
    reader.Append(p, n);
    p += n;
    left -= n;
    fed += n;
  }
  return 0;
}
