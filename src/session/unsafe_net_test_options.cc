#include "session/unsafe_net_test_options.h"

#include <climits>
#include <cstdlib>

namespace anvil::session {

std::vector<std::string> UnsafeNetTestOptions::ToGatewayArgs() const {
  std::vector<std::string> args;
  if (!resolver.empty()) args.insert(args.end(), {"--unsafe-test-resolver", resolver});
  for (const std::string& a : allow_addresses) {
    args.insert(args.end(), {"--unsafe-test-allow-address", a});
  }
  if (!ca_file.empty()) args.insert(args.end(), {"--unsafe-test-ca", ca_file});
  return args;
}

bool UnsafeNetTestOptions::Take(const std::vector<std::string>& args, std::size_t& i,
                                std::string& error) {
  const std::string& flag = args[i];
  if (flag != "--unsafe-test-resolver" && flag != "--unsafe-test-allow-address" &&
      flag != "--unsafe-test-ca") {
    return false;
  }
  if (i + 1 >= args.size() || args[i + 1].empty()) {
    error = "invalid: " + flag + " needs a value";
    return true;
  }
  const std::string& value = args[++i];
  if (flag == "--unsafe-test-resolver") {
    resolver = value;
  } else if (flag == "--unsafe-test-allow-address") {
    allow_addresses.push_back(value);
  } else {
    // The gateway runs elsewhere (its own cwd) and wants an absolute path.
    char resolved[PATH_MAX];
    if (realpath(value.c_str(), resolved) == nullptr) {
      error = "invalid: --unsafe-test-ca: cannot open " + value;
      return true;
    }
    ca_file = resolved;
  }
  return true;
}

}  // namespace anvil::session
