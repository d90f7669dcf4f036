#include "test_https_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstring>

namespace anvil::testing {

namespace {

const std::string& GzipBomb() {
  static std::once_flag once;
  static std::string compressed;
  std::call_once(once, [] {
    z_stream z{};
    deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY);
    std::string zeros(1 << 20, '\0');
    unsigned char out[1 << 16];
    for (int mib = 0; mib < 64; ++mib) {
      z.next_in = reinterpret_cast<Bytef*>(zeros.data());
      z.avail_in = static_cast<uInt>(zeros.size());
      const int flush = mib == 63 ? Z_FINISH : Z_NO_FLUSH;
      do {
        z.next_out = out;
        z.avail_out = sizeof(out);
        deflate(&z, flush);
        compressed.append(reinterpret_cast<char*>(out), sizeof(out) - z.avail_out);
      } while (z.avail_out == 0);
    }
    deflateEnd(&z);
  });
  return compressed;
}

std::string Pattern(size_t n) {
  std::string s(n, 'a');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + i % 26);
  return s;
}

bool WriteAll(SSL* ssl, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    int n = SSL_write(ssl, data.data() + off, static_cast<int>(data.size() - off));
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

std::string Response(int status, const std::string& extra_headers, const std::string& body,
                     bool head) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " X\r\nConnection: close\r\n" +
                    "Content-Length: " + std::to_string(body.size()) + "\r\n" + extra_headers +
                    "\r\n";
  if (!head) out += body;
  return out;
}

}  // namespace

