#include "net/http_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <thread>

#include "common/ascii.h"
#include "common/unique_fd.h"
#include "netpolicy/request_headers.h"
#include "netpolicy/tls_client_hello.h"

namespace anvil {
namespace {

using Clock = std::chrono::steady_clock;

int MillisLeft(Clock::time_point deadline) {
  auto now = Clock::now();
  if (deadline <= now) return 0;
  return static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1);
}

bool SendAll(int fd, std::string_view data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      if (poll(&p, 1, 10000) <= 0) return false;
      continue;
    }
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
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

// Reads up to the end of the request head. Returns false on timeout, EOF or oversize.
bool ReadHead(int fd, size_t cap, Clock::time_point deadline, std::string& buffer, size_t& head_end,
              std::string& error) {
  char chunk[4096];
  while (true) {
    auto pos = buffer.find("\r\n\r\n");
    if ((pos == std::string::npos ? buffer.size() : pos + 4) > cap) {
      error = "request head over " + std::to_string(cap) + " bytes";
      return false;
    }
    if (pos != std::string::npos) {
      head_end = pos + 4;
      return true;
    }
    if (buffer.size() > cap) {
      error = "request head over " + std::to_string(cap) + " bytes";
      return false;
    }
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, MillisLeft(deadline));
    if (r == 0) {
      error = "request head not received in time";
      return false;
    }
    if (r < 0 && errno == EINTR) continue;
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      error = "connection closed before a request";
      return false;
    }
    buffer.append(chunk, static_cast<size_t>(n));
  }
}

// Non-blocking connect with a deadline. Returns the connected socket or an invalid fd.
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

// The tunnel's pipes: 256 KiB each (64 pages) when the kernel grants it. Bigger moves more per
// wakeup; 64 connections x 2 pipes x 256 KiB = 32 MiB stays under the default per-user pipe
// budget (fs.pipe-user-pages-soft, 64 MiB) when the proxy runs unprivileged. A refusal leaves
// the default 64 KiB pipe, which is slower, not wrong.
constexpr int kPipeBytes = 256 * 1024;

// One direction of a relay: bytes move from `src` into a pipe and from the pipe to `dst` with
// splice(2), so they never pass through this process's memory (the kernel moves page
// references; on loopback nothing is copied between the two sockets at all).
struct Direction {
  int src = -1, dst = -1;
  UniqueFd pipe_read, pipe_write;
  size_t capacity = 0;         // the pipe's size in bytes
  size_t pending = 0;          // bytes in the pipe, read from src and not yet written to dst
  bool reading = true;         // src has not ended
  bool shut = false;           // dst got SHUT_WR (src ended and the pipe drained)
  uint64_t left = UINT64_MAX;  // bytes src may still send; at 0 it is no longer read
  uint64_t* moved = nullptr;   // the audit record's counter for this direction

  bool Open(std::string& error) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
      error = std::string("pipe: ") + std::strerror(errno);
      return false;
    }
    pipe_read.Reset(p[0]);
    pipe_write.Reset(p[1]);
    (void)fcntl(p[1], F_SETPIPE_SZ, kPipeBytes);
    int size = fcntl(p[1], F_GETPIPE_SZ);
    capacity = size > 0 ? static_cast<size_t>(size) : 65536;
    return true;
  }
};

constexpr unsigned kSpliceFlags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK;

