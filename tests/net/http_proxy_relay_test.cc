// anvil-proxy's relay (issue 8): bytes move between the command's connection and the origin with
// splice(2) through a pipe. What must not change with that: every byte arrives, in order, both
// ways (checked against a deterministic stream), and the caps cut exactly where they did: bytes
// (both directions together), total time, idle time. The proxy is the production HttpProxy on a
// loopback listener of the test's own; the origin is a thread on 127.0.0.1.
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

#include "common/ascii.h"
#include "net/http_proxy.h"
#include "proxy_test_support.h"
#include "tls_hello.h"

namespace anvil::testing {
namespace http_proxy_relay_test {
namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Byte i of the test stream: splitmix64 of i / 8, so a lost, repeated or reordered block shows.
uint8_t StreamByte(uint64_t i) {
  uint64_t z = (i / 8) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return static_cast<uint8_t>(z >> (8 * (i % 8)));
}

void FillStream(uint64_t offset, char* out, size_t n) {
  for (size_t k = 0; k < n; ++k) out[k] = static_cast<char>(StreamByte(offset + k));
}

// Counts bytes and compares each with the stream; `first_mismatch` is the offset of the first
// wrong byte (UINT64_MAX while all are right).
struct StreamCheck {
  uint64_t count = 0;
  uint64_t first_mismatch = UINT64_MAX;
  void Add(const char* data, size_t n) {
    for (size_t k = 0; k < n; ++k) {
      if (first_mismatch == UINT64_MAX && static_cast<uint8_t>(data[k]) != StreamByte(count + k)) {
        first_mismatch = count + k;
      }
    }
    count += n;
  }
};

// Sends stream bytes [from, from + size).
bool SendStream(int fd, uint64_t size, uint64_t from = 0) {
  std::vector<char> buf(1 << 16);
  for (uint64_t sent = 0; sent < size;) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf.size(), size - sent));
    FillStream(from + sent, buf.data(), n);
    for (size_t off = 0; off < n;) {
      ssize_t w = ::send(fd, buf.data() + off, n - off, MSG_NOSIGNAL);
      if (w <= 0) return false;
      off += static_cast<size_t>(w);
    }
    sent += n;
  }
  return true;
}

// Reads until EOF, an error or `timeout` without data. Returns false on the timeout.
bool ReadToEnd(int fd, StreamCheck& check, std::chrono::milliseconds timeout = 20000ms) {
  std::vector<char> buf(1 << 16);
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n <= 0) return true;
    check.Add(buf.data(), static_cast<size_t>(n));
  }
}

constexpr uint64_t kMiB = 1 << 20;

TEST(HttpProxyRelay, ALargeDownloadThroughATunnelArrivesByteExact) {
  const uint64_t size = 64 * kMiB + 4321;
  Origin origin([&](int fd) { SendStream(fd, size); });
  Proxy proxy(origin.port(), {});
  UniqueFd c = proxy.Tunnel(origin.port());
  StreamCheck got;
  ASSERT_TRUE(ReadToEnd(c.Get(), got));
  EXPECT_EQ(got.count, size);
  EXPECT_EQ(got.first_mismatch, UINT64_MAX);
  c.Reset();
  auto records = proxy.Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].verdict, "allow");
  EXPECT_EQ(records[0].reason, "done");
  EXPECT_EQ(records[0].bytes_down, size);
  EXPECT_EQ(records[0].bytes_up, 0u);
}

