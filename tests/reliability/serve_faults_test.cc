// Issue 9's session fault: `kill -9` of the policy gateway while a plugin's request is in flight.
// The command gets exactly one clear error (never a hang, never two answers), the session
// starts a new gateway with new hosts and tokens, and a request is never replayed to the new
// gateway: the old host is gone, and the write the plugin was making is either whole or absent.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "serve_client.h"

namespace anvil::testing {
namespace serve_faults_test {
namespace {

class ServeFaults : public ServeTestBase, public ::testing::WithParamInterface<std::string> {
 protected:
  // `loop` calls the gateway back to back and does not catch anything: the error the host gets
  // when its gateway dies is what the command ends with (unless the session's own "crashed"
  // answer comes first). Each call writes a whole 256 KiB file of one letter, alternating.
  void GatewayLoopPlugin() {
    if (GetParam() == "js") {
      WritePlugin(plugins_ / "looper", "test.looper", "js",
                  "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\n",
                  "anvil.command('loop', () => { for (let i = 0;; ++i) {"
                  " sys.fs.read('src/a.c');"
                  " sys.fs.write('notes/w.txt', (i % 2 ? 'a' : 'b').repeat(262144)); } });\n"
                  "anvil.command('ok', () => sys.fs.read('src/a.c').length);\n");
    } else {
      WritePlugin(plugins_ / "looper", "test.looper", "lua",
                  "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\n",
                  "anvil.command('loop', function() local i = 0 while true do i = i + 1\n"
                  " sys.fs.read('src/a.c')\n"
                  " sys.fs.write('notes/w.txt', string.rep(i % 2 == 1 and 'a' or 'b', 262144))\n"
                  " end end)\n"
                  "anvil.command('ok', function() return #sys.fs.read('src/a.c') end)\n");
    }
  }
  std::string ReadWorkspaceFile(const std::string& rel) {
    std::ifstream in(ws_.path() + "/" + rel, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
};

TEST_P(ServeFaults, GatewayKilledMidRequestGivesOneClearErrorAndTheSessionRecovers) {
  GatewayLoopPlugin();
  auto c = StartReady(plugins_ / "looper", "test.looper");
  const size_t a_c_size = ReadWorkspaceFile("src/a.c").size();
  json ok = c->Request("anvil/runCommand", {{"plugin", "test.looper"}, {"command", "ok"}});
  ASSERT_EQ(ok["result"]["value"], a_c_size) << ok;

  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    json status = c->Request("anvil/status")["result"];
    const pid_t gateway = status["gateway"]["pid"].get<pid_t>();
    const pid_t host = HostPid(*c, "test.looper");
    json id = c->SendRequest("anvil/runCommand", {{"plugin", "test.looper"}, {"command", "loop"}});
    // Requests are in flight once the loop has written its file at least twice.
    ASSERT_TRUE(WaitUntil([&] {
      return c->Request("anvil/status")["result"]["plugins"][0]["running"] == true &&
             ReadWorkspaceFile("notes/w.txt").size() == 262144;
    }));
    usleep(20000);
    ASSERT_EQ(kill(gateway, SIGKILL), 0);

    json r = c->ReadResponse(id);
    ASSERT_TRUE(r.contains("error")) << r;
    const std::string code = r["error"]["data"].value("code", std::string());
    const std::string message = r["error"].value("message", std::string());
    // Either the session noticed first ("crashed") or the host did, and the plugin's call
    // raised the host's error ("io: gateway ..."); both say what happened.
    EXPECT_TRUE(code == "crashed" || code == "io") << r;
    EXPECT_NE(message.find("gateway"), std::string::npos) << r;
    std::printf("[ figures ] gateway killed mid-request: the command got \"%s\"\n",
                message.c_str());

    // The host may report the broken channel before the session sees the gateway exit: wait
    // for the restart itself, then for the new host.
    ASSERT_TRUE(WaitUntil(
        [&] { return c->Request("anvil/status")["result"]["gateway"]["restarts"] == round + 1; }));
    ASSERT_TRUE(WaitForPluginState(*c, "test.looper", "ready"));
    json probe = c->Request("anvil/status");
    ASSERT_TRUE(probe.contains("result"));
    EXPECT_NE(probe["result"]["gateway"]["pid"].get<pid_t>(), gateway);
    // Exactly one answer to the command, ever: ReadResponse consumed it, and no other message
    // read since (kept in `seen`) answers the same id.
    for (const auto& m : c->seen) {
      EXPECT_FALSE(!m.contains("method") && m.contains("id") && m["id"] == id)
          << "answered twice: " << m;
    }
    EXPECT_TRUE(WaitUntil([&] { return !ProcessAlive(host); }))
        << "a host of the killed gateway is still running";
    EXPECT_NE(HostPid(*c, "test.looper"), host);

    // The file the loop was writing holds one whole write, never a mix or a torn tail.
    const std::string w = ReadWorkspaceFile("notes/w.txt");
    ASSERT_EQ(w.size(), 262144u);
    EXPECT_TRUE(w == std::string(262144, 'a') || w == std::string(262144, 'b'))
        << "notes/w.txt mixes two writes";
    std::set<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(ws_.path() + "/notes")) {
      names.insert(e.path().filename());
    }
    EXPECT_EQ(names, std::set<std::string>{"w.txt"}) << "a temporary file was left behind";

    // Nothing is replayed: after a quiet moment the file no longer changes (the old host is
    // gone and the new one was never asked to write).
    const std::string before = ReadWorkspaceFile("notes/w.txt");
    usleep(200000);
    EXPECT_EQ(ReadWorkspaceFile("notes/w.txt"), before) << "a write happened after the kill";

    json again = c->Request("anvil/runCommand", {{"plugin", "test.looper"}, {"command", "ok"}});
    EXPECT_EQ(again["result"]["value"], a_c_size) << again;
  }
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

INSTANTIATE_TEST_SUITE_P(Runtimes, ServeFaults, ::testing::Values("lua", "js"));

}  // namespace
}  // namespace serve_faults_test
}  // namespace anvil::testing
