// A CONNECT tunnel's first bytes, read by anvil-proxy before the relay starts (net/http_proxy.h):
// the site stays the allowed one on a shared server because a TLS ClientHello must name the
// CONNECT host (netpolicy/tls_client_hello.h), the first one and, after a HelloRetryRequest,
// the second.
#pragma once

#include <string>

#include "net/http_proxy.h"
#include "net/proxy_io.h"
#include "netpolicy/proxy_policy.h"
#include "netpolicy/tls_client_hello.h"

namespace anvil::proxy {

// What the client's first bytes through a tunnel turned out to be (CheckTunnelStart).
struct TunnelHello {
  bool tls = false;         // the tunnel began with a ClientHello that passed
  bool early_data = false;  // it offered 0-RTT early data
  std::string held;         // bytes the client sent after it, not forwarded yet
  // Not TLS: the tunnel began with a plain HTTP request, whose head (and what came with it) is
  // in `first`; it goes on as a plain request for the tunnel's host (http_proxy.cc).
  bool plain_http = false;
};

// What the client's first bytes through a tunnel decide (CheckTunnelStart's step, pure).
enum class TunnelStartStep { kNeedMore, kPass, kDeny };

// Decides from `first` as CheckTunnelStart describes: kPass (with `tls` filled and `first` cut
// to what goes now), kDeny with `reason`, or kNeedMore. Bytes that reach `read_limit` and still
// decide nothing are refused, the reason saying so (no input does today: a TLS record fits the
// limit and the first 8 KiB decide plain HTTP).
TunnelStartStep DecideTunnelStart(const ProxyTarget& target, std::string& first, TunnelHello& tls,
                                  std::string& reason, size_t read_limit = kMaxClientHelloBytes);

// Reads what the client sends first through a tunnel (after `first`, what it sent with the
// CONNECT head) until it shows what the tunnel carries: a TLS ClientHello is checked
// (CheckServerName) and a malformed one refused; a tunnel to port 443 must start with one;
// anything else passes, as does a tunnel whose server speaks first (TLS never does). `first`
// ends up holding the bytes to forward now. For TLS (`hello.tls`) that is only the hello's
// record: whatever came after it is held (`hello.held`) until CheckHelloRetry has seen what
// the server answered, since after a retry request it would be the client's second hello. A
// tunnel that is not TLS and begins with what a server would read as an HTTP request line
// (ClassifyTunnelStart) is read up to the end of that request's head (`tls.plain_http`), so that
// it goes on as a plain request: its own Host would otherwise pick the site.
// On false, `verdict` is "deny" (a refused hello), "error" or "allow" (the tunnel idled out
// before either side sent anything, as the relay's idle timeout would end it).
bool CheckTunnelStart(int client, int upstream, const ProxyTarget& target,
                      Clock::time_point deadline, std::string& first, TunnelHello& tls,
                      std::string& verdict, std::string& reason);

// A tunnel whose client began with a ClientHello that passed (forwarded) and `tls.held` (what
// the client sent after it, held back): reads what the server answers first and forwards it to
// the client. A HelloRetryRequest (RFC 8446 4.1.4) makes the client send a second ClientHello,
// in clear, that could name another site than the first did (a client can always provoke one,
// e.g. by offering no key share): the whole retry request is forwarded, then the second hello
// (the held bytes first) is read and checked like the first before any of it reaches the
// server; nothing but at most a compatibility ChangeCipherSpec and, after a 0-RTT offer, early
// data may come before it, and nothing after it. Anything else the server sends first (a
// ServerHello, an alert) ends the checks: the held bytes go on and the relay carries the rest.
// What moves here counts in `rec` toward the byte cap. On false, `verdict` and `reason` say why
// the tunnel ends.
bool CheckHelloRetry(int client, int upstream, const ProxyTarget& target, const ProxyLimits& limits,
                     const TunnelHello& tls, ProxyAuditRecord& rec, std::string& verdict,
                     std::string& reason);

}  // namespace anvil::proxy
