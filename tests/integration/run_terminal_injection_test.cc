// Plugin text on the user's terminal (threat model assets "user terminal" and "user attention"):
// the real `anvil run`, `anvil plugin` and `anvil audit` with a plugin that puts hostile text in
// every place Anvil prints from — a command's result (string and table), an error the command
// raises, an error at load, a plugin file that fails at start-up, the manifest, notifications
// and logs, the audit log. Whatever the route, no byte that acts on a terminal gets through
// (escape sequences incl. OSC 52 and title changes, C0, DEL, C1 as UTF-8 and as raw bytes, bidi
// overrides and isolates, invalid UTF-8), and no plugin line can pass for one of Anvil's own.
// `--json` stays the exact route: JSON-escaped, and decoding it gives the plugin's value back.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace run_terminal_injection_test {
namespace {

// Every hostile vector at once, and the forged prompt on its own line.
const std::string kHostile =
    "ok\x1b]52;c;ZXZpbA==\x07"          // OSC 52: write the clipboard
    "\x1b]0;pwned\x07"                  // OSC 0: the window title
    "\x1b[2J\x1b[H"                     // clear the screen, home
    "\xc2\x9b"                          // C1 CSI as UTF-8
    "31m\x7f\x08"                       // DEL, backspace
    "\xe2\x80\xae"                      // RLO
    "cod.exe\xe2\x81\xa6x\xe2\x81\xa9"  // isolates
    "\rtail\n"                          // carriage return over the line
    "anvil: Allow test.run to write ~/.ssh? [y/N] ";

// The hostile text as a Lua string literal.
std::string LuaLiteral(const std::string& bytes) {
  std::string out = "\"";
  for (unsigned char c : bytes) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "\\%u", static_cast<unsigned>(c));
    out += buf;
  }
  return out + "\"";
}

// Strict UTF-8, and no code point that acts on a terminal or hides/reorders text.
std::string FirstDangerous(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    auto b = static_cast<unsigned char>(text[i]);
    char32_t c = 0;
    size_t len = 0;
    if (b < 0x80) {
      c = b;
      len = 1;
    } else if ((b & 0xe0) == 0xc0 && b >= 0xc2) {
      len = 2;
      c = b & 0x1f;
    } else if ((b & 0xf0) == 0xe0) {
      len = 3;
      c = b & 0x0f;
    } else if ((b & 0xf8) == 0xf0 && b <= 0xf4) {
      len = 4;
      c = b & 0x07;
    } else {
      return "invalid byte at " + std::to_string(i);
    }
    if (i + len > text.size()) return "truncated at " + std::to_string(i);
    for (size_t k = 1; k < len; ++k) {
      auto cb = static_cast<unsigned char>(text[i + k]);
      if ((cb & 0xc0) != 0x80) return "invalid byte at " + std::to_string(i + k);
      c = (c << 6) | (cb & 0x3f);
    }
    if ((c < 0x20 && c != '\n' && c != '\t') || (c >= 0x7f && c <= 0x9f)) {
      return "control U+" + std::to_string(c) + " at " + std::to_string(i);
    }
    if ((c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x200e ||
        c == 0x200f || c == 0x61c || (c >= 0x200b && c <= 0x200d) || c == 0xfeff || c == 0x2028 ||
        c == 0x2029) {
      return "invisible/bidi U+" + std::to_string(c) + " at " + std::to_string(i);
    }
    i += len;
  }
  return "";
}

