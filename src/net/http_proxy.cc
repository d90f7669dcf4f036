// anvil-proxy's accept loop and its connection handler, a short list of steps (HandleConnection);
// the request head is read by netpolicy/proxy_request, a tunnel's first bytes by tunnel_hello,
// the rest by the relay (splice_relay), with the socket helpers of proxy_io.
#include "net/http_proxy.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "net/proxy_io.h"
#include "net/splice_relay.h"
#include "net/tunnel_hello.h"
#include "netpolicy/proxy_request.h"

namespace anvil {
namespace {

using proxy::Clock;

// How a connection ends: its audit line's verdict and reason, and the refusal the client gets
// first (none when `status` is 0; its text is `reply`, or the reason when that is empty).
struct Ending {
  std::string verdict;
  std::string reason;
  int status = 0;
  std::string reply;
};

// One accepted connection, taken through HttpProxy::HandleConnection's steps in order. Each
// step either goes on (nothing) or says how the connection ends.
class Connection {
 public:
  using Step = std::optional<Ending> (Connection::*)();

  Connection(int client, const ProxyConfig& config)
      : client_(client), config_(config), started_(Clock::now()) {}

  // The request head, read within the head timeout and parsed (netpolicy/proxy_request).
  std::optional<Ending> ReadRequest();
  // The target: an --allow-host entry whose every address passes the address rules.
  std::optional<Ending> CheckTarget();
  // A connection to one of those addresses, the peer reached checked again.
  std::optional<Ending> DialUpstream();
  // What goes to the server first: a tunnel's first bytes from the client, once the
  // ClientHello among them names the target; a plain request's rewritten head and the part of
  // its body that came with it, also when it came inside a tunnel that is not TLS.
  std::optional<Ending> PrepareFirstBytes();
  // Those bytes, within the byte cap.
  std::optional<Ending> SendFirstBytes();
  // After the server's first answer: a HelloRetryRequest's second ClientHello checked too.
  std::optional<Ending> CheckHelloRetry();
  // Both ways until done or a cap.
  Ending Relay();
  // The refusal (if any), then the connection's one audit line.
  void End(const Ending& ending);

