// What a gateway is started to serve, decided from the grants of the plugins it will serve
// (pure). Without fs.write it refuses every write op itself and skips its start-up scan of what
// git runs from the workspace; without exec it starts no exec broker; without net it is
// anvil-gateway-offline, which links no network code (no libcurl, c-ares or TLS libraries to
// load at start) and refuses every net.fetch. Shared by `anvil run`,
// `anvil mcp` and `anvil serve`: a serve session widens its gateway (a restart) before it admits
// a plugin whose grant needs more, so no write ever reaches a gateway that did not scan.
#pragma once

#include <string>
#include <vector>

#include "policy/grant.h"

namespace anvil::session {

struct GatewayServes {
  bool fs_write = false;
  bool exec = false;
  bool net = false;
  bool operator==(const GatewayServes&) const = default;
};

// What one grant needs of the gateway.
inline GatewayServes ServesFor(const Grant& grant) {
  return {!grant.fs_write.empty(), !grant.exec.empty(), !grant.net_hosts.empty()};
}

// Whether a gateway serving `have` serves a plugin that needs `need`.
inline bool Covers(GatewayServes have, GatewayServes need) {
  return (have.fs_write || !need.fs_write) && (have.exec || !need.exec) && (have.net || !need.net);
}

// Both: what a gateway serving two sets of plugins serves.
inline GatewayServes Union(GatewayServes a, GatewayServes b) {
  return {a.fs_write || b.fs_write, a.exec || b.exec, a.net || b.net};
}

// The gateway executable (a helper beside `anvil`) that serves `serves`: the one that can
// fetch only when a plugin may.
inline const char* GatewayExecutableFor(GatewayServes serves) {
  return serves.net ? "anvil-gateway" : "anvil-gateway-offline";
}

// The anvil-gateway flags that leave out what `serves` does not need.
inline std::vector<std::string> GatewayArgsFor(GatewayServes serves) {
  std::vector<std::string> args;
  // Without exec: no exec broker and no warm runners (their namespaces and views are most of a
  // session's start and of its teardown).
  if (!serves.exec) args.emplace_back("--no-exec");
  // Without fs.write no write op can pass, and the gateway skips the scan of what git runs.
  if (!serves.fs_write) args.emplace_back("--no-fs-write");
  return args;
}

}  // namespace anvil::session
