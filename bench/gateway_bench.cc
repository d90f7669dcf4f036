// Gateway read latency and throughput (issues 3 and 25), against floors measured in the same
// run: a raw Unix-socket round trip carrying a 4 KiB answer, a raw openat2+fstat+read of the
// same 4 KiB file, the raw round-trip throughput of 8 callers, each on its own socketpair to its
// own echo thread (with and without that read in the echo), and a minimal server process of the
// gateway's shape (bench_floors.h, RawServerRoundTrips). Two more rows place the target: an echo
// thread that does the read between request and answer (the least any design whose server reads
// the file can cost; the floor above adds a read measured apart, in a hot loop), and the
// descriptor-passing shape (RawFdPassRoundTrips: the server opens, the caller reads); and the
// 8-caller floors across a process boundary (RawServerThroughput: the minimal server with a thread
// per connection, and with the gateway's epoll threads). Optionally a
// second gateway (BASE_BIN_DIR, e.g. a build of main) is measured in the same rounds, so that a
// change shows as after / before.
//
//   build/release/bench/gateway_bench [BIN_DIR] [READS] [BASE_BIN_DIR] [ROUNDS]
//
// Every round measures every row once (READS reads each), in an order that rotates from round
// to round, so that a burst of load lands on every row; ratios are taken within a round and
// printed as the median over rounds with a 90% bootstrap interval. Targets (issue 25): one
// client p50 <= 1.3x (round trip + raw read); 8 clients >= 0.9x the raw 8-caller round-trip
// throughput. Prints; asserts nothing. As root, run it under `chrt -f 1` on a busy machine.
// With GATEWAY_BENCH_PROFILE=gateway (or =floor) it runs only the 8-client row of the gateway
// (or of the minimal server in its shape), ROUNDS times: a steady load to attach `perf` to.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bench_floors.h"
#include "ipc/capability_token.h"
#include "ipc/gateway_client.h"
#include "session/gateway_process.h"

using anvil::bench::Bootstrap;
using anvil::bench::Clock;
using anvil::bench::Interval;
using anvil::bench::Median;
using anvil::bench::Percentile;
using anvil::bench::RawBeneathReads;
using anvil::bench::RawFdPassRoundTrips;
using anvil::bench::RawServerRoundTrips;
using anvil::bench::RawServerThroughput;
using anvil::bench::RawSocketRoundTrips;
using anvil::bench::RawSocketThroughput;

namespace {

struct Gateway {
  std::string name;
  std::unique_ptr<anvil::session::GatewayProcess> process;
  std::optional<anvil::ipc::CapabilityToken> token;
};

// `clients` connections each reading file4k.txt `per_client` times: p50 latency (µs) and reads/s.
struct Reads {
  double p50 = 0, p99 = 0, per_second = 0;
  bool errors = false;
};
Reads Measure(Gateway& g, int clients, int per_client) {
  std::vector<std::unique_ptr<anvil::ipc::GatewayClient>> conns;
  for (int c = 0; c < clients; ++c) {
    auto fd = g.process->Connect();
    if (!fd) return {0, 0, 0, true};
    conns.push_back(std::make_unique<anvil::ipc::GatewayClient>(std::move(*fd), g.token->bytes()));
    if (!conns.back()->Hello("bench.reader", g.process->workspace())) return {0, 0, 0, true};
  }
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::atomic<int> errors{0};
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      auto& mine = lat[static_cast<size_t>(c)];
      mine.reserve(static_cast<size_t>(per_client));
      for (int i = 0; i < per_client; ++i) {
        auto s = Clock::now();
        auto r = conns[static_cast<size_t>(c)]->Call("fs.read", {"file4k.txt"});
        if (!r || !r->ok) ++errors;
        mine.push_back(anvil::bench::Us(Clock::now() - s));
      }
    });
  }
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  return {Percentile(all, 0.5), Percentile(all, 0.99), static_cast<double>(all.size()) / secs,
          errors > 0};
}

void PrintInterval(const char* label, const std::vector<double>& v, const char* target) {
  Interval i = Bootstrap(v);
  std::printf("  %-50s %6.2f [%.2f, %.2f]   %s\n", label, i.median, i.low, i.high, target);
}

}  // namespace

