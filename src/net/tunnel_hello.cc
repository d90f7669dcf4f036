#include "net/tunnel_hello.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include "netpolicy/proxy_request.h"
#include "netpolicy/tls_client_hello.h"

namespace anvil::proxy {
namespace {

// The server name a tunnel's TLS ClientHello asks for must be the tunnel's host: a hello naming
// another site would reach it through an allowed address (domain fronting), and a hello with no
// name leaves the server to pick one. An address target carries no name (clients send none).
bool CheckServerName(const ProxyTarget& target, const std::optional<std::string>& name,
                     std::string& reason) {
  if (target.literal) {
    if (!name) return true;
    reason = "denied: TLS server name " + *name + " on a tunnel to the address " + target.host;
    return false;
  }
  if (!name) {
    reason = "denied: TLS ClientHello without a server name on a tunnel to " + target.host;
    return false;
  }
  if (*name != target.host) {
    reason = "denied: TLS server name " + *name + " is not the tunnel's host " + target.host;
    return false;
  }
  return true;
}

}  // namespace

TunnelStartStep DecideTunnelStart(const ProxyTarget& target, std::string& first, TunnelHello& tls,
                                  std::string& reason, size_t read_limit) {
  if (first.empty()) return TunnelStartStep::kNeedMore;
  ClientHello hello = ParseClientHello(first);
  switch (hello.status) {
    case ClientHelloStatus::kOk:
      if (!CheckServerName(target, hello.server_name, reason)) return TunnelStartStep::kDeny;
      tls.tls = true;
      tls.early_data = hello.offers_early_data;
      tls.held = first.substr(hello.record_size);
      first.resize(hello.record_size);
      return TunnelStartStep::kPass;
    case ClientHelloStatus::kAlert:
    case ClientHelloStatus::kMalformed:
      reason = "denied: TLS ClientHello refused: " + hello.error;
      return TunnelStartStep::kDeny;
    case ClientHelloStatus::kNotTls:
      if (target.port == kHttpsPort) {
        reason = "denied: a tunnel to port 443 must begin with a TLS ClientHello";
        return TunnelStartStep::kDeny;
      }
      switch (ClassifyTunnelStart(first)) {
        case TunnelHttpStart::kNotHttp:
          return TunnelStartStep::kPass;
        case TunnelHttpStart::kHttp09:
          reason =
              "denied: an HTTP/0.9 request (a request line without a version) inside a tunnel "
              "names no host to check; send HTTP/1.1";
          return TunnelStartStep::kDeny;
        case TunnelHttpStart::kHttpRequest:
          // The head's end, or a blank line a lenient server would take for it (which the
          // strict parse then refuses).
          if (first.find("\n\r\n") != std::string::npos ||
              first.find("\n\n") != std::string::npos) {
            tls.plain_http = true;
            return TunnelStartStep::kPass;
          }
          if (first.size() >= read_limit) {
            reason = "denied: plain HTTP inside a tunnel: request head over " +
                     std::to_string(read_limit) + " bytes";
            return TunnelStartStep::kDeny;
          }
          break;
        case TunnelHttpStart::kNeedMore:
          break;
      }
      break;
    case ClientHelloStatus::kNeedMore:
      break;
  }
  if (first.size() >= read_limit) {
    // Fail closed, and say so: the limit is not the client closing.
    reason = "denied: the tunnel's first " + std::to_string(read_limit) +
             " bytes still do not show what it carries (" +
             (static_cast<uint8_t>(first[0]) == 0x16 ? "a TLS record that does not end"
                                                     : "a first line that does not end") +
             ")";
    return TunnelStartStep::kDeny;
  }
  return TunnelStartStep::kNeedMore;
}

bool CheckTunnelStart(int client, int upstream, const ProxyTarget& target,
                      Clock::time_point deadline, std::string& first, TunnelHello& tls,
                      std::string& verdict, std::string& reason) {
  verdict = "deny";
  tls = {};
  while (true) {
    switch (DecideTunnelStart(target, first, tls, reason)) {
      case TunnelStartStep::kPass:
        return true;
      case TunnelStartStep::kDeny:
        return false;
      case TunnelStartStep::kNeedMore:
        break;
    }
    // Port 443 carries TLS, which the client always starts: only the client is waited for.
    // Elsewhere a server that speaks first (SSH, SMTP) means the tunnel is not TLS.
    pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
    const bool server_may_start = first.empty() && target.port != kHttpsPort;
    int r = poll(fds, server_may_start ? 2 : 1, MillisLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      verdict = r == 0 && first.empty() ? "allow" : "error";
      reason = r != 0          ? std::string("poll: ") + std::strerror(errno)
               : first.empty() ? "idle timeout"
               : static_cast<uint8_t>(first[0]) == 0x16
                   ? "tunnel: the client's TLS ClientHello did not arrive in time"
                   : "tunnel: the client's first line or request head did not end in time";
      return false;
    }
    if (fds[0].revents != 0) {
      char buf[4096];
      const size_t want =
          std::min(sizeof(buf), kMaxClientHelloBytes - first.size());  // > 0: decided
      ssize_t n = ::recv(client, buf, want, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        verdict = "error";
        reason = "tunnel: the client closed before sending";
        return false;
      }
      first.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (server_may_start && fds[1].revents != 0) return true;  // the server speaks first
  }
}

bool CheckHelloRetry(int client, int upstream, const ProxyTarget& target, const ProxyLimits& limits,
                     const TunnelHello& tls, ProxyAuditRecord& rec, std::string& verdict,
                     std::string& reason) {
  // Reads what `fd` has (at most `limit` bytes in all) into `into`. False with verdict/reason
  // on a timeout or a poll error; `ended` when the peer closed or the socket failed.
  auto read_some = [&](int fd, std::string& into, size_t limit, Clock::time_point deadline,
                       const char* late, bool& ended) {
    ended = false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, MillisLeft(deadline));
    if (r < 0 && errno == EINTR) return true;
    if (r <= 0) {
      verdict = r == 0 && into.empty() && fd == upstream ? "allow" : "error";
      reason = r != 0 ? std::string("poll: ") + std::strerror(errno) : late;
      return false;
    }
    char buf[4096];
    ssize_t n = ::recv(fd, buf, std::min(sizeof(buf), limit - into.size()), MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) {
      ended = true;
      return true;
    }
    into.append(buf, static_cast<size_t>(n));
    return true;
  };
  auto forward = [&](int to, const std::string& data, uint64_t& counter) {
    if (data.empty()) return true;
    if (rec.bytes_up + rec.bytes_down + data.size() > limits.max_bytes) {
      verdict = "allow";
      reason = "byte cap";
      return false;
    }
    if (!SendAll(to, data)) {
      verdict = "error";
      reason = to == client ? "client closed" : "upstream closed";
      return false;
    }
    counter += data.size();
    return true;
  };

  // The server's first bytes, up to what decides it; for a retry request, all of it.
  constexpr size_t kMaxHelloRetryBytes = 4 * (5 + 16384);
  std::string server;
  ServerFirst kind = ServerFirst::kNeedMore;
  bool ended = false;
  const auto server_deadline = Clock::now() + limits.idle_timeout;
  while (true) {
    if (kind == ServerFirst::kNeedMore) kind = ClassifyServerFirst(server);
    if (kind == ServerFirst::kOther) break;
    if (kind == ServerFirst::kHelloRetryRequest) {
      auto end = FirstHandshakeMessageEnd(server);
      if (end && *end == kNotAHandshake) {
        verdict = "error";
        reason = "tunnel: a malformed TLS HelloRetryRequest from the server";
        return false;
      }
      if (end) break;
    }
    if (ended || server.size() >= kMaxHelloRetryBytes) {
      verdict = "error";
      reason = ended ? "tunnel: the server closed before it answered the ClientHello"
                     : "tunnel: the server's HelloRetryRequest is too long";
      return false;
    }
    const size_t limit =
        kind == ServerFirst::kNeedMore ? kServerHelloPrefixBytes : kMaxHelloRetryBytes;
    if (!read_some(upstream, server, limit, server_deadline, "idle timeout", ended)) return false;
  }
  if (!forward(client, server, rec.bytes_down)) return false;
  if (kind != ServerFirst::kHelloRetryRequest) return forward(upstream, tls.held, rec.bytes_up);

  std::string second = tls.held;
  const auto client_deadline =
      Clock::now() + std::min<Clock::duration>(limits.head_timeout, limits.idle_timeout);
  while (true) {
    ClientHello hello = ParseSecondClientHello(second, tls.early_data);
    if (hello.status == ClientHelloStatus::kOk) {
      if (!CheckServerName(target, hello.server_name, reason)) {
        verdict = "deny";
        reason += " (the second ClientHello, after a HelloRetryRequest)";
        return false;
      }
      break;
    }
    if (hello.status == ClientHelloStatus::kAlert) {
      verdict = "error";
      reason = "tunnel: " + hello.error;
      return false;
    }
    if (hello.status != ClientHelloStatus::kNeedMore) {
      verdict = "deny";
      reason = "denied: TLS ClientHello refused: " + hello.error;
      return false;
    }
    if (ended || second.size() >= kMaxSecondClientHelloBytes) {
      verdict = "error";
      reason = ended ? "tunnel: the client closed before its second ClientHello"
                     : "tunnel: the second ClientHello is too long";
      return false;
    }
    if (!read_some(client, second, kMaxSecondClientHelloBytes, client_deadline,
                   "tunnel: the client's second TLS ClientHello did not arrive in time", ended)) {
      return false;
    }
  }
  return forward(upstream, second, rec.bytes_up);
}

}  // namespace anvil::proxy