// A plain-HTTP GET of `size` stream bytes through the proxy, checked byte for byte. Returns the
// connection's audit record (reason "missing" when there is none) and the head the origin got.
struct PlainGet {
  ProxyAuditRecord record;
  std::string request;
};
PlainGet PlainDownload(uint64_t size, const ProxyLimits& limits, const std::string& path) {
  PlainGet result;
  result.record.reason = "missing";
  {
    Origin origin([&](int fd) {
      result.request = ReadHead(fd);
      std::string head = "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(size) +
                         "\r\nConnection: close\r\n\r\n";
      ::send(fd, head.data(), head.size(), MSG_NOSIGNAL);
      SendStream(fd, size);
    });
    Proxy proxy(origin.port(), limits);
    UniqueFd c = proxy.Connect();
    std::string req = "GET http://127.0.0.1:" + std::to_string(origin.port()) + path +
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    EXPECT_EQ(::send(c.Get(), req.data(), req.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(req.size()));
    std::string head = ReadHead(c.Get());
    EXPECT_EQ(head.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << head;
    StreamCheck got;
    EXPECT_TRUE(ReadToEnd(c.Get(), got));
    EXPECT_EQ(got.count, size);
    EXPECT_EQ(got.first_mismatch, UINT64_MAX);
    c.Reset();
    auto records = proxy.Records();
    EXPECT_EQ(records.size(), 1u);
    if (!records.empty()) result.record = records[0];
  }
  return result;
}

TEST(HttpProxyRelay, ALargePlainHttpDownloadArrivesByteExact) {
  auto get = PlainDownload(32 * kMiB + 17, {}, "/big");
  EXPECT_EQ(get.record.reason, "done");
  EXPECT_EQ(get.request.rfind("GET /big HTTP/1.1\r\n", 0), 0u) << get.request;
}

TEST(HttpProxyRelay, AnUploadArrivesByteExactAndTheAnswerComesBackAfterTheHalfClose) {
  const uint64_t size = 32 * kMiB + 99;
  StreamCheck at_origin;
  Origin origin([&](int fd) {
    ReadToEnd(fd, at_origin);
    std::string answer = "got " + std::to_string(at_origin.count);
    ::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL);
  });
  Proxy proxy(origin.port(), {});
  UniqueFd c = proxy.Tunnel(origin.port());
  ASSERT_TRUE(SendStream(c.Get(), size));
  ::shutdown(c.Get(), SHUT_WR);
  char buf[64] = {};
  std::string answer;
  while (true) {
    pollfd p{c.Get(), POLLIN, 0};
    ASSERT_GT(poll(&p, 1, 20000), 0);
    ssize_t n = ::recv(c.Get(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(answer, "got " + std::to_string(size));
  c.Reset();
  auto records = proxy.Records();
  EXPECT_EQ(at_origin.count, size);
  EXPECT_EQ(at_origin.first_mismatch, UINT64_MAX);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "done");
  EXPECT_EQ(records[0].bytes_up, size);
  EXPECT_EQ(records[0].bytes_down, answer.size());
}

TEST(HttpProxyRelay, ATunnelCarryingMoreThanTheByteCapIsCutAtTheCap) {
  // Not a multiple of a page or of any buffer; both directions count: 1000 bytes up first.
  const uint64_t cap = 3 * kMiB + 12345;
  const uint64_t up = 1000;
  StreamCheck at_origin;
  Origin origin([&](int fd) {
    std::vector<char> buf(up);
    size_t have = 0;
    while (have < up) {
      ssize_t n = ::recv(fd, buf.data() + have, up - have, 0);
      if (n <= 0) break;
      have += static_cast<size_t>(n);
    }
    at_origin.Add(buf.data(), have);
    SendStream(fd, 16 * kMiB);  // fails once the proxy cuts
  });
  ProxyLimits limits;
  limits.max_bytes = cap;
  Proxy proxy(origin.port(), limits);
  UniqueFd c = proxy.Tunnel(origin.port());
  ASSERT_TRUE(SendStream(c.Get(), up));
  StreamCheck got;
  ASSERT_TRUE(ReadToEnd(c.Get(), got));
  // Exactly the cap, all of it right, then the end.
  EXPECT_EQ(got.count, cap - up);
  EXPECT_EQ(got.first_mismatch, UINT64_MAX);
  c.Reset();
  auto records = proxy.Records();
  EXPECT_EQ(at_origin.count, up);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].verdict, "allow");
  EXPECT_EQ(records[0].reason, "byte cap");
  EXPECT_EQ(records[0].bytes_up, up);
  EXPECT_EQ(records[0].bytes_down, cap - up + 1);  // the one byte over that ended it
}

TEST(HttpProxyRelay, ATunnelCarryingExactlyTheByteCapIsWhole) {
  const uint64_t cap = 3 * kMiB + 12345;
  Origin origin([&](int fd) { SendStream(fd, cap); });
  ProxyLimits limits;
  limits.max_bytes = cap;
  Proxy proxy(origin.port(), limits);
  UniqueFd c = proxy.Tunnel(origin.port());
  StreamCheck got;
  ASSERT_TRUE(ReadToEnd(c.Get(), got));
  EXPECT_EQ(got.count, cap);
  EXPECT_EQ(got.first_mismatch, UINT64_MAX);
  c.Reset();
  auto records = proxy.Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "done");
}

