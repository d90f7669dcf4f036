// T1, pure layer: a plugin path is validated before any syscall, and a valid path has exactly one
// spelling (so the string a grant matches is the string the kernel resolves).
#include "fs/workspace_path.h"

#include <gtest/gtest.h>

#include <string>

namespace anvil {
namespace workspace_path_test {
namespace {

using namespace std::string_literals;

// The error code, or "ok".
std::string CodeOf(std::string_view raw, RootPolicy root = RootPolicy::kReject) {
  auto r = NormalizeWorkspacePath(raw, root);
  return r ? "ok" : r.error().code;
}

std::string MessageOf(std::string_view raw, RootPolicy root = RootPolicy::kReject) {
  auto r = NormalizeWorkspacePath(raw, root);
  return r ? "" : r.error().ToString();
}

TEST(WorkspacePath, PlainRelativePathsAreUnchanged) {
  for (std::string_view p :
       {"a", "a/b", "src/main.c", ".hidden", "a/.b/c", "...", "a/..b", "a/b..", "-rf", "a b/c d",
        "x\\y", "*", "?", "caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80.txt"}) {
    auto r = NormalizeWorkspacePath(p);
    ASSERT_TRUE(r) << p << ": " << r.error().ToString();
    EXPECT_EQ(*r, p);
  }
}

TEST(WorkspacePath, EmptyPathIsInvalid) {
  EXPECT_EQ(MessageOf(""), "invalid: empty path");
  EXPECT_EQ(CodeOf("", RootPolicy::kAllow), "invalid");
}

TEST(WorkspacePath, AbsolutePathsAreInvalid) {
  EXPECT_EQ(MessageOf("/etc/passwd"), "invalid: absolute path: /etc/passwd");
  EXPECT_EQ(CodeOf("/"), "invalid");
  EXPECT_EQ(CodeOf("//x"), "invalid");
  EXPECT_EQ(CodeOf("/proc/self/root/etc/shadow"), "invalid");
  EXPECT_EQ(CodeOf("/proc/self/fd/3", RootPolicy::kAllow), "invalid");
}

TEST(WorkspacePath, DotDotComponentsAreInvalidAnywhere) {
  for (std::string_view p :
       {"..", "../x", "a/..", "a/../b", "a/b/../../..", "../../.ssh/id_ed25519"}) {
    EXPECT_EQ(CodeOf(p), "invalid") << p;
  }
  EXPECT_EQ(MessageOf("a/../b"), "invalid: '..' component in path: a/../b");
}

TEST(WorkspacePath, DotComponentsAreInvalid) {
  for (std::string_view p : {"./a", "a/.", "a/./b", "./"}) EXPECT_EQ(CodeOf(p), "invalid") << p;
  EXPECT_EQ(MessageOf("a/./b"), "invalid: '.' component in path: a/./b");
}

TEST(WorkspacePath, RootIsOnlyDotAndOnlyWhenAllowed) {
  EXPECT_EQ(*NormalizeWorkspacePath(".", RootPolicy::kAllow), ".");
  EXPECT_EQ(MessageOf(".", RootPolicy::kReject),
            "invalid: the workspace root itself is not a valid target: .");
  EXPECT_EQ(CodeOf("./", RootPolicy::kAllow), "invalid");
  EXPECT_EQ(CodeOf("./.", RootPolicy::kAllow), "invalid");
}

TEST(WorkspacePath, EmptyComponentsAreInvalid) {
  for (std::string_view p : {"a//b", "a/", "a/b/", "a///b", "a//"}) {
    EXPECT_EQ(CodeOf(p), "invalid") << p;
  }
  EXPECT_EQ(MessageOf("a//b"), "invalid: empty path component: a//b");
  EXPECT_EQ(MessageOf("a/"), "invalid: empty path component: a/");
}

TEST(WorkspacePath, NulIsInvalidAndNotTruncated) {
  const std::string p = "ok.txt\0../../etc/passwd"s;
  EXPECT_EQ(MessageOf(p), "invalid: path contains a NUL byte: ok.txt\\x00../../etc/passwd");
  EXPECT_EQ(CodeOf("\0"s), "invalid");
  EXPECT_EQ(CodeOf("a/\0"s), "invalid");
}

TEST(WorkspacePath, ControlCharactersAreInvalid) {
  EXPECT_EQ(MessageOf("a\x1b[31mb"),
            "invalid: path contains a control character (U+001B): a\\x1b[31mb");
  for (std::string_view p : {"a\nb", "a\tb", "\r", "a\x7f", "x\x01y"}) {
    EXPECT_EQ(CodeOf(p), "invalid") << QuotePathForMessage(p);
  }
  // C1 controls (U+0080..U+009F, encoded C2 80..C2 9F): CSI U+009B is an escape on some terminals.
  EXPECT_EQ(CodeOf("a\xc2\x9b"
                   "b"),
            "invalid");
  EXPECT_EQ(CodeOf("a\xc2\x80"), "invalid");
  // U+00A0 (first code point after C1) is fine.
  EXPECT_EQ(CodeOf("a\xc2\xa0"
                   "b"),
            "ok");
}

TEST(WorkspacePath, BidiFormattingCharactersAreInvalid) {
  // "evil\u202Etxt.exe" renders as "evilexe.txt".
  EXPECT_EQ(CodeOf("evil\xe2\x80\xaetxt.exe"), "invalid");
  EXPECT_EQ(CodeOf("a\xe2\x81\xa6"
                   "b"),
            "invalid");                           // U+2066
  EXPECT_EQ(CodeOf("a\xe2\x80\x8f"), "invalid");  // U+200F
  EXPECT_EQ(CodeOf("a\xd8\x9c"), "invalid");      // U+061C
  EXPECT_EQ(CodeOf("a\xe2\x80\x8b"
                   "b"),
            "ok");  // U+200B zero width space: not bidi
}

TEST(WorkspacePath, StrictUtf8) {
  struct Case {
    std::string bytes;
    bool valid;
  };
  const Case cases[] = {
      {"\x7f", true},                       // DEL is valid UTF-8 (rejected later as a control)
      {"\xc2\x80", true},                   // U+0080, smallest 2-byte
      {"\xdf\xbf", true},                   // U+07FF
      {"\xe0\xa0\x80", true},               // U+0800, smallest 3-byte
      {"\xed\x9f\xbf", true},               // U+D7FF, just below the surrogates
      {"\xee\x80\x80", true},               // U+E000, just above them
      {"\xef\xbf\xbf", true},               // U+FFFF (a noncharacter, but valid)
      {"\xf0\x90\x80\x80", true},           // U+10000, smallest 4-byte
      {"\xf4\x8f\xbf\xbf", true},           // U+10FFFF, the largest
      {"\xc0\xae", false},                  // overlong '.': would be a second spelling of "."
      {"\xc0\xaf", false},                  // overlong '/'
      {"\xc1\xbf", false},                  // overlong
      {"\xe0\x80\xae", false},              // 3-byte overlong '.'
      {"\xe0\x9f\xbf", false},              // 3-byte overlong
      {"\xf0\x80\x80\xae", false},          // 4-byte overlong '.'
      {"\xf0\x8f\xbf\xbf", false},          // 4-byte overlong
      {"\xed\xa0\x80", false},              // U+D800 high surrogate
      {"\xed\xbf\xbf", false},              // U+DFFF low surrogate
      {"\xed\xa0\xbd\xed\xb8\x80", false},  // CESU-8 surrogate pair
      {"\xf4\x90\x80\x80", false},          // U+110000
      {"\xf5\x80\x80\x80", false},          // lead byte beyond the range
      {"\xf8\x88\x80\x80\x80", false},      // 5-byte form
      {"\xfe", false},
      {"\xff", false},
      {"\x80", false},  // stray continuation
      {"\xbf", false},
      {"a\xc3", false},         // truncated 2-byte
      {"\xe2\x82", false},      // truncated 3-byte
      {"\xf0\x9f\x98", false},  // truncated 4-byte
      {"\xc3\x28", false},      // bad continuation
      {"\xe2\x28\xa1", false},
      {"\xf0\x28\x8c\xbc", false},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(IsValidUtf8(c.bytes), c.valid) << QuotePathForMessage(c.bytes);
    if (!c.valid) {
      const std::string path = "dir/" + c.bytes + "x";
      auto r = NormalizeWorkspacePath(path);
      ASSERT_FALSE(r) << QuotePathForMessage(path);
      EXPECT_EQ(r.error().code, "invalid");
      const std::size_t at = c.bytes[0] == 'a' ? 5 : 4;  // the offset of the first bad byte
      EXPECT_NE(r.error().message.find("not valid UTF-8 (at byte " + std::to_string(at) + ")"),
                std::string::npos)
          << r.error().message;
    }
  }
}

TEST(WorkspacePath, PathLengthLimitIsPathMaxMinusNul) {
  // 4095 bytes in 16 components of 255 bytes plus separators... build exactly at the limit.
  std::string at_limit;
  while (at_limit.size() + 256 <= kMaxWorkspacePathBytes) at_limit += std::string(255, 'a') + "/";
  at_limit += std::string(kMaxWorkspacePathBytes - at_limit.size(), 'b');
  ASSERT_EQ(at_limit.size(), kMaxWorkspacePathBytes);
  EXPECT_EQ(CodeOf(at_limit), "ok");
  EXPECT_EQ(MessageOf(at_limit + "c"), "invalid: path over 4095 bytes");
  EXPECT_EQ(CodeOf(std::string(1 << 20, 'a')), "invalid");
}

TEST(WorkspacePath, ComponentLengthLimitIsNameMax) {
  EXPECT_EQ(CodeOf(std::string(255, 'a')), "ok");
  EXPECT_EQ(CodeOf("d/" + std::string(255, 'a')), "ok");
  EXPECT_EQ(CodeOf(std::string(256, 'a')), "invalid");
  EXPECT_NE(MessageOf("d/" + std::string(256, 'a') + "/e").find("component over 255 bytes"),
            std::string::npos);
  // Bytes, not characters: 128 two-byte characters are 256 bytes.
  std::string wide;
  for (int i = 0; i < 128; ++i) wide += "\xc3\xa9";
  EXPECT_EQ(CodeOf(wide), "invalid");
}

TEST(WorkspacePathComponent, SingleNamesOnly) {
  EXPECT_TRUE(ValidatePathComponent("file.txt"));
  EXPECT_TRUE(ValidatePathComponent(".git"));
  EXPECT_FALSE(ValidatePathComponent(""));
  EXPECT_FALSE(ValidatePathComponent("."));
  EXPECT_FALSE(ValidatePathComponent(".."));
  EXPECT_FALSE(ValidatePathComponent("a/b"));
  EXPECT_FALSE(ValidatePathComponent("a\nb"));
  EXPECT_FALSE(ValidatePathComponent("\xff"));
  EXPECT_FALSE(ValidatePathComponent(std::string(256, 'x')));
}

TEST(WorkspacePathSplitParent, ParentAndName) {
  EXPECT_EQ(SplitParent("a"), (std::pair<std::string_view, std::string_view>{".", "a"}));
  EXPECT_EQ(SplitParent("a/b"), (std::pair<std::string_view, std::string_view>{"a", "b"}));
  EXPECT_EQ(SplitParent("a/b/c"), (std::pair<std::string_view, std::string_view>{"a/b", "c"}));
}

TEST(WorkspacePathQuote, EscapesWhatCouldHurtATerminalOrALog) {
  EXPECT_EQ(QuotePathForMessage("src/a.c"), "src/a.c");
  EXPECT_EQ(QuotePathForMessage("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(QuotePathForMessage("a\x1b]0;pwned\x07"), "a\\x1b]0;pwned\\x07");
  EXPECT_EQ(QuotePathForMessage("a\nb"), "a\\x0ab");
  EXPECT_EQ(QuotePathForMessage("\xff\xfe"), "\\xff\\xfe");
  EXPECT_EQ(QuotePathForMessage("a\\x1b"), "a\\\\x1b");
  EXPECT_EQ(QuotePathForMessage("\xe2\x80\xae"), "\\xe2\\x80\\xae");
  const std::string long_path(1000, 'a');
  EXPECT_EQ(QuotePathForMessage(long_path), std::string(200, 'a') + "...");
}

}  // namespace
}  // namespace workspace_path_test
}  // namespace anvil
