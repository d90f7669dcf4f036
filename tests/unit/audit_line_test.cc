// The audit log's line format (protocol.md, "Audit log"): FormatAuditLine writes exactly the bytes
// nlohmann::json's dump(ensure_ascii, replace) writes for the same object, for plain entries and
// for plugin-controlled text that needs escaping (quotes, control characters, non-ASCII, invalid
// UTF-8, bidi overrides): one entry is always one line of ASCII.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway/audit_log.h"

namespace anvil::gateway {
namespace audit_line_test {
namespace {

std::string Reference(const AuditEntry& e, const std::string& session, double time) {
  nlohmann::json line = {{"time", time},     {"session", session},           {"plugin", e.plugin},
                         {"op", e.op},       {"target", e.target},           {"verdict", e.verdict},
                         {"bytes", e.bytes}, {"duration_us", e.duration_us}, {"id", e.request_id}};
  if (!e.code.empty()) line["code"] = e.code;
  if (!e.reason.empty()) line["reason"] = e.reason;
  return line.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

TEST(AuditLine, IsByteForByteWhatTheJsonLibraryWrites) {
  const std::vector<std::string> texts = {
      "",
      "src/main.lua",
      "a \"quoted\" name with a \\ backslash",
      "line\nbreak\ttab\rreturn",
      std::string("nul\0byte", 8),
      "\x1b]52;c;aGk=\x07 clipboard",
      "del\x7f",
      "caf\xc3\xa9",             // é
      "\xf0\x9f\x98\x80 emoji",  // U+1F600: a surrogate pair
      "\xe2\x80\xae"
      "bidi override",          // U+202E
      "\xc2\x85 C1 next line",  // U+0085
      "invalid \xff byte",
      "truncated \xe2\x80",
      "overlong \xc0\xaf",
  };
  const std::vector<double> times = {1764912345.123456, 1700000000.0, 0.5, 1764912345.9999998};
  int checked = 0;
  for (const auto& text : texts) {
    for (double time : times) {
      AuditEntry e;
      e.plugin = "example.plugin";
      e.op = "fs.read";
      e.target = text;
      e.verdict = "deny";
      e.code = text.empty() ? "" : "denied";
      e.reason = text;
      e.bytes = 4096;
      e.duration_us = 18446744073709551615ull;
      e.request_id = 42;
      std::string line = FormatAuditLine(e, "session-" + text, time);
      EXPECT_EQ(line, Reference(e, "session-" + text, time)) << "text: " << nlohmann::json(text);
      EXPECT_EQ(line.find('\n'), std::string::npos);
      for (unsigned char ch : line) ASSERT_TRUE(ch >= 0x20 && ch < 0x7f) << line;
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(texts.size() * times.size()));
}

TEST(AuditLine, AnAllowWithoutCodeOrReasonHasNeitherKey) {
  AuditEntry e;
  e.plugin = "p";
  e.op = "hello";
  e.verdict = "allow";
  std::string line = FormatAuditLine(e, "s", 1.5);
  EXPECT_EQ(line, Reference(e, "s", 1.5));
  auto parsed = nlohmann::json::parse(line);
  EXPECT_FALSE(parsed.contains("code"));
  EXPECT_FALSE(parsed.contains("reason"));
  EXPECT_EQ(parsed["verdict"], "allow");
}

// Every string of an entry but the session and verdict can come from a plugin (the op and
// target as it sent them, a reason quoting them). A 4 MiB path of emoji became a 12 MiB
// target plus the same again in the reason: a plugin filled the disk at the gateway's pace
// with requests refused on sight ("path over 4095 bytes"). Each field is cut at
// kMaxAuditFieldBytes, on a character boundary, and says how long it was; every line parses.
TEST(AuditLine, PluginTextIsCutSoOneLineStaysSmall) {
  const std::string emoji = "\xf0\x9f\x98\x80";
  std::string huge;
  for (int i = 0; i < 1 << 20; ++i) huge += emoji;
  AuditEntry e;
  e.plugin = "p";
  e.op = huge;
  e.target = huge;
  e.reason = "path over 4095 bytes: " + huge;
  e.verdict = "error";
  e.code = "invalid";
  const std::string line = FormatAuditLine(e, "s", 1.5);
  EXPECT_LT(line.size(), 3 * 6 * kMaxAuditFieldBytes + 512);
  EXPECT_NE(line.find("(cut: 4194304 bytes in all)"), std::string::npos);
  auto parsed = nlohmann::json::parse(line);
  for (const char* key : {"op", "target", "reason"}) {
    const std::string v = parsed[key];
    EXPECT_NE(v.find(" bytes in all)"), std::string::npos) << key;
    EXPECT_LE(v.size(), kMaxAuditFieldBytes + 64) << key;
    EXPECT_EQ(v.find("\xef\xbf\xbd"), std::string::npos) << key << ": cut inside a character";
  }
  // The benign neighbour: a path of the longest length the gateway takes is kept whole.
  e.op = "fs.read";
  e.target = std::string(4095, 'a');
  e.reason = "denied: " + e.target;
  EXPECT_EQ(FormatAuditLine(e, "s", 1.5), Reference(e, "s", 1.5));
}

// An I/O thread that finds another one writing leaves its lines to it, but only while little
// waits: with a write held up (the file's lock held by a reader), one that has more than
// kMaxHandedOffBytes waiting waits and writes them itself, so the buffer stays bounded.
TEST(AuditLog, AHeldUpWriteIsLeftOnlySmallBatches) {
  char pattern[] = "/tmp/anvil-audit-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string path = std::string(pattern) + "/audit.jsonl";
  auto opened = AuditLog::Open(path, "s1");
  ASSERT_TRUE(opened.has_value());
  std::unique_ptr<AuditLog> log(*opened);
  auto lines_on_disk = [&] {
    std::ifstream in(path);
    std::stringstream all;
    all << in.rdbuf();
    size_t n = 0;
    for (char c : all.str()) n += c == '\n';
    return n;
  };
  // A reader holds the file's lock: the first writer waits for it (at most 2 s) holding the
  // write lock.
  const int reader = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  ASSERT_EQ(::flock(reader, LOCK_EX), 0);
  AuditEntry e;
  e.plugin = "p";
  e.op = "fs.read";
  e.target = "f";
  e.verdict = "allow";
  log->Record(e);
  std::thread writer([&] { log->Flush(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Small: left to the writer, returns at once.
  log->Record(e);
  auto t0 = std::chrono::steady_clock::now();
  log->FlushOrHandOff();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(50));
  // Large: waits for the writer and writes them.
  e.target = std::string(4096, 'x');
  size_t big = 0;
  while (big <= AuditLog::kMaxHandedOffBytes) {
    log->Record(e);
    big += 4096;
  }
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::flock(reader, LOCK_UN);
  });
  log->FlushOrHandOff();
  const size_t expected = 2 + big / 4096;
  EXPECT_EQ(lines_on_disk(), expected);
  release.join();
  writer.join();
  EXPECT_EQ(lines_on_disk(), expected);
  ::close(reader);
  std::filesystem::remove_all(pattern);
}

}  // namespace
}  // namespace audit_line_test
}  // namespace anvil::gateway
