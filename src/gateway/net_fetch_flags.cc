#include "gateway/net_fetch_flags.h"

#include <charconv>
#include <cstdint>

namespace anvil::gateway {

const char kNetFetchFlagsUsage[] = R"(sys.net.fetch:
  --net-max-body-bytes N        response body cap after decompression (default 8 MiB)
  --net-max-header-bytes N      response header cap (default 64 KiB)
  --net-connect-timeout-ms N    (default 10000)   --net-timeout-ms N   total (default 30000)
  --net-low-speed-time S        abort below 1 KiB/s for S seconds (default 10)
  --net-max-fetches-per-plugin N (default 4)      --net-max-fetches N  per session (default 8)
  --net-dns-timeout-ms N        whole DNS lookup (default 5000)
TEST ONLY -- never in production; they widen what plugins can reach:
  --unsafe-test-resolver ADDR:PORT          ask this DNS server instead of resolv.conf
  --unsafe-test-allow-address ADDR[:PORT]   treat ADDR as global; allow PORT (default 443)
  --unsafe-test-ca FILE                     trust this CA as well as the system's
)";

namespace {

bool ParseCount(const std::string& text, std::uint64_t& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out > 0;
}

}  // namespace

bool TakeNetFetchFlag(const std::vector<std::string>& args, std::size_t& i,
                      NetFetchOptions& options, std::string& error) {
  const std::string& flag = args[i];
  const bool known = flag == "--unsafe-test-resolver" || flag == "--unsafe-test-allow-address" ||
                     flag == "--unsafe-test-ca" || flag == "--net-max-body-bytes" ||
                     flag == "--net-max-header-bytes" || flag == "--net-connect-timeout-ms" ||
                     flag == "--net-timeout-ms" || flag == "--net-low-speed-time" ||
                     flag == "--net-max-fetches-per-plugin" || flag == "--net-max-fetches" ||
                     flag == "--net-dns-timeout-ms";
  if (!known) return false;
  if (i + 1 >= args.size()) {
    error = "invalid: " + flag + " needs a value";
    return true;
  }
  const std::string& value = args[++i];
  if (flag == "--unsafe-test-resolver") {
    auto server = ParseDnsServer(value);
    if (!server) error = server.error().ToString();
    if (server) options.unsafe_test_resolver = *server;
    return true;
  }
  if (flag == "--unsafe-test-allow-address") {
    auto entry = ParseUnsafeTestAllowAddress(value);
    if (!entry) error = entry.error().ToString();
    if (entry) options.unsafe_test_allow_addresses.push_back(*entry);
    return true;
  }
  if (flag == "--unsafe-test-ca") {
    if (value.empty() || value[0] != '/')
      error = "invalid: --unsafe-test-ca needs an absolute path";
    options.unsafe_test_ca_file = value;
    return true;
  }
  std::uint64_t n = 0;
  if (!ParseCount(value, n) || n > (1ull << 40)) {
    error = "invalid: " + flag + " needs a positive number";
    return true;
  }
  if (flag == "--net-max-body-bytes") options.limits.max_body_bytes = n;
  if (flag == "--net-max-header-bytes") options.limits.max_header_bytes = n;
  if (flag == "--net-connect-timeout-ms")
    options.limits.connect_timeout = std::chrono::milliseconds(n);
  if (flag == "--net-timeout-ms") options.limits.total_timeout = std::chrono::milliseconds(n);
  if (flag == "--net-low-speed-time") options.limits.low_speed_time = std::chrono::seconds(n);
  if (flag == "--net-max-fetches-per-plugin")
    options.max_fetches_per_plugin = static_cast<std::uint32_t>(n);
  if (flag == "--net-dns-timeout-ms") options.dns_deadline = std::chrono::milliseconds(n);
  if (flag == "--net-max-fetches") options.max_fetches_per_session = static_cast<std::uint32_t>(n);
  return true;
}

}  // namespace anvil::gateway
