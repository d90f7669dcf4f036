#include "gateway/net_fetch_op.h"

#include <fcntl.h>
#include <unistd.h>

#include "common/unique_fd.h"
#include "net/curl_url_check.h"
#include "net/local_interfaces.h"
#include "netpolicy/fetch_plan.h"
#include "netpolicy/request_headers.h"
#include "netpolicy/url_policy.h"

namespace anvil::gateway {

namespace {

using ipc::Request;
using ipc::Response;

constexpr std::size_t kMaxCaFileBytes = 1u << 20;
constexpr std::size_t kMaxAuditedUrl = 512;

Result<std::string> ReadSmallFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
  if (!fd) return SysFail("io", "open " + path);
  std::string data;
  char buffer[8192];
  while (true) {
    const ssize_t n = ::read(fd.Get(), buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return SysFail("io", "read " + path);
    }
    if (n == 0) break;
    data.append(buffer, static_cast<std::size_t>(n));
    if (data.size() > kMaxCaFileBytes) return Fail("invalid", path + " is too large for a CA file");
  }
  if (data.find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    return Fail("invalid", path + " holds no PEM certificate");
  }
  return data;
}

Response Refuse(const Request& r, const Error& e, AuditEntry& audit) {
  audit.verdict = e.code == "denied" ? "deny" : e.code == "busy" ? "busy" : "error";
  audit.code = e.code;
  audit.reason = e.message;
  return Response::Error(r.id, e.code, e.message);
}

}  // namespace

FetchSlots::Slot::~Slot() {
  if (owner_ != nullptr) owner_->Release(plugin_);
}

Result<FetchSlots::Slot> FetchSlots::Acquire(const std::string& plugin) {
  std::lock_guard lock(mu_);
  if (total_ >= per_session_) {
    return Fail("busy", "session is at its limit of " + std::to_string(per_session_) +
                            " concurrent fetches");
  }
  std::uint32_t& mine = by_plugin_[plugin];
  if (mine >= per_plugin_) {
    return Fail("busy",
                "plugin is at its limit of " + std::to_string(per_plugin_) + " concurrent fetches");
  }
  ++mine;
  ++total_;
  return Slot(this, plugin);
}

void FetchSlots::Release(const std::string& plugin) {
  std::lock_guard lock(mu_);
  auto it = by_plugin_.find(plugin);
  if (it != by_plugin_.end() && --it->second == 0) by_plugin_.erase(it);
  --total_;
}

Result<std::unique_ptr<NetFetchService>> NetFetchService::Create(const NetFetchOptions& options) {
  std::string ca_pem;
  if (!options.unsafe_test_ca_file.empty()) {
    ANVIL_TRY(pem, ReadSmallFile(options.unsafe_test_ca_file));
    ca_pem = std::move(*pem);
  }
  return std::unique_ptr<NetFetchService>(new NetFetchService(options, std::move(ca_pem)));
}

Result<std::unique_ptr<NetService>> MakeNetService(const NetFetchOptions& options) {
  ANVIL_TRY(service, NetFetchService::Create(options));
  return std::unique_ptr<NetService>(std::move(*service));
}

NetFetchService::NetFetchService(const NetFetchOptions& options, std::string ca_pem)
    : options_(options),
      fetcher_(options.limits, std::move(ca_pem)),
      slots_(options.max_fetches_per_plugin, options.max_fetches_per_session) {}

Response NetFetchService::Handle(const std::string& plugin, const Grant& grant, const Request& r,
                                 AuditEntry& audit, const std::atomic<bool>* cancelled) {
  audit.op = r.op;
  if (r.args.size() != 4) {
    return Refuse(r, Error{"invalid", "net.fetch takes url, method, headers, body", 0}, audit);
  }
  const std::string& url = r.args[0];
  const std::string& method = r.args[1];
  // The URL as the plugin wrote it (bounded): the audit line must show what was asked.
  audit.target = method.substr(0, 16) + " " + url.substr(0, kMaxAuditedUrl);
  auto headers = ParseRequestHeaders(r.args[2]);
  if (!headers) return Refuse(r, headers.error(), audit);
  auto hosts = HostAllowlist::Create(grant.net_hosts);
  if (!hosts) {
    return Refuse(r,
                  Error{"denied", "the grant's net.hosts is unusable: " + hosts.error().message, 0},
                  audit);
  }
  const NetGrant net_grant{std::move(*hosts), grant.net_post};
  auto slot = slots_.Acquire(plugin);
  if (!slot) return Refuse(r, slot.error(), audit);

  // A fresh snapshot of this machine's addresses per fetch: an interface that came up since
  // start-up must not become a target.
  UnsafeTestOptions unsafe;
  unsafe.allow_addresses = options_.unsafe_test_allow_addresses;
  auto policy = ConnectPolicyForThisMachine(unsafe);
  if (!policy) return Refuse(r, policy.error(), audit);

  CaresResolver resolver({options_.unsafe_test_resolver, options_.dns_deadline});
  auto plan = PlanFetch(url, method, net_grant, resolver, *policy);
  if (!plan) return Refuse(r, plan.error(), audit);

  auto response = fetcher_.Fetch(*plan, *headers, r.args[3], *policy, cancelled);
  if (!response) return Refuse(r, response.error(), audit);
  audit.verdict = "allow";
  audit.reason = "host " + plan->url.host + " via " + response->peer.ToString() + ": status " +
                 std::to_string(response->status);
  audit.bytes = response->body.size();
  return Response{r.id,
                  true,
                  {std::to_string(response->status), HeadersToJson(response->headers),
                   std::move(response->body)}};
}

}  // namespace anvil::gateway
