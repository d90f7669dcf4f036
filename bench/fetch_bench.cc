// sys.net.fetch cost (issue 6): a 1 KiB and a 1 MiB body from the loopback HTTPS test server,
// fetched through a real (hardened) anvil-gateway -- capability-checked IPC, DNS through c-ares
// to the loopback test DNS server, address checks, a fresh libcurl handle and TLS handshake --
// against the `curl` CLI fetching the same URL in the same run (its own process start, TLS
// handshake and CA load; --resolve instead of DNS). Rows alternate so load lands on both.
// Prints medians and the ratio (target: gateway <= 1.3x curl per request); asserts nothing.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ipc/capability_token.h"
#include "ipc/gateway_client.h"
#include "session/gateway_process.h"
#include "test_dns_server.h"
#include "test_https_server.h"
#include "test_pki.h"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;
using anvil::testing::TestDnsServer;
using anvil::testing::TestHttpsServer;
using anvil::testing::TestPki;

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// One `curl` run; returns its wall time in ms, or a negative number when it failed.
double CurlOnce(const std::vector<std::string>& argv_text) {
  std::vector<char*> argv;
  for (const auto& a : argv_text) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const char* env[] = {"PATH=/usr/bin:/bin", nullptr};  // no proxy variables, no curlrc
  const auto start = Clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), const_cast<char**>(env)) != 0) {
    return -1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  const double took = Ms(Clock::now() - start);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? took : -1;
}

}  // namespace

int main(int argc, char** argv) {
  const int runs = argc > 1 ? std::atoi(argv[1]) : 40;
  const std::string bin_dir = argc > 2 ? argv[2] : ANVIL_BIN_DIR;
  auto pki = TestPki::Create();
  if (!pki) return 1;
  auto leaf = pki->Issue("api", {"DNS:api.anvil.test"});
  auto server = TestHttpsServer::Start("127.0.0.2", 0, leaf, "bench");
  auto dns = TestDnsServer::Start();
  if (!server || !dns) return 1;
  dns->Set("api.anvil.test", {anvil::IpAddress::V4(127, 0, 0, 2)});
  const std::string port = std::to_string(server->port());

  char ws_template[] = "/tmp/anvil-fetch-bench.XXXXXX";
  if (!mkdtemp(ws_template)) return 1;
  const std::string ws = ws_template;
  anvil::session::GatewayConfig config;
  config.binary = bin_dir + "/anvil-gateway";
  config.workspace = ws;
  config.extra_args = {"--runtime-dir", ws + "-run"};
  config.unsafe_net_test.resolver = dns->Address();
  config.unsafe_net_test.allow_addresses = {"127.0.0.2:" + port};
  config.unsafe_net_test.ca_file = pki->ca_path();
  auto gateway = anvil::session::GatewayProcess::Start(config);
  if (!gateway) {
    std::fprintf(stderr, "gateway: %s\n", gateway.error().ToString().c_str());
    return 1;
  }
  auto token = anvil::ipc::CapabilityToken::Generate();
  anvil::Grant grant;
  grant.net_hosts = {"api.anvil.test"};
  if (!token || !(*gateway)->Register(*token, "bench.fetch", getpid(), geteuid(), grant)) return 1;
  auto fd = (*gateway)->Connect();
  if (!fd) return 1;
  anvil::ipc::GatewayClient client(std::move(*fd), token->bytes());
  if (!client.Hello("bench.fetch", (*gateway)->workspace())) return 1;

  std::printf("fetch_bench: %d runs per row, loopback HTTPS (TLS 1.3, test CA), load %s\n", runs,
              [] {
                static char load[64] = "?";
                if (FILE* f = std::fopen("/proc/loadavg", "r")) {
                  if (!std::fgets(load, sizeof(load), f)) load[0] = '\0';
                  std::fclose(f);
                  load[std::strcspn(load, "\n")] = '\0';
                }
                return load;
              }());
  std::printf("%-10s %-8s %9s %9s %9s\n", "body", "via", "median", "p10", "p90");
  int failures = 0;
  for (const size_t size : {size_t{1024}, size_t{1} << 20}) {
    const std::string url = "https://api.anvil.test:" + port + "/bytes/" + std::to_string(size);
    const std::vector<std::string> curl = {"/usr/bin/curl",
                                           "-sS",
                                           "-o",
                                           "/dev/null",
                                           "--noproxy",
                                           "*",
                                           "--cacert",
                                           pki->ca_path(),
                                           "--resolve",
                                           "api.anvil.test:" + port + ":127.0.0.2",
                                           url};
    std::vector<double> via_gateway, via_curl;
    for (int i = -3; i < runs; ++i) {  // 3 warm-up rounds
      const auto start = Clock::now();
      auto r = client.Call("net.fetch", {url, "GET", "{}", ""});
      const double gw = Ms(Clock::now() - start);
      if (!r || !r->ok || r->fields.size() != 3 || r->fields[2].size() != size) {
        ++failures;
        continue;
      }
      const double cu = CurlOnce(curl);
      if (cu < 0) {
        ++failures;
        continue;
      }
      if (i >= 0) {
        via_gateway.push_back(gw);
        via_curl.push_back(cu);
      }
    }
    const std::string label = size == 1024 ? "1 KiB" : "1 MiB";
    std::printf("%-10s %-8s %7.2fms %7.2fms %7.2fms\n", label.c_str(), "gateway",
                Percentile(via_gateway, 0.5), Percentile(via_gateway, 0.1),
                Percentile(via_gateway, 0.9));
    std::printf("%-10s %-8s %7.2fms %7.2fms %7.2fms\n", label.c_str(), "curl",
                Percentile(via_curl, 0.5), Percentile(via_curl, 0.1), Percentile(via_curl, 0.9));
    std::printf("%-10s ratio gateway/curl (medians): %.2fx  (target <= 1.30x)\n", label.c_str(),
                Percentile(via_gateway, 0.5) / Percentile(via_curl, 0.5));
  }
  if (failures) std::printf("failed requests: %d (left out)\n", failures);
  (void)(*gateway)->Stop();
  std::string cleanup = "rm -rf '" + ws + "' '" + ws + "-run'";
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
