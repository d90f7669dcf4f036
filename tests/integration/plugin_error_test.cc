// Where a plugin error happened, end to end: `anvil run` (text and --json) and `anvil serve`
// (error data, log, a failed load's state), and hostile error text kept off the terminal.
#include "plugin_debug.h"

namespace anvil::testing {
namespace plugin_error_test {
namespace {

using namespace std::chrono_literals;

// ---- error locations ------------------------------------------------------------------------

TEST_F(PluginDebug, RunShowsFileLineSourceAndStackOfALuaError) {
  WritePlugin(dir_, "test.err", "lua", "",
              "local function inner(t)\n  return t.x.y\nend\n"
              "anvil.command('t', function() local v = inner({}) return v end)\n");
  auto r = Anvil({"--approve", dir_, "t"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("anvil run: error: main.lua:2: attempt to index"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("\n[test.err]   at main.lua:2\n[test.err]     2 |   return t.x.y\n"
                       "[test.err]   stack:\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("main.lua:4: in "), std::string::npos) << r.err;
  // --json carries it as data.
  r = Anvil({"--json", dir_, "t"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["trace"]["file"], "main.lua");
  EXPECT_EQ(j["trace"]["line"], 2);
}

TEST_F(PluginDebug, RunShowsWhereAJsSyntaxErrorIsAtLoad) {
  WritePlugin(dir_, "test.syntax", "js", "", "const a = 1;\nlet x = ;\n");
  auto r = Anvil({"--approve", dir_, "t"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find("SyntaxError"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\n[test.syntax]   at main.js:2:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[test.syntax]     2 | let x = ;"), std::string::npos) << r.err;
}

// The attack: a plugin puts terminal escapes and fake lines into what an error shows (its
// message, a chunk name that becomes a stack frame, its own source line).
TEST_F(PluginDebug, HostileErrorTextCannotReachTheTerminalRaw) {
  WritePlugin(dir_, "test.hostile", "lua", "",
              "anvil.command('t', function()\n"
              "  local f = load(\"error('x\\\\27[2J')\", \"=\\27]0;pwned\\7\\nanvil run: ok\")\n"
              "  f() -- \x1b[31m red\n"
              "end)\n");
  auto r = Anvil({"--approve", dir_, "t"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\x07'), std::string::npos) << r.err;
  for (const auto& line : Lines(r.err)) {
    EXPECT_NE(line.rfind("anvil run: ok", 0), 0u) << "a forged line: " << r.err;
  }
  EXPECT_NE(r.err.find("at main.lua:3"), std::string::npos) << r.err;
}

// An error of megabytes is cut in --json as in text mode (there to a few KiB): a bounded line,
// still one JSON value, invalid UTF-8 replaced, and it says how much was cut.
TEST_F(PluginDebug, AHugeErrorIsCutInJsonToo) {
  WritePlugin(dir_, "test.big", "lua", "",
              "anvil.command('t', function() error(string.rep('\\255\\27', 5000000)) end)\n");
  auto r = Anvil({"--approve", "--json", dir_, "t"});
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_LT(r.out.size(), 1024u * 1024u);
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out.substr(0, 300);
  const std::string error = j["error"];
  EXPECT_NE(error.find(" more bytes cut]"), std::string::npos) << error.substr(0, 300);
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
}

TEST_F(PluginDebug, ServeErrorDataCarriesTheTraceAndLoadFailuresTheirLocation) {
  WritePlugin(dir_, "test.err", "js", "",
              "anvil.command('t', () => {\n  throw new TypeError('bad');\n});\n");
  auto c = StartReady(dir_, "test.err");
  json r = c->Request("anvil/runCommand", {{"plugin", "test.err"}, {"command", "t"}});
  ASSERT_TRUE(r.contains("error")) << r;
  EXPECT_EQ(r["error"]["message"], "error: TypeError: bad") << r;  // as the plugin raised it
  const json& trace = r["error"]["data"]["trace"];
  EXPECT_EQ(trace["file"], "main.js") << r;
  EXPECT_EQ(trace["line"], 2);
  EXPECT_EQ(trace["source"], "  throw new TypeError('bad');");
  EXPECT_TRUE(trace["stack"].is_array());
  bool logged = false;
  for (const auto& m : c->Seen("window/logMessage")) {
    logged = logged ||
             m["params"]["message"].get<std::string>().find("  at main.js:2:") != std::string::npos;
  }
  EXPECT_TRUE(logged);
  // A load failure: the plugin's state says where.
  WriteFile(dir_ + "/main.js", "anvil.command('t', () => {\n  return 1 +;\n});\n");
  json reload = c->Request("anvil/reload", {{"plugin", "test.err"}});
  EXPECT_EQ(reload["result"]["state"], "failed") << reload;
  EXPECT_EQ(reload["result"]["trace"]["line"], 2) << reload;
  EXPECT_NE(reload["result"]["detail"].get<std::string>().find("SyntaxError"), std::string::npos)
      << reload;
}

}  // namespace
}  // namespace plugin_error_test
}  // namespace anvil::testing
