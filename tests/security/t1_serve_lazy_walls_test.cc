// T1 for `anvil serve`'s gateway: it is started with only what the admitted plugins' grants
// need (session/gateway_serves.h). Without a plugin that may write, it refuses every write
// itself and does not scan the workspace for what git runs (--no-fs-write); without one that may
// exec, it starts no exec broker (--no-exec). A plugin admitted later that may write (consent
// given while serve runs) is served by a new gateway, started before its first write and
// guarded like one that scanned from the start: a hook that core.hooksPath names is not written.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <iterator>

#include "serve_client.h"

namespace anvil::testing {
namespace t1_serve_lazy_walls_test {
namespace {

constexpr char kGit[] = "/usr/bin/git";

// The gateway's command line, one argument a line.
std::vector<std::string> Argv(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (size_t at = 0; at < all.size();) {
    const size_t end = all.find('\0', at);
    args.push_back(all.substr(at, end - at));
    at = end == std::string::npos ? all.size() : end + 1;
  }
  return args;
}

bool Has(const std::vector<std::string>& args, const std::string& flag) {
  return std::find(args.begin(), args.end(), flag) != args.end();
}

class T1ServeLazyWalls : public ServeTestBase {
 protected:
  void SetUp() override {
    ServeTestBase::SetUp();
    if (::access(kGit, X_OK) != 0) GTEST_SKIP() << kGit << " is not installed";
  }
  int Git(const std::string& args) {
    return Shell("cd " + ShellQuote(ws_.path()) + " && HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 " +
                 kGit + " " + args + " >/dev/null 2>&1");
  }
  // The red team's repository: core.hooksPath names .githooks, which holds a hook.
  void HookRepo() {
    ASSERT_EQ(Git("init -q"), 0);
    ASSERT_EQ(Git("config core.hooksPath .githooks"), 0);
    ASSERT_EQ(::mkdir((ws_ / ".githooks").c_str(), 0755), 0);
    WriteFile(ws_ / ".githooks/pre-commit", kHook, 0755);
  }
  // A plugin whose `try` command writes each path of its arguments and says what happened.
  void Writer(const std::string& dir, const std::string& id, const std::string& permissions) {
    WritePlugin(dir, id, "lua", permissions,
                "anvil.command('try', function(paths)\n"
                "  local out = {}\n"
                "  for _, p in ipairs(paths) do\n"
                "    local ok, e = pcall(sys.fs.write, p, 'OWNED')\n"
                "    out[p] = ok and 'WROTE' or tostring(e)\n"
                "  end\n"
                "  return out\n"
                "end)\n");
  }
  json Try(ServeClient& c, const std::string& plugin, const json& paths) {
    json r = c.Request("anvil/runCommand",
                       {{"plugin", plugin}, {"command", "try"}, {"arguments", paths}});
    EXPECT_TRUE(r.contains("result")) << r;
    return r["result"]["value"];
  }
  static json Gateway(ServeClient& c) { return c.Request("anvil/status")["result"]["gateway"]; }

