#include "host/api_codec.h"

#include <cstdlib>

namespace anvil::host {

Result<Listing> DecodeListing(const std::vector<std::string>& fields) {
  if (fields.size() != 2) return Fail("internal", "malformed fs.list reply");
  Listing out;
  const std::string& count = fields[0];
  if (count.empty() || count.size() > 19) return Fail("internal", "malformed fs.list reply");
  for (char c : count) {
    if (c < '0' || c > '9') return Fail("internal", "malformed fs.list reply");
    out.omitted = out.omitted * 10 + static_cast<uint64_t>(c - '0');
  }
  const std::string& packed = fields[1];
  size_t pos = 0;
  while (pos < packed.size()) {
    size_t a = packed.find('\0', pos);
    if (a == std::string::npos) return Fail("internal", "malformed fs.list reply");
    size_t b = packed.find('\0', a + 1);
    if (b == std::string::npos) return Fail("internal", "malformed fs.list reply");
    out.entries.push_back({packed.substr(pos, a - pos), packed.substr(a + 1, b - a - 1)});
    pos = b + 1;
  }
  return out;
}

Result<StatResult> DecodeStat(const std::vector<std::string>& fields) {
  if (fields.size() != 4) return Fail("internal", "malformed fs.stat reply");
  StatResult s;
  s.type = fields[0];
  s.size = std::strtoull(fields[1].c_str(), nullptr, 10);
  s.mtime = static_cast<double>(std::strtoll(fields[2].c_str(), nullptr, 10)) +
            static_cast<double>(std::strtoll(fields[3].c_str(), nullptr, 10)) / 1e9;
  return s;
}

Result<BufferSnapshot> DecodeBuffer(const std::vector<std::string>& fields) {
  if (fields.size() != 3) return Fail("internal", "malformed buffer reply");
  return BufferSnapshot{fields[0], std::strtoll(fields[1].c_str(), nullptr, 10), fields[2]};
}

}  // namespace anvil::host