std::unique_ptr<TestHttpsServer> TestHttpsServer::Start(const std::string& address,
                                                        std::uint16_t port, const TestLeaf& leaf,
                                                        const std::string& name,
                                                        const std::string& groups) {
  // A client that gives up mid-response (a cap, a timeout) must not kill the test with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  std::unique_ptr<TestHttpsServer> s(new TestHttpsServer());
  s->address_ = address;
  s->name_ = name;
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  s->ctx_ = ctx;
  if (ctx == nullptr || SSL_CTX_use_certificate_chain_file(ctx, leaf.cert_path.c_str()) != 1 ||
      SSL_CTX_use_PrivateKey_file(ctx, leaf.key_path.c_str(), SSL_FILETYPE_PEM) != 1) {
    ADD_FAILURE() << "test HTTPS server: cannot load " << leaf.cert_path;
    return nullptr;
  }
  SSL_CTX_set_msg_callback(
      ctx, [](int write_p, int, int content_type, const void* buf, size_t len, SSL*, void* arg) {
        if (!write_p && content_type == SSL3_RT_HANDSHAKE && len > 0 &&
            static_cast<const unsigned char*>(buf)[0] == SSL3_MT_CLIENT_HELLO) {
          static_cast<std::atomic<int>*>(arg)->fetch_add(1);
        }
      });
  SSL_CTX_set_msg_callback_arg(ctx, &s->client_hellos_);
  if (!groups.empty() && SSL_CTX_set1_groups_list(ctx, groups.c_str()) != 1) {
    ADD_FAILURE() << "test HTTPS server: bad groups " << groups;
    return nullptr;
  }
  s->listen_.Reset(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  s->stop_.Reset(eventfd(0, EFD_CLOEXEC));
  int one = 1;
  setsockopt(s->listen_.Get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &addr.sin_addr) != 1 ||
      (ntohl(addr.sin_addr.s_addr) >> 24) != 127) {
    ADD_FAILURE() << "test HTTPS server binds loopback only, not " << address;
    return nullptr;
  }
  socklen_t len = sizeof(addr);
  if (bind(s->listen_.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(s->listen_.Get(), 64) != 0 ||
      getsockname(s->listen_.Get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return nullptr;  // caller may retry with another port
  }
  s->port_ = ntohs(addr.sin_port);
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  return s;
}

TestHttpsServer::~TestHttpsServer() {
  stopping_ = true;
  uint64_t one = 1;
  if (stop_ && ::write(stop_.Get(), &one, sizeof(one)) < 0) std::abort();
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    workers.swap(workers_);
  }
  for (auto& t : workers) t.join();
  SSL_CTX_free(static_cast<SSL_CTX*>(ctx_));
}

std::vector<std::string> TestHttpsServer::RequestLines() const {
  std::lock_guard lock(mu_);
  return request_lines_;
}

void TestHttpsServer::AcceptLoop() {
  while (!stopping_) {
    pollfd fds[2] = {{listen_.Get(), POLLIN, 0}, {stop_.Get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue;
    if (fds[1].revents) return;
    int fd = accept4(listen_.Get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ++connections_;
    std::lock_guard lock(mu_);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void TestHttpsServer::Serve(int fd) {
  UniqueFd owned(fd);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  SSL* ssl = SSL_new(static_cast<SSL_CTX*>(ctx_));
  SSL_set_fd(ssl, fd);
  auto finish = [&] {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  };
  if (SSL_accept(ssl) != 1) {
    SSL_free(ssl);
    return;
  }
  std::string in;
  char buf[16384];
  size_t header_end;
  while ((header_end = in.find("\r\n\r\n")) == std::string::npos) {
    int n = SSL_read(ssl, buf, sizeof(buf));
    if (n <= 0 || in.size() > (1 << 20)) return finish();
    in.append(buf, static_cast<size_t>(n));
  }
  const std::string head_block = in.substr(0, header_end + 2);
  std::string body = in.substr(header_end + 4);
  const std::string request_line = head_block.substr(0, head_block.find("\r\n"));
  {
    std::lock_guard lock(mu_);
    request_lines_.push_back(request_line);
  }
  std::string lower = head_block;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  size_t content_length = 0;
  if (auto p = lower.find("\r\ncontent-length:"); p != std::string::npos) {
    content_length = std::strtoul(lower.c_str() + p + 17, nullptr, 10);
  }
  while (body.size() < content_length) {
    int n = SSL_read(ssl, buf, sizeof(buf));
    if (n <= 0) return finish();
    body.append(buf, static_cast<size_t>(n));
  }
  std::string host = "localhost";
  if (auto p = lower.find("\r\nhost:"); p != std::string::npos) {
    size_t start = head_block.find_first_not_of(' ', p + 7);
    host = head_block.substr(start, head_block.find("\r\n", start) - start);
  }
  const std::string method = request_line.substr(0, request_line.find(' '));
  const size_t path_start = request_line.find(' ') + 1;
  const std::string path = request_line.substr(path_start, request_line.rfind(' ') - path_start);
  const bool head = method == "HEAD";
  auto number_after = [&](const std::string& prefix) {
    return std::strtoul(path.c_str() + prefix.size(), nullptr, 10);
  };

  std::string out;
  if (path == "/hello") {
    out = Response(200, "Content-Type: text/plain\r\n", "hello from " + name_, head);
  } else if (path.rfind("/bytes/", 0) == 0) {
    out = Response(200, "", Pattern(number_after("/bytes/")), head);
  } else if (path.rfind("/stream/", 0) == 0) {
    const std::string data = Pattern(number_after("/stream/"));
    if (!WriteAll(ssl,
                  "HTTP/1.1 200 OK\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n"))
      return finish();
    for (size_t off = 0; off < data.size() && !head; off += 65536) {
      const std::string chunk = data.substr(off, 65536);
      char size_line[32];
      std::snprintf(size_line, sizeof(size_line), "%zx\r\n", chunk.size());
      if (!WriteAll(ssl, size_line + chunk + "\r\n")) return finish();
    }
    out = "0\r\n\r\n";
  } else if (path == "/binary") {
    std::string bytes(256, '\0');
    for (int i = 0; i < 256; ++i) bytes[i] = static_cast<char>(i);
    out = Response(200, "Content-Type: application/octet-stream\r\n", bytes, head);
  } else if (path == "/echo") {
    out = Response(200, "X-Method: " + method + "\r\n", body, head);
  } else if (path == "/headers") {
    out = Response(200, "X-Multi: one\r\nX-Multi: two\r\n", head_block, head);
  } else if (path == "/redirect") {
    out = Response(302, "Location: https://" + host + "/hello\r\n", "moved", head);
  } else if (path.rfind("/status/", 0) == 0) {
    out = Response(static_cast<int>(number_after("/status/")), "", "", head);
  } else if (path == "/gzip-bomb") {
    out = Response(200, "Content-Encoding: gzip\r\n", GzipBomb(), head);
  } else if (path == "/big-headers") {
    std::string headers;
    for (int i = 0; i < 256; ++i) {
      headers += "X-Pad-" + std::to_string(i) + ": " + std::string(1000, 'p') + "\r\n";
    }
    out = Response(200, headers, "big headers", head);
  } else if (path == "/slow") {
    if (!WriteAll(ssl, "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 100000\r\n\r\n"))
      return finish();
    // One byte every 200 ms for up to 60 s, or until the client gives up or the server stops.
    for (int i = 0; i < 300 && !stopping_; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (!WriteAll(ssl, "x")) break;
    }
    return finish();
  } else if (path.rfind("/sleep/", 0) == 0) {
    const auto until =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(number_after("/sleep/"));
    while (std::chrono::steady_clock::now() < until && !stopping_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    out = Response(200, "", "slept", head);
  } else {
    out = Response(404, "", "no such test route", head);
  }
  WriteAll(ssl, out);
  finish();
}

}  // namespace anvil::testing
