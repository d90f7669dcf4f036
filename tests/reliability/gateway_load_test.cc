// Issue #9, load: 100 plugins, each on its own connection with its own token, issuing requests
// as fast as the gateway lets them for a bounded time. No crash, bounded memory, every request
// answered (a result or "busy"), and exactly one audit line per decision.
// ANVIL_LOAD_SECONDS (default 5) and ANVIL_LOAD_PLUGINS (default 100) scale it.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace gateway_load_test {
namespace {

using Clock = std::chrono::steady_clock;

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

struct PluginStats {
  long sent = 0, ok = 0, busy = 0, other = 0;
  bool broken = false;
  std::string error;
  std::vector<uint32_t> latency_us;  // of answered requests
};

class GatewayLoad : public GatewayTest {};

TEST_F(GatewayLoad, HundredPluginsFloodingGetAnswersWithBoundedMemory) {
  const int plugins = EnvInt("ANVIL_LOAD_PLUGINS", 100);
  const int seconds = EnvInt("ANVIL_LOAD_SECONDS", 5);
  constexpr int kPipeline = 8;  // in flight per plugin: 800 in all, over the 256-job queue cap
  WriteFile(*ws_ / "a.txt", std::string(1024, 'a'));
  StartGateway();
  std::vector<std::unique_ptr<ipc::GatewayClient>> clients;
  for (int i = 0; i < plugins; ++i) {
    std::string id = "load.p" + std::to_string(i);
    auto token = RegisterPlugin(id, ReadWriteGrant());
    clients.push_back(Client(token, id));
  }
  const long rss_before = RssKib(gateway_->pid());
  std::atomic<long> rss_peak{rss_before};
  std::atomic<bool> done{false};
  std::thread monitor([&] {
    while (!done.load()) {
      long rss = RssKib(gateway_->pid());
      long seen = rss_peak.load();
      while (rss > seen && !rss_peak.compare_exchange_weak(seen, rss)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });

  std::vector<PluginStats> stats(static_cast<size_t>(plugins));
  const auto stop_at = Clock::now() + std::chrono::seconds(seconds);
  std::vector<std::thread> threads;
  for (int i = 0; i < plugins; ++i) {
    threads.emplace_back([&, i] {
      auto& s = stats[static_cast<size_t>(i)];
      auto& client = *clients[static_cast<size_t>(i)];
      std::map<uint64_t, Clock::time_point> pending;
      while (true) {
        bool more = Clock::now() < stop_at;
        while (more && pending.size() < kPipeline) {
          auto id = client.Send("fs.read", {"a.txt"});
          if (!id) {
            s.broken = true;
            s.error = id.error().ToString();
            return;
          }
          pending[*id] = Clock::now();
          ++s.sent;
        }
        if (pending.empty()) return;
        auto r = client.Receive();
        if (!r) {
          s.broken = true;
          s.error = r.error().ToString();
          return;
        }
        auto it = pending.find(r->id);
        if (it == pending.end()) {
          s.broken = true;
          s.error = "answer to an unknown or already answered request " + std::to_string(r->id);
          return;
        }
        s.latency_us.push_back(static_cast<uint32_t>(
            std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - it->second)
                .count()));
        pending.erase(it);
        if (r->ok) {
          ++s.ok;
        } else if (r->fields[0] == "busy") {
          ++s.busy;
        } else {
          ++s.other;
          s.error = r->ErrorText();
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  done = true;
  monitor.join();

  PluginStats total;
  std::vector<uint32_t> latencies;
  for (const auto& s : stats) {
    EXPECT_FALSE(s.broken) << s.error;
    EXPECT_EQ(s.other, 0) << s.error;
    total.sent += s.sent;
    total.ok += s.ok;
    total.busy += s.busy;
    latencies.insert(latencies.end(), s.latency_us.begin(), s.latency_us.end());
    EXPECT_GT(s.ok, 0) << "a plugin was starved";
  }
  EXPECT_EQ(total.ok + total.busy, total.sent) << "a request went unanswered";
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies.empty() ? 0u : latencies[static_cast<size_t>(p * (latencies.size() - 1))];
  };
  const long rss_after = RssKib(gateway_->pid());
  std::printf(
      "[ figures ] load: %d plugins x %d s: %ld requests (%ld/s), ok %ld, busy %ld; latency "
      "p50 %u us, p99 %u us, max %u us; gateway RSS %ld KiB before, peak %ld, after %ld\n",
      plugins, seconds, total.sent, total.sent / std::max(1, seconds), total.ok, total.busy,
      pct(0.5), pct(0.99), pct(1.0), rss_before, rss_peak.load(), rss_after);
  EXPECT_LT(rss_peak.load() - rss_before, 128 * 1024) << "gateway memory grew under load";

  // One audit line per decision: every fs.read answered (ok or busy) is logged exactly once.
  ASSERT_TRUE(gateway_->Control({{"op", "status"}}));
  std::map<std::string, long> reads_by_verdict;
  long hellos = 0;
  std::map<std::pair<std::string, uint64_t>, int> seen;
  for (const auto& l : AuditLines()) {
    if (l["op"] == "hello") ++hellos;
    if (l["op"] != "fs.read") continue;
    reads_by_verdict[l["verdict"].get<std::string>()]++;
    int& n = seen[{l["plugin"].get<std::string>(), l["id"].get<uint64_t>()}];
    EXPECT_EQ(++n, 1) << "request logged twice: " << l.dump();
  }
  EXPECT_EQ(hellos, plugins);
  EXPECT_EQ(reads_by_verdict["allow"], total.ok);
  EXPECT_EQ(reads_by_verdict["busy"], total.busy);
  EXPECT_EQ(static_cast<long>(seen.size()), total.sent);
}

}  // namespace
}  // namespace gateway_load_test
}  // namespace anvil::testing
