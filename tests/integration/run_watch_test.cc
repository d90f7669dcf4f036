// `anvil run --watch`: an edit runs the new code, Ctrl-C leaves nothing, and a manifest that
// asks for more is not covered by the first --approve.
#include "plugin_debug.h"

namespace anvil::testing {
namespace run_watch_test {
namespace {

using namespace std::chrono_literals;

// ---- anvil run --watch ----------------------------------------------------------------------

class RunWatch : public PluginDebug {
 protected:
  void SetUp() override {
    PluginDebug::SetUp();
    out_path_ = out_ / "out";
    err_path_ = out_ / "err";
  }
  // `anvil run --watch EXTRA...`, its output in two files (through sh: Spawned gives the
  // process /dev/null), exec'ed so that the pid is anvil's own.
  std::unique_ptr<Spawned> Watch(std::vector<std::string> extra) {
    std::vector<std::string> argv = {
        "/bin/sh",
        "-c",
        "exec \"$0\" \"$@\" >" + ShellQuote(out_path_) + " 2>" + ShellQuote(err_path_),
        AnvilBin(),
        "run",
        "--workspace",
        ws_.path(),
        "--watch"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return std::make_unique<Spawned>(argv, Env(state_.path()));
  }
  bool OutHas(const std::string& text, std::chrono::milliseconds limit = 20s) {
    return WaitUntil([&] { return ReadFile(out_path_).find(text) != std::string::npos; }, limit);
  }
  bool ErrHas(const std::string& text, std::chrono::milliseconds limit = 20s) {
    return WaitUntil([&] { return ReadFile(err_path_).find(text) != std::string::npos; }, limit);
  }
  size_t Runs() {
    const std::string err = ReadFile(err_path_);
    size_t n = 0;
    for (size_t at = err.find("watching "); at != std::string::npos;
         at = err.find("watching ", at + 1)) {
      ++n;
    }
    return n;
  }
  std::string out_path_, err_path_;
};

TEST_F(RunWatch, AnEditedFileRunsAgainWithTheNewCodeAndCtrlCLeavesNothing) {
  WritePlugin(dir_, "test.watch", "lua", "fs.read = [\"**\"]\n",
              "anvil.command('t', function() return 'version one' end)\n");
  auto w = Watch({"--approve", dir_, "t"});
  ASSERT_TRUE(OutHas("version one")) << ReadFile(err_path_);
  ASSERT_TRUE(ErrHas("watching "));
  // An edit of the approved copy, in place: runs without asking again (the grant rules).
  WriteFile(dir_ + "/main.lua", "anvil.command('t', function() return 'version two' end)\n");
  EXPECT_TRUE(OutHas("version two")) << ReadFile(err_path_);
  // A module added under lib/ counts as a change too.
  Shell("mkdir -p " + ShellQuote(dir_ + "/lib"));
  WriteFile(dir_ + "/lib/util.lua", "return {v = 'three'}\n");
  WriteFile(dir_ + "/main.lua",
            "anvil.command('t', function() return 'version ' .. require('lib.util').v end)\n");
  EXPECT_TRUE(OutHas("version three")) << ReadFile(err_path_);
  WriteFile(dir_ + "/lib/util.lua", "return {v = 'four'}\n");
  EXPECT_TRUE(OutHas("version four")) << ReadFile(err_path_);
  // Ctrl-C: the loop ends, and no process of the session is left.
  ASSERT_TRUE(ErrHas("watching "));
  ASSERT_EQ(::kill(w->pid(), SIGINT), 0);
  auto status = w->Wait(20s);
  ASSERT_TRUE(status);
  EXPECT_EQ(*status, 130) << ReadFile(err_path_);
  EXPECT_TRUE(WaitUntil([&] { return ProcessesMentioning(dir_).empty(); }, 5s))
      << "left behind: " << ProcessesMentioning(dir_).size() << " process(es)";
}

// The attack: once watched with --approve, the manifest is edited to ask for more. The new
// request must not run unapproved (no terminal to ask on here: refused), and the watch goes on.
TEST_F(RunWatch, AManifestThatAsksForMoreIsNotCoveredByTheFirstApprove) {
  WritePlugin(dir_, "test.grow", "lua", "", "anvil.command('t', function() return 'small' end)\n");
  auto w = Watch({"--approve", dir_, "t"});
  ASSERT_TRUE(OutHas("small")) << ReadFile(err_path_);
  WritePlugin(dir_, "test.grow", "lua", "fs.write = [\"**\"]\n",
              "anvil.command('t', function() sys.fs.write('pwned.txt', 'x') return 'big' end)\n");
  EXPECT_TRUE(ErrHas("denied: permission not granted")) << ReadFile(err_path_);
  EXPECT_EQ(ReadFile(out_path_).find("big"), std::string::npos);
  EXPECT_FALSE(Exists(ws_ / "pwned.txt"));
  // The benign neighbour: back to what was approved, it runs again.
  WritePlugin(dir_, "test.grow", "lua", "",
              "anvil.command('t', function() return 'small again' end)\n");
  EXPECT_TRUE(OutHas("small again")) << ReadFile(err_path_);
  ::kill(w->pid(), SIGTERM);
  EXPECT_EQ(w->Wait(20s), std::optional<int>(143));
}

TEST_F(RunWatch, WatchAndJsonAreRefusedTogether) {
  WritePlugin(dir_, "test.x", "lua", "", "anvil.command('t', function() return 1 end)\n");
  auto r = Anvil({"--watch", "--json", dir_, "t"});
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace run_watch_test
}  // namespace anvil::testing