TEST(HttpProxyRelay, APlainHttpRequestsHeadAndBodyCountTowardTheByteCap) {
  // The proxy forwards a plain-HTTP request's rewritten head, and the body bytes that came with
  // it, before the relay starts: they count like every byte the relay moves, so the answer the
  // origin floods back gets through only up to the cap minus them. Benign: a small exchange
  // under the same cap is whole.
  const uint64_t cap = 256 * 1024;
  const std::string body(30000, 'b');
  StreamCheck got;
  uint64_t at_origin = 0;
  Origin origin([&](int fd) {
    std::string head = ReadHead(fd);
    at_origin = head.size();
    std::vector<char> buf(body.size());
    size_t have = 0;
    while (have < body.size()) {
      ssize_t n = ::recv(fd, buf.data() + have, body.size() - have, 0);
      if (n <= 0) break;
      have += static_cast<size_t>(n);
    }
    at_origin += have;
    SendStream(fd, 16 * kMiB);  // fails once the proxy cuts
  });
  ProxyLimits limits;
  limits.max_bytes = cap;
  Proxy proxy(origin.port(), limits);
  UniqueFd c = proxy.Connect();
  std::string req =
      "POST http://127.0.0.1:" + std::to_string(origin.port()) +
      "/up HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\n\r\n" + body;
  ASSERT_EQ(::send(c.Get(), req.data(), req.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(req.size()));
  ASSERT_TRUE(ReadToEnd(c.Get(), got));
  c.Reset();
  auto records = proxy.Records();
  EXPECT_EQ(got.first_mismatch, UINT64_MAX);
  EXPECT_GT(at_origin, body.size());
  EXPECT_LE(at_origin + got.count, cap);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "byte cap");
  EXPECT_EQ(records[0].bytes_up, at_origin);
  EXPECT_EQ(records[0].bytes_down, cap - at_origin + 1);  // the one byte over that ended it
}

TEST(HttpProxyRelay, APlainHttpExchangeUnderTheByteCapIsWhole) {
  ProxyLimits limits;
  limits.max_bytes = 256 * 1024;
  auto get = PlainDownload(100000, limits, "/small");
  EXPECT_EQ(get.record.reason, "done");
  EXPECT_EQ(get.record.bytes_up, get.request.size());
}

