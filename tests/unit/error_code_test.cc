// The closed set of error codes (common/error_code.h): docs/protocol.md lists exactly them, every
// code reads back from its wire string, and text from another process outside the set is read
// as a fallback, never kept.
#include "common/error_code.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "common/result.h"

namespace anvil {
namespace error_code_test {
namespace {

// The codes of the first table after `marker` in docs/FILE (the first one when `marker` is
// empty): rows "| `code` | ... |".
std::set<std::string> DocumentedCodes(const std::string& file = "protocol.md",
                                      const std::string& marker = "<!-- error-codes -->") {
  std::ifstream in(std::string(ANVIL_SOURCE_DIR) + "/docs/" + file);
  std::string line;
  bool inside = marker.empty();
  std::set<std::string> codes;
  const std::regex row(R"(^\| `([a-z_]+)` \|)");
  while (std::getline(in, line)) {
    if (!inside && line == marker) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty() || line[0] != '|') {
      if (!codes.empty()) break;
      continue;
    }
    std::smatch m;
    if (std::regex_search(line, m, row)) codes.insert(m[1]);
  }
  return codes;
}

TEST(ErrorCode, DocsListExactlyTheSet) {
  std::set<std::string> set;
  for (const CodeName& n : kCodeNames) {
    EXPECT_TRUE(set.insert(std::string(n.wire)).second) << n.wire << " twice";
  }
  EXPECT_EQ(DocumentedCodes(), set) << "docs/protocol.md, section \"Error codes\"";
}

// What a plugin may raise and keep is one list (kPluginCodes): both runtimes read it, and the
// plugin API's table of codes is the same set.
TEST(ErrorCode, ThePluginApiListsExactlyThePluginCodes) {
  std::set<std::string> set;
  for (Code c : kPluginCodes) EXPECT_TRUE(set.insert(std::string(WireName(c))).second);
  EXPECT_EQ(DocumentedCodes("plugin-api.md", "| code | meaning |"), set)
      << "docs/plugin-api.md, the table of codes";
}

TEST(ErrorCode, EveryCodeReadsBackFromItsWireString) {
  for (const CodeName& n : kCodeNames) {
    EXPECT_EQ(CodeFromWire(n.wire), n.code) << n.wire;
    EXPECT_EQ(WireName(n.code), n.wire);
    EXPECT_EQ(ErrorCode::FromWire(n.wire).wire(), n.wire);
  }
}

TEST(ErrorCode, TextOutsideTheSetIsReadAsTheFallback) {
  for (const char* text : {"", "Denied", "denied ", "exists", "root", "denied\n", "\xff"}) {
    EXPECT_FALSE(CodeFromWire(text)) << text;
    EXPECT_EQ(ErrorCode::FromWire(text).wire(), "error") << text;
    EXPECT_EQ(ErrorCode::FromWire(text, Code::kInternal).wire(), "internal") << text;
  }
}

TEST(ErrorCode, AnErrorKeepsItsCodeAndMessage) {
  Error e{"denied", "not granted", 0};
  EXPECT_EQ(e.ToString(), "denied: not granted");
  EXPECT_EQ(e.error_code().code(), Code::kDenied);
  auto failed = Fail(e.error_code(), "again");
  EXPECT_EQ(failed.value().ToString(), "denied: again");
  auto sys = SysFail("io", "read x", ENOENT);
  EXPECT_EQ(sys.value().code, "io");
  EXPECT_EQ(sys.value().sys_errno, ENOENT);
}

}  // namespace
}  // namespace error_code_test
}  // namespace anvil