  static constexpr char kHook[] = "#!/bin/sh\necho lint ok\n";
};

TEST_F(T1ServeLazyWalls, WithoutAWriterTheGatewayRefusesWritesAndDoesNotScan) {
  HookRepo();
  Writer(plugins_ / "r", "test.reader", "fs.read = [\"**\"]\n");
  auto c = StartReady(plugins_ / "r", "test.reader");
  json gateway = Gateway(*c);
  EXPECT_EQ(gateway["serves"], json({{"fsWrite", false}, {"exec", false}})) << gateway;
  const auto argv = Argv(gateway["pid"].get<pid_t>());
  EXPECT_TRUE(Has(argv, "--no-fs-write")) << "the gateway scanned for what git runs";
  EXPECT_TRUE(Has(argv, "--no-exec")) << "the gateway started an exec broker";
  json tried = Try(*c, "test.reader", {"notes.txt", ".githooks/pre-commit"});
  for (const char* rel : {"notes.txt", ".githooks/pre-commit"}) {
    EXPECT_NE(tried[rel].get<std::string>().find("denied"), std::string::npos) << tried;
  }
  EXPECT_FALSE(Exists(ws_ / "notes.txt"));
  EXPECT_EQ(ReadFile(ws_ / ".githooks/pre-commit"), kHook);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(T1ServeLazyWalls, AWriterAtStartIsServedByAGatewayThatScanned) {
  HookRepo();
  Writer(plugins_ / "w", "test.writer", "fs.read = [\"**\"]\nfs.write = [\"**\"]\n");
  auto c = StartReady(plugins_ / "w", "test.writer");
  json gateway = Gateway(*c);
  EXPECT_EQ(gateway["serves"], json({{"fsWrite", true}, {"exec", false}})) << gateway;
  const auto argv = Argv(gateway["pid"].get<pid_t>());
  EXPECT_FALSE(Has(argv, "--no-fs-write"));
  EXPECT_TRUE(Has(argv, "--no-exec"));
  json tried = Try(*c, "test.writer", {"notes.txt", ".githooks/pre-commit"});
  EXPECT_EQ(tried["notes.txt"], "WROTE") << tried;
  EXPECT_NE(tried[".githooks/pre-commit"].get<std::string>().find("a path git runs"),
            std::string::npos)
      << tried;
  EXPECT_EQ(ReadFile(ws_ / ".githooks/pre-commit"), kHook);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// Red team: the session starts with a reader only, so its gateway neither serves writes nor
// scanned. A plugin that may write everything (and exec) is approved while serve runs; the first
// thing it does is write the hook core.hooksPath names. The gateway is restarted to serve it
// before its host is registered, scans, and refuses the hook; the benign write passes, and the
// reader is served again by the new gateway.
TEST_F(T1ServeLazyWalls, AWriterAdmittedLaterIsGuardedBeforeItsFirstWrite) {
  HookRepo();
  Writer(plugins_ / "r", "test.reader", "fs.read = [\"**\"]\n");
  // Its top level writes: before any command, at its very first chance.
  WritePlugin(plugins_ / "w", "test.late", "lua",
              "fs.read = [\"**\"]\nfs.write = [\"**\"]\nexec = [\"rg\"]\n",
              "local first = {}\n"
              "for _, p in ipairs({'.githooks/pre-commit', 'notes.txt'}) do\n"
              "  local ok, e = pcall(sys.fs.write, p, 'OWNED')\n"
              "  first[p] = ok and 'WROTE' or tostring(e)\n"
              "end\n"
              "anvil.command('first', function() return first end)\n");
  StartReady(plugins_ / "r", "test.reader").reset();  // the reader's grant is stored
  auto c = Start({"--plugin-dir", plugins_ / "r", "--plugin-dir", plugins_ / "w"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.reader", "ready"));
  EXPECT_EQ(PluginInfo(*c, "test.late")["state"], "needs_consent");
  json before = Gateway(*c);
  EXPECT_EQ(before["serves"], json({{"fsWrite", false}, {"exec", false}})) << before;
  EXPECT_TRUE(Has(Argv(before["pid"].get<pid_t>()), "--no-fs-write"));
  const pid_t reader_host = HostPid(*c, "test.reader");

  c->on_request = [](const json&) -> json { return {{"decision", "approve"}}; };
  json consent = c->Request("anvil/requestConsent", {{"plugin", "test.late"}});
  EXPECT_EQ(consent["result"]["granted"], true) << consent;
  ASSERT_TRUE(WaitForPluginState(*c, "test.late", "ready"));
  json first = c->Request("anvil/runCommand", {{"plugin", "test.late"}, {"command", "first"}});
  ASSERT_TRUE(first.contains("result")) << first;
  const json& wrote = first["result"]["value"];
  EXPECT_NE(wrote[".githooks/pre-commit"].get<std::string>().find("a path git runs"),
            std::string::npos)
      << wrote;
  EXPECT_EQ(wrote["notes.txt"], "WROTE") << wrote;
  EXPECT_EQ(ReadFile(ws_ / ".githooks/pre-commit"), kHook);

  json after = Gateway(*c);
  EXPECT_EQ(after["serves"], json({{"fsWrite", true}, {"exec", true}})) << after;
  EXPECT_EQ(after["widenings"], 1);
  EXPECT_EQ(after["restarts"], 0) << "a widening is not a crash";
  EXPECT_NE(after["pid"], before["pid"]);
  const auto argv = Argv(after["pid"].get<pid_t>());
  EXPECT_FALSE(Has(argv, "--no-fs-write"));
  EXPECT_FALSE(Has(argv, "--no-exec"));
  EXPECT_FALSE(ProcessAlive(before["pid"].get<pid_t>()));
  // The reader has a new host, registered with the new gateway, and still cannot write.
  ASSERT_TRUE(WaitForPluginState(*c, "test.reader", "ready"));
  EXPECT_NE(HostPid(*c, "test.reader"), reader_host);
  json tried = Try(*c, "test.reader", {"notes/r.txt"});
  EXPECT_NE(tried["notes/r.txt"].get<std::string>().find("denied"), std::string::npos) << tried;
  // A reload of the writer keeps the widened gateway: no second restart.
  json reload = c->Request("anvil/reload", {{"plugin", "test.late"}});
  EXPECT_EQ(reload["result"]["state"], "ready") << reload;
  EXPECT_EQ(Gateway(*c)["widenings"], 1);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// The benign neighbour of the widening: a command of another plugin in flight when the gateway
// restarts is answered once, with the reason, and the plugin serves the next command.
TEST_F(T1ServeLazyWalls, ACommandInFlightAtAWideningIsCancelledWithTheReason) {
  WritePlugin(plugins_ / "r", "test.loop", "lua", "fs.read = [\"**\"]\n",
              "anvil.command('loop', function() while true do pcall(sys.fs.read, 'src/a.c') "
              "end end)\nanvil.command('ok', function() return 'fine' end)\n");
  Writer(plugins_ / "w", "test.late", "fs.read = [\"**\"]\nfs.write = [\"notes/**\"]\n");
  StartReady(plugins_ / "r", "test.loop").reset();
  auto c = Start({"--plugin-dir", plugins_ / "r", "--plugin-dir", plugins_ / "w"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.loop", "ready"));
  json id = c->SendRequest("anvil/runCommand", {{"plugin", "test.loop"}, {"command", "loop"}});
  ASSERT_TRUE(WaitUntil([&] {
    const json status = c->Request("anvil/status");
    for (const auto& p : status["result"]["plugins"]) {
      if (p["id"] == "test.loop") return p["running"] == true;
    }
    return false;
  })) << json(c->seen).dump();
  c->on_request = [](const json&) -> json { return {{"decision", "approve"}}; };
  EXPECT_EQ(c->Request("anvil/requestConsent", {{"plugin", "test.late"}})["result"]["granted"],
            true);
  json r;
  for (const auto& m : c->seen) {
    if (m.contains("id") && m["id"] == id && !m.contains("method")) r = m;
  }
  if (r.is_null()) r = c->ReadResponse(id);
  EXPECT_EQ(r["error"]["data"]["code"], "cancelled") << r;
  EXPECT_NE(r.dump().find("restarted to serve the fs.write of plugin test.late"), std::string::npos)
      << r;
  ASSERT_TRUE(WaitForPluginState(*c, "test.loop", "ready"));
  json ok = c->Request("anvil/runCommand", {{"plugin", "test.loop"}, {"command", "ok"}});
  EXPECT_EQ(ok["result"]["value"], "fine") << ok;
  ASSERT_TRUE(WaitForPluginState(*c, "test.late", "ready"));
  EXPECT_EQ(Try(*c, "test.late", {"notes/n.txt"})["notes/n.txt"], "WROTE");
  EXPECT_EQ(Gateway(*c)["widenings"], 1);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

}  // namespace
}  // namespace t1_serve_lazy_walls_test
}  // namespace anvil::testing
