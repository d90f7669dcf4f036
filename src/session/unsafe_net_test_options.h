// The trusted side's test-only options for sys.net.fetch (INTERFACES.md): --unsafe-test-resolver,
// --unsafe-test-allow-address and --unsafe-test-ca, taken from the command line of `anvil run`
// (and `anvil serve`) and forwarded to anvil-gateway. They live in the session's gateway
// configuration and nowhere else: no manifest, grant, Anvil.toml or plugin request has a field
// for them. The gateway validates the values (strict address literals, ports, a PEM file).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace anvil::session {

struct UnsafeNetTestOptions {
  std::string resolver;                      // ADDR:PORT, empty: the system's resolv.conf
  std::vector<std::string> allow_addresses;  // ADDR[:PORT], each treated as a global address
  std::string ca_file;                       // absolute path, empty: system CAs only

  bool empty() const { return resolver.empty() && allow_addresses.empty() && ca_file.empty(); }
  std::vector<std::string> ToGatewayArgs() const;

  // If args[i] is one of the three flags, consumes it and its value (advancing i) and returns
  // true; `error` says what is wrong with a missing or unusable value. False for other args.
  bool Take(const std::vector<std::string>& args, std::size_t& i, std::string& error);
};

}  // namespace anvil::session
