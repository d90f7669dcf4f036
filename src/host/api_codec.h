// How plugin API calls map onto gateway/editor request fields, shared by the Lua and JS
// runtimes so both speak exactly the same protocol (docs/protocol.md, docs/plugin-api.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"

namespace anvil::host {

struct ListEntry {
  std::string name;
  std::string type;  // "file", "dir", "symlink", "other"
};
struct Listing {
  std::vector<ListEntry> entries;
  // Entries the gateway left out because their names are not valid workspace path components
  // (not UTF-8, control characters): the plugin is told how many, never silently short.
  uint64_t omitted = 0;
};
// fs.list result fields: [omitted count (decimal), "name\0type\0..."].
Result<Listing> DecodeListing(const std::vector<std::string>& fields);

struct StatResult {
  std::string type;
  uint64_t size = 0;
  double mtime = 0;  // seconds, with fraction
};
Result<StatResult> DecodeStat(const std::vector<std::string>& fields);

// editor.buffer.get result: [uri, version, text].
struct BufferSnapshot {
  std::string uri;
  int64_t version = 0;
  std::string text;
};
Result<BufferSnapshot> DecodeBuffer(const std::vector<std::string>& fields);

// "code: message" from an Error, as plugins see it.
inline std::string PluginErrorText(const Error& e) { return e.code + ": " + e.message; }

}  // namespace anvil::host