// One plain-HTTP request per connection, as framed by its own head: a request pipelined behind
// it (which a lenient shared server might answer, for whatever Host it names) never reaches
// the server, and neither does anything past the body its Content-Length announced. A body of
// unannounced length (Transfer-Encoding) is refused with 411, ambiguous framing with 400, both
// before any connection. Benign next to them: a large announced body arrives byte for byte.
TEST(HttpProxyRelay, APlainRequestForwardsOnlyItsOwnHeadAndAnnouncedBody) {
  const std::string smuggled = "GET /other HTTP/1.1\r\nHost: evil.example\r\n\r\n";
  struct Case {
    std::string head_extra;  // header lines after Host
    std::string body;        // what follows the head
    size_t announced;        // body bytes the server must get
  };
  const std::vector<Case> cases = {
      {"", smuggled, 0},
      {"Content-Length: 10\r\n", "0123456789" + smuggled, 10},
      {"Content-Length: 4\r\n", "abcdefgh", 4},
      // The server gets the length as the proxy read it, once, whatever the spelling.
      {"Content-Length:  010 \r\ncontent-length: 10\r\n", "0123456789" + smuggled, 10},
  };
  // The body in the same write as the head (read with it), or a moment later (read by the
  // relay, which must stop forwarding at the announced end).
  for (bool later : {false, true}) {
    for (const auto& c : cases) {
      std::string at_origin, answer;
      std::vector<ProxyAuditRecord> records;
      {
        Origin origin([&](int fd) {
          at_origin = ReadHead(fd);
          at_origin += ReadExactly(fd, c.announced);
          at_origin += ReadAll(fd, 500ms);  // anything more the proxy let through
          const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
          ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
        });
        Proxy proxy(origin.port(), {});
        UniqueFd client = proxy.Connect();
        const std::string head = "POST http://127.0.0.1:" + std::to_string(origin.port()) +
                                 "/x HTTP/1.1\r\nHost: 127.0.0.1\r\n" + c.head_extra + "\r\n";
        const std::string first = later ? head : head + c.body;
        ASSERT_EQ(::send(client.Get(), first.data(), first.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(first.size()));
        if (later) {
          std::this_thread::sleep_for(100ms);
          ASSERT_EQ(::send(client.Get(), c.body.data(), c.body.size(), MSG_NOSIGNAL),
                    static_cast<ssize_t>(c.body.size()));
        }
        answer = ReadAll(client.Get(), 3000ms);
        client.Reset();
        records = proxy.Records();
      }
      EXPECT_EQ(at_origin.find("evil"), std::string::npos) << later << at_origin;
      EXPECT_EQ(at_origin.find("/other"), std::string::npos) << later << at_origin;
      const size_t head_end = at_origin.find("\r\n\r\n");
      ASSERT_NE(head_end, std::string::npos) << at_origin;
      EXPECT_EQ(at_origin.substr(head_end + 4), c.body.substr(0, c.announced)) << later;
      const std::string origin_head = AsciiLower(at_origin.substr(0, head_end + 2));
      const size_t length_line = origin_head.find("\r\ncontent-length:");
      if (c.announced > 0) {
        EXPECT_NE(origin_head.find("\r\ncontent-length: " + std::to_string(c.announced) + "\r\n"),
                  std::string::npos)
            << origin_head;
        EXPECT_EQ(origin_head.find("\r\ncontent-length:", length_line + 1), std::string::npos)
            << origin_head;
      }
      EXPECT_NE(answer.find("\r\n\r\nok"), std::string::npos) << later << answer;
      ASSERT_EQ(records.size(), 1u);
      EXPECT_EQ(records[0].bytes_up, head_end + 4 + c.announced) << later;
    }
  }
  // Benign: 8 MiB announced and streamed after the head arrive whole.
  const uint64_t size = 8 * kMiB + 5;
  StreamCheck at_origin;
  {
    Origin origin([&](int fd) {
      ReadHead(fd);
      std::vector<char> buf(1 << 16);
      while (at_origin.count < size) {
        ssize_t n =
            ::recv(fd, buf.data(), std::min<uint64_t>(buf.size(), size - at_origin.count), 0);
        if (n <= 0) break;
        at_origin.Add(buf.data(), static_cast<size_t>(n));
      }
      const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
      ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    });
    Proxy proxy(origin.port(), {});
    UniqueFd client = proxy.Connect();
    const std::string head =
        "PUT http://127.0.0.1:" + std::to_string(origin.port()) +
        "/up HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
    ASSERT_EQ(::send(client.Get(), head.data(), head.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(head.size()));
    ASSERT_TRUE(SendStream(client.Get(), size));
    EXPECT_NE(ReadAll(client.Get(), 5000ms).find("\r\n\r\nok"), std::string::npos);
    client.Reset();
    auto records = proxy.Records();
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].verdict, "allow");
  }
  EXPECT_EQ(at_origin.count, size);
  EXPECT_EQ(at_origin.first_mismatch, UINT64_MAX);
}

