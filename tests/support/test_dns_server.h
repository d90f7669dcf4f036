// A real DNS server on 127.0.0.1 (UDP) for the sys.net.fetch tests: answers A and AAAA queries
// from a table, can give a different answer to each successive query of a name (DNS rebinding),
// and counts the queries it saw. Unknown names get NXDOMAIN. Test-only; binds loopback only.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/unique_fd.h"
#include "netpolicy/ip_address.h"

namespace anvil::testing {

class TestDnsServer {
 public:
  // Binds 127.0.0.1 on an ephemeral port; aborts the test (ADD_FAILURE + nullptr) on error.
  static std::unique_ptr<TestDnsServer> Start();
  ~TestDnsServer();

  // Answers for `name`: the n-th query of that type gets answers[min(n, size-1)]. A name with
  // an entry for only one type answers NOERROR with no records for the other (NODATA).
  void SetA(const std::string& name, std::vector<std::vector<IpAddress>> answers);
  void SetAaaa(const std::string& name, std::vector<std::vector<IpAddress>> answers);
  // Shorthand: one fixed answer set, A and AAAA taken from the family of each address.
  void Set(const std::string& name, const std::vector<IpAddress>& addresses);

  int Queries(const std::string& name, int qtype) const;  // qtype 1 = A, 28 = AAAA
  int TotalQueries() const { return total_.load(); }
  std::string Address() const;  // "127.0.0.1:PORT", for --unsafe-test-resolver

 private:
  TestDnsServer() = default;
  void Serve();
  std::string Answer(const unsigned char* query, size_t length);

  UniqueFd socket_, stop_;
  std::uint16_t port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, std::vector<std::vector<IpAddress>>> table_;
  std::map<std::string, bool> known_;
  std::map<std::pair<std::string, int>, int> queries_;
  std::atomic<int> total_{0};
};

}  // namespace anvil::testing
