// A real HTTPS/1.1 server on a loopback address for the sys.net.fetch tests, with a leaf
// certificate from TestPki. It records every TCP connection it accepts, so a test can assert
// that a forbidden target "never saw a connection". Routes (GET unless noted; HEAD = GET
// without body):
//   /hello              "hello from NAME"
//   /bytes/N            N bytes 'a'..'z' repeating (Content-Length)
//   /stream/N           N bytes, chunked (no Content-Length)
//   /binary             the 256 byte values 0..255
//   /echo               POST: the request body back; X-Method: the method
//   /headers            the request's header block as the body
//   /redirect           302 to https://<Host>/hello
//   /status/N           status N, empty body
//   /gzip-bomb          64 MiB of zeros, gzip-encoded (~64 KiB on the wire)
//   /big-headers        256 headers of ~1 KiB each
//   /slow               headers, then one body byte every 200 ms (slow loris)
//   /sleep/MS           waits MS milliseconds, then "slept"
// Every connection is closed after one response. Loopback only; test-only.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/unique_fd.h"
#include "test_pki.h"

namespace anvil::testing {

class TestHttpsServer {
 public:
  // `address` must be a loopback IPv4 literal ("127.0.0.2"); port 0 picks one. `groups`, when
  // set, is the server's whole list of key-exchange groups (OpenSSL syntax, "P-256"): a client
  // whose first hello offers a key share for none of them gets a HelloRetryRequest.
  static std::unique_ptr<TestHttpsServer> Start(const std::string& address, std::uint16_t port,
                                                const TestLeaf& leaf, const std::string& name,
                                                const std::string& groups = "");
  ~TestHttpsServer();

  std::uint16_t port() const { return port_; }
  const std::string& address() const { return address_; }
  int Connections() const { return connections_.load(); }
  // ClientHello messages received, over all connections (two for a handshake with a
  // HelloRetryRequest).
  int ClientHellos() const { return client_hellos_.load(); }
  std::vector<std::string> RequestLines() const;

 private:
  TestHttpsServer() = default;
  void AcceptLoop();
  void Serve(int fd);

  std::string address_, name_;
  std::uint16_t port_ = 0;
  void* ctx_ = nullptr;  // SSL_CTX*
  UniqueFd listen_, stop_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> connections_{0};
  std::atomic<int> client_hellos_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<std::string> request_lines_;
};

}  // namespace anvil::testing
