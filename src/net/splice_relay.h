// anvil-proxy's relay (net/http_proxy.h): once a connection's target is checked and its first
// bytes are through, bytes move both ways between the client and the origin with splice(2)
// until both sides are done or a cap ends the connection.
#pragma once

#include <cstdint>
#include <string>

#include "net/http_proxy.h"
#include "net/proxy_io.h"

namespace anvil::proxy {

// Moves bytes both ways until both sides are done, a cap passes or the connection idles too
// long. No poll while data keeps coming: every step is retried until nothing moves, then one
// poll waits for whatever would let something move again. The byte cap counts bytes read from
// either side (both directions together, as before): at most `max_bytes` are ever forwarded,
// and one byte more read from either side ends the connection with "byte cap".
//
// `up_limit` bounds what goes from `a` to `b` (a plain request's announced body): what `a`
// sends past it is read and dropped (at most 1 MiB, then the connection ends), and `a`'s end
// still reaches `b` as a half-close.
void Relay(int a, int b, const ProxyLimits& limits, Clock::time_point started, uint64_t up_limit,
           ProxyAuditRecord& record, std::string& ended);

}  // namespace anvil::proxy
