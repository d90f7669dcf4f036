// A socket bound to 127.0.0.1 on an ephemeral port that never answers: as UDP, a DNS server
// that stays silent (resolver deadlines); as TCP (listening, never accepting), a "proxy" whose
// only job is to show whether anything tried to connect to it.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cstdint>

#include "common/unique_fd.h"

namespace anvil::testing {

// SOCK_DGRAM or SOCK_STREAM (then listening). An empty UniqueFd on failure.
inline UniqueFd BindLoopback(int type, std::uint16_t* port) {
  UniqueFd fd(::socket(AF_INET, type | SOCK_CLOEXEC, 0));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (!fd || bind(fd.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      (type == SOCK_STREAM && listen(fd.Get(), 8) != 0) ||
      getsockname(fd.Get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return UniqueFd();
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// True when a connection is waiting on a listening socket from BindLoopback(SOCK_STREAM).
inline bool HasPendingConnection(const UniqueFd& listener) {
  pollfd p{listener.Get(), POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}

}  // namespace anvil::testing
