#include "netpolicy/resolver.h"

#include <algorithm>

#include "common/ascii.h"

namespace anvil {

namespace {

// Same bound as common stub resolvers; a longer chain is a loop or an attack.
constexpr int kMaxAliasDepth = 8;

}  // namespace

void StaticResolver::AddAddress(const std::string& host, const IpAddress& address) {
  entries_[AsciiLower(host)].addresses.push_back(address);
}

void StaticResolver::AddAlias(const std::string& host, const std::string& target) {
  entries_[AsciiLower(host)].alias = AsciiLower(target);
}

void StaticResolver::AddNoData(const std::string& host) { entries_[AsciiLower(host)]; }

Result<std::vector<IpAddress>> StaticResolver::Resolve(const std::string& host) {
  ++queries_;
  std::string name = AsciiLower(host);
  for (int depth = 0; depth <= kMaxAliasDepth; ++depth) {
    const auto it = entries_.find(name);
    if (it == entries_.end()) return Fail("not_found", "no such host: " + host);
    if (it->second.alias.empty()) return it->second.addresses;
    name = it->second.alias;
  }
  return Fail("not_found", "CNAME chain too long for " + host);
}

Result<std::vector<IpAddress>> ResolveAndValidate(Resolver& resolver, const std::string& host,
                                                  std::uint16_t port, const ConnectPolicy& policy) {
  ANVIL_TRY(answers, resolver.Resolve(host));
  // No answers is a refusal, not "nothing to check": the caller must never fall back to letting
  // libcurl resolve the name itself.
  if (answers->empty()) return Fail("not_found", host + " has no A or AAAA records");
  std::vector<IpAddress> unique;
  for (const IpAddress& address : *answers) {
    if (std::find(unique.begin(), unique.end(), address) != unique.end()) continue;
    // One bad answer refuses the whole name: with a mixed answer set the address actually dialled
    // is up to the attacker (rebinding, happy eyeballs), not to us.
    const AddressVerdict verdict = policy.Check(address, port);
    if (!verdict.allowed) {
      return Fail("denied", host + " resolves to " + address.ToString() + ": " + verdict.reason);
    }
    unique.push_back(address);
  }
  return unique;
}

}  // namespace anvil
