// anvil-proxy's audit sink and status pipe (net/proxy_service.h): every record is an audit
// line, each distinct refusal goes once to the status pipe after "ok", and at most
// kMaxRefusalLines of them.
#include "net/proxy_service.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace anvil {
namespace proxy_service_test {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::string Drain(int fd) {
  std::string text;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  return text;
}

ProxyAuditRecord Denied(const std::string& target, const std::string& reason) {
  ProxyAuditRecord r;
  r.kind = "connect";
  r.target = target;
  r.verdict = "deny";
  r.reason = reason;
  return r;
}

TEST(ProxyService, StatusReportsOkThenEachDistinctRefusalOnce) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  char dir_template[] = "/tmp/anvil-proxy-service-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string log = std::string(dir_template) + "/audit.log";
  {
    ProxyStatusPipe status{p[1]};
    ProxyAuditSink sink(status);
    ASSERT_TRUE(sink.Open(log));
    status.Report("ok");
    EXPECT_EQ(status.fd, p[1]) << "ok keeps the pipe open for the refusals";
    sink.Record(Denied("evil.example:443", "not in --allow-host"));
    sink.Record(Denied("evil.example:443", "not in --allow-host"));
    ProxyAuditRecord allowed = Denied("example.com:443", "");
    allowed.verdict = "allow";
    sink.Record(allowed);
    ::close(p[1]);
  }
  const auto status_lines = Lines(Drain(p[0]));
  ::close(p[0]);
  ASSERT_EQ(status_lines.size(), 2u);
  EXPECT_EQ(status_lines[0], "ok");
  auto refusal = nlohmann::json::parse(status_lines[1]);
  EXPECT_EQ(refusal["refused"].get<std::string>(), "evil.example:443");
  EXPECT_EQ(refusal["reason"].get<std::string>(), "not in --allow-host");

  int log_fd = ::open(log.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(log_fd, 0);
  const auto audit_lines = Lines(Drain(log_fd));
  ::close(log_fd);
  ASSERT_EQ(audit_lines.size(), 3u) << "every record is an audit line";
  auto first = nlohmann::json::parse(audit_lines[0]);
  EXPECT_EQ(first["op"].get<std::string>(), "proxy.connect");
  EXPECT_EQ(first["verdict"].get<std::string>(), "deny");
  EXPECT_EQ(nlohmann::json::parse(audit_lines[2])["verdict"].get<std::string>(), "allow");
  ::unlink(log.c_str());
  ::rmdir(dir_template);
}

TEST(ProxyService, AFailureClosesTheStatusPipeAndRefusalsAreBounded) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ProxyStatusPipe failed{p[1]};
  failed.Report("invalid: --channel-fd is required");
  EXPECT_EQ(failed.fd, -1) << "anything but ok is the last line";
  EXPECT_EQ(Drain(p[0]), "invalid: --channel-fd is required\n");
  ::close(p[0]);

  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  ProxyStatusPipe status{p[1]};
  ProxyAuditSink sink(status);
  ASSERT_TRUE(sink.Open("/dev/null"));
  for (size_t i = 0; i < ProxyAuditSink::kMaxRefusalLines + 5; ++i) {
    sink.Record(Denied("h" + std::to_string(i) + ".example:443", "not allowed"));
  }
  ::close(p[1]);
  EXPECT_EQ(Lines(Drain(p[0])).size(), ProxyAuditSink::kMaxRefusalLines);
  ::close(p[0]);
}

// The audit log is opened as the gateway and `anvil exec` open it: never through a link.
TEST(ProxyService, TheAuditLogIsNeverOpenedThroughASymbolicLink) {
  char dir[] = "/tmp/anvil-proxy-audit-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string target = std::string(dir) + "/elsewhere";
  const std::string link = std::string(dir) + "/audit.jsonl";
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  ProxyStatusPipe none{-1};
  ProxyAuditSink through_link(none);
  EXPECT_FALSE(through_link.Open(link));
  EXPECT_NE(::access(target.c_str(), F_OK), 0) << "made through the link";
  // Benign: the file itself opens (and is made).
  ASSERT_EQ(::unlink(link.c_str()), 0);
  ProxyAuditSink plain(none);
  EXPECT_TRUE(plain.Open(link));
  EXPECT_EQ(::access(link.c_str(), F_OK), 0);
  ::unlink(link.c_str());
  ::rmdir(dir);
}

}  // namespace
}  // namespace proxy_service_test
}  // namespace anvil