int main(int argc, char** argv) {
  std::string bin_dir = argc > 1 ? argv[1] : "build/release";
  int n = argc > 2 ? std::atoi(argv[2]) : 5000;
  std::string base_dir = argc > 3 ? argv[3] : "";
  int rounds = argc > 4 ? std::atoi(argv[4]) : 7;
  char tmpl[] = "/tmp/anvil-bench-XXXXXX";
  std::string ws = mkdtemp(tmpl);
  {
    int fd = open((ws + "/file4k.txt").c_str(), O_CREAT | O_WRONLY, 0644);
    std::string data(4096, 'd');
    ssize_t ignored = write(fd, data.data(), data.size());
    (void)ignored;
    close(fd);
  }
  std::vector<Gateway> gateways;
  for (const auto& [name, dir] :
       {std::pair<std::string, std::string>{"gateway", bin_dir}, {"base gateway", base_dir}}) {
    if (dir.empty()) continue;
    std::string run = ws + "-run" + std::to_string(gateways.size());
    anvil::session::GatewayConfig config{dir + "/anvil-gateway", ws, {"--runtime-dir", run}};
    auto gateway = anvil::session::GatewayProcess::Start(config);
    if (!gateway) {
      std::fprintf(stderr, "%s: %s\n", name.c_str(), gateway.error().ToString().c_str());
      return 1;
    }
    auto token = anvil::ipc::CapabilityToken::Generate();
    if (!token) return 1;
    Gateway g{name, std::move(*gateway), std::move(*token)};
    anvil::Grant grant;
    grant.fs_read = {"**"};
    if (!g.process->Register(*g.token, "bench.reader", getpid(), geteuid(), grant)) return 1;
    gateways.push_back(std::move(g));
  }

  // For a profiler: only the gateway's 8-client row (or the minimal server's in the gateway's
  // shape), ROUNDS times, each figure as it comes.
  if (const char* profile = std::getenv("GATEWAY_BENCH_PROFILE")) {
    const bool floor = std::string(profile) == "floor";
    for (int i = 0; i < rounds; ++i) {
      const double per_second = floor ? RawServerThroughput(ws, "file4k.txt", 8, n / 8, false)
                                      : Measure(gateways[0], 8, n / 8).per_second;
      std::printf("%s, 8 clients: %.0f reads/s\n", floor ? "minimal server" : "gateway",
                  per_second);
      std::fflush(stdout);
    }
    std::string cleanup = "rm -rf '" + ws + "' '" + ws + "-run0'";
    return std::system(cleanup.c_str()) == 0 ? 0 : 1;
  }
  // Per round: the floors and every gateway's figures.
  std::vector<double> rt, raw_read, raw8, raw8_read, server, echo_read, fd_pass, server8_conn,
      server8_epoll;
  std::vector<std::vector<double>> one(gateways.size()), eight(gateways.size()),
      one_ratio(gateways.size()), eight_ratio(gateways.size()), eight_read_ratio(gateways.size()),
      eight_per_rt(gateways.size()), one_server(gateways.size()),
      eight_server_conn(gateways.size()), eight_server_epoll(gateways.size());
  std::vector<double> p99_one(gateways.size()), after_before_one, after_before_eight;
  bool errors = false;
  for (int round = 0; round < rounds; ++round) {
    double round_rt = 0, round_read = 0, round_raw8 = 0, round_raw8_read = 0, round_server = 0,
           round_echo_read = 0, round_fd_pass = 0, round_server8_conn = 0, round_server8_epoll = 0;
    std::vector<Reads> r1(gateways.size()), r8(gateways.size());
    std::vector<std::function<void()>> rows;
    rows.push_back([&] {
      round_rt = Median(RawSocketRoundTrips(n));
      round_read = Median(RawBeneathReads(ws, "file4k.txt", n));
    });
    rows.push_back([&] { round_server = Median(RawServerRoundTrips(ws, "file4k.txt", n)); });
    rows.push_back([&] {
      round_echo_read = Median(RawSocketRoundTrips(
          n, 64, 4096 + 32, [&ws] { (void)RawBeneathReads(ws, "file4k.txt", 1); }));
    });
    rows.push_back([&] { round_fd_pass = Median(RawFdPassRoundTrips(ws, "file4k.txt", n)); });
    rows.push_back([&] {
      round_raw8 = RawSocketThroughput(8, n / 8);
      // The same callers with the echo doing the raw read of the file before each answer: the
      // 8-caller form of the one-client floor (round trip + read).
      round_raw8_read =
          RawSocketThroughput(8, n / 8, [&ws] { (void)RawBeneathReads(ws, "file4k.txt", 1); });
    });
    rows.push_back([&] {
      round_server8_conn = RawServerThroughput(ws, "file4k.txt", 8, n / 8, true);
      round_server8_epoll = RawServerThroughput(ws, "file4k.txt", 8, n / 8, false);
    });
    for (size_t g = 0; g < gateways.size(); ++g) {
      rows.push_back([&, g] { r1[g] = Measure(gateways[g], 1, n); });
      rows.push_back([&, g] { r8[g] = Measure(gateways[g], 8, n / 8); });
    }
    for (size_t k = 0; k < rows.size(); ++k) rows[(k + static_cast<size_t>(round)) % rows.size()]();
    rt.push_back(round_rt);
    raw_read.push_back(round_read);
    raw8.push_back(round_raw8);
    raw8_read.push_back(round_raw8_read);
    server8_conn.push_back(round_server8_conn);
    server8_epoll.push_back(round_server8_epoll);
    server.push_back(round_server);
    echo_read.push_back(round_echo_read / (round_rt + round_read));
    fd_pass.push_back(round_fd_pass / (round_rt + round_read));
    for (size_t g = 0; g < gateways.size(); ++g) {
      errors = errors || r1[g].errors || r8[g].errors;
      one[g].push_back(r1[g].p50);
      eight[g].push_back(r8[g].per_second);
      one_ratio[g].push_back(r1[g].p50 / (round_rt + round_read));
      one_server[g].push_back(r1[g].p50 / round_server);
      eight_ratio[g].push_back(r8[g].per_second / round_raw8);
      eight_read_ratio[g].push_back(r8[g].per_second / round_raw8_read);
      eight_per_rt[g].push_back(r8[g].per_second * round_rt * 1e-6);
      eight_server_conn[g].push_back(r8[g].per_second / round_server8_conn);
      eight_server_epoll[g].push_back(r8[g].per_second / round_server8_epoll);
      p99_one[g] = std::max(p99_one[g], r1[g].p99);
    }
    if (gateways.size() == 2) {
      after_before_one.push_back(r1[0].p50 / r1[1].p50);
      after_before_eight.push_back(r8[0].per_second / r8[1].per_second);
    }
    std::fprintf(stderr, "round %d/%d done\n", round + 1, rounds);
  }

  std::printf("%d rounds of %d reads per row; medians over rounds\n\n", rounds, n);
  std::printf("%-44s %10s %12s\n", "measurement", "p50 us", "per second");
  std::printf("%-44s %10.2f\n", "raw unix socket round trip (4 KiB answer)", Median(rt));
  std::printf("%-44s %10.2f\n", "raw openat2+fstat+read (4 KiB)", Median(raw_read));
  std::printf("%-44s %10.2f\n", "minimal server process (epoll, creds, read)", Median(server));
  std::printf("%-44s %10s %12.0f\n", "raw round trips, 8 callers", "", Median(raw8));
  std::printf("%-44s %10s %12.0f\n", "raw round trips + read, 8 callers", "", Median(raw8_read));
  std::printf("%-44s %10s %12.0f\n", "minimal server, 8 callers, thread/conn", "",
              Median(server8_conn));
  std::printf("%-44s %10s %12.0f\n", "minimal server, 8 callers, epoll/CPU", "",
              Median(server8_epoll));
  for (size_t g = 0; g < gateways.size(); ++g) {
    std::string l1 = gateways[g].name + " fs.read, 1 client";
    std::string l8 = gateways[g].name + " fs.read, 8 clients";
    std::printf("%-44s %10.2f %12s\n", l1.c_str(), Median(one[g]), "");
    std::printf("%-44s %10s %12.0f\n", l8.c_str(), "", Median(eight[g]));
  }
  std::printf("\nratios, median over rounds [90%% bootstrap interval]:\n");
  PrintInterval("echo thread doing the read / (round trip + read)", echo_read,
                "the least for a server that reads");
  PrintInterval("descriptor passed, caller reads / (round trip + read)", fd_pass,
                "the alternative shape, bare");
  for (size_t g = 0; g < gateways.size(); ++g) {
    std::string l1 = gateways[g].name + ": 1 client / (round trip + read)";
    std::string l8 = gateways[g].name + ": 8 clients / raw 8 callers";
    std::string l1s = gateways[g].name + ": 1 client / minimal server process";
    PrintInterval(l1.c_str(), one_ratio[g], "target <= 1.30");
    PrintInterval(l1s.c_str(), one_server[g], "what the gateway's own work costs");
    std::string l8r = gateways[g].name + ": 8 clients / raw 8 callers + read";
    std::string l8t = gateways[g].name + ": 8 clients x one raw round trip";
    PrintInterval(l8.c_str(), eight_ratio[g], "target >= 0.90 (floor without the read)");
    PrintInterval(l8r.c_str(), eight_read_ratio[g], "target >= 0.90 (floor with the read)");
    PrintInterval(l8t.c_str(), eight_per_rt[g], "issue 3's form, target >= 0.80");
    std::string l8c = gateways[g].name + ": 8 clients / minimal server, thread/conn";
    std::string l8e = gateways[g].name + ": 8 clients / minimal server, epoll/CPU";
    PrintInterval(l8c.c_str(), eight_server_conn[g], "the least across processes");
    PrintInterval(l8e.c_str(), eight_server_epoll[g], "the gateway's shape, bare");
  }
  if (gateways.size() == 2) {
    PrintInterval("after / before, 1 client p50", after_before_one, "lower is better");
    PrintInterval("after / before, 8 clients reads/s", after_before_eight, "higher is better");
  }
  if (errors) std::printf("\n(some reads failed: the figures above are not valid)\n");
  for (auto& g : gateways) (void)g.process->Stop();
  std::string cleanup = "rm -rf '" + ws + "' '" + ws + "-run0' '" + ws + "-run1'";
  return std::system(cleanup.c_str()) == 0 && !errors ? 0 : 1;
}
