// anvil-gateway-offline's MakeNetService: no network service at all. The trusted side starts
// this executable for a session none of whose plugins has a net grant (session/gateway_serves.h),
// so it neither loads libcurl, c-ares and their TLS libraries nor initialises them; a net.fetch
// that reached it anyway is refused by the dispatch ("sys.net is not available"). Linked instead
// of net_fetch_op.cc, never beside it.
#include "gateway/net_fetch_op.h"

namespace anvil::gateway {

Result<std::unique_ptr<NetService>> MakeNetService(const NetFetchOptions&) {
  return std::unique_ptr<NetService>();
}

}  // namespace anvil::gateway
