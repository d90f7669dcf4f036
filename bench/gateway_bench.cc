// Gateway read throughput and latency (issue 3), against two floors measured in the same run:
// a raw Unix-socket round trip and a raw openat2+fstat+read of the same 4 KiB file.
// Prints ratios; asserts nothing.
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "bench_floors.h"
#include "ipc/capability_token.h"
#include "ipc/gateway_client.h"
#include "session/gateway_process.h"

using Clock = std::chrono::steady_clock;

namespace {

using anvil::bench::Percentile;
using anvil::bench::RawBeneathReads;
using anvil::bench::RawSocketRoundTrips;

}  // namespace

int main(int argc, char** argv) {
  std::string bin_dir = argc > 1 ? argv[1] : "build/release";
  int n = argc > 2 ? std::atoi(argv[2]) : 20000;
  char tmpl[] = "/tmp/anvil-bench-XXXXXX";
  std::string ws = mkdtemp(tmpl);
  {
    int fd = open((ws + "/file4k.txt").c_str(), O_CREAT | O_WRONLY, 0644);
    std::string data(4096, 'd');
    ssize_t ignored = write(fd, data.data(), data.size());
    (void)ignored;
    close(fd);
  }
  anvil::session::GatewayConfig config{
      bin_dir + "/anvil-gateway", ws, {"--runtime-dir", ws + "-run"}};
  auto gateway = anvil::session::GatewayProcess::Start(config);
  if (!gateway) {
    std::fprintf(stderr, "gateway: %s\n", gateway.error().ToString().c_str());
    return 1;
  }
  auto token = anvil::ipc::CapabilityToken::Generate();
  anvil::Grant grant;
  grant.fs_read = {"**"};
  if (!(*gateway)->Register(*token, "bench.reader", getpid(), geteuid(), grant)) return 1;

  auto raw_rt = RawSocketRoundTrips(n);
  auto raw_read = RawBeneathReads(ws, "file4k.txt", n);
  double floor_p50 = Percentile(raw_rt, 0.5) + Percentile(raw_read, 0.5);

  std::printf("%-34s %10s %10s %12s\n", "measurement", "p50 us", "p99 us", "reads/s");
  std::printf("%-34s %10.2f %10.2f\n", "raw unix socket round trip (4 KiB)",
              Percentile(raw_rt, 0.5), Percentile(raw_rt, 0.99));
  std::printf("%-34s %10.2f %10.2f\n", "raw openat2+fstat+read (4 KiB)", Percentile(raw_read, 0.5),
              Percentile(raw_read, 0.99));

  for (int clients : {1, 8}) {
    std::vector<std::vector<double>> lat(clients);
    std::atomic<int> errors{0};
    int per_client = n / clients;
    std::vector<std::unique_ptr<anvil::ipc::GatewayClient>> conns;
    for (int c = 0; c < clients; ++c) {
      auto fd = (*gateway)->Connect();
      conns.push_back(std::make_unique<anvil::ipc::GatewayClient>(std::move(*fd), token->bytes()));
      if (!conns.back()->Hello("bench.reader", (*gateway)->workspace())) return 1;
    }
    auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (int c = 0; c < clients; ++c) {
      threads.emplace_back([&, c] {
        lat[c].reserve(per_client);
        for (int i = 0; i < per_client; ++i) {
          auto s = Clock::now();
          auto r = conns[c]->Call("fs.read", {"file4k.txt"});
          if (!r || !r->ok) ++errors;
          lat[c].push_back(std::chrono::duration<double, std::micro>(Clock::now() - s).count());
        }
      });
    }
    for (auto& t : threads) t.join();
    double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    std::vector<double> all;
    for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
    char label[64];
    std::snprintf(label, sizeof(label), "gateway fs.read, %d client(s)", clients);
    std::printf("%-34s %10.2f %10.2f %12.0f%s\n", label, Percentile(all, 0.5),
                Percentile(all, 0.99), all.size() / secs, errors ? "  (errors!)" : "");
    if (clients == 1) {
      std::printf("  ratio p50 / (round trip + raw read) = %.2f   (target <= 2.0)\n",
                  Percentile(all, 0.5) / floor_p50);
    } else {
      // The issue states its 100,000 reads/s on a machine whose raw round trip is ~8 us, i.e.
      // 0.8 reads per raw-round-trip time. On a slower machine the same target, in the ratio
      // form every bench here uses, is 0.8 / (this run's raw round trip).
      double rt = Percentile(raw_rt, 0.5);
      double per_rt = all.size() / secs * rt * 1e-6;
      std::printf(
          "  throughput with 8 clients = %.0f reads/s   (target >= 100000 where the raw round "
          "trip is ~8 us)\n",
          all.size() / secs);
      std::printf(
          "  same, x raw round trip (%.2f us) = %.2f   (target >= 0.80, i.e. >= %.0f reads/s "
          "on this machine): %s\n",
          rt, per_rt, 0.8e6 / rt, per_rt >= 0.8 ? "met" : "missed");
    }
  }
  (*gateway)->Stop();
  std::string cleanup = "rm -rf '" + ws + "' '" + ws + "-run'";
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
