// The address classifier and IP literal parser (src/netpolicy/ip_address, address_policy; threat
// model T2). Byte 0 picks the mode: text literal, raw IPv4/IPv6 bytes, or a CIDR prefix.
// Invariants: a parsed literal prints canonically and re-parses to itself; an address classified
// global is in no non-global range of an independent list written here (not the table under test),
// and an allowed IPv6 address is inside 2000::/3.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "netpolicy/address_policy.h"
#include "netpolicy/ip_address.h"

using anvil::fuzz::Require;

namespace {

const std::vector<anvil::IpPrefix>& NonGlobal() {
  static const std::vector<anvil::IpPrefix> ranges = [] {
    std::vector<anvil::IpPrefix> out;
    for (const char* text :
         {"0.0.0.0/8",      "10.0.0.0/8",    "100.64.0.0/10",  "127.0.0.0/8",   "169.254.0.0/16",
          "172.16.0.0/12",  "192.0.2.0/24",  "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24",
          "203.0.113.0/24", "224.0.0.0/4",   "240.0.0.0/4",    "::/8",          "::ffff:0:0/96",
          "64:ff9b::/96",   "fc00::/7",      "fe80::/10",      "fec0::/10",     "ff00::/8",
          "2001::/32",      "2001:db8::/32", "2002::/16"}) {
      auto prefix = anvil::ParseIpPrefix(text);
      if (!prefix) anvil::fuzz::InvariantFailed("fuzzer's own range does not parse", text);
      out.push_back(*prefix);
    }
    return out;
  }();
  return ranges;
}

void Classify(const anvil::IpAddress& address) {
  auto verdict = anvil::ClassifyAddress(address);
  Require(!verdict.reason.empty(), "verdict without a reason", address.ToString());
  if (!verdict.allowed) return;
  for (const auto& range : NonGlobal()) {
    Require(!range.Contains(address), "non-global address allowed",
            address.ToString() + " in " + range.address.ToString() + "/" +
                std::to_string(range.length));
  }
  if (address.is_v6()) Require((address.bytes()[0] & 0xe0) == 0x20, "v6 outside 2000::/3");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  std::string_view text = anvil::fuzz::AsView(data + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto address = anvil::ParseIpLiteral(text);
      bool strict_v4 = anvil::IsStrictIpv4Literal(text);
      if (!address) {
        Require(!strict_v4, "strict IPv4 literal refused", text);
        return 0;
      }
      Require(strict_v4 == address->is_v4(), "IsStrictIpv4Literal disagrees", text);
      std::string printed = address->ToString();
      auto again = anvil::ParseIpLiteral(printed);
      Require(again && *again == *address, "ToString/Parse round trip", printed);
      if (address->is_v4()) Require(printed == text, "IPv4 literal is not canonical", text);
      Classify(*address);
      break;
    }
    case 1: {
      if (text.size() == 4) {
        std::array<uint8_t, 4> b;
        std::memcpy(b.data(), text.data(), 4);
        Classify(anvil::IpAddress::V4(b));
      } else if (text.size() >= 16) {
        anvil::IpAddress::Bytes b;
        std::memcpy(b.data(), text.data(), 16);
        Classify(anvil::IpAddress::V6(b));
      }
      break;
    }
    case 2: {
      auto prefix = anvil::ParseIpPrefix(text);
      if (!prefix) return 0;
      int max = prefix->address.is_v4() ? 32 : 128;
      Require(prefix->length >= 0 && prefix->length <= max, "prefix length", text);
      Require(prefix->Contains(prefix->address), "prefix contains its own address", text);
      Classify(prefix->address);
      break;
    }
  }
  return 0;
}
