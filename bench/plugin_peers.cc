// Anvil's side of the plugin rows and the scale rows of bench/peers.sh (issue 11). Prints one
// JSON object on stdout (bench/peers.py reads it and compares with Deno doing the same work in
// the same run); asserts nothing.
//
//   build/release/bench/plugin_peers BUILD_DIR WORKSPACE [--quick] [--scale 1,10,100]
//
// WORKSPACE must hold `file4k.txt` (4096 bytes) and a small tree for `rg NEEDLE` (peers.py makes
// both). Rows, per runtime (lua, js):
//   cold_ms      HostProcess::Start + Run("noop") until its result (gateway already running)
//   noop_us      one Run("noop") round trip editor -> host -> editor, host warm
//   read4k_us    one sys.fs.read of the 4 KiB file from plugin code (Run of N reads / N)
//   exec_rg_ms   one sys.exec rg NEEDLE over the tree from plugin code (one Run per exec)
// and, once:
//   floor        raw Unix-socket round trip with a 4 KiB answer + raw openat2/fstat/read of the
//                file (gateway_bench's floor) and gateway fs.read by one client (p50, µs)
//   scale[N]     N concurrent clients (one token each) reading file4k.txt through one gateway:
//                reads/s; and N idle Lua hosts on one gateway: RSS and PSS sums (KiB) of the
//                hosts plus the gateway and its exec broker.
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
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_floors.h"
#include "ipc/capability_token.h"
#include "ipc/gateway_client.h"
#include "session/gateway_process.h"
#include "session/host_process.h"

using anvil::bench::Clock;
using anvil::bench::RawBeneathReads;
using anvil::bench::RawSocketRoundTrips;
using anvil::bench::Us;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

json Stats(std::vector<double> v) {
  if (v.empty()) return json{{"n", 0}};
  std::sort(v.begin(), v.end());
  auto pct = [&](double p) {
    return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
  };
  return json{{"n", v.size()}, {"median", pct(0.5)}, {"p10", pct(0.1)}, {"p90", pct(0.9)}};
}

// Sum of a /proc/PID/smaps_rollup (or status) field in KiB; 0 when the process is gone.
long ProcKiB(pid_t pid, const char* file, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + file);
  std::string line;
  size_t len = std::strlen(field);
  while (std::getline(in, line)) {
    if (line.compare(0, len, field) == 0) return std::atol(line.c_str() + len);
  }
  return 0;
}

// The gateway's pid and its children (the exec broker).
std::vector<pid_t> Tree(pid_t root) {
  std::vector<pid_t> out{root};
  std::ifstream in("/proc/" + std::to_string(root) + "/task/" + std::to_string(root) + "/children");
  pid_t p;
  while (in >> p) out.push_back(p);
  return out;
}