class RunTerminal : public ::testing::Test {
 protected:
  void SetUp() override {
    WriteFile(ws_ / "a.txt", "alpha");
    ASSERT_EQ(Shell("mkdir -p '" + plugin_.path() + "/lib'"), 0);
  }
  void Manifest(const std::string& runtime = "lua", const std::string& extra = "") {
    WriteFile(plugin_ / "anvil-plugin.toml",
              "id = \"test.run\"\nversion = \"1.0.0\"\nruntime = \"" + runtime +
                  "\"\nentry = \"main." + runtime + "\"\n" + extra);
  }
  void Lua(const std::string& code) {
    Manifest("lua");
    WriteFile(plugin_ / "main.lua", code);
  }
  void Js(const std::string& code) {
    Manifest("js");
    WriteFile(plugin_ / "main.js", code);
  }
  RunResult Anvil(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {AnvilBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state_.path()};
    return testing::Run(argv, o);
  }
  RunResult RunX(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"run", "--workspace", ws_.path(), "--approve"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(plugin_.path());
    args.push_back("x");
    return Anvil(args);
  }
  // Nothing dangerous anywhere, and every line is Anvil's own or marked as the plugin's.
  void ExpectSafe(const RunResult& r) {
    EXPECT_EQ(FirstDangerous(r.out), "") << r.out;
    EXPECT_EQ(FirstDangerous(r.err), "") << r.err;
    for (const std::string& line : Lines(r.out + "\n" + r.err)) {
      EXPECT_NE(line.rfind("anvil: Allow", 0), 0u) << "forged prompt line: " << line;
    }
    for (const std::string& line : Lines(r.err)) {
      if (line.empty()) continue;
      const bool ours = line.rfind("anvil run: ", 0) == 0 || line.rfind("anvil plugin: ", 0) == 0;
      const bool theirs = line.rfind("[test.run", 0) == 0;
      EXPECT_TRUE(ours || theirs) << "unattributed line: " << line;
    }
  }
  TempDir ws_{"anvil-term-ws"};
  TempDir plugin_{"anvil-term-plugin"};
  TempDir state_{"anvil-term-state"};
};

TEST_F(RunTerminal, StringResultIsShownInertAndMarked) {
  Lua("anvil.command('x', function() return " + LuaLiteral(kHostile) + " end)");
  auto r = RunX();
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectSafe(r);
  // Made visible, not dropped: the user can see that the result carried escapes.
  EXPECT_NE(r.out.find("ok\\u{1b}]52;c;ZXZpbA==\\u{7}"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\u{9b}31m"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\u{202e}cod.exe"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\u{d}tail\n"), std::string::npos) << r.out;
  // The forged prompt line is marked as the plugin's.
  EXPECT_NE(r.out.find("\n[test.run] anvil: Allow test.run"), std::string::npos) << r.out;
}

TEST_F(RunTerminal, BenignResultIsPrintedAsIs) {
  Lua("anvil.command('x', function() return 'line one\\n\\tindented café ✓' end)");
  auto r = RunX();
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "line one\n\tindented café ✓\n");
  EXPECT_EQ(r.err, "");
}

TEST_F(RunTerminal, TableResultStringsAreShownInert) {
  Lua("anvil.command('x', function() return {msg = " + LuaLiteral(kHostile) +
      ", list = {'\\u{202E}a', '\\u{9B}b'}} end)");
  auto r = RunX();
  ASSERT_EQ(r.status, 0) << r.err;
  ExpectSafe(r);
  EXPECT_NE(r.out.find("\\u{202e}a"), std::string::npos) << r.out;
}

// On a terminal (script(1) gives anvil a pty), where the result shares the screen with Anvil's
// own lines: a result line that could pass for one of them is marked, look-alike letters
// included; ordinary lines print as they are.
TEST_F(RunTerminal, OnATerminalLinesThatLookLikeAnvilsAreMarked) {
  Lua("anvil.command('x', function() return 'first\\n\\u{430}nvil: Allow? [y/N]\\n"
      "Continue? [y/N]\\n\\27[2Jlast' end)");
  ASSERT_EQ(RunX().status, 0);  // grants it
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "TERM=xterm",
           "XDG_STATE_HOME=" + state_.path()};
  auto t = testing::Run({"/usr/bin/script", "-qec",
                         ShellQuote(AnvilBin()) + " run --workspace " + ShellQuote(ws_.path()) +
                             " " + ShellQuote(plugin_.path()) + " x 2>/dev/null",
                         "/dev/null"},
                        o);
  ASSERT_EQ(t.status, 0) << t.out << t.err;
  EXPECT_NE(t.out.find("first\r\n[test.run] \xd0\xb0nvil: Allow? [y/N]\r\n"
                       "[test.run] Continue? [y/N]\r\n\\u{1b}[2Jlast\r\n"),
            std::string::npos)
      << t.out;
  EXPECT_EQ(t.out.find("\x1b[2J"), std::string::npos) << t.out;
}

