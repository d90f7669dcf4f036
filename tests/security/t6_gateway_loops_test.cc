// The gateway's event loops (--event-loops): connections are spread over several threads, and
// every per-connection and per-plugin guarantee still holds across them — answers in order on
// each connection, cancellation and revocation reach the loop that serves the connection, the
// quota is the plugin's whichever loop serves it, every decision is in the audit log.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace {

class T6GatewayLoops : public GatewayTest {};

std::vector<size_t> LoopConnections(session::GatewayProcess& gateway) {
  auto status = gateway.Control({{"op", "status"}});
  EXPECT_TRUE(status) << status.error().ToString();
  if (!status || !status->contains("loop_connections")) return {};
  return (*status)["loop_connections"].get<std::vector<size_t>>();
}

TEST_F(T6GatewayLoops, ConnectionsSpreadOverLoopsAndEachKeepsItsOrder) {
  constexpr int kClients = 6, kRequests = 200;
  for (int c = 0; c < kClients; ++c) {
    for (int i = 0; i < 8; ++i) {
      WriteFile(*ws_ / ("f" + std::to_string(c) + "_" + std::to_string(i)),
                "client " + std::to_string(c) + " file " + std::to_string(i));
    }
  }
  StartGateway({"--event-loops", "3"});
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  std::vector<std::unique_ptr<ipc::GatewayClient>> clients;
  for (int c = 0; c < kClients; ++c) clients.push_back(Client(token, "p.one"));
  // Round robin over three loops: two connections each.
  EXPECT_EQ(LoopConnections(*gateway_), (std::vector<size_t>{2, 2, 2}));

  // Every client pipelines its requests (all sent before the first answer is read), all at
  // once: each connection's answers come back in the order its requests went out, each with
  // its own file's content.
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int c = 0; c < kClients; ++c) {
    threads.emplace_back([&, c] {
      std::vector<uint64_t> ids;
      for (int i = 0; i < kRequests; ++i) {
        auto id =
            clients[c]->Send("fs.read", {"f" + std::to_string(c) + "_" + std::to_string(i % 8)});
        if (!id) return void(++failures);
        ids.push_back(*id);
      }
      for (int i = 0; i < kRequests; ++i) {
        auto r = clients[c]->Receive();
        if (!r || r->id != ids[i] || !r->ok ||
            r->fields[0] != "client " + std::to_string(c) + " file " + std::to_string(i % 8)) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0) << "answers out of order, lost or crossed between connections";
  size_t allowed = 0;
  for (const auto& l : AuditLines()) allowed += l["op"] == "fs.read" && l["verdict"] == "allow";
  EXPECT_EQ(allowed, static_cast<size_t>(kClients * kRequests)) << "a decision is missing";

  // Closed connections leave their loops.
  clients.clear();
  std::vector<size_t> left;
  for (int i = 0; i < 100; ++i) {
    left = LoopConnections(*gateway_);
    if (left == std::vector<size_t>{0, 0, 0}) break;
    usleep(20000);
  }
  EXPECT_EQ(left, (std::vector<size_t>{0, 0, 0}));
}

TEST_F(T6GatewayLoops, CancelReachesEveryLoopAndOnlyThatPlugin) {
  const std::string payload(256 << 10, 'w');
  std::filesystem::create_directory(*ws_ / "notes");  // the grant writes notes/**
  // One worker: the writes queue up behind it, so most are still waiting when the cancel comes.
  StartGateway({"--event-loops", "2", "--workers", "1"});
  auto one = RegisterPlugin("p.one", ReadWriteGrant());
  auto two = RegisterPlugin("p.two", ReadWriteGrant());
  // Connections alternate between the loops: p.one gets one on each, p.two one.
  std::vector<std::unique_ptr<ipc::GatewayClient>> victims;
  victims.push_back(Client(one, "p.one"));
  victims.push_back(Client(one, "p.one"));
  auto bystander = Client(two, "p.two");
  EXPECT_EQ(LoopConnections(*gateway_), (std::vector<size_t>{2, 1}));

  constexpr int kPerConnection = 12;
  for (int i = 0; i < kPerConnection; ++i) {
    for (size_t v = 0; v < victims.size(); ++v) {
      ASSERT_TRUE(victims[v]->Send("fs.write", {"notes/v" + std::to_string(v) + ".txt", payload}));
    }
  }
  ASSERT_TRUE(gateway_->CancelPlugin("p.one", "reload"));
  // The benign twin: another plugin's request after the cancel is served.
  auto b = bystander->Call("fs.write", {"notes/b.txt", "bystander"});
  ASSERT_TRUE(b && b->ok) << (b ? b->ErrorText() : b.error().ToString());

  for (size_t v = 0; v < victims.size(); ++v) {
    std::set<uint64_t> answered;
    int cancelled = 0;
    for (int i = 0; i < kPerConnection; ++i) {
      auto r = victims[v]->Receive();
      ASSERT_TRUE(r) << r.error().ToString();
      EXPECT_TRUE(answered.insert(r->id).second) << "request answered twice: " << r->id;
      if (!r->ok) {
        EXPECT_EQ(r->fields[0], "cancelled") << r->ErrorText();
        ++cancelled;
      }
    }
    // The last requests of each connection were still queued: the cancel reached both loops.
    EXPECT_GT(cancelled, 0) << "connection " << v << " (loop " << v << ") saw no cancellation";
    // The connection itself keeps serving.
    auto again = victims[v]->Call("fs.read", {"notes/v" + std::to_string(v) + ".txt"});
    ASSERT_TRUE(again && again->ok);
  }
  bool bystander_cancelled = false;
  for (const auto& l : AuditLines()) {
    bystander_cancelled |= l["plugin"] == "p.two" && l["verdict"] == "cancelled";
  }
  EXPECT_FALSE(bystander_cancelled);
}

TEST_F(T6GatewayLoops, RevocationClosesTheConnectionsOfEveryLoop) {
  WriteFile(*ws_ / "a.txt", "ok");
  StartGateway({"--event-loops", "2"});
  auto one = RegisterPlugin("p.one", ReadWriteGrant());
  auto two = RegisterPlugin("p.two", ReadWriteGrant());
  std::vector<std::unique_ptr<ipc::GatewayClient>> revoked;
  revoked.push_back(Client(one, "p.one"));
  auto kept = Client(two, "p.two");
  revoked.push_back(Client(one, "p.one"));
  EXPECT_EQ(LoopConnections(*gateway_), (std::vector<size_t>{2, 1}));
  for (auto& c : revoked) ASSERT_TRUE(c->Call("fs.read", {"a.txt"})->ok);

  ASSERT_TRUE(gateway_->Revoke(one));
  // Done before the control channel heard back: both of p.one's connections are gone.
  EXPECT_EQ(LoopConnections(*gateway_), (std::vector<size_t>{0, 1}));
  for (auto& c : revoked) {
    auto r = c->Call("fs.read", {"a.txt"});
    EXPECT_TRUE(!r || !r->ok) << "revoked token still served";
  }
  auto r = kept->Call("fs.read", {"a.txt"});
  ASSERT_TRUE(r && r->ok) << "the other plugin stopped being served";
}

TEST_F(T6GatewayLoops, QuotaIsThePluginsAcrossLoops) {
  WriteFile(*ws_ / "a.txt", "ok");
  StartGateway({"--event-loops", "2", "--requests-per-second", "20"});
  auto token = RegisterPlugin("p.one", ReadWriteGrant());
  auto first = Client(token, "p.one");
  auto second = Client(token, "p.one");
  EXPECT_EQ(LoopConnections(*gateway_), (std::vector<size_t>{1, 1}));
  // Two connections on two loops draw on one bucket of 20: together they get about 20, not 40.
  int ok = 0, limited = 0;
  for (int i = 0; i < 30; ++i) {
    for (auto* c : {first.get(), second.get()}) {
      auto r = c->Call("fs.read", {"a.txt"});
      ASSERT_TRUE(r);
      if (r->ok) {
        ++ok;
      } else {
        EXPECT_EQ(r->fields[0], "limit") << r->ErrorText();
        ++limited;
      }
    }
  }
  EXPECT_LE(ok, 30) << "each loop kept a quota of its own";
  EXPECT_GE(ok, 20);
  EXPECT_GT(limited, 0);
}

TEST_F(T6GatewayLoops, EventLoopsMustBeAPositiveNumber) {
  for (const char* bad : {"0", "-1", "many", "65"}) {
    session::GatewayConfig config;
    config.binary = BinDir() + "/anvil-gateway";
    config.workspace = workspace_;
    config.extra_args = {"--runtime-dir", ws_->path() + "-run", "--event-loops", bad};
    auto started = session::GatewayProcess::Start(config);
    EXPECT_FALSE(started) << "--event-loops " << bad << " was accepted";
  }
}

}  // namespace
}  // namespace anvil::testing