TEST(HttpProxyRelay, AFloodAfterAPlainRequestIsDroppedAndThenEndsTheConnection) {
  // Bytes past the announced body are read and dropped, up to 1 MiB; more ends the connection.
  std::string at_origin;
  std::vector<ProxyAuditRecord> records;
  {
    Origin origin([&](int fd) {
      at_origin = ReadHead(fd);
      at_origin += ReadAll(fd, 2000ms);
    });
    Proxy proxy(origin.port(), {});
    UniqueFd client = proxy.Connect();
    const std::string head = "GET http://127.0.0.1:" + std::to_string(origin.port()) +
                             "/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    ASSERT_EQ(::send(client.Get(), head.data(), head.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(head.size()));
    SendStream(client.Get(), 4 * kMiB);  // fails once the proxy ends the connection
    client.Reset();
    records = proxy.Records();
  }
  EXPECT_EQ(at_origin.find("\r\n\r\n"), at_origin.size() - 4) << "bytes after the head arrived";
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "data after the request");
}

TEST(HttpProxyRelay, PlainRequestsWithoutAnUnambiguousLengthAreRefusedUnsent) {
  struct Case {
    std::string headers;
    std::string status;
  };
  const std::vector<Case> cases = {
      {"Transfer-Encoding: chunked\r\n", "411"},
      {"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "400"},
      {"Content-Length: 5\r\nContent-Length: 6\r\n", "400"},
      {"Content-Length: 5, 5\r\n", "400"},
      {"Content-Length: -1\r\n", "400"},
      {"Content-Length: 0x10\r\n", "400"},
      {"Content-Length: 99999999999999999999999\r\n", "400"},
  };
  uint16_t port = 0;
  UniqueFd never_reached = BindLoopback(SOCK_STREAM, &port);
  ASSERT_TRUE(never_reached);
  Proxy proxy(port, {});
  for (const auto& c : cases) {
    UniqueFd client = proxy.Connect();
    const std::string req = "POST http://127.0.0.1:" + std::to_string(port) +
                            "/x HTTP/1.1\r\nHost: 127.0.0.1\r\n" + c.headers + "\r\nhello";
    ASSERT_EQ(::send(client.Get(), req.data(), req.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(req.size()));
    const std::string answer = ReadAll(client.Get(), 3000ms);
    EXPECT_EQ(answer.rfind("HTTP/1.1 " + c.status + " ", 0), 0u) << c.headers << answer;
  }
  proxy.Records();
  pollfd p{never_reached.Get(), POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0) << "a refused request was connected to the server";
  // Benign: the same length twice, and a length with surrounding blanks, go through.
  std::string at_origin;
  {
    Origin ok([&](int fd) {
      at_origin = ReadHead(fd);
      at_origin += ReadExactly(fd, 5);
      const std::string reply = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
      ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    });
    Proxy proxy_ok(ok.port(), {});
    UniqueFd client = proxy_ok.Connect();
    const std::string req = "POST http://127.0.0.1:" + std::to_string(ok.port()) +
                            "/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length:  5 \r\n"
                            "Content-Length: 5\r\n\r\nhello";
    ASSERT_EQ(::send(client.Get(), req.data(), req.size(), MSG_NOSIGNAL),
              static_cast<ssize_t>(req.size()));
    EXPECT_EQ(ReadAll(client.Get(), 3000ms).rfind("HTTP/1.1 200 OK", 0), 0u);
    client.Reset();
    proxy_ok.Records();
  }
  EXPECT_NE(at_origin.find("hello"), std::string::npos) << at_origin;
}

TEST(HttpProxyRelay, BothDirectionsRacingForTheByteCapForwardAtMostTheCapBetweenThem) {
  // Both directions flood at once and reach the cap at about the same time: between them no
  // more than the cap may get through, every byte of it in order.
  const uint64_t cap = 5 * kMiB + 777;
  StreamCheck at_origin;
  std::thread origin_reader;
  Origin origin([&](int fd) {
    origin_reader = std::thread([&at_origin, fd] { ReadToEnd(fd, at_origin); });
    SendStream(fd, 16 * kMiB);  // fails once the proxy cuts
    origin_reader.join();
  });
  ProxyLimits limits;
  limits.max_bytes = cap;
  Proxy proxy(origin.port(), limits);
  UniqueFd c = proxy.Tunnel(origin.port());
  std::thread uploader([fd = c.Get()] { SendStream(fd, 16 * kMiB); });
  StreamCheck got;
  ASSERT_TRUE(ReadToEnd(c.Get(), got));
  ::shutdown(c.Get(), SHUT_RDWR);
  uploader.join();
  c.Reset();
  auto records = proxy.Records();
  EXPECT_EQ(got.first_mismatch, UINT64_MAX);
  EXPECT_EQ(at_origin.first_mismatch, UINT64_MAX);
  EXPECT_GT(got.count, 0u);
  EXPECT_GT(at_origin.count, 0u);
  EXPECT_LE(got.count + at_origin.count, cap);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "byte cap");
  EXPECT_GT(records[0].bytes_up + records[0].bytes_down, cap);
}

TEST(HttpProxyRelay, AOneWayStreamLongerThanTheIdleTimeoutIsNotCut) {
  // The command sends nothing after its CONNECT while the download runs for over three idle
  // timeouts: "idle" means no byte moved either way, so the silent direction must not end it.
  const uint64_t chunk = 256 * 1024;
  const int chunks = 20;
  Origin origin([&](int fd) {
    for (int i = 0; i < chunks; ++i) {
      if (!SendStream(fd, chunk, i * chunk)) return;
      std::this_thread::sleep_for(50ms);
    }
  });
  ProxyLimits limits;
  limits.idle_timeout = 300ms;
  Proxy proxy(origin.port(), limits);
  UniqueFd c = proxy.Tunnel(origin.port());
  StreamCheck got;
  ASSERT_TRUE(ReadToEnd(c.Get(), got));
  EXPECT_EQ(got.count, chunk * chunks);
  EXPECT_EQ(got.first_mismatch, UINT64_MAX);
  c.Reset();
  auto records = proxy.Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "done");
}

