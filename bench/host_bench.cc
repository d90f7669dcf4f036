// Plugin hosts (issue 4): cold start to the first command's result for a Lua and a JS plugin,
// the cost of one sys.* round trip from plugin code, and the idle RSS of a host; beside two
// anchors measured in the same run: `deno run` of an empty script (the plugin-runtime peer) and
// a raw Unix-socket round trip. Prints medians and ratios; asserts nothing.
//
//   build/release/bench/host_bench build/release [DENO_BINARY] [ROUNDS]
//
// The sys.* call is sys.fs.stat of a small file — the cheapest request a plugin can make; the
// same request sent straight to the gateway from a client is printed too, so the host's share
// is visible.
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_floors.h"
#include "ipc/capability_token.h"
#include "ipc/gateway_client.h"
#include "session/gateway_process.h"
#include "session/host_process.h"

using anvil::bench::Clock;
using anvil::bench::Median;
using anvil::bench::RawSocketRoundTrips;
using anvil::bench::Us;
using namespace std::chrono_literals;

namespace {

long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

// Wall time of `argv` run to completion (fork + exec + wait), stdout/stderr to /dev/null.
double RunOnceMs(const std::vector<std::string>& argv) {
  auto t0 = Clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    FILE* a = std::freopen("/dev/null", "w", stdout);
    FILE* b = std::freopen("/dev/null", "w", stderr);
    (void)a;
    (void)b;
    std::vector<char*> args;
    std::vector<std::string> copy = argv;
    for (auto& s : copy) args.push_back(s.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return Us(Clock::now() - t0) / 1000.0;
}

void WritePlugin(const std::string& dir, const std::string& runtime) {
  std::string cmd = "mkdir -p '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) return;
  if (runtime == "lua") {
    std::ofstream(dir + "/main.lua")
        << "anvil.command('noop', function() return 'ok' end)\n"
           "anvil.command('stat', function(args)\n"
           "  for i = 1, tonumber(args[1]) do sys.fs.stat('a.txt') end\n"
           "  return 'done'\n"
           "end)\n";
  } else {
    std::ofstream(dir + "/main.js")
        << "anvil.command('noop', () => 'ok');\n"
           "anvil.command('stat', (args) => {\n"
           "  for (let i = 0; i < Number(args[0]); i++) sys.fs.stat('a.txt');\n"
           "  return 'done';\n"
           "});\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string bin_dir = argc > 1 ? argv[1] : "build/release";
  std::string deno = argc > 2 ? argv[2] : "";
  int rounds = argc > 3 ? std::atoi(argv[3]) : 30;
  char tmpl[] = "/tmp/anvil-host-bench-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string root = tmpl;
  std::string ws = root + "/ws";
  mkdir(ws.c_str(), 0755);
  std::ofstream(ws + "/a.txt") << "hello\n";
  std::ofstream(root + "/empty.js") << "";
  WritePlugin(root + "/lua", "lua");
  WritePlugin(root + "/js", "js");

  anvil::session::GatewayConfig gconfig{
      bin_dir + "/anvil-gateway", ws, {"--runtime-dir", root + "/run", "--no-exec"}};
  auto gateway = anvil::session::GatewayProcess::Start(gconfig);
  if (!gateway) {
    std::fprintf(stderr, "gateway: %s\n", gateway.error().ToString().c_str());
    return 1;
  }
  anvil::Grant grant;
  grant.fs_read = {"**"};
  auto no_editor = [](const std::string&,
                      const std::vector<std::string>&) -> anvil::Result<std::vector<std::string>> {
    return anvil::Fail("denied", "no editor");
  };
  auto no_log = [](const std::string&, const std::string&) {};

  struct HostRow {
    std::string runtime;
    double cold_ms = 0, call_us = 0;
    long rss_kib = 0;
  };
  std::vector<HostRow> hosts;
  const int calls = 2000;
  for (std::string runtime : {"lua", "js"}) {
    HostRow row{runtime};
    std::vector<double> cold, rss;
    for (int i = 0; i < rounds; ++i) {
      anvil::session::HostConfig hc{bin_dir + "/anvil-plugin-host",
                                    root + "/" + runtime,
                                    runtime,
                                    runtime == "lua" ? "main.lua" : "main.js",
                                    "bench." + runtime,
                                    {}};
      auto t0 = Clock::now();
      auto host = anvil::session::HostProcess::Start(hc, **gateway, grant);
      if (!host) {
        std::fprintf(stderr, "host: %s\n", host.error().ToString().c_str());
        return 1;
      }
      auto r = (*host)->Run("noop", "[]", 10s, no_editor, no_log);
      cold.push_back(Us(Clock::now() - t0) / 1000.0);
      if (!r) {
        std::fprintf(stderr, "noop: %s\n", r.error().ToString().c_str());
        return 1;
      }
      if (i == 0) {
        // One sys.* call, amortised over a loop inside one command.
        std::vector<double> per_call;
        for (int k = 0; k < 5; ++k) {
          auto t1 = Clock::now();
          auto s =
              (*host)->Run("stat", "[\"" + std::to_string(calls) + "\"]", 60s, no_editor, no_log);
          if (!s) {
            std::fprintf(stderr, "stat: %s\n", s.error().ToString().c_str());
            return 1;
          }
          per_call.push_back(Us(Clock::now() - t1) / calls);
        }
        row.call_us = Median(per_call);
        std::this_thread::sleep_for(100ms);  // idle
        rss.push_back(static_cast<double>(RssKiB((*host)->pid())));
      }
      (*host)->Stop();
    }
    row.cold_ms = Median(cold);
    row.rss_kib = static_cast<long>(Median(rss));
    hosts.push_back(row);
  }

  // The gateway's own share: the same fs.stat sent by a client directly.
  double direct_us = 0;
  double direct_loop_us = 0;  // measured like the host rows: one loop's time / calls
  {
    auto token = anvil::ipc::CapabilityToken::Generate();
    if (!token || !(*gateway)->Register(*token, "bench.direct", getpid(), geteuid(), grant)) {
      return 1;
    }
    auto fd = (*gateway)->Connect();
    if (!fd) return 1;
    anvil::ipc::GatewayClient client(std::move(*fd), token->bytes());
    if (!client.Hello("bench.direct", (*gateway)->workspace())) return 1;
    std::vector<double> us;
    for (int i = 0; i < calls; ++i) {
      auto t0 = Clock::now();
      auto r = client.Call("fs.stat", {"a.txt"});
      us.push_back(Us(Clock::now() - t0));
      if (!r || !r->ok) return 1;
    }
    direct_us = Median(us);
    // The host rows are a whole loop divided by its length (a mean, stalls included); this is
    // the same measure for the direct client, so the host's own share is a like-for-like
    // difference rather than a mean against a median.
    std::vector<double> loops;
    for (int k = 0; k < 5; ++k) {
      auto t1 = Clock::now();
      for (int i = 0; i < calls; ++i) {
        auto r = client.Call("fs.stat", {"a.txt"});
        if (!r || !r->ok) return 1;
      }
      loops.push_back(Us(Clock::now() - t1) / calls);
    }
    direct_loop_us = Median(loops);
  }
  (*gateway)->Stop();
  // Echo of a 64-byte message: the size of a small sys.* request and its answer.
  double raw_us = Median(RawSocketRoundTrips(20000, 64, 64));

  double deno_ms = -1;
  std::string deno_note;
  if (deno.empty()) {
    deno_note = "not given (bench/plugin_hosts.sh installs the npm package `deno`)";
  } else if (RunOnceMs({deno, "run", root + "/empty.js"}) < 0) {
    deno_note = "could not run " + deno;
  } else {
    std::vector<double> d;
    for (int i = 0; i < rounds; ++i) d.push_back(RunOnceMs({deno, "run", root + "/empty.js"}));
    deno_ms = Median(d);
  }

  std::printf("plugin host bench: %d cold starts per runtime, %d sys.fs.stat per timing\n\n",
              rounds, calls);
  std::printf("%-44s %12s\n", "measure (median)", "value");
  for (const auto& h : hosts) {
    std::printf("%-44s %9.2f ms\n", (h.runtime + " host: cold start to first result").c_str(),
                h.cold_ms);
    std::printf("%-44s %9.2f us\n", (h.runtime + " host: one sys.fs.stat from plugin code").c_str(),
                h.call_us);
    std::printf("%-44s %9.2f MiB\n", (h.runtime + " host: idle RSS").c_str(),
                static_cast<double>(h.rss_kib) / 1024.0);
  }
  std::printf("%-44s %9.2f us\n", "client -> gateway fs.stat (no host)", direct_us);
  std::printf("%-44s %9.2f us\n", "  same, loop time / calls (as the host rows)", direct_loop_us);
  std::printf("%-44s %9.2f us\n", "raw Unix-socket round trip", raw_us);
  if (deno_ms >= 0) {
    std::printf("%-44s %9.2f ms\n", "deno run empty.js", deno_ms);
  } else {
    std::printf("%-44s %s\n", "deno run empty.js", deno_note.c_str());
  }
  std::printf("\nratios and targets (issue 4):\n");
  // The targets are milliseconds on its machine class, where `deno run` of an empty
  // script takes about 13 ms: 3 ms (Lua) and 5 ms (JS) are 3/13 and 5/13 of that anchor. The
  // anchor is measured in this run, so the verdict holds on a slower or faster machine too.
  constexpr double kDenoAnchorMs = 13.0;
  for (const auto& h : hosts) {
    double target = h.runtime == "lua" ? 3.0 : 5.0;
    std::printf("  %s cold start %.2f ms (target <= %.0f ms where deno takes ~%.0f ms)",
                h.runtime.c_str(), h.cold_ms, target, kDenoAnchorMs);
    if (deno_ms > 0) {
      double ratio = h.cold_ms / deno_ms;
      double ratio_target = target / kDenoAnchorMs;
      std::printf(": %.3fx deno (target <= %.2fx): %s", ratio, ratio_target,
                  ratio <= ratio_target ? "met" : "MISSED");
    }
    std::printf("\n");
  }
  for (const auto& h : hosts) {
    std::printf("  %s sys.* call / raw round trip = %.2f (target <= 2): %s\n", h.runtime.c_str(),
                h.call_us / raw_us, h.call_us / raw_us <= 2.0 ? "met" : "MISSED");
    std::printf("  %s sys.* call / direct client, same method = %.2f (the host's own share)\n",
                h.runtime.c_str(), h.call_us / direct_loop_us);
  }
  std::printf("  lua idle RSS %.2f MiB (target <= 4 MiB): %s\n",
              static_cast<double>(hosts[0].rss_kib) / 1024.0,
              hosts[0].rss_kib <= 4 * 1024 ? "met" : "MISSED");
  std::string cleanup = "rm -rf '" + root + "'";
  return std::system(cleanup.c_str()) == 0 ? 0 : 1;
}
