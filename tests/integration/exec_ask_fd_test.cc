// `anvil exec --ask-fd N` driven directly, as another front end would: a question line, the
// answer line back, the report as the last line. Only a well-formed answer to the question is
// one: invalid JSON, a huge line or a closed descriptor is a refusal. The sandboxed command
// never gets the descriptor, so it cannot answer for the person.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "sandbox_harness.h"

namespace anvil::testing {
namespace exec_ask_fd_test {
namespace {

using nlohmann::json;

class ExecAskFd : public ::testing::Test {
 protected:
  struct Child {
    pid_t pid = -1;
    int fd = -1;  // our end of the ask channel
    std::string buffer;
    // The next line from anvil exec, "" at EOF or after 20 s.
    std::string ReadLine() {
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (true) {
        if (auto nl = buffer.find('\n'); nl != std::string::npos) {
          std::string line = buffer.substr(0, nl);
          buffer.erase(0, nl + 1);
          return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                              deadline - std::chrono::steady_clock::now())
                              .count();
        pollfd p{fd, POLLIN, 0};
        if (left <= 0 || poll(&p, 1, static_cast<int>(left)) <= 0) return "";
        char buf[65536];
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0) return "";
        buffer.append(buf, static_cast<size_t>(n));
      }
    }
    void Write(const std::string& text) {
      size_t off = 0;
      while (off < text.size()) {
        const ssize_t n = send(fd, text.data() + off, text.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return;
        off += static_cast<size_t>(n);
      }
    }
    int Wait() {
      int status = 0;
      waitpid(pid, &status, 0);
      close(fd);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
  };

  Child Start(const std::vector<std::string>& command, const std::string& mode = "untrusted") {
    int sv[2];
    EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    std::vector<std::string> argv = {
        AnvilBin(), "exec",        "--ask-fd",       "3", "--approval", mode, "--cwd",
        ws_.path(), "--requester", "test front end", "--"};
    argv.insert(argv.end(), command.begin(), command.end());
    std::vector<std::string> env = {"PATH=/usr/bin:/bin", "HOME=" + home_.path(),
                                    "XDG_CONFIG_HOME=" + (home_ / "config"),
                                    "XDG_STATE_HOME=" + (home_ / "state")};
    Child c;
    c.pid = fork();
    if (c.pid == 0) {
      // No controlling terminal: the descriptor is the only way to ask.
      setsid();
      dup2(sv[1], 3);
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0);
      ExecOrExit(argv, env);
    }
    close(sv[1]);
    c.fd = sv[0];
    return c;
  }

  TempDir ws_{"anvil-askfd-ws"};
  TempDir home_{"anvil-askfd-home"};
};

TEST_F(ExecAskFd, AQuestionAnAnswerAndTheReport) {
  Child c = Start({"touch", "asked"});
  json q = json::parse(c.ReadLine(), nullptr, false);
  ASSERT_TRUE(q.is_object()) << q;
  EXPECT_EQ(q["type"], "question");
  EXPECT_EQ(q["question"]["command"], json({"touch", "asked"}));
  EXPECT_EQ(q["question"]["choices"], json({"once", "always", "never"}));
  EXPECT_NE(q["question"]["text"].get<std::string>().find("touch asked"), std::string::npos);
  c.Write(json({{"id", q["id"]}, {"answer", "once"}}).dump() + "\n");
  json report = json::parse(c.ReadLine(), nullptr, false);
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report["type"], "report");
  EXPECT_EQ(report["report"]["questions"][0]["answer"], "once");
  EXPECT_EQ(report["report"]["exit"], 0);
  EXPECT_EQ(c.Wait(), 0);
  EXPECT_TRUE(Exists(ws_ / "asked"));
  // The audit log names the requester given.
  EXPECT_EQ(Shell("grep -rq '\"plugin\":\"test front end\"' " + ShellQuote(home_ / "state")), 0);
}

TEST_F(ExecAskFd, BadAnswersAreRefusalsNeverCrashes) {
  const std::vector<std::string> answers = {
      "not json\n",
      "{\"id\":99,\"answer\":\"once\"}\n",
      "{\"id\":1,\"answer\":1}\n",
      std::string(100000, 'x') + "\n",
      "",  // the front end goes away
  };
  for (size_t i = 0; i < answers.size(); ++i) {
    const std::string file = "refused-" + std::to_string(i);
    Child c = Start({"touch", file});
    json q = json::parse(c.ReadLine(), nullptr, false);
    ASSERT_TRUE(q.is_object()) << i;
    if (answers[i].empty()) {
      shutdown(c.fd, SHUT_WR);
    } else {
      c.Write(answers[i]);
    }
    json report = json::parse(c.ReadLine(), nullptr, false);
    EXPECT_EQ(c.Wait(), 3) << i;
    EXPECT_FALSE(Exists(ws_ / file)) << i;
    if (report.is_object()) {
      EXPECT_TRUE(report["report"]["questions"][0]["answer"].is_null()) << report;
    }
  }
}

TEST_F(ExecAskFd, TheSandboxedCommandDoesNotHaveTheDescriptor) {
  // Allowed to run (on-request runs an unknown command) and trying to answer its own question.
  Child c = Start({"/bin/sh", "-c", "echo '{\"id\":1,\"answer\":\"once\"}' >&3 && echo wrote"},
                  "on-request");
  std::string line = c.ReadLine();
  json m = json::parse(line, nullptr, false);
  // A script is asked first: refuse it and see that nothing else arrived on the channel.
  if (m.is_object() && m["type"] == "question") {
    c.Write(json({{"id", m["id"]}, {"answer", "once"}}).dump() + "\n");
    line = c.ReadLine();
    m = json::parse(line, nullptr, false);
  }
  ASSERT_TRUE(m.is_object()) << line;
  EXPECT_EQ(m["type"], "report") << line;
  EXPECT_NE(m["report"]["exit"], 0) << line;
  c.Wait();
}

}  // namespace
}  // namespace exec_ask_fd_test
}  // namespace anvil::testing
