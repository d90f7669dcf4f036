// The audit log's cap (common/capped_log.h): many small appends never grow the file past it, a
// line is never cut, the newest lines stay behind a marker, and several writers with their own
// descriptors (the gateway, `anvil exec`, the proxy) keep every line whole.
#include "common/capped_log.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <sstream>
#include <string>
#include <vector>

#include "common/unique_fd.h"

namespace anvil {
namespace capped_log_test {
namespace {

class CappedLog : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-capped-log-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/audit.jsonl";
  }
  void TearDown() override {
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  UniqueFd OpenLog() const {
    return UniqueFd(::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
  }
  uint64_t Size() const {
    struct stat st {};
    EXPECT_EQ(::stat(path_.c_str(), &st), 0);
    return static_cast<uint64_t>(st.st_size);
  }
  std::vector<std::string> Lines() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    EXPECT_TRUE(text.empty() || text.back() == '\n') << "the file ends in a whole line";
    std::vector<std::string> out;
    std::string line;
    std::istringstream lines(text);
    while (std::getline(lines, line)) out.push_back(line);
    return out;
  }
  std::string dir_, path_;
};

// "w<writer> n<index> <padding>": a line the test can recognise as whole.
std::string Entry(int writer, int i) {
  return "{\"w\":" + std::to_string(writer) + ",\"n\":" + std::to_string(i) + ",\"pad\":\"" +
         std::string(100 + i % 50, 'x') + "\"}\n";
}

bool IsWhole(const std::string& line) {
  if (line.rfind("{\"bytes\":", 0) == 0) return line.find("\"op\":\"log.compacted\"") != line.npos;
  const size_t pad = line.find(",\"pad\":\"");
  if (line.rfind("{\"w\":", 0) != 0 || pad == line.npos) return false;
  const size_t x = pad + 8;
  const size_t n = line.size() - x - 2;
  return line.compare(line.size() - 2, 2, "\"}") == 0 && line.find_first_not_of('x', x) == x + n;
}

// The attack: many small allowed calls, each one line. Before, the file grew by every line.
TEST_F(CappedLog, ManySmallAppendsStayUnderTheCap) {
  auto fd = OpenLog();
  ASSERT_TRUE(fd);
  constexpr uint64_t kCap = kMinLogMaxBytes;
  int i = 0;
  for (; i < 40000; ++i) {  // about five times the cap
    ASSERT_TRUE(AppendCappedLines(fd.Get(), Entry(0, i), kCap));
    ASSERT_LE(Size(), kCap) << "after line " << i;
  }
  auto lines = Lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(lines.front().find("\"op\":\"log.compacted\""), std::string::npos) << lines.front();
  for (const auto& l : lines) EXPECT_TRUE(IsWhole(l)) << l.substr(0, 80);
  // The newest line is the last, and at least half the cap of the newest lines stays.
  EXPECT_EQ(lines.back() + "\n", Entry(0, i - 1));
  EXPECT_GE(Size(), kCap / 2 - 1024);
}

// The benign neighbour: under the cap the file is a plain append, nothing dropped or marked.
TEST_F(CappedLog, UnderTheCapNothingIsDroppedOrMarked) {
  auto fd = OpenLog();
  ASSERT_TRUE(fd);
  std::string all;
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(AppendCappedLines(fd.Get(), Entry(0, i)));
    all += Entry(0, i);
  }
  EXPECT_EQ(Size(), all.size());
  auto lines = Lines();
  ASSERT_EQ(lines.size(), 1000u);
  EXPECT_EQ(lines.front() + "\n", Entry(0, 0));
}

// A batch of many lines is written in pieces at line boundaries; a line longer than half the
// cap is still written whole.
TEST_F(CappedLog, BatchesAndLongLinesAreNeverCut) {
  auto fd = OpenLog();
  ASSERT_TRUE(fd);
  std::string batch;
  for (int i = 0; i < 30000; ++i) batch += Entry(0, i);  // several times the cap at once
  ASSERT_TRUE(AppendCappedLines(fd.Get(), batch, kMinLogMaxBytes));
  EXPECT_LE(Size(), kMinLogMaxBytes);
  for (const auto& l : Lines()) EXPECT_TRUE(IsWhole(l)) << l.substr(0, 80);
  const std::string huge = "{\"w\":9,\"n\":0,\"pad\":\"" + std::string(700 * 1024, 'x') + "\"}";
  ASSERT_TRUE(AppendCappedLines(fd.Get(), huge, kMinLogMaxBytes));  // no newline: one is added
  auto lines = Lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), huge);
  for (const auto& l : lines) EXPECT_TRUE(IsWhole(l)) << l.substr(0, 80);
}

// Several processes, each with its own descriptor, append at once: every line stays whole and
// the file under the cap.
TEST_F(CappedLog, ConcurrentWritersKeepEveryLineWhole) {
  constexpr int kWriters = 4;
  std::vector<pid_t> kids;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto fd = OpenLog();
      if (!fd) _exit(2);
      for (int i = 0; i < 8000; ++i) {
        if (!AppendCappedLines(fd.Get(), Entry(w, i), kMinLogMaxBytes)) _exit(3);
      }
      _exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_LE(Size(), kMinLogMaxBytes);
  auto lines = Lines();
  ASSERT_GT(lines.size(), 100u);
  for (const auto& l : lines) EXPECT_TRUE(IsWhole(l)) << l.substr(0, 80);
}

// The attack: a sandboxed command whose view holds the state directory (a workspace of $HOME)
// opens the audit log read-only and holds an exclusive flock on it for as long as it runs. A
// writer waits a bounded time, then appends its lines whole without dropping any (as without
// flock), and the next appends while the lock stays taken do not wait again: the gateway's
// event loop is never parked behind a lock a reader can take.
TEST_F(CappedLog, ALockHeldByAReaderDelaysAWriterABoundedTime) {
  UniqueFd writer = OpenLog();
  ASSERT_TRUE(writer);
  UniqueFd reader(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(reader);
  ASSERT_EQ(::flock(reader.Get(), LOCK_EX | LOCK_NB), 0);
  const auto started = std::chrono::steady_clock::now();
  auto first = std::async(std::launch::async, [&] {
    return static_cast<bool>(AppendCappedLines(writer.Get(), "{\"n\":1}\n"));
  });
  const bool returned = first.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  if (!returned) (void)::flock(reader.Get(), LOCK_UN);  // let it finish: the test fails below
  ASSERT_TRUE(returned) << "the append waited for the reader's lock";
  EXPECT_TRUE(first.get());
  const auto second_start = std::chrono::steady_clock::now();
  EXPECT_TRUE(AppendCappedLines(writer.Get(), "{\"n\":2}\n"));
  EXPECT_LT(second_start - started, std::chrono::seconds(10));
  EXPECT_LT(std::chrono::steady_clock::now() - second_start, std::chrono::milliseconds(500));
  EXPECT_EQ(Lines(), (std::vector<std::string>{"{\"n\":1}", "{\"n\":2}"}));
  // Once the lock is free again, the writer takes it as before.
  ASSERT_EQ(::flock(reader.Get(), LOCK_UN), 0);
  EXPECT_TRUE(AppendCappedLines(writer.Get(), "{\"n\":3}\n"));
  EXPECT_EQ(Lines().size(), 3u);
}

}  // namespace
}  // namespace capped_log_test
}  // namespace anvil