// splice(2) into a socket has no MSG_NOSIGNAL: a peer that went away raises SIGPIPE on the
// writing thread. The relay blocks it on its own thread for its lifetime, takes any that became
// pending, and restores the mask, so the error is an EPIPE return and nothing else (anvil-proxy
// ignores SIGPIPE anyway; this keeps HttpProxy safe in any process).
class BlockSigpipe {
 public:
  BlockSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~BlockSigpipe() {
    sigset_t pending;
    sigemptyset(&pending);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
      timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  BlockSigpipe(const BlockSigpipe&) = delete;
  BlockSigpipe& operator=(const BlockSigpipe&) = delete;

 private:
  sigset_t pipe_, old_;
};

// Moves bytes both ways until both sides are done, a cap passes or the connection idles too
// long. No poll while data keeps coming: every step is retried until nothing moves, then one
// poll waits for whatever would let something move again. The byte cap counts bytes read from
// either side (both directions together, as before): at most `max_bytes` are ever forwarded,
// and one byte more read from either side ends the connection with "byte cap".
//
// `up_limit` bounds what goes from `a` to `b` (a plain request's announced body): what `a`
// sends past it is read and dropped (at most 1 MiB, then the connection ends), and `a`'s end
// still reaches `b` as a half-close.
void Relay(int a, int b, const ProxyLimits& limits, Clock::time_point started, uint64_t up_limit,
           ProxyAuditRecord& record, std::string& ended) {
  BlockSigpipe no_sigpipe;
  for (int fd : {a, b}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  Direction dirs[2];
  dirs[0].src = a;
  dirs[0].dst = b;
  dirs[0].moved = &record.bytes_up;
  dirs[0].left = up_limit;
  dirs[1].src = b;
  dirs[1].dst = a;
  dirs[1].moved = &record.bytes_down;
  for (auto& d : dirs) {
    if (!d.Open(ended)) return;
  }
  const auto hard_deadline = started + limits.max_duration;
  auto last_progress = Clock::now();
  uint64_t dropped = 0;  // read from `a` past `up_limit`
  constexpr uint64_t kMaxDroppedBytes = 1 << 20;
  while (true) {
    bool progress = false;
    for (auto& d : dirs) {
      const uint64_t used = record.bytes_up + record.bytes_down;
      // At the cap, first drain what was read within it, then ask for one byte more: that
      // tells "more data" (over the cap) from EOF.
      if (d.reading && d.left == 0 && d.pending == 0) {
        // All it may send has gone: what follows (a pipelined request) is read and dropped, so
        // it reaches no one and nothing unread turns the final close into a reset; its end is
        // passed on as before.
        char sink[16384];
        ssize_t n = ::recv(d.src, sink, sizeof(sink), MSG_DONTWAIT);
        if (n > 0) {
          dropped += static_cast<uint64_t>(n);
          if (dropped > kMaxDroppedBytes) {
            ended = "data after the request";
            return;
          }
          progress = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          d.reading = false;
          progress = true;
        }
      }
      if (d.reading && d.left > 0 && d.pending < d.capacity &&
          (used < limits.max_bytes || d.pending == 0)) {
        const size_t want = used >= limits.max_bytes
                                ? 1
                                : static_cast<size_t>(std::min<uint64_t>(
                                      {d.capacity - d.pending, limits.max_bytes - used, d.left}));
        ssize_t n = ::splice(d.src, nullptr, d.pipe_write.Get(), nullptr, want, kSpliceFlags);
        if (n > 0) {
          *d.moved += static_cast<uint64_t>(n);
          d.left -= std::min<uint64_t>(d.left, static_cast<uint64_t>(n));
          if (record.bytes_up + record.bytes_down > limits.max_bytes) {
            ended = "byte cap";
            return;
          }
          d.pending += static_cast<size_t>(n);
          progress = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          d.reading = false;  // EOF, or the socket failed: this side sends nothing more
          progress = true;
        }
      }
      if (d.pending > 0) {
        ssize_t n = ::splice(d.pipe_read.Get(), nullptr, d.dst, nullptr, d.pending, kSpliceFlags);
        if (n > 0) {
          d.pending -= static_cast<size_t>(n);
          progress = true;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
          ended = "peer closed";
          return;
        }
      }
      if (!d.reading && d.pending == 0 && !d.shut) {
        ::shutdown(d.dst, SHUT_WR);
        d.shut = true;
      }
    }
    if (dirs[0].shut && dirs[1].shut) {
      ended = "done";
      return;
    }
    auto now = Clock::now();
    if (now >= hard_deadline) {
      ended = "time cap";
      return;
    }
    if (progress) {
      last_progress = now;
      continue;
    }
    // Nothing moved: wait for readable data where the pipe is empty (a full pipe waits for its
    // destination instead, so a slow reader never turns into a busy loop) and for room where
    // bytes are waiting.
    short events[2] = {0, 0};  // for a, for b
    for (int i = 0; i < 2; ++i) {
      const auto& d = dirs[i];
      if (d.reading && d.pending == 0) events[i] |= POLLIN;
      if (d.pending > 0) events[1 - i] |= POLLOUT;
    }
    pollfd fds[2] = {{events[0] ? a : -1, events[0], 0}, {events[1] ? b : -1, events[1], 0}};
    auto deadline = std::min(last_progress + limits.idle_timeout, hard_deadline);
    int r = poll(fds, 2, MillisLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      ended = Clock::now() >= hard_deadline ? "time cap" : "idle timeout";
      return;
    }
  }
}

// Calls `each` with every line of a request's header block (lines split at CRLF, without it)
// until it returns false; returns whether every call returned true.
template <typename Each>
bool ForEachHeaderLine(std::string_view lines, Each each) {
  size_t pos = 0;
  while (pos < lines.size()) {
    size_t eol = lines.find("\r\n", pos);
    if (eol == std::string_view::npos) eol = lines.size();
    if (!each(lines.substr(pos, eol - pos))) return false;
    pos = eol + 2;
  }
  return true;
}

// The header lines of a plain-HTTP request (between the request line and the blank line) as
// this proxy forwards them: each "name: value" with a token name right before the colon, no
// folded continuation line, and no CR, LF or other control byte but tab anywhere. Anything
// else could read as a different header (a second Host) to a lenient server behind the proxy.
bool ValidHeaderLines(std::string_view lines, std::string& error) {
  return ForEachHeaderLine(lines, [&error](std::string_view line) {
    if (!line.empty() && (line[0] == ' ' || line[0] == '\t')) {
      error = "folded header line";
      return false;
    }
    for (char c : line) {
      const auto u = static_cast<unsigned char>(c);
      if ((u < 0x20 && c != '\t') || u == 0x7f) {
        error = "control character in a header line";
        return false;
      }
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || !IsHttpToken(line.substr(0, colon))) {
      error = "malformed header name";
      return false;
    }
    return true;
  });
}

// The body a plain-HTTP request announces (RFC 9112 6.3): none without Content-Length, else
// that many bytes. The proxy forwards exactly that after the head, so nothing pipelined behind
// the request (another request, for whatever Host it names) reaches the server. A length it
// cannot know without decoding the body (Transfer-Encoding) is refused with 411, an ambiguous
// one (both headers, differing or malformed values) with 400.
bool AnnouncedBodyLength(std::string_view lines, uint64_t& length, bool& announced, int& status,
                         std::string& error) {
  length = 0;
  std::optional<uint64_t> content_length;
  bool transfer_encoding = false;
  const bool framed = ForEachHeaderLine(lines, [&](std::string_view line) {
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return true;
    const std::string name = AsciiLower(line.substr(0, colon));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    if (name == "transfer-encoding") transfer_encoding = true;
    if (name != "content-length") return true;
    const bool digits = !value.empty() && value.size() <= 18 &&
                        value.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits) {
      status = 400;
      error = "malformed Content-Length";
      return false;
    }
    const uint64_t n = std::stoull(std::string(value));
    if (content_length && *content_length != n) {
      status = 400;
      error = "conflicting Content-Length values";
      return false;
    }
    content_length = n;
    return true;
  });
  if (!framed) return false;
  if (transfer_encoding && content_length) {
    status = 400;
    error = "both Transfer-Encoding and Content-Length";
    return false;
  }
  if (transfer_encoding) {
    status = 411;
    error =
        "a plain-HTTP request body needs a Content-Length (Transfer-Encoding is not "
        "forwarded; HTTPS through CONNECT carries any body)";
    return false;
  }
  length = content_length.value_or(0);
  announced = content_length.has_value();
  return true;
}

// The server name a tunnel's TLS ClientHello asks for must be the tunnel's host: a hello naming
// another site would reach it through an allowed address (domain fronting), and a hello with no
// name leaves the server to pick one. An address target carries no name (clients send none).
bool CheckServerName(const ProxyTarget& target, const std::optional<std::string>& name,
                     std::string& reason) {
  if (target.literal) {
    if (!name) return true;
    reason = "denied: TLS server name " + *name + " on a tunnel to the address " + target.host;
    return false;
  }
  if (!name) {
    reason = "denied: TLS ClientHello without a server name on a tunnel to " + target.host;
    return false;
  }
  if (*name != target.host) {
    reason = "denied: TLS server name " + *name + " is not the tunnel's host " + target.host;
    return false;
  }
  return true;
}

// Reads what the client sends first through a tunnel (after `first`, what it sent with the
// CONNECT head) until it shows what the tunnel carries: a TLS ClientHello is checked
// (CheckServerName) and a malformed one refused; a tunnel to port 443 must start with one;
// anything else passes, as does a tunnel whose server speaks first (TLS never does). `first`
// ends up holding the bytes to forward now. For TLS (`hello.tls`) that is only the hello's
// record: whatever came after it is held (`hello.held`) until CheckHelloRetry has seen what
// the server answered, since after a retry request it would be the client's second hello.
// On false, `verdict` is "deny" (a refused hello), "error" or "allow" (the tunnel idled out
// before either side sent anything, as the relay's idle timeout would end it).
struct TunnelHello {
  bool tls = false;         // the tunnel began with a ClientHello that passed
  bool early_data = false;  // it offered 0-RTT early data
  std::string held;         // bytes the client sent after it, not forwarded yet
};

bool CheckTunnelStart(int client, int upstream, const ProxyTarget& target,
                      Clock::time_point deadline, std::string& first, TunnelHello& tls,
                      std::string& verdict, std::string& reason) {
  verdict = "deny";
  tls = {};
  while (true) {
    if (!first.empty()) {
      ClientHello hello = ParseClientHello(first);
      switch (hello.status) {
        case ClientHelloStatus::kOk:
          if (!CheckServerName(target, hello.server_name, reason)) return false;
          tls.tls = true;
          tls.early_data = hello.offers_early_data;
          tls.held = first.substr(hello.record_size);
          first.resize(hello.record_size);
          return true;
        case ClientHelloStatus::kAlert:
        case ClientHelloStatus::kMalformed:
          reason = "denied: TLS ClientHello refused: " + hello.error;
          return false;
        case ClientHelloStatus::kNotTls:
          if (target.port != kHttpsPort) return true;
          reason = "denied: a tunnel to port 443 must begin with a TLS ClientHello";
          return false;
        case ClientHelloStatus::kNeedMore:
          break;
      }
    }
    // Port 443 carries TLS, which the client always starts: only the client is waited for.
    // Elsewhere a server that speaks first (SSH, SMTP) means the tunnel is not TLS.
    pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
    const bool server_may_start = first.empty() && target.port != kHttpsPort;
    int r = poll(fds, server_may_start ? 2 : 1, MillisLeft(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      verdict = r == 0 && first.empty() ? "allow" : "error";
      reason = r != 0          ? std::string("poll: ") + std::strerror(errno)
               : first.empty() ? "idle timeout"
                               : "tunnel: the client's TLS ClientHello did not arrive in time";
      return false;
    }
    if (fds[0].revents != 0) {
      char buf[4096];
      const size_t want = std::min(sizeof(buf), kMaxClientHelloBytes - first.size());
      ssize_t n = ::recv(client, buf, want, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        verdict = "error";
        reason = "tunnel: the client closed before sending";
        return false;
      }
      first.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (server_may_start && fds[1].revents != 0) return true;  // the server speaks first
  }
}

// A tunnel whose client began with a ClientHello that passed (forwarded) and `tls.held` (what
// the client sent after it, held back): reads what the server answers first and forwards it to
// the client. A HelloRetryRequest (RFC 8446 4.1.4) makes the client send a second ClientHello,
// in clear, that could name another site than the first did (a client can always provoke one,
// e.g. by offering no key share): the whole retry request is forwarded, then the second hello
// (the held bytes first) is read and checked like the first before any of it reaches the
// server; nothing but at most a compatibility ChangeCipherSpec and, after a 0-RTT offer, early
// data may come before it, and nothing after it. Anything else the server sends first (a
// ServerHello, an alert) ends the checks: the held bytes go on and the relay carries the rest.
// What moves here counts in `rec` toward the byte cap. On false, `verdict` and `reason` say why
// the tunnel ends.
bool CheckHelloRetry(int client, int upstream, const ProxyTarget& target, const ProxyLimits& limits,
                     const TunnelHello& tls, ProxyAuditRecord& rec, std::string& verdict,
                     std::string& reason) {
  // Reads what `fd` has (at most `limit` bytes in all) into `into`. False with verdict/reason
  // on a timeout or a poll error; `ended` when the peer closed or the socket failed.
  auto read_some = [&](int fd, std::string& into, size_t limit, Clock::time_point deadline,
                       const char* late, bool& ended) {
    ended = false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, MillisLeft(deadline));
    if (r < 0 && errno == EINTR) return true;
    if (r <= 0) {
      verdict = r == 0 && into.empty() && fd == upstream ? "allow" : "error";
      reason = r != 0 ? std::string("poll: ") + std::strerror(errno) : late;
      return false;
    }
    char buf[4096];
    ssize_t n = ::recv(fd, buf, std::min(sizeof(buf), limit - into.size()), MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return true;
    if (n <= 0) {
      ended = true;
      return true;
    }
    into.append(buf, static_cast<size_t>(n));
    return true;
  };
  auto forward = [&](int to, const std::string& data, uint64_t& counter) {
    if (data.empty()) return true;
    if (rec.bytes_up + rec.bytes_down + data.size() > limits.max_bytes) {
      verdict = "allow";
      reason = "byte cap";
      return false;
    }
    if (!SendAll(to, data)) {
      verdict = "error";
      reason = to == client ? "client closed" : "upstream closed";
      return false;
    }
    counter += data.size();
    return true;
  };

  // The server's first bytes, up to what decides it; for a retry request, all of it.
  constexpr size_t kMaxHelloRetryBytes = 4 * (5 + 16384);
  std::string server;
  ServerFirst kind = ServerFirst::kNeedMore;
  bool ended = false;
  const auto server_deadline = Clock::now() + limits.idle_timeout;
  while (true) {
    if (kind == ServerFirst::kNeedMore) kind = ClassifyServerFirst(server);
    if (kind == ServerFirst::kOther) break;
    if (kind == ServerFirst::kHelloRetryRequest) {
      auto end = FirstHandshakeMessageEnd(server);
      if (end && *end == kNotAHandshake) {
        verdict = "error";
        reason = "tunnel: a malformed TLS HelloRetryRequest from the server";
        return false;
      }
      if (end) break;
    }
    if (ended || server.size() >= kMaxHelloRetryBytes) {
      verdict = "error";
      reason = ended ? "tunnel: the server closed before it answered the ClientHello"
                     : "tunnel: the server's HelloRetryRequest is too long";
      return false;
    }
    const size_t limit =
        kind == ServerFirst::kNeedMore ? kServerHelloPrefixBytes : kMaxHelloRetryBytes;
    if (!read_some(upstream, server, limit, server_deadline, "idle timeout", ended)) return false;
  }
  if (!forward(client, server, rec.bytes_down)) return false;
  if (kind != ServerFirst::kHelloRetryRequest) return forward(upstream, tls.held, rec.bytes_up);

  std::string second = tls.held;
  const auto client_deadline =
      Clock::now() + std::min<Clock::duration>(limits.head_timeout, limits.idle_timeout);
  while (true) {
    ClientHello hello = ParseSecondClientHello(second, tls.early_data);
    if (hello.status == ClientHelloStatus::kOk) {
      if (!CheckServerName(target, hello.server_name, reason)) {
        verdict = "deny";
        reason += " (the second ClientHello, after a HelloRetryRequest)";
        return false;
      }
      break;
    }
    if (hello.status == ClientHelloStatus::kAlert) {
      verdict = "error";
      reason = "tunnel: " + hello.error;
      return false;
    }
    if (hello.status != ClientHelloStatus::kNeedMore) {
      verdict = "deny";
      reason = "denied: TLS ClientHello refused: " + hello.error;
      return false;
    }
    if (ended || second.size() >= kMaxSecondClientHelloBytes) {
      verdict = "error";
      reason = ended ? "tunnel: the client closed before its second ClientHello"
                     : "tunnel: the second ClientHello is too long";
      return false;
    }
    if (!read_some(client, second, kMaxSecondClientHelloBytes, client_deadline,
                   "tunnel: the client's second TLS ClientHello did not arrive in time", ended)) {
      return false;
    }
  }
  return forward(upstream, second, rec.bytes_up);
}

}  // namespace

AddressVerdict CheckProxyAddress(const ConnectPolicy& policy, const IpAddress& address,
                                 std::uint16_t port) {
  for (const auto& exempt : policy.unsafe_test().allow_addresses) {
    if (exempt.address == address && exempt.EffectivePort() == port) {
      return {true, "--unsafe-test-allow-address (test only)"};
    }
  }
  return policy.Check(address, kHttpsPort);
}

void HttpProxy::Serve(const std::vector<int>& listen_fds, const std::atomic<bool>& stop) {
  for (int fd : listen_fds) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::vector<pollfd> fds;
  for (int fd : listen_fds) fds.push_back({fd, POLLIN, 0});
  while (!stop.load()) {
    int r = poll(fds.data(), fds.size(), 100);
    if (r <= 0) continue;
    for (auto& p : fds) {
      if (!(p.revents & POLLIN)) continue;
      int c = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      if (active_.load() >= config_.limits.max_connections) {
        Refuse(c, 503,
               "too many connections (" + std::to_string(config_.limits.max_connections) + ")");
        ProxyAuditRecord rec{"", "", "deny", "connection cap", "", 0, 0, 0};
        if (config_.audit) config_.audit(rec);
        ::close(c);
        continue;
      }
      active_.fetch_add(1);
      std::thread([this, c] {
        HandleConnection(c);
        ::close(c);
        active_.fetch_sub(1);
      }).detach();
    }
  }
  while (active_.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

void HttpProxy::HandleConnection(int client) {
  const auto started = Clock::now();
  ProxyAuditRecord rec;
  auto finish = [&](const std::string& verdict, const std::string& reason) {
    rec.verdict = verdict;
    rec.reason = reason;
    rec.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - started).count();
    if (config_.audit) config_.audit(rec);
  };
  std::string buffer;
  size_t head_end = 0;
  std::string error;
  if (!ReadHead(client, config_.limits.max_head_bytes, started + config_.limits.head_timeout,
                buffer, head_end, error)) {
    if (error.find("over") != std::string::npos) Refuse(client, 400, error);
    finish("error", error);
    return;
  }
  // Request line: METHOD SP TARGET SP HTTP/1.x
  size_t line_end = buffer.find("\r\n");
  std::string line = buffer.substr(0, line_end);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string::npos ? std::string::npos : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos || sp2 == std::string::npos ||
      line.compare(sp2 + 1, 7, "HTTP/1.") != 0 || line.size() != sp2 + 9) {
    Refuse(client, 400, "malformed request line");
    finish("error", "malformed request line");
    return;
  }
  std::string method = line.substr(0, sp1);
  std::string target_text = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const bool tunnel = method == "CONNECT";
  std::string head_error;
  if (!IsHttpToken(method)) head_error = "malformed method";
  if (head_error.empty() && !tunnel &&
      !ValidHeaderLines(std::string_view(buffer).substr(line_end + 2, head_end - line_end - 4),
                        head_error)) {
    head_error = "malformed request: " + head_error;
  }
  if (!head_error.empty()) {
    Refuse(client, 400, head_error);
    finish("error", head_error);
    return;
  }
  uint64_t body_length = UINT64_MAX;  // what the relay may read from the client (a tunnel: all)
  bool announced_length = false;      // the request had a Content-Length
  if (!tunnel) {
    int status = 400;
    if (!AnnouncedBodyLength(std::string_view(buffer).substr(line_end + 2, head_end - line_end - 4),
                             body_length, announced_length, status, head_error)) {
      Refuse(client, status, head_error);
      finish("error", head_error);
      return;
    }
  }
  rec.kind = tunnel ? "connect" : "http";
  std::string origin_form;
  auto target =
      tunnel ? ParseConnectTarget(target_text) : ParseHttpTarget(target_text, &origin_form);
  if (!target) {
    rec.target = target_text.substr(0, 256);
    Refuse(client, 403, target.error().ToString());
    finish("deny", target.error().ToString());
    return;
  }
  rec.target = target->host + ":" + std::to_string(target->port);
  if (auto s = CheckProxyTarget(*target, config_.allowed); !s) {
    Refuse(client, 403, s.error().ToString());
    finish("deny", s.error().ToString());
    return;
  }
  // Every answer must pass, not just the one dialled (DNS rebinding picks the order).
  std::vector<IpAddress> addresses;
  if (target->literal) {
    addresses.push_back(*target->literal);
  } else {
    std::string host = target->host;
    auto resolved = config_.resolver->Resolve(host);
    if (!resolved) {
      Refuse(client, 502, "cannot resolve " + host + ": " + resolved.error().message);
      finish("error", "resolve: " + resolved.error().ToString());
      return;
    }
    addresses = *resolved;
    if (addresses.empty()) {
      Refuse(client, 502, host + " has no address records");
      finish("error", "no address records");
      return;
    }
  }
  for (const auto& a : addresses) {
    auto v = CheckProxyAddress(config_.policy, a, target->port);
    if (!v.allowed) {
      std::string why =
          target->literal
              ? "denied: address " + a.ToString() + " is not allowed (" + v.reason + ")"
              : "denied: " + target->host + " resolves to " + a.ToString() + " (" + v.reason + ")";
      Refuse(client, 403, why);
      finish("deny", why);
      return;
    }
  }
  UniqueFd upstream;
  std::string dial_error;
  for (const auto& a : addresses) {
    upstream = Dial(a, target->port, Clock::now() + config_.limits.connect_timeout, dial_error);
    if (!upstream) continue;
    // The peer actually reached, checked again.
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    auto got = getpeername(upstream.Get(), reinterpret_cast<sockaddr*>(&peer), &len) == 0
                   ? IpAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&peer))
                   : std::nullopt;
    if (!got || !CheckProxyAddress(config_.policy, *got, target->port).allowed) {
      upstream.Reset();
      dial_error = "dialled peer failed the address check";
      continue;
    }
    rec.address = got->ToString();
    break;
  }
  if (!upstream) {
    Refuse(client, 502, "cannot connect to " + rec.target + ": " + dial_error);
    finish("error", "connect: " + dial_error);
    return;
  }
  fcntl(upstream.Get(), F_SETFL, fcntl(upstream.Get(), F_GETFL) & ~O_NONBLOCK);
  std::string rest = buffer.substr(head_end);
  TunnelHello tls;
  if (tunnel) {
    if (!SendAll(client, "HTTP/1.1 200 Connection Established\r\n\r\n")) {
      finish("error", "client closed");
      return;
    }
    std::string verdict, why;
    const auto wait =
        std::min<Clock::duration>(config_.limits.head_timeout, config_.limits.idle_timeout);
    if (!CheckTunnelStart(client, upstream.Get(), *target, Clock::now() + wait, rest, tls, verdict,
                          why)) {
      finish(verdict, why);
      return;
    }
  } else {
    // Origin-form request line, hop-by-hop and proxy headers dropped, one request per
    // connection.
    // Host first: a server that takes the first of several would otherwise still see ours.
    std::string head = method + " " + origin_form + " HTTP/1.1\r\nHost: " + target->host +
                       (target->port == 80 ? std::string() : ":" + std::to_string(target->port)) +
                       "\r\n";
    size_t pos = line_end + 2;
    while (pos < head_end - 2) {
      size_t eol = buffer.find("\r\n", pos);
      std::string header = buffer.substr(pos, eol - pos);
      pos = eol + 2;
      std::string name = AsciiLower(header.substr(0, header.find(':')));
      // Host: the absolute URI's authority, whatever the client wrote (RFC 9112 3.2.2), so a
      // shared server cannot be steered to a site other than the allowed one.
      if (name == "connection" || name == "proxy-connection" || name == "keep-alive" ||
          name == "proxy-authorization" || name == "te" || name == "upgrade" || name == "host" ||
          name == "content-length") {
        continue;
      }
      head += header + "\r\n";
    }
    // The length as the proxy read it, once, in plain digits: a server that would read the
    // client's spelling (repeated, padded, leading zeros) differently frames the same bytes.
    if (announced_length) head += "Content-Length: " + std::to_string(body_length) + "\r\n";
    head += "Connection: close\r\n\r\n";
    // The announced body only: bytes beyond it (a pipelined request) are dropped.
    if (rest.size() > body_length) rest.resize(body_length);
    body_length -= rest.size();
    rest = head + rest;
  }
  // What goes to the server ahead of the relay (a tunnel's first bytes; a plain request's
  // rewritten head and the body bytes that came with it) counts toward the byte cap like
  // everything the relay moves.
  const bool over_cap = rest.size() > config_.limits.max_bytes;
  if (over_cap) rest.resize(config_.limits.max_bytes);
  rec.bytes_up = rest.size();
  if (!rest.empty() && !SendAll(upstream.Get(), rest)) {
    finish("error", "upstream closed");
    return;
  }
  if (over_cap) {
    finish("allow", "byte cap");
    return;
  }
  if (tls.tls) {
    std::string verdict, why;
    if (!CheckHelloRetry(client, upstream.Get(), *target, config_.limits, tls, rec, verdict, why)) {
      finish(verdict, why);
      return;
    }
  }
  std::string ended;
  Relay(client, upstream.Get(), config_.limits, started, body_length, rec, ended);
  finish("allow", ended);
}

}  // namespace anvil
