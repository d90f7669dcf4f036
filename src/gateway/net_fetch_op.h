// The gateway's "net.fetch" operation (sys.net.fetch, threat model T2): grant → PlanFetch (URL,
// method, DNS, every answer checked) → Fetcher (pinned connect, caps), with one audit line per
// decision. The network settings below come from anvil-gateway's own command line, i.e. from
// the trusted side; nothing a plugin, a manifest or a workspace file says reaches them.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "gateway/audit_log.h"
#include "ipc/frame.h"
#include "net/cares_resolver.h"
#include "net/fetcher.h"
#include "netpolicy/connect_policy.h"
#include "policy/grant.h"

namespace anvil::gateway {

struct NetFetchOptions {
  // Test-only (--unsafe-test-*): a DNS server to ask instead of resolv.conf, addresses treated
  // as global (with their own port), a CA file trusted in addition to the system's.
  std::optional<DnsServer> unsafe_test_resolver;
  std::vector<UnsafeTestAllowAddress> unsafe_test_allow_addresses;
  std::string unsafe_test_ca_file;
  FetchLimits limits;
  std::chrono::milliseconds dns_deadline{5000};
  std::uint32_t max_fetches_per_plugin = 4;  // concurrent; beyond: "busy"
  std::uint32_t max_fetches_per_session = 8;
};

// Concurrent fetches per plugin and per session. Acquire never waits: over a cap is "busy" at
// once, so a plugin cannot park gateway workers in a queue of its own making.
class FetchSlots {
 public:
  FetchSlots(std::uint32_t per_plugin, std::uint32_t per_session)
      : per_plugin_(per_plugin), per_session_(per_session) {}

  class Slot {
   public:
    Slot(Slot&& other) noexcept : owner_(other.owner_), plugin_(std::move(other.plugin_)) {
      other.owner_ = nullptr;
    }
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    friend class FetchSlots;
    Slot(FetchSlots* owner, std::string plugin) : owner_(owner), plugin_(std::move(plugin)) {}
    FetchSlots* owner_;
    std::string plugin_;
  };

  Result<Slot> Acquire(const std::string& plugin);

 private:
  void Release(const std::string& plugin);
  std::uint32_t per_plugin_, per_session_;
  std::mutex mu_;
  std::map<std::string, std::uint32_t> by_plugin_;
  std::uint32_t total_ = 0;
};

// "net.fetch" as the dispatch sees it. Its one implementation, NetFetchService, is the only
// code of the gateway that reaches libcurl and c-ares: the dispatch and the server hold this
// interface, so an executable that does not link NetFetchService links no network code.
class NetService {
 public:
  virtual ~NetService() = default;
  // request.args: [url, method, headers as a JSON object, body ("" = none)]
  // reply fields: [status, response headers as a JSON object, body]
  // `cancelled`: the request's cancel flag, polled while the fetch runs.
  virtual ipc::Response Handle(const std::string& plugin, const Grant& grant,
                               const ipc::Request& request, AuditEntry& audit,
                               const std::atomic<bool>* cancelled = nullptr) = 0;
};

// Made by RunGateway before it hardens itself. Defined once per gateway executable:
// anvil-gateway's is NetFetchService::Create (net_fetch_op.cc); anvil-gateway-offline's,
// started for sessions whose plugins have no net grant, makes none (net_service_none.cc), and
// the dispatch then refuses every net.fetch.
Result<std::unique_ptr<NetService>> MakeNetService(const NetFetchOptions& options);

class NetFetchService : public NetService {
 public:
  // Reads the test CA file (before the gateway hardens itself, after which the file may be out
  // of reach) and initialises libcurl and c-ares while the process is single-threaded.
  static Result<std::unique_ptr<NetFetchService>> Create(const NetFetchOptions& options);

  ipc::Response Handle(const std::string& plugin, const Grant& grant, const ipc::Request& request,
                       AuditEntry& audit, const std::atomic<bool>* cancelled = nullptr) override;

 private:
  NetFetchService(const NetFetchOptions& options, std::string ca_pem);
  NetFetchOptions options_;
  Fetcher fetcher_;
  FetchSlots slots_;
};

}  // namespace anvil::gateway
