// The production HttpProxy on a loopback listener of a test's own, an origin thread on
// 127.0.0.1 and the socket reads the proxy tests share (http_proxy_relay_test.cc,
// http_proxy_tunnel_http_test.cc).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "loopback_socket.h"
#include "net/http_proxy.h"
#include "netpolicy/proxy_policy.h"

namespace anvil::testing {

using namespace std::chrono_literals;

// Reads up to and including "\r\n\r\n", one byte at a time so nothing after it is consumed.
inline std::string ReadHead(int fd) {
  std::string head;
  char c;
  while (head.size() < 16384 && head.find("\r\n\r\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0 || ::recv(fd, &c, 1, 0) != 1) break;
    head.push_back(c);
  }
  return head;
}

// Reads exactly `n` bytes (fewer on EOF or a 10 s silence).
inline std::string ReadExactly(int fd, size_t n) {
  std::string out;
  char buf[4096];
  while (out.size() < n) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 10000) <= 0) break;
    ssize_t got = ::recv(fd, buf, std::min(sizeof(buf), n - out.size()), 0);
    if (got <= 0) break;
    out.append(buf, static_cast<size_t>(got));
  }
  return out;
}

// Reads until EOF or `silence` without a byte.
inline std::string ReadAll(int fd, std::chrono::milliseconds silence = 10000ms) {
  std::string out;
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(silence.count())) <= 0) break;
    ssize_t got = ::recv(fd, buf, sizeof(buf), 0);
    if (got <= 0) break;
    out.append(buf, static_cast<size_t>(got));
  }
  return out;
}

// One connection on 127.0.0.1, handled by `handler` on its own thread.
class Origin {
 public:
  explicit Origin(std::function<void(int)> handler) : handler_(std::move(handler)) {
    listener_ = BindLoopback(SOCK_STREAM, &port_);
    EXPECT_TRUE(listener_) << std::strerror(errno);
    thread_ = std::thread([this] {
      pollfd p{listener_.Get(), POLLIN, 0};
      if (poll(&p, 1, 20000) <= 0) return;
      UniqueFd c(::accept4(listener_.Get(), nullptr, nullptr, SOCK_CLOEXEC));
      if (c) handler_(c.Get());
    });
  }
  ~Origin() { thread_.join(); }
  uint16_t port() const { return port_; }

 private:
  std::function<void(int)> handler_;
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::thread thread_;
};

// The production proxy on a loopback listener, allowed to reach exactly the origin's port.
class Proxy {
 public:
  Proxy(uint16_t origin_port, ProxyLimits limits) {
    listener_ = BindLoopback(SOCK_STREAM, &port_);
    EXPECT_TRUE(listener_);
    ProxyConfig config;
    auto target = ParseAllowHost("127.0.0.1:" + std::to_string(origin_port));
    EXPECT_TRUE(target);
    config.allowed = {*target};
    UnsafeTestOptions test;
    test.allow_addresses = {{IpAddress::V4(127, 0, 0, 1), origin_port}};
    config.policy = ConnectPolicy({}, test);
    config.limits = limits;
    config.audit = [this](const ProxyAuditRecord& r) {
      std::lock_guard lock(mu_);
      records_.push_back(r);
    };
    proxy_ = std::make_unique<HttpProxy>(std::move(config));
    thread_ = std::thread([this] { proxy_->Serve({listener_.Get()}, stop_); });
  }
  ~Proxy() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  // Every audit record, once every connection has ended.
  std::vector<ProxyAuditRecord> Records() {
    Stop();
    std::lock_guard lock(mu_);
    return records_;
  }
  UniqueFd Connect() {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port_);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::connect(fd.Get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
    return fd;
  }
  // A CONNECT tunnel to the origin, its 200 read.
  UniqueFd Tunnel(uint16_t origin_port) {
    UniqueFd fd = Connect();
    std::string req =
        "CONNECT 127.0.0.1:" + std::to_string(origin_port) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    EXPECT_EQ(::send(fd.Get(), req.data(), req.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(req.size()));
    std::string head = ReadHead(fd.Get());
    EXPECT_EQ(head, "HTTP/1.1 200 Connection Established\r\n\r\n");
    return fd;
  }

 private:
  UniqueFd listener_;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::unique_ptr<HttpProxy> proxy_;
  std::thread thread_;
  std::mutex mu_;
  std::vector<ProxyAuditRecord> records_;
};

}  // namespace anvil::testing
