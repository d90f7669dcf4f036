// `anvil serve --trace FILE`: every message both ways with its time; 0600, never through a
// symlink or into a FIFO, and a failed write never breaks the session.
#include "plugin_debug.h"

namespace anvil::testing {
namespace serve_trace_test {
namespace {

using namespace std::chrono_literals;

// ---- anvil serve --trace --------------------------------------------------------------------

TEST_F(PluginDebug, TraceRecordsEveryMessageBothWaysWithTimes) {
  WritePlugin(dir_, "test.t", "lua", "", "anvil.command('t', function() return 'ok' end)\n");
  const std::string trace = out_ / "trace.jsonl";
  {
    auto c = StartReady(dir_, "test.t", {"--trace", trace});
    c->Request("anvil/runCommand", {{"plugin", "test.t"}, {"command", "t"}});
    c->ShutdownAndExit();
  }
  struct stat st {};
  ASSERT_EQ(::stat(trace.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  int in = 0, out = 0;
  bool run_in = false, run_out = false;
  for (const auto& line : Lines(ReadFile(trace))) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    ASSERT_TRUE(j.is_object()) << line;
    ASSERT_TRUE(j["time"].is_string()) << line;
    EXPECT_EQ(j["time"].get<std::string>().size(), 27u) << line;  // ...T12:00:00.123456Z
    (j["dir"] == "in" ? in : out)++;
    run_in = run_in || (j["dir"] == "in" && j["message"].value("method", "") == "anvil/runCommand");
    run_out = run_out || (j["dir"] == "out" && j["message"].contains("result") &&
                          j["message"]["result"].is_object() &&
                          j["message"]["result"].value("value", "") == "ok");
  }
  EXPECT_GT(in, 2);
  EXPECT_GT(out, 2);
  EXPECT_TRUE(run_in);
  EXPECT_TRUE(run_out);
}

// The attack: the trace path is a symlink to a file the trace would overwrite (or expose).
TEST_F(PluginDebug, TraceNeverFollowsASymlinkNorOpensAFifo) {
  const std::string victim = out_ / "victim";
  WriteFile(victim, "keep");
  const std::string link = out_ / "link";
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  auto r = testing::Run({AnvilBin(), "serve", "--workspace", ws_.path(), "--trace", link},
                        Env(state_.path()));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("symlink"), std::string::npos) << r.err;
  EXPECT_EQ(ReadFile(victim), "keep");
  const std::string fifo = out_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  r = testing::Run({AnvilBin(), "serve", "--workspace", ws_.path(), "--trace", fifo},
                   Env(state_.path()));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << r.err;
}

// A trace that cannot be written (a full disk) stops the trace, never the session.
TEST_F(PluginDebug, ATraceWriteFailureNeverBreaksTheSession) {
  if (::access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  // /dev/full is refused as not a regular file: to make writes fail, fill a tiny tmpfs.
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a tmpfs";
  TempDir mnt("anvil-trace-full");
  ASSERT_EQ(Shell("mount -t tmpfs -o size=4k tmpfs " + ShellQuote(mnt.path())), 0);
  WritePlugin(dir_, "test.t", "lua", "", "anvil.command('t', function() return 'ok' end)\n");
  {
    auto c = StartReady(dir_, "test.t", {"--trace", mnt / "trace"});
    for (int i = 0; i < 20; ++i) {
      json r = c->Request("anvil/runCommand", {{"plugin", "test.t"}, {"command", "t"}});
      ASSERT_EQ(r["result"]["value"], "ok") << r;
    }
    bool warned = false;
    for (const auto& m : c->Seen("window/logMessage")) {
      warned = warned || m["params"]["message"].get<std::string>().find("--trace stopped") !=
                             std::string::npos;
    }
    EXPECT_TRUE(warned);
    EXPECT_EQ(c->ShutdownAndExit(), std::optional<int>(0));
  }
  Shell("umount " + ShellQuote(mnt.path()));
}

}  // namespace
}  // namespace serve_trace_test
}  // namespace anvil::testing