TEST(HttpProxyRelay, TheTimeCapCutsAStreamThatNeverPauses) {
  std::atomic<bool> done{false};
  Origin origin([&](int fd) {
    // Full speed until the proxy cuts (or 30 s, so a broken cap fails instead of hanging).
    auto until = Clock::now() + 30s;
    for (uint64_t at = 0; !done && Clock::now() < until && SendStream(fd, 4 * kMiB, at);
         at += 4 * kMiB) {
    }
  });
  ProxyLimits limits;
  limits.max_duration = 500ms;
  Proxy proxy(origin.port(), limits);
  const auto start = Clock::now();
  UniqueFd c = proxy.Tunnel(origin.port());
  StreamCheck got;
  ASSERT_TRUE(ReadToEnd(c.Get(), got));
  done = true;
  EXPECT_LT(Clock::now() - start, 10s);
  EXPECT_GT(got.count, 0u);
  EXPECT_EQ(got.first_mismatch, UINT64_MAX);
  c.Reset();
  auto records = proxy.Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "time cap");
}

TEST(HttpProxyRelay, AReaderThatStopsReadingIsCutAtTheIdleTimeout) {
  std::atomic<bool> done{false};
  Origin origin([&](int fd) {
    auto until = Clock::now() + 30s;
    for (uint64_t at = 0; !done && Clock::now() < until && SendStream(fd, kMiB, at); at += kMiB) {
    }
  });
  ProxyLimits limits;
  limits.idle_timeout = 300ms;
  Proxy proxy(origin.port(), limits);
  const auto start = Clock::now();
  UniqueFd c = proxy.Tunnel(origin.port());
  // Read nothing: the socket buffers and the pipe fill, nothing moves, the idle timer runs.
  auto records = proxy.Records();
  done = true;
  EXPECT_LT(Clock::now() - start, 10s);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "idle timeout");
  EXPECT_GT(records[0].bytes_down, 0u);
}

