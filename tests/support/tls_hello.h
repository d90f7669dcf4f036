// The first bytes a real TLS client sends: OpenSSL (TLS 1.2-1.3) over memory BIOs, no network.
#pragma once

#include <string>

namespace anvil::testing {

// The ClientHello record(s) of a fresh OpenSSL client, naming `sni` ("" = no server name).
std::string RealClientHello(const std::string& sni);

}  // namespace anvil::testing
