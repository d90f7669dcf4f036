// anvil-proxy and this machine's own addresses: a target on an address assigned to a local
// interface is refused like loopback, also when the address came up after the proxy started (a
// laptop that joins a network, an IPv6 temporary address, a VPN). Each test runs in a child
// process with a network namespace of its own (a user namespace too when not root), where the
// address is put on `lo` while the proxy runs; a server listens on it, and the refusal must come
// before that server sees a connection.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "common/unique_fd.h"
#include "net/http_proxy.h"
#include "net/local_interfaces.h"
#include "netpolicy/proxy_policy.h"

namespace anvil::testing {
namespace http_proxy_local_address_test {
namespace {

constexpr uint16_t kOriginPort = 8443;

// A network namespace of this process's own with `lo` up ("" when done, else why not).
std::string IsolateNetworkInChild() {
  if (unshare(CLONE_NEWNET) != 0) {
    const uid_t uid = getuid();
    const gid_t gid = getgid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0) {
      return std::string("unshare: ") + std::strerror(errno);
    }
    auto write = [](const char* path, const std::string& text) {
      UniqueFd fd(::open(path, O_WRONLY | O_CLOEXEC));
      return fd && ::write(fd.Get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
    };
    write("/proc/self/setgroups", "deny");
    if (!write("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1\n") ||
        !write("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1\n")) {
      return "cannot map ids in the user namespace";
    }
  }
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq ifr{};
  std::strcpy(ifr.ifr_name, "lo");
  if (!fd || ioctl(fd.Get(), SIOCGIFFLAGS, &ifr) != 0) return "SIOCGIFFLAGS lo";
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  if (ioctl(fd.Get(), SIOCSIFFLAGS, &ifr) != 0) return "cannot bring lo up";
  return "";
}

// Puts `address`/32 on lo (as the alias lo:1): from now on it is one of this machine's addresses.
std::string AddAddressToLoopback(const char* address) {
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  ifreq ifr{};
  std::strcpy(ifr.ifr_name, "lo:1");
  auto* sin = reinterpret_cast<sockaddr_in*>(&ifr.ifr_addr);
  sin->sin_family = AF_INET;
  inet_pton(AF_INET, address, &sin->sin_addr);
  if (!fd || ioctl(fd.Get(), SIOCSIFADDR, &ifr) != 0) {
    return std::string("SIOCSIFADDR: ") + std::strerror(errno);
  }
  inet_pton(AF_INET, "255.255.255.255", &sin->sin_addr);
  if (ioctl(fd.Get(), SIOCSIFNETMASK, &ifr) != 0) return "SIOCSIFNETMASK";
  return "";
}

UniqueFd Listen(const char* address, uint16_t port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  inet_pton(AF_INET, address, &a.sin_addr);
  if (!fd || ::bind(fd.Get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
      ::listen(fd.Get(), 8) != 0) {
    return UniqueFd();
  }
  return fd;
}

uint16_t PortOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// The proxy's answer to one request (until it closes, a tunnel's 200, or 3 s of silence).
std::string Ask(uint16_t proxy_port, const std::string& request) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(proxy_port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (!fd || ::connect(fd.Get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return "";
  if (::send(fd.Get(), request.data(), request.size(), MSG_NOSIGNAL) < 0) return "";
  std::string out;
  char buf[4096];
  while (out.find("Connection Established\r\n\r\n") == std::string::npos) {
    pollfd p{fd.Get(), POLLIN, 0};
    if (poll(&p, 1, 3000) <= 0) break;
    ssize_t n = ::recv(fd.Get(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

bool Pending(int listener) {
  pollfd p{listener, POLLIN, 0};
  return poll(&p, 1, 200) > 0;
}

// The scenario, in the child. Returns "" when every expectation held, else what did not.
std::string AddressThatComesUpAfterTheStartIsRefused() {
  if (auto why = IsolateNetworkInChild(); !why.empty()) return "skip: " + why;
  UniqueFd listener = Listen("127.0.0.1", 0);
  if (!listener) return "cannot listen on 127.0.0.1";
  const uint16_t proxy_port = PortOf(listener.Get());

  ProxyConfig config;
  for (const char* allowed : {"1.1.1.1:8443", "1.1.1.2:8443"}) {
    auto target = ParseAllowHost(allowed);
    if (!target) return "ParseAllowHost: " + target.error().ToString();
    config.allowed.push_back(*target);
  }
  // As anvil-proxy configures itself: this machine's addresses as they are at its start.
  auto policy = ConnectPolicyForThisMachine(UnsafeTestOptions{});
  if (!policy) return "ConnectPolicyForThisMachine: " + policy.error().ToString();
  config.policy = *policy;
  // Short, so that a connection the proxy wrongly let through ends soon.
  config.limits.head_timeout = std::chrono::milliseconds(2000);
  config.limits.idle_timeout = std::chrono::milliseconds(2000);
  config.limits.connect_timeout = std::chrono::milliseconds(2000);
  std::string last_reason;
  std::mutex mu;
  config.audit = [&](const ProxyAuditRecord& r) {
    std::lock_guard lock(mu);
    last_reason = r.reason;
  };
  HttpProxy proxy(std::move(config));
  std::atomic<bool> stop{false};
  std::thread serving([&] { proxy.Serve({listener.Get()}, stop); });
  std::string failures;
  auto expect = [&failures](bool ok, const std::string& what) {
    if (!ok) failures += what + "\n";
  };

  // Benign neighbour first: a global address that is not this machine's passes the policy (the
  // dial then fails: this namespace has no route, so nothing leaves).
  std::string answer = Ask(proxy_port, "CONNECT 1.1.1.2:8443 HTTP/1.1\r\n\r\n");
  expect(answer.rfind("HTTP/1.1 502", 0) == 0,
         "a global address not on this machine should pass the policy, got: " + answer);

  // The address comes up on this machine after the proxy started; a local service listens on it.
  if (auto why = AddAddressToLoopback("1.1.1.1"); !why.empty()) failures += why + "\n";
  UniqueFd origin = Listen("1.1.1.1", kOriginPort);
  expect(static_cast<bool>(origin), "cannot listen on 1.1.1.1");
  answer = Ask(proxy_port, "CONNECT 1.1.1.1:8443 HTTP/1.1\r\n\r\n");
  expect(answer.rfind("HTTP/1.1 403", 0) == 0,
         "a target on an address of this machine must be refused, got: " + answer);
  expect(answer.find("local interface") != std::string::npos,
         "the refusal should name the rule, got: " + answer);
  expect(origin && !Pending(origin.Get()), "the local service saw a connection");
  answer = Ask(proxy_port, "GET http://1.1.1.1:8443/ HTTP/1.1\r\nHost: x\r\n\r\n");
  expect(answer.rfind("HTTP/1.1 403", 0) == 0,
         "a plain request to an address of this machine must be refused, got: " + answer);
  expect(origin && !Pending(origin.Get()), "the local service saw a plain request");

  stop = true;
  serving.join();
  (void)last_reason;
  return failures;
}

TEST(HttpProxyLocalAddress, AnAddressThatComesUpOnThisMachineAfterTheStartIsRefused) {
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd read_end(pipe_fds[0]), write_end(pipe_fds[1]);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    read_end.Reset();
    const std::string result = AddressThatComesUpAfterTheStartIsRefused();
    ssize_t ignored = ::write(write_end.Get(), result.data(), result.size());
    (void)ignored;
    _exit(0);
  }
  write_end.Reset();
  std::string result;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(read_end.Get(), buf, sizeof(buf))) > 0) result.append(buf, n);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  if (result.rfind("skip: ", 0) == 0) GTEST_SKIP() << result;
  EXPECT_EQ(result, "");
}

}  // namespace
}  // namespace http_proxy_local_address_test
}  // namespace anvil::testing
