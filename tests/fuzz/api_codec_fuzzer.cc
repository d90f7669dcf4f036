// The plugin host's side of the gateway protocol (src/host/api_codec): the result fields of a
// response frame as a compromised gateway or a corrupted channel could send them, decoded as
// fs.list, fs.stat and editor.buffer.get replies. Invariants: nothing throws; a listing's names
// and types hold no NUL (they came out of a NUL-separated field) and its count is the one sent.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "host/api_codec.h"
#include "ipc/frame.h"

using anvil::fuzz::Require;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto response = anvil::ipc::DecodeResponse(anvil::fuzz::AsView(data, size));
  if (!response || !response->ok) return 0;
  const auto& fields = response->fields;
  if (auto listing = anvil::host::DecodeListing(fields)) {
    Require(fields.size() == 2, "listing from the wrong number of fields");
    Require(std::to_string(listing->omitted) == fields[0] ||
                (fields[0].size() > 1 && fields[0][0] == '0'),
            "omitted count differs from the field", fields[0]);
    size_t bytes = 0;
    for (const auto& e : listing->entries) {
      Require(e.name.find('\0') == std::string::npos, "NUL in a name");
      Require(e.type.find('\0') == std::string::npos, "NUL in a type");
      bytes += e.name.size() + e.type.size() + 2;
    }
    Require(bytes == fields[1].size(), "listing does not cover the field exactly");
  }
  (void)anvil::host::DecodeStat(fields);
  (void)anvil::host::DecodeBuffer(fields);
  return 0;
}