TEST(HttpProxyRelay, ASilentTunnelIsCutAtTheIdleTimeout) {
  Origin origin([&](int fd) {
    pollfd p{fd, POLLIN, 0};
    poll(&p, 1, 10000);  // until the proxy closes
  });
  ProxyLimits limits;
  limits.idle_timeout = 300ms;
  Proxy proxy(origin.port(), limits);
  const auto start = Clock::now();
  UniqueFd c = proxy.Tunnel(origin.port());
  StreamCheck got;
  ASSERT_TRUE(ReadToEnd(c.Get(), got));
  EXPECT_EQ(got.count, 0u);
  EXPECT_GE(Clock::now() - start, 250ms);
  EXPECT_LT(Clock::now() - start, 5s);
  c.Reset();
  auto records = proxy.Records();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].reason, "idle timeout");
}

// A TLS 1.3 HelloRetryRequest as a server sends it: a ServerHello record whose random is RFC
// 8446's fixed value (TLS_AES_128_GCM_SHA256, supported_versions 1.3).
std::string HelloRetryRecord() {
  const std::string random(
      "\xcf\x21\xad\x74\xe5\x9a\x61\x11\xbe\x1d\x8c\x02\x1e\x65\xb8\x91"
      "\xc2\xa2\x11\x16\x7a\xbb\x8c\x5e\x07\x9e\x09\xe2\xc8\xa8\x33\x9c",
      32);
  const std::string body = std::string("\x03\x03", 2) + random +
                           std::string("\x00\x13\x01\x00", 4) +
                           std::string("\x00\x06\x00\x2b\x00\x02\x03\x04", 8);
  const std::string msg = std::string("\x02\x00", 2) + static_cast<char>(body.size() >> 8) +
                          static_cast<char>(body.size() & 0xff) + body;
  return std::string("\x16\x03\x03", 3) + static_cast<char>(msg.size() >> 8) +
         static_cast<char>(msg.size() & 0xff) + msg;
}