 private:
  const int client_;
  const ProxyConfig& config_;
  const Clock::time_point started_;
  ProxyAuditRecord rec_;
  std::string buffer_;  // what the client sent, from the request's first byte
  size_t head_end_ = 0;
  ProxyRequestHead request_;
  ProxyTarget target_;
  std::string origin_form_;
  std::vector<IpAddress> addresses_;
  ConnectPolicy policy_{{}};  // config_.policy with this machine's addresses as they are now
  UniqueFd upstream_;
  std::string first_;  // the bytes that go to the server ahead of the relay
  proxy::TunnelHello tls_;
};

std::optional<Ending> Connection::ReadRequest() {
  if (auto failed = proxy::ReadHead(client_, config_.limits.max_head_bytes,
                                    started_ + config_.limits.head_timeout, buffer_, head_end_)) {
    return Ending{"error", failed->reason, failed->status, ""};
  }
  auto request = ParseProxyRequestHead(std::string_view(buffer_).substr(0, head_end_));
  if (!request) return Ending{"error", request.error().reason, request.error().status, ""};
  request_ = std::move(*request);
  rec_.kind = request_.tunnel ? "connect" : "http";
  return std::nullopt;
}

std::optional<Ending> Connection::CheckTarget() {
  auto target = ParseProxyRequestTarget(request_, &origin_form_);
  if (!target) {
    rec_.target = request_.target.substr(0, 256);
    return Ending{"deny", target.error().ToString(), 403, ""};
  }
  target_ = std::move(*target);
  rec_.target = target_.host + ":" + std::to_string(target_.port);
  if (auto s = CheckProxyTarget(target_, config_.allowed); !s) {
    return Ending{"deny", s.error().ToString(), 403, ""};
  }
  policy_ = config_.policy;
  if (config_.local_addresses) {
    auto local = config_.local_addresses();
    if (!local) {
      return Ending{"error", "local addresses: " + local.error().ToString(), 502,
                    "cannot list this machine's addresses: " + local.error().message};
    }
    policy_ = ConnectPolicy(std::move(*local), config_.policy.unsafe_test());
  }
  // Every answer must pass, not just the one dialled (DNS rebinding picks the order).
  if (target_.literal) {
    addresses_.push_back(*target_.literal);
  } else {
    const std::string& host = target_.host;
    auto resolved = config_.resolver->Resolve(host);
    if (!resolved) {
      return Ending{"error", "resolve: " + resolved.error().ToString(), 502,
                    "cannot resolve " + host + ": " + resolved.error().message};
    }
    addresses_ = *resolved;
    if (addresses_.empty()) {
      return Ending{"error", "no address records", 502, host + " has no address records"};
    }
  }
  for (const auto& a : addresses_) {
    auto v = CheckProxyAddress(policy_, a, target_.port);
    if (!v.allowed) {
      std::string why =
          target_.literal
              ? "denied: address " + a.ToString() + " is not allowed (" + v.reason + ")"
              : "denied: " + target_.host + " resolves to " + a.ToString() + " (" + v.reason + ")";
      return Ending{"deny", why, 403, ""};
    }
  }
  return std::nullopt;
}

std::optional<Ending> Connection::DialUpstream() {
  std::string dial_error;
  for (const auto& a : addresses_) {
    upstream_ =
        proxy::Dial(a, target_.port, Clock::now() + config_.limits.connect_timeout, dial_error);
    if (!upstream_) continue;
    // The peer actually reached, checked again.
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    auto got = getpeername(upstream_.Get(), reinterpret_cast<sockaddr*>(&peer), &len) == 0
                   ? IpAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&peer))
                   : std::nullopt;
    if (!got || !CheckProxyAddress(policy_, *got, target_.port).allowed) {
      upstream_.Reset();
      dial_error = "dialled peer failed the address check";
      continue;
    }
    rec_.address = got->ToString();
    break;
  }
  if (!upstream_) {
    return Ending{"error", "connect: " + dial_error, 502,
                  "cannot connect to " + rec_.target + ": " + dial_error};
  }
  fcntl(upstream_.Get(), F_SETFL, fcntl(upstream_.Get(), F_GETFL) & ~O_NONBLOCK);
  return std::nullopt;
}

std::optional<Ending> Connection::PrepareFirstBytes() {
  first_ = buffer_.substr(head_end_);
  if (request_.tunnel) {
    if (!proxy::SendAll(client_, "HTTP/1.1 200 Connection Established\r\n\r\n")) {
      return Ending{"error", "client closed", 0, ""};
    }
    std::string verdict, why;
    const auto wait =
        std::min<Clock::duration>(config_.limits.head_timeout, config_.limits.idle_timeout);
    if (!proxy::CheckTunnelStart(client_, upstream_.Get(), target_, Clock::now() + wait, first_,
                                 tls_, verdict, why)) {
      return Ending{verdict, why, 0, ""};
    }
    if (!tls_.plain_http) return std::nullopt;
  }
  if (tls_.plain_http) {
    // Plain HTTP inside the tunnel: on as the plain request it is, for the tunnel's host.
    const size_t end = first_.find("\r\n\r\n");
    if (end == std::string::npos) {
      return Ending{"deny",
                    "denied: plain HTTP inside a tunnel: its head does not end in CRLF CRLF", 400,
                    ""};
    }
    auto request = ParseTunnelledRequestHead(std::string_view(first_).substr(0, end + 4), target_);
    if (!request) {
      return Ending{"deny", "denied: " + request.error().reason, request.error().status, ""};
    }
    auto target = ParseHttpTarget(request->target, &origin_form_);
    if (!target || !(*target == target_)) {
      return Ending{"deny", "denied: plain HTTP inside a tunnel: its target is not the tunnel's",
                    400, ""};
    }
    request_ = std::move(*request);
    first_.erase(0, end + 4);
  }
  // The announced body only: bytes beyond it (a pipelined request) are dropped.
  if (first_.size() > request_.body_length) first_.resize(request_.body_length);
  const std::string head = ForwardedRequestHead(request_, target_, origin_form_);
  request_.body_length -= first_.size();
  first_ = head + first_;
  return std::nullopt;
}