void WritePlugin(const std::string& dir, const std::string& runtime) {
  std::string cmd = "mkdir -p '" + dir + "'";
  if (std::system(cmd.c_str()) != 0) return;
  if (runtime == "lua") {
    std::ofstream(dir + "/main.lua")
        << "anvil.command('noop', function() return 'ok' end)\n"
           "anvil.command('read', function(args)\n"
           "  local n = 0\n"
           "  for i = 1, tonumber(args[1]) do n = n + #sys.fs.read('file4k.txt') end\n"
           "  return tostring(n)\n"
           "end)\n"
           "anvil.command('rg', function(args)\n"
           "  for i = 1, tonumber(args[1]) do\n"
           "    local r = sys.exec{program = 'rg', args = {'-c', 'NEEDLE', 'tree'}}\n"
           "    if r.code ~= 0 then error('rg exit ' .. tostring(r.code)) end\n"
           "  end\n"
           "  return 'done'\n"
           "end)\n";
  } else {
    std::ofstream(dir + "/main.js")
        << "anvil.command('noop', () => 'ok');\n"
           "anvil.command('read', (args) => {\n"
           "  let n = 0;\n"
           "  for (let i = 0; i < Number(args[0]); i++) n += sys.fs.read('file4k.txt').length;\n"
           "  return String(n);\n"
           "});\n"
           "anvil.command('rg', (args) => {\n"
           "  for (let i = 0; i < Number(args[0]); i++) {\n"
           "    const r = sys.exec({program: 'rg', args: ['-c', 'NEEDLE', 'tree']});\n"
           "    if (r.code !== 0) throw new Error('rg exit ' + r.code);\n"
           "  }\n"
           "  return 'done';\n"
           "});\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: plugin_peers BUILD_DIR WORKSPACE [--quick] [--scale 1,10,100]\n");
    return 2;
  }
  std::string bin_dir = argv[1];
  std::string ws = argv[2];
  bool quick = false;
  std::vector<int> scale{1, 10, 100};
  for (int i = 3; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") quick = true;
    if (a == "--scale" && i + 1 < argc) {
      scale.clear();
      std::stringstream ss(argv[++i]);
      std::string part;
      while (std::getline(ss, part, ',')) scale.push_back(std::atoi(part.c_str()));
    }
  }
  const int colds = quick ? 8 : 30;
  const int calls = quick ? 300 : 2000;
  const int execs = quick ? 5 : 20;
  const int reps = quick ? 3 : 7;

  char tmpl[] = "/tmp/anvil-plugin-peers-XXXXXX";
  if (!mkdtemp(tmpl)) return 1;
  std::string root = tmpl;
  // Removed on every return, failures included (declared before the gateway and the hosts,
  // so it runs after they are stopped).
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      std::string cmd = "rm -rf '" + dir + "'";
      if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "could not remove %s\n", dir.c_str());
    }
  } remove_root{root};
  WritePlugin(root + "/lua", "lua");
  WritePlugin(root + "/js", "js");

  anvil::session::GatewayConfig gconfig{
      bin_dir + "/anvil-gateway", ws, {"--runtime-dir", root + "/run"}};
  auto gateway = anvil::session::GatewayProcess::Start(gconfig);
  if (!gateway) {
    std::fprintf(stderr, "gateway: %s\n", gateway.error().ToString().c_str());
    return 1;
  }
  anvil::Grant grant;
  grant.fs_read = {"**"};
  grant.exec = {"rg"};
  auto no_editor = [](const std::string&,
                      const std::vector<std::string>&) -> anvil::Result<std::vector<std::string>> {
    return anvil::Fail("denied", "no editor");
  };
  auto no_log = [](const std::string&, const std::string&) {};
  auto host_config = [&](const std::string& runtime, int i) {
    return anvil::session::HostConfig{bin_dir + "/anvil-plugin-host",
                                      root + "/" + runtime,
                                      runtime,
                                      runtime == "lua" ? "main.lua" : "main.js",
                                      "bench." + runtime + std::to_string(i),
                                      {}};
  };

  json out;
  out["quick"] = quick;
  for (std::string runtime : {"lua", "js"}) {
    std::vector<double> cold, noop, rd, rg;
    for (int i = 0; i < colds; ++i) {
      auto t0 = Clock::now();
      auto host = anvil::session::HostProcess::Start(host_config(runtime, 0), **gateway, grant);
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
        for (int k = 0; k < calls; ++k) {
          auto t1 = Clock::now();
          auto n = (*host)->Run("noop", "[]", 10s, no_editor, no_log);
          if (!n) return 1;
          noop.push_back(Us(Clock::now() - t1));
        }
        std::string nread = "[\"" + std::to_string(calls) + "\"]";
        for (int k = 0; k < reps; ++k) {
          auto t1 = Clock::now();
          auto s = (*host)->Run("read", nread, 60s, no_editor, no_log);
          // The command's result comes back JSON-encoded: "\"1228800\"".
          if (!s || s->find(std::to_string(4096L * calls)) == std::string::npos) {
            std::fprintf(stderr, "read: %s\n", s ? s->c_str() : s.error().ToString().c_str());
            return 1;
          }
          rd.push_back(Us(Clock::now() - t1) / calls);
        }
        // One rg per command: a command has a wall-clock deadline (10 s by default), and a
        // loop of rg runs on a busy machine can pass it. The Run round trip it adds is tens
        // of microseconds against milliseconds of rg.
        for (int k = 0; k < execs; ++k) {
          auto t1 = Clock::now();
          auto e = (*host)->Run("rg", "[\"1\"]", 60s, no_editor, no_log);
          if (!e) {
            std::fprintf(stderr, "rg: %s\n", e.error().ToString().c_str());
            return 1;
          }
          rg.push_back(Us(Clock::now() - t1) / 1000.0);
        }
      }
      (void)(*host)->Stop();
    }
    out[runtime] = {{"cold_ms", Stats(cold)},
                    {"noop_us", Stats(noop)},
                    {"read4k_us", Stats(rd)},
                    {"exec_rg_ms", Stats(rg)}};
  }

  // Gateway read against the socket + syscall floor (as gateway_bench), one client.
  {
    int n = quick ? 3000 : 20000;
    auto token = anvil::ipc::CapabilityToken::Generate();
    if (!token || !(*gateway)->Register(*token, "bench.floor", getpid(), geteuid(), grant))
      return 1;
    auto fd = (*gateway)->Connect();
    if (!fd) return 1;
    anvil::ipc::GatewayClient client(std::move(*fd), token->bytes());
    if (!client.Hello("bench.floor", (*gateway)->workspace())) return 1;
    std::vector<double> gw;
    for (int i = 0; i < n; ++i) {
      auto t0 = Clock::now();
      auto r = client.Call("fs.read", {"file4k.txt"});
      gw.push_back(Us(Clock::now() - t0));
      if (!r || !r->ok) return 1;
    }
    out["floor"] = {{"socket_rt_us", Stats(RawSocketRoundTrips(n))},
                    {"openat2_read_us", Stats(RawBeneathReads(ws, "file4k.txt", n))},
                    {"gateway_read_us", Stats(gw)}};
  }

  // Scale: N concurrent readers (one token each); N idle Lua hosts.
  json sc = json::array();
  for (int n : scale) {
    json row{{"n", n}};
    {
      std::vector<std::unique_ptr<anvil::ipc::GatewayClient>> conns;
      bool ok = true;
      for (int c = 0; c < n && ok; ++c) {
        auto token = anvil::ipc::CapabilityToken::Generate();
        std::string id = "bench.r" + std::to_string(n) + "." + std::to_string(c);
        ok = token && (*gateway)->Register(*token, id, getpid(), geteuid(), grant).has_value();
        if (!ok) break;
        auto fd = (*gateway)->Connect();
        if (!fd) {
          ok = false;
          break;
        }
        conns.push_back(
            std::make_unique<anvil::ipc::GatewayClient>(std::move(*fd), token->bytes()));
        ok = conns.back()->Hello(id, (*gateway)->workspace()).has_value();
      }
      if (ok) {
        const double secs = quick ? 0.5 : 2.0;
        std::atomic<long> total{0}, errors{0};
        std::atomic<bool> stop{false};
        std::vector<std::thread> threads;
        auto t0 = Clock::now();
        for (int c = 0; c < n; ++c) {
          threads.emplace_back([&, c] {
            long mine = 0;
            while (!stop.load(std::memory_order_relaxed)) {
              auto r = conns[c]->Call("fs.read", {"file4k.txt"});
              if (!r || !r->ok) {
                ++errors;
                break;
              }
              ++mine;
            }
            total += mine;
          });
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(secs));
        stop = true;
        for (auto& t : threads) t.join();
        double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
        row["reads_per_s"] = static_cast<double>(total.load()) / elapsed;
        row["read_errors"] = errors.load();
      } else {
        row["reads_error"] = "could not open " + std::to_string(n) + " connections";
      }
    }
    {
      std::vector<std::unique_ptr<anvil::session::HostProcess>> hosts;
      std::string err;
      auto t0 = Clock::now();
      for (int h = 0; h < n; ++h) {
        auto host = anvil::session::HostProcess::Start(host_config("lua", h), **gateway, grant);
        if (!host) {
          err = host.error().ToString();
          break;
        }
        auto r = (*host)->Run("noop", "[]", 30s, no_editor, no_log);
        if (!r) {
          err = r.error().ToString();
          break;
        }
        hosts.push_back(std::move(*host));
      }
      row["hosts_start_ms"] = Us(Clock::now() - t0) / 1000.0;
      if (!err.empty()) row["hosts_error"] = err;
      std::this_thread::sleep_for(200ms);
      long rss = 0, pss = 0;
      std::vector<pid_t> pids = Tree((*gateway)->pid());
      for (auto& h : hosts) pids.push_back(h->pid());
      for (pid_t p : pids) {
        rss += ProcKiB(p, "smaps_rollup", "Rss:");
        pss += ProcKiB(p, "smaps_rollup", "Pss:");
      }
      row["hosts"] = hosts.size();
      row["processes"] = pids.size();
      row["rss_kib"] = rss;
      row["pss_kib"] = pss;
      for (auto& h : hosts) (void)h->Stop();
    }
    sc.push_back(row);
  }
  out["scale"] = sc;
  (*gateway)->Stop();
  std::printf("%s\n", out.dump(1).c_str());
  return 0;
}
