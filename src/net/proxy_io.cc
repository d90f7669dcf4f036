#include "net/proxy_io.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/fd_io.h"

namespace anvil::proxy {

int MillisLeft(Clock::time_point deadline) {
  auto now = Clock::now();
  if (deadline <= now) return 0;
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
}

bool SendAll(int fd, std::string_view data) {
  return fd_io::SendAll(fd, data, 0, fd_io::Wait::EachAtMost(10000)).ok();
}

void Refuse(int fd, int status, const std::string& reason) {
  const char* text = status == 403   ? "Forbidden"
                     : status == 400 ? "Bad Request"
                     : status == 411 ? "Length Required"
                     : status == 502 ? "Bad Gateway"
                     : status == 503 ? "Service Unavailable"
                                     : "Gateway Timeout";
  std::string body = "anvil proxy: " + reason + "\n";
  std::string reply = "HTTP/1.1 " + std::to_string(status) + " " + text +
                      "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: " +
                      std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  SendAll(fd, reply);
}

std::optional<ProxyHeadRefusal> ReadHead(int fd, size_t cap, Clock::time_point deadline,
                                         std::string& buffer, size_t& head_end) {
  char chunk[4096];
  while (true) {
    auto pos = buffer.find("\r\n\r\n");
    if ((pos == std::string::npos ? buffer.size() : pos + 4) > cap) {
      return ProxyHeadRefusal{400, "request head over " + std::to_string(cap) + " bytes"};
    }
    if (pos != std::string::npos) {
      head_end = pos + 4;
      return std::nullopt;
    }
    if (buffer.size() > cap) {
      return ProxyHeadRefusal{400, "request head over " + std::to_string(cap) + " bytes"};
    }
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, MillisLeft(deadline));
    if (r == 0) {
      return ProxyHeadRefusal{0, "request head not received in time"};
    }
    if (r < 0 && errno == EINTR) continue;
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      return ProxyHeadRefusal{0, "connection closed before a request"};
    }
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

UniqueFd Dial(const IpAddress& address, uint16_t port, Clock::time_point deadline,
              std::string& error) {
  sockaddr_storage ss{};
  socklen_t len;
  if (address.is_v4()) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&ss);
    sin->sin_family = AF_INET;
    sin->sin_port = htons(port);
    std::memcpy(&sin->sin_addr, address.bytes().data(), 4);
    len = sizeof(sockaddr_in);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&ss);
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    std::memcpy(&sin6->sin6_addr, address.bytes().data(), 16);
    len = sizeof(sockaddr_in6);
  }
  UniqueFd s(::socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!s) {
    error = std::strerror(errno);
    return UniqueFd();
  }
  if (::connect(s.Get(), reinterpret_cast<sockaddr*>(&ss), len) != 0 && errno != EINPROGRESS) {
    error = std::strerror(errno);
    return UniqueFd();
  }
  pollfd p{s.Get(), POLLOUT, 0};
  int r = poll(&p, 1, MillisLeft(deadline));
  if (r <= 0) {
    error = "connect timed out";
    return UniqueFd();
  }
  int soerr = 0;
  socklen_t sl = sizeof(soerr);
  getsockopt(s.Get(), SOL_SOCKET, SO_ERROR, &soerr, &sl);
  if (soerr != 0) {
    error = std::strerror(soerr);
    return UniqueFd();
  }
  return s;
}

}  // namespace anvil::proxy