std::optional<Ending> Connection::SendFirstBytes() {
  // What goes to the server ahead of the relay (a tunnel's first bytes; a plain request's
  // rewritten head and the body bytes that came with it) counts toward the byte cap like
  // everything the relay moves.
  const bool over_cap = first_.size() > config_.limits.max_bytes;
  if (over_cap) first_.resize(config_.limits.max_bytes);
  rec_.bytes_up = first_.size();
  if (!first_.empty() && !proxy::SendAll(upstream_.Get(), first_)) {
    return Ending{"error", "upstream closed", 0, ""};
  }
  if (over_cap) return Ending{"allow", "byte cap", 0, ""};
  return std::nullopt;
}

std::optional<Ending> Connection::CheckHelloRetry() {
  if (!tls_.tls) return std::nullopt;
  std::string verdict, why;
  if (!proxy::CheckHelloRetry(client_, upstream_.Get(), target_, config_.limits, tls_, rec_,
                              verdict, why)) {
    return Ending{verdict, why, 0, ""};
  }
  return std::nullopt;
}

Ending Connection::Relay() {
  std::string ended;
  proxy::Relay(client_, upstream_.Get(), config_.limits, started_, request_.body_length, rec_,
               ended);
  return Ending{"allow", ended, 0, ""};
}

void Connection::End(const Ending& ending) {
  if (ending.status != 0) {
    proxy::Refuse(client_, ending.status, ending.reply.empty() ? ending.reason : ending.reply);
  }
  rec_.verdict = ending.verdict;
  rec_.reason = ending.reason;
  rec_.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - started_).count();
  if (config_.audit) config_.audit(rec_);
}

}  // namespace

AddressVerdict CheckProxyAddress(const ConnectPolicy& policy, const IpAddress& address,
                                 std::uint16_t port) {
  for (const auto& exempt : policy.unsafe_test().allow_addresses) {
    if (exempt.address == address && exempt.EffectivePort() == port) {
      return {true, "--unsafe-test-allow-address (test only)"};
    }
  }
  return policy.Check(address, kHttpsPort);
}

void HttpProxy::Serve(const std::vector<int>& listen_fds, const std::atomic<bool>& stop) {
  for (int fd : listen_fds) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::vector<pollfd> fds;
  for (int fd : listen_fds) fds.push_back({fd, POLLIN, 0});
  while (!stop.load()) {
    int r = poll(fds.data(), fds.size(), 100);
    if (r <= 0) continue;
    for (auto& p : fds) {
      if (!(p.revents & POLLIN)) continue;
      int c = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      if (active_.load() >= config_.limits.max_connections) {
        proxy::Refuse(
            c, 503,
            "too many connections (" + std::to_string(config_.limits.max_connections) + ")");
        ProxyAuditRecord rec{"", "", "deny", "connection cap", "", 0, 0, 0};
        if (config_.audit) config_.audit(rec);
        ::close(c);
        continue;
      }
      active_.fetch_add(1);
      std::thread([this, c] {
        HandleConnection(c);
        ::close(c);
        active_.fetch_sub(1);
      }).detach();
    }
  }
  while (active_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void HttpProxy::HandleConnection(int client) {
  Connection connection(client, config_);
  static constexpr Connection::Step kSteps[] = {
      &Connection::ReadRequest,        // 400, 411: the head
      &Connection::CheckTarget,        // 403: not allowed; 502: no address
      &Connection::DialUpstream,       // 502: not reached
      &Connection::PrepareFirstBytes,  // a tunnel's ClientHello; a plain request's head
      &Connection::SendFirstBytes,     // the byte cap
      &Connection::CheckHelloRetry,    // a tunnel's second ClientHello
  };
  for (Connection::Step step : kSteps) {
    if (auto ending = (connection.*step)()) return connection.End(*ending);
  }
  connection.End(connection.Relay());
}

}  // namespace anvil
