#include "net/cares_resolver.h"

#include <ares.h>
#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "netpolicy/connect_policy.h"

namespace anvil {

namespace {

using Clock = std::chrono::steady_clock;

// ares_library_init is not thread-safe and must run once per process before any channel.
Status InitLibraryOnce() {
  static std::once_flag once;
  static int status = ARES_SUCCESS;
  std::call_once(once, [] { status = ares_library_init(ARES_LIB_INIT_ALL); });
  if (status != ARES_SUCCESS) {
    return Fail("io", std::string("c-ares initialisation failed: ") + ares_strerror(status));
  }
  return Ok();
}

struct Lookup {
  bool done = false;
  int status = ARES_SUCCESS;
  std::vector<IpAddress> addresses;
};

void OnAddrinfo(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
  auto* lookup = static_cast<Lookup*>(arg);
  lookup->done = true;
  lookup->status = status;
  if (result == nullptr) return;
  for (const ares_addrinfo_node* node = result->nodes; node != nullptr; node = node->ai_next) {
    if (auto address = IpAddress::FromSockaddr(node->ai_addr)) {
      lookup->addresses.push_back(*address);
    } else {
      // An answer the policy cannot judge is a refusal of the whole name, not something to skip.
      lookup->status = ARES_EBADRESP;
    }
  }
  ares_freeaddrinfo(result);
}

class Channel {
 public:
  ~Channel() {
    if (channel_ != nullptr) ares_destroy(channel_);
  }
  ares_channel* out() { return &channel_; }
  ares_channel get() const { return channel_; }

 private:
  ares_channel channel_ = nullptr;
};

}  // namespace

Result<std::vector<IpAddress>> CaresResolver::Resolve(const std::string& host) {
  ANVIL_RETURN_IF_ERROR(InitLibraryOnce());
  const auto deadline = Clock::now() + options_.deadline;

  ares_options opts{};
  int mask =
      ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_DOMAINS | ARES_OPT_LOOKUPS;
  // NOSEARCH + no domains: "api.example.com" is never retried as "api.example.com.corp.lan",
  // a different name than the one granted. NOALIASES: HOSTALIASES in the environment is ignored.
  opts.flags = ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
  opts.timeout = 1000;  // per try, per server (ms)
  opts.tries = 2;
  opts.ndomains = 0;
  opts.domains = nullptr;
  // With a test server, DNS only ("b"): the test must exercise real DNS answers. In production
  // the hosts file first, as every other program on the machine does.
  char dns_only[] = "b";
  char hosts_then_dns[] = "fb";
  opts.lookups = options_.server ? dns_only : hosts_then_dns;

  Channel channel;
  if (int rc = ares_init_options(channel.out(), &opts, mask); rc != ARES_SUCCESS) {
    return Fail("io", std::string("c-ares: ") + ares_strerror(rc));
  }
  if (options_.server) {
    ares_addr_port_node node{};
    node.next = nullptr;
    const IpAddress& address = options_.server->address;
    node.family = address.is_v4() ? AF_INET : AF_INET6;
    if (address.is_v4()) {
      std::memcpy(&node.addr.addr4, address.bytes().data(), 4);
    } else {
      std::memcpy(&node.addr.addr6, address.bytes().data(), 16);
    }
    node.udp_port = options_.server->port;
    node.tcp_port = options_.server->port;
    if (int rc = ares_set_servers_ports(channel.get(), &node); rc != ARES_SUCCESS) {
      return Fail("io", std::string("c-ares: set server: ") + ares_strerror(rc));
    }
  }

  Lookup lookup;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;  // both A and AAAA: every answer must be checked
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = ARES_AI_NOSORT;
  ares_getaddrinfo(channel.get(), host.c_str(), nullptr, &hints, OnAddrinfo, &lookup);

  while (!lookup.done) {
    const auto now = Clock::now();
    if (now >= deadline) {
      ares_cancel(channel.get());  // runs the callback with ARES_ECANCELLED
      return Fail("timeout", "DNS lookup of " + host + " took too long");
    }
    ares_socket_t sockets[ARES_GETSOCK_MAXNUM];
    const int bits = ares_getsock(channel.get(), sockets, ARES_GETSOCK_MAXNUM);
    pollfd fds[ARES_GETSOCK_MAXNUM];
    nfds_t count = 0;
    for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
      const bool readable = ARES_GETSOCK_READABLE(bits, i);
      const bool writable = ARES_GETSOCK_WRITABLE(bits, i);
      if (!readable && !writable) continue;
      fds[count].fd = sockets[i];
      fds[count].events = static_cast<short>((readable ? POLLIN : 0) | (writable ? POLLOUT : 0));
      fds[count].revents = 0;
      ++count;
    }
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    timeval tv_max{static_cast<time_t>(wait.count() / 1000),
                   static_cast<suseconds_t>((wait.count() % 1000) * 1000)};
    timeval tv{};
    const timeval* next = ares_timeout(channel.get(), &tv_max, &tv);
    const int timeout_ms =
        static_cast<int>(next->tv_sec * 1000 + next->tv_usec / 1000) + 1;  // never busy-loop
    const int ready = poll(fds, count, timeout_ms);
    if (ready < 0 && errno != EINTR) return SysFail("io", "poll (DNS)");
    if (ready <= 0) {
      ares_process_fd(channel.get(), ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // timeouts, retries
      continue;
    }
    for (nfds_t i = 0; i < count; ++i) {
      const ares_socket_t read_fd =
          (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) ? fds[i].fd : ARES_SOCKET_BAD;
      const ares_socket_t write_fd = (fds[i].revents & POLLOUT) ? fds[i].fd : ARES_SOCKET_BAD;
      if (read_fd != ARES_SOCKET_BAD || write_fd != ARES_SOCKET_BAD) {
        ares_process_fd(channel.get(), read_fd, write_fd);
      }
    }
  }

  switch (lookup.status) {
    case ARES_SUCCESS:
      return lookup.addresses;
    case ARES_ENODATA:
      return std::vector<IpAddress>{};  // NOERROR without A/AAAA: ResolveAndValidate refuses
    case ARES_ENOTFOUND:
    case ARES_ENONAME:
      return Fail("not_found", "no such host: " + host);
    case ARES_ETIMEOUT:
      return Fail("timeout", "DNS lookup of " + host + " timed out");
    default:
      return Fail("io", "DNS lookup of " + host + " failed: " + ares_strerror(lookup.status));
  }
}

}  // namespace anvil