// A client can make any TLS 1.3 server answer with a HelloRetryRequest (its first hello offers
// no key share the server takes), and then sends a second ClientHello, in clear. The proxy
// checks that one like the first: one that names a site the tunnel was not opened for
// (domain fronting, the second time round) never reaches the server, and neither does anything
// but a hello (after at most the compatibility ChangeCipherSpec), nor anything after it. The
// client may also send the second hello right behind the first, before the server answered:
// the proxy forwards only the first hello's record and holds the rest until it knows whether
// a retry request came. Benign next to it: a second hello that passes arrives byte for byte
// and the tunnel carries on. The tunnel's target is an address, so a hello may carry no server
// name but not one.
TEST(HttpProxyTunnel, TheSecondClientHelloAfterAHelloRetryRequestIsCheckedLikeTheFirst) {
  const std::string first = RealClientHello("");
  const std::string ccs("\x14\x03\x03\x00\x01\x01", 6);
  const std::string hrr = HelloRetryRecord();
  struct Case {
    std::string next;  // what the client sends after its first hello
    bool together;     // sent in the same write as the first hello, before the retry request
    bool passes;
    std::string verdict, reason;  // the audit record's, when refused
  };
  const std::string evil =
      "TLS server name evil.test on a tunnel to the address 127.0.0.1 (the "
      "second ClientHello, after a HelloRetryRequest)";
  const std::vector<Case> cases = {
      {ccs + RealClientHello(""), false, true, "", ""},
      {RealClientHello(""), false, true, "", ""},
      {ccs + RealClientHello(""), true, true, "", ""},
      {ccs + RealClientHello("evil.test"), false, false, "deny", evil},
      {ccs + RealClientHello("evil.test"), true, false, "deny", evil},
      {RealClientHello("evil.test"), true, false, "deny", evil},
      {std::string("\x17\x03\x03\x00\x05hello", 10), false, false, "deny",
       "something other than a ClientHello"},
      {ccs + ccs + RealClientHello(""), false, false, "deny", "ChangeCipherSpec"},
      {ccs + RealClientHello("") + RealClientHello("evil.test"), true, false, "deny",
       "bytes after the second ClientHello"},
      {ccs + std::string("\x15\x03\x03\x00\x02\x02\x28", 7), false, false, "error",
       "TLS alert after a HelloRetryRequest"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    std::string at_origin, answer;
    std::vector<ProxyAuditRecord> records;
    {
      Origin origin([&](int fd) {
        at_origin = ReadExactly(fd, first.size());
        // The retry request in two pieces: the proxy must wait for the whole record.
        ::send(fd, hrr.data(), 20, MSG_NOSIGNAL);
        std::this_thread::sleep_for(50ms);
        ::send(fd, hrr.data() + 20, hrr.size() - 20, MSG_NOSIGNAL);
        at_origin += ReadAll(fd, 2000ms);
        if (at_origin.size() > first.size()) ::send(fd, "server-says-hi", 14, MSG_NOSIGNAL);
      });
      Proxy proxy(origin.port(), {});
      UniqueFd client = proxy.Tunnel(origin.port());
      const std::string opening = c.together ? first + c.next : first;
      ASSERT_EQ(::send(client.Get(), opening.data(), opening.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(opening.size()));
      EXPECT_EQ(ReadExactly(client.Get(), hrr.size()), hrr) << i;
      if (!c.together) {
        ASSERT_EQ(::send(client.Get(), c.next.data(), c.next.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(c.next.size()));
      }
      if (c.passes) ::shutdown(client.Get(), SHUT_WR);  // the origin reads to the end
      answer = ReadAll(client.Get());
      client.Reset();
      records = proxy.Records();
    }  // the origin's thread has ended
    ASSERT_EQ(records.size(), 1u) << i;
    if (c.passes) {
      EXPECT_EQ(at_origin, first + c.next) << i;
      EXPECT_EQ(answer, "server-says-hi") << i;
      EXPECT_EQ(records[0].verdict, "allow") << i << ": " << records[0].reason;
      EXPECT_EQ(records[0].bytes_up, first.size() + c.next.size()) << i;
    } else {
      EXPECT_EQ(at_origin, first) << i << ": a refused second hello reached the server";
      EXPECT_EQ(answer, "") << i;
      EXPECT_EQ(records[0].verdict, c.verdict) << i;
      EXPECT_NE(records[0].reason.find(c.reason), std::string::npos)
          << i << ": " << records[0].reason;
    }
  }
}

TEST(HttpProxyTunnel, AnOrdinaryServerHelloEndsTheChecksAndTheTunnelCarriesOn) {
  // No retry: whatever the client sends after the server's first flight is not inspected (it
  // is encrypted), so an application-data record goes through.
  const std::string first = RealClientHello("");
  std::string server_hello = HelloRetryRecord();
  server_hello[11] = '\x00';  // another random: an ordinary ServerHello
  const std::string data("\x17\x03\x03\x00\x05hello", 10);
  std::string at_origin;
  std::vector<ProxyAuditRecord> records;
  for (bool together : {false, true}) {
    at_origin.clear();
    {
      Origin origin([&](int fd) {
        at_origin = ReadExactly(fd, first.size());
        ::send(fd, server_hello.data(), server_hello.size(), MSG_NOSIGNAL);
        at_origin += ReadExactly(fd, data.size());
      });
      Proxy proxy(origin.port(), {});
      UniqueFd client = proxy.Tunnel(origin.port());
      // The data right behind the hello (held until the server answered) or after the answer.
      const std::string opening = together ? first + data : first;
      ASSERT_EQ(::send(client.Get(), opening.data(), opening.size(), MSG_NOSIGNAL),
                static_cast<ssize_t>(opening.size()));
      EXPECT_EQ(ReadExactly(client.Get(), server_hello.size()), server_hello);
      if (!together) {
        ASSERT_EQ(::send(client.Get(), data.data(), data.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(data.size()));
      }
      ReadAll(client.Get());
      client.Reset();
      records = proxy.Records();
    }
    EXPECT_EQ(at_origin, first + data) << together;
    ASSERT_EQ(records.size(), 1u);
    EXPECT_EQ(records[0].verdict, "allow");
    EXPECT_EQ(records[0].bytes_down, server_hello.size());
  }
}

}  // namespace
}  // namespace http_proxy_relay_test
}  // namespace anvil::testing