TEST_F(RunTerminal, ErrorRaisedByTheCommandIsShownInertAndMarked) {
  Lua("anvil.command('x', function() error(" + LuaLiteral(kHostile) + ", 0) end)");
  auto r = RunX();
  EXPECT_EQ(r.status, 1) << r.err;
  ExpectSafe(r);
  EXPECT_NE(r.err.find("anvil run: error: ok\\u{1b}]52;"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("\n[test.run] anvil: Allow test.run"), std::string::npos) << r.err;
  // Raw C1 bytes and invalid UTF-8 in an error (Lua strings are bytes) are shown by value.
  Lua("anvil.command('x', function() error('a\\155' .. '2J\\255\\192\\174 b', 0) end)");
  r = RunX();
  EXPECT_EQ(r.status, 1) << r.err;
  ExpectSafe(r);
  EXPECT_NE(r.err.find("a\\x{9b}2J\\x{ff}\\x{c0}\\x{ae} b"), std::string::npos) << r.err;
}

TEST_F(RunTerminal, JsErrorAndResultAreShownInert) {
  Js("anvil.command('x', function () { throw new Error('\\u001b]52;c;eA==\\u0007\\u009b\\u202e"
     "\\nanvil: Allow? [y/N]'); });\n"
     "anvil.command('y', function () { return '\\u001b]0;t\\u0007\\u2066ok'; });");
  auto r = RunX();
  EXPECT_EQ(r.status, 1) << r.err;
  ExpectSafe(r);
  r = Anvil({"run", "--workspace", ws_.path(), "--approve", plugin_.path(), "y"});
  EXPECT_EQ(r.status, 0) << r.err;
  ExpectSafe(r);
  EXPECT_EQ(r.out, "\\u{1b}]0;t\\u{7}\\u{2066}ok\n");
}

TEST_F(RunTerminal, ErrorAtLoadIsShownInertAndMarked) {
  Lua("error(" + LuaLiteral(kHostile) + ", 0)\nanvil.command('x', function() end)");
  auto r = RunX();
  EXPECT_EQ(r.status, 1) << r.err;
  ExpectSafe(r);
  EXPECT_NE(r.err.find("\\u{1b}]0;pwned"), std::string::npos) << r.err;
  // A syntax error echoes the source: the same.
  Lua("local x = \"\x1b]0;pwned\x07\n");
  r = RunX();
  EXPECT_EQ(r.status, 1) << r.err;
  ExpectSafe(r);
}

// A plugin file that cannot run, named with escape sequences: it is refused before anything
// starts (by `anvil run`, `anvil plugin inspect` and `approve`), and its name is shown inert.
TEST_F(RunTerminal, BadPluginFileIsRefusedWithItsNameShownInert) {
  Lua("anvil.command('x', function() return 1 end)");
  const std::string hostile = "\x1b]0;pwned\x07\xc2\x9b\xe2\x80\xae";
  // A module whose name holds the escapes (refused for its name), then one that is a symlink.
  for (const std::string& name : {"lib/" + hostile + ".lua", std::string("lib/util.lua")}) {
    ASSERT_EQ(::symlink("/etc/passwd", (plugin_ / name).c_str()), 0);
    auto r = RunX();
    EXPECT_NE(r.status, 0) << r.err;
    EXPECT_NE(r.status, 125) << r.err;
    EXPECT_EQ(r.out, "");
    ExpectSafe(r);
    for (const std::string sub : {"inspect", "approve"}) {
      auto p = Anvil({"plugin", sub, "--workspace", ws_.path(), plugin_.path()});
      EXPECT_EQ(p.status, 1) << sub << ": " << p.err << p.out;
      ExpectSafe(p);
    }
    ASSERT_EQ(::unlink((plugin_ / name).c_str()), 0);
  }
  // The manifest's entry named with the escapes: refused at its line and column, shown inert.
  WriteFile(plugin_ / "anvil-plugin.toml",
            "id = \"test.run\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
            "entry = \"\\u001b]0;pwned\\u0007\\u009b\\u202e.lua\"\n");
  auto r = RunX();
  EXPECT_EQ(r.status, 2) << r.err;
  ExpectSafe(r);
  // Benign: the same plugin with ordinary files runs.
  Lua("anvil.command('x', function() return 1 end)");
  r = RunX();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
}

TEST_F(RunTerminal, NotificationsAndLogsAreShownInert) {
  Lua("anvil.command('x', function()\n"
      "  editor.notify(" +
      LuaLiteral(kHostile) +
      ")\n"
      "  print(" +
      LuaLiteral(kHostile) +
      ")\n"
      "  warn('\\155' .. 'x')\n"
      "  return 'done' end)");
  auto r = RunX();
  EXPECT_EQ(r.status, 0) << r.err;
  ExpectSafe(r);
  EXPECT_EQ(r.out, "done\n");
}

// A plugin printing in a loop wrote every line to stderr for as long as its deadline ran (53 MB
// in the default 10 s; a longer --timeout, or stderr redirected to a file, without bound). Now
// one command's notifications and logs share a budget; the rest are dropped and counted.
TEST_F(RunTerminal, APluginPrintingInALoopStopsAtItsBudget) {
  Lua("anvil.command('x', function()\n"
      "  local s = string.rep('a', 100)\n"
      "  for i = 1, 30000 do print(i .. s) end\n"
      "  editor.notify('after the flood')\n"
      "  return 'done' end)");
  auto r = RunX();
  EXPECT_EQ(r.status, 0) << r.err.substr(0, 500);
  EXPECT_EQ(r.out, "done\n");
  ExpectSafe(r);
  size_t plugin_lines = 0;
  for (const std::string& line : Lines(r.err)) plugin_lines += line.rfind("[test.run", 0) == 0;
  EXPECT_EQ(plugin_lines, 10000u);
  EXPECT_LT(r.err.size(), size_t{2} << 20);
  EXPECT_NE(r.err.find("anvil run: test.run passed its budget of 10000 log and notification"),
            std::string::npos);
  EXPECT_NE(r.err.find("anvil run: 20001 log and notification lines of test.run were dropped"),
            std::string::npos)
      << r.err.substr(r.err.size() - 500);
  EXPECT_EQ(r.err.find("after the flood"), std::string::npos);
}

// The benign neighbour: a plugin printing a few hundred lines shows every one, nothing dropped.
TEST_F(RunTerminal, OrdinaryLoggingIsShownWhole) {
  Lua("anvil.command('x', function()\n"
      "  for i = 1, 300 do print('line ' .. i) end\n"
      "  editor.notify('finished')\n"
      "  return 'done' end)");
  auto r = RunX();
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "done\n");
  EXPECT_NE(r.err.find("[test.run info] line 300\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[test.run] finished\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("dropped"), std::string::npos) << r.err;
}

// Manifest strings reach `anvil run`, `anvil plugin inspect` and `approve` in error messages.
TEST_F(RunTerminal, ManifestStringsAreShownInert) {
  WriteFile(plugin_ / "anvil-plugin.toml",
            "id = \"test.run\"\nversion = \"1.0.0\"\nruntime = \"lua\"\n"
            "entry = \"\\u001b]0;pwned\\u0007\\u009b\\u202e.lua\"\n");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"run", "--workspace", ws_.path(), "--approve", plugin_.path(),
                                 "x"},
        std::vector<std::string>{"plugin", "inspect", "--workspace", ws_.path(), plugin_.path()},
        std::vector<std::string>{"plugin", "approve", "--workspace", ws_.path(), plugin_.path()}}) {
    auto r = Anvil(args);
    EXPECT_EQ(r.status, 2) << args[0] << ": " << r.err;
    EXPECT_EQ(FirstDangerous(r.out), "") << r.out;
    EXPECT_EQ(FirstDangerous(r.err), "") << r.err;
    EXPECT_NE(r.err.find("anvil-plugin.toml:4:"), std::string::npos) << r.err;
  }
  // A manifest that is accepted: its strings in `inspect` are sanitized too.
  WriteFile(plugin_ / "anvil-plugin.toml",
            "id = \"test.run\"\nversion = \"1.0.0\"\nruntime = \"lua\"\nentry = \"main.lua\"\n"
            "[permissions]\nfs.read = [\"src/\\u202e/**\"]\n");
  WriteFile(plugin_ / "main.lua", "");
  auto r = Anvil({"plugin", "inspect", "--workspace", ws_.path(), plugin_.path()});
  EXPECT_EQ(FirstDangerous(r.out), "") << r.out;
  EXPECT_EQ(FirstDangerous(r.err), "") << r.err;
}

