// Name resolution for sys.net.fetch, and the rule applied to its answers (threat model T2):
// every A and AAAA answer must be an acceptable connect target, not just the first one, because
// libcurl or the OS may try them in any order and a DNS-rebinding attacker controls the order.
// The resolver is an interface so that tests use a fixed table (StaticResolver) and never do DNS;
// the production implementation (c-ares / getaddrinfo) comes with the fetcher.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "netpolicy/connect_policy.h"
#include "netpolicy/ip_address.h"

namespace anvil {

class Resolver {
 public:
  virtual ~Resolver() = default;
  // All A and AAAA answers for `host` (CNAMEs followed). NXDOMAIN is an error ("not_found"); a
  // name with no address records is an empty vector.
  virtual Result<std::vector<IpAddress>> Resolve(const std::string& host) = 0;
};

// A fixed name table: a host has addresses, an alias (CNAME), or no records (NOERROR/NODATA);
// any other name is NXDOMAIN. Names are matched ASCII-case-insensitively, as DNS does.
class StaticResolver : public Resolver {
 public:
  void AddAddress(const std::string& host, const IpAddress& address);
  void AddAlias(const std::string& host, const std::string& target);
  void AddNoData(const std::string& host);

  Result<std::vector<IpAddress>> Resolve(const std::string& host) override;

  // How many times Resolve was called: tests use it to prove a URL was refused before DNS.
  int queries() const { return queries_; }

 private:
  struct Entry {
    std::vector<IpAddress> addresses;
    std::string alias;  // non-empty: CNAME to this name
  };
  std::map<std::string, Entry> entries_;
  int queries_ = 0;
};

// Resolves `host` and refuses unless there is at least one answer and every answer passes
// `policy.Check(answer, port)`. The error names the offending address and the range it is in.
// Returns the de-duplicated answers, in resolver order: the only addresses the fetch may dial.
Result<std::vector<IpAddress>> ResolveAndValidate(Resolver& resolver, const std::string& host,
                                                  std::uint16_t port, const ConnectPolicy& policy);

}  // namespace anvil
