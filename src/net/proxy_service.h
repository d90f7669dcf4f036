// What anvil-proxy's main wires together besides the proxy itself (src/cmd/anvil_proxy.cc): the
// --status-fd pipe, the audit sink (the audit log's lines and the refusals for `anvil sandbox`),
// and the proxy's configuration from its flags.
#pragma once

#include <mutex>
#include <set>
#include <string>

#include "common/result.h"
#include "common/unique_fd.h"
#include "net/cares_resolver.h"
#include "net/http_proxy.h"
#include "net/proxy_flags.h"

namespace anvil {

// --status-fd: "ok" or why not (then closed), and after "ok" the refusals (ProxyAuditSink).
struct ProxyStatusPipe {
  int fd = -1;
  void Report(const std::string& line);
};

// Every connection's record: one JSON line in the audit log (or on stderr). After "ok", the
// status descriptor carries each distinct refusal as one JSON line, so that `anvil sandbox` can
// say what was refused once the command has exited. Never blocking: a full pipe drops the line
// (the audit log keeps everything).
class ProxyAuditSink {
 public:
  static constexpr size_t kMaxRefusalLines = 32;

  explicit ProxyAuditSink(const ProxyStatusPipe& status) : status_(status) {}
  bool Open(const std::string& path);
  void Record(const ProxyAuditRecord& r);

 private:
  const ProxyStatusPipe& status_;
  UniqueFd fd_;
  std::mutex mu_;
  std::set<std::string> refusals_sent_;
};

// The allowlist, the connect policy and the resolver's options, from the flags.
Status ConfigureProxy(const ProxyOptions& o, ProxyConfig& config,
                      CaresResolverOptions& resolver_options);

}  // namespace anvil