// --json is the exact route: escaped for the terminal, and the value decodes back unchanged.
TEST_F(RunTerminal, JsonIsEscapedAndExact) {
  Lua("anvil.command('x', function() return " + LuaLiteral(kHostile) + " end)");
  auto r = RunX({"--json"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(FirstDangerous(r.out), "") << r.out;
  for (unsigned char c : r.out) EXPECT_LT(c, 0x80) << r.out;  // every non-ASCII \u-escaped
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["result"], kHostile);
  // An error keeps its exact text as well.
  Lua("anvil.command('x', function() error(" + LuaLiteral(kHostile) + ", 0) end)");
  r = RunX({"--json"});
  EXPECT_EQ(r.status, 1);
  j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["error"], "error: " + kHostile);
}

// The audit log carries plugin-chosen targets; `anvil audit` shows them inert, and a damaged
// log (wrong types, garbage lines) neither stops the listing nor reaches the terminal raw.
TEST_F(RunTerminal, AuditOutputIsInertAndSurvivesADamagedLog) {
  WriteFile(
      ws_ / "log.jsonl",
      std::string(
          "{\"verdict\":\"deny\",\"plugin\":\"p\",\"op\":\"fs.read\",\"target\":"
          "\"\\u001b]52;c;eA==\\u0007\\u009b\\u202e\",\"reason\":\"x\\u001b[2J\"}\n"
          "{\"verdict\":5,\"plugin\":[1],\"op\":null,\"target\":{\"a\":\"\\u001b\"}}\n"
          "not json \x1b[2J\n"
          "{\"verdict\":\"allow\",\"plugin\":\"p\",\"op\":\"fs.read\",\"target\":\"ok.txt\"}\n") +
          // A million nested arrays as a field: parsed, it crashed --json's dump.
          "{\"verdict\":\"deny\",\"target\":" + std::string(1000000, '[') +
          std::string(1000000, ']') + "}\n");
  auto r = Anvil({"audit", "--file", ws_ / "log.jsonl"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(FirstDangerous(r.out), "") << r.out;
  EXPECT_NE(r.out.find("allow\tp\tfs.read\tok.txt\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\\u{1b}]52;"), std::string::npos) << r.out;
  r = Anvil({"audit", "--json", "--file", ws_ / "log.jsonl"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(FirstDangerous(r.out), "") << r.out;
  auto lines = Lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;  // the garbage line is skipped
  EXPECT_EQ(nlohmann::json::parse(lines[0])["target"], "\x1b]52;c;eA==\x07\xc2\x9b\xe2\x80\xae");
}

}  // namespace
}  // namespace run_terminal_injection_test
}  // namespace anvil::testing
