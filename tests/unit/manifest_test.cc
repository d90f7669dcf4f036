// T8, pure layer: anvil-plugin.toml is parsed strictly. Every malformed manifest is refused
// with "invalid: <source>:<line>:<col>: ..." naming the line of the mistake, no exception
// escapes the parser whatever the input, and the permissions become the *requested* Grant.
#include "policy/manifest.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "fs/path_glob.h"

namespace anvil {
namespace manifest_test {
namespace {

using namespace std::string_literals;

constexpr char kSource[] = "m.toml";

const std::string kValid = R"(id = "example.todo-finder"
version = "0.1.0"
runtime = "lua"
entry = "main.lua"

[permissions]
fs.read = ["**"]
fs.write = ["notes/**"]
net.hosts = ["api.example.com"]
net.post = false
exec = ["rg", "fd"]
)";

// The four required keys on lines 1-4, so a case's own lines start at 5.
const std::string kHead = R"(id = "example.todo-finder"
version = "0.1.0"
runtime = "lua"
entry = "main.lua"
)";

Result<Manifest> Parse(const std::string& text) { return ParseManifest(text, kSource); }

TEST(ManifestParse, AcceptsTheDocumentedExample) {
  auto m = Parse(kValid);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->id, "example.todo-finder");
  EXPECT_EQ(m->version, "0.1.0");
  EXPECT_EQ(m->runtime, PluginRuntime::kLua);
  EXPECT_EQ(m->entry, "main.lua");
  EXPECT_EQ(m->name, "");
  Grant expected;
  expected.fs_read = {"**"};
  expected.fs_write = {"notes/**"};
  expected.net_hosts = {"api.example.com"};
  expected.net_post = false;
  expected.exec = {"rg", "fd"};
  EXPECT_EQ(m->requested, expected);
  EXPECT_EQ(m->sha256, ManifestSha256(kValid));
}

TEST(ManifestParse, TableAndInlineSpellingsOfPermissionsAreEquivalent) {
  const std::string tables = kHead + R"(
[permissions]
exec = ["rg", "fd"]

[permissions.fs]
read = ["**"]
write = ["notes/**"]

[permissions.net]
hosts = ["api.example.com"]
post = false
)";
  const std::string inline_tables = kHead + R"(
permissions = { fs = { read = ["**"], write = ["notes/**"] }, net = { hosts = ["api.example.com"], post = false }, exec = ["rg", "fd"] }
)";
  auto a = Parse(kValid), b = Parse(tables), c = Parse(inline_tables);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->requested, b->requested);
  EXPECT_EQ(a->requested, c->requested);
  // Same permissions, different bytes: a different manifest, so a different grant key.
  EXPECT_NE(a->sha256, b->sha256);
}

TEST(ManifestParse, NoPermissionsMeansNothingRequested) {
  auto m = Parse(kHead);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->requested, Grant{});
}

TEST(ManifestParse, OptionalFieldsJsRuntimeAndNestedEntry) {
  auto m = Parse(R"(id = "0x.fmt_tool-2"
version = "2.0.0-rc.1+build.5"
runtime = "js"
entry = "src/main.js"
name = "Formatter ✓"
description = """
Formats buffers.
Second line."""
)");
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->runtime, PluginRuntime::kJs);
  EXPECT_EQ(m->entry, "src/main.js");
  EXPECT_EQ(m->name, "Formatter ✓");
  EXPECT_EQ(m->description, "Formats buffers.\nSecond line.");
}

TEST(ManifestParse, DuplicateListEntriesAreDroppedInOrder) {
  auto m = Parse(kHead + R"([permissions]
exec = ["rg", "fd", "rg"]
fs.read = ["src/**", "docs/**", "src/**"]
)");
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->requested.exec, (std::vector<std::string>{"rg", "fd"}));
  EXPECT_EQ(m->requested.fs_read, (std::vector<std::string>{"src/**", "docs/**"}));
}

TEST(ManifestParse, AcceptsExactHostsAndCanonicalIpLiterals) {
  for (const char* host : {"api.example.com", "localhost", "xn--bcher-kva.example", "a-b.c0",
                           "93.184.216.34", "[2001:db8::1]", "[::1]", "example.com123"}) {
    EXPECT_TRUE(ValidateGrantHost(host))
        << host << ": " << ValidateGrantHost(host).error().ToString();
  }
}

TEST(ManifestParse, Sha256IsOverTheExactBytes) {
  EXPECT_EQ(ManifestSha256("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ManifestSha256(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  // A comment is part of the manifest: changing it changes the key.
  EXPECT_NE(ManifestSha256(kValid), ManifestSha256(kValid + "# note\n"));
}

struct BadManifest {
  const char* name;
  std::string text;
  int line;             // the line the error must name
  const char* message;  // a substring the error must contain
};

std::vector<BadManifest> BadManifests() {
  const std::string perm = kHead + "[permissions]\n";  // permission lines start at 6
  return {
      // Top level.
      {"unknown top-level key", kHead + "author = \"me\"\n", 5, "unknown key 'author'"},
      {"unknown table", kHead + "[metadata]\nx = 1\n", 5, "unknown key 'metadata'"},
      {"id not a string", "id = 5\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 1,
       "'id' must be a string, not an integer"},
      {"id upper case",
       "id = \"example.Todo\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 1,
       "lower case"},
      {"id starts with dot", "id = \".x\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n",
       1, "must start with a-z or 0-9"},
      {"id with slash", "id = \"a/b\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 1,
       "ids use only"},
      {"id with space", "id = \"a b\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 1,
       "ids use only"},
      {"id empty", "id = \"\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 1,
       "plugin id is empty"},
      {"id too long",
       "id = \"" + std::string(65, 'a') +
           "\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n",
       1, "longer than 64"},
      {"id escape sequence",
       "id = \"\\u001b[31m\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 1,
       "\\x1b[31m"},
      {"version empty", "id = \"a\"\nversion = \"\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 2,
       "version is empty"},
      {"version not a string", "id = \"a\"\nversion = 1.0\nruntime = \"lua\"\nentry = \"m.lua\"\n",
       2, "'version' must be a string, not a float"},
      {"version control char",
       "id = \"a\"\nversion = \"1\\u0007\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 2,
       "printable ASCII"},
      {"version trailing space",
       "id = \"a\"\nversion = \"1.0 \"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 2,
       "trailing spaces"},
      {"runtime python", "id = \"a\"\nversion = \"1\"\nruntime = \"python\"\nentry = \"m.py\"\n", 3,
       "runtime 'python' is not supported"},
      {"runtime not a string",
       "id = \"a\"\nversion = \"1\"\nruntime = [\"lua\"]\nentry = \"m.lua\"\n", 3,
       "'runtime' must be a string, not an array"},
      {"runtime upper case", "id = \"a\"\nversion = \"1\"\nruntime = \"LUA\"\nentry = \"m.lua\"\n",
       3, "not supported"},
      {"entry absolute", "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"/etc/x.lua\"\n",
       4, "absolute path"},
      {"entry dotdot", "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"../x.lua\"\n", 4,
       "not a plain relative path"},
      {"entry inner dotdot",
       "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"lib/../../x.lua\"\n", 4,
       "not a plain relative path"},
      {"entry dot prefix", "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"./m.lua\"\n",
       4, "not a plain relative path"},
      {"entry trailing slash",
       "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua/\"\n", 4,
       "not a plain relative path"},
      {"entry empty", "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"\"\n", 4,
       "not a plain relative path"},
      {"entry NUL", "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\\u0000.js\"\n",
       4, "not a plain relative path"},
      {"entry js for lua", "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"main.js\"\n",
       4, "does not end in .lua"},
      {"entry lua for js", "id = \"a\"\nversion = \"1\"\nruntime = \"js\"\nentry = \"main.lua\"\n",
       4, "does not end in .js"},
      {"entry other extension",
       "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"main.luac\"\n", 4,
       "does not end in .lua"},
      {"entry bare extension",
       "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = \"x/.lua\"\n", 4,
       "does not end in .lua"},
      {"entry not a string", "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\nentry = true\n", 4,
       "'entry' must be a string, not a boolean"},
      {"missing id", "version = \"1\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 1, "missing 'id'"},
      {"missing version", "id = \"a\"\nruntime = \"lua\"\nentry = \"m.lua\"\n", 1,
       "missing 'version'"},
      {"missing runtime", "id = \"a\"\nversion = \"1\"\nentry = \"m.lua\"\n", 1,
       "missing 'runtime'"},
      {"missing entry", "id = \"a\"\nversion = \"1\"\nruntime = \"lua\"\n", 1, "missing 'entry'"},
      {"name newline", kHead + "name = \"a\\nb\"\n", 5, "control or bidirectional"},
      {"name escape", kHead + "name = \"\\u001b]0;owned\\u0007\"\n", 5, "control or bidirectional"},
      {"name rtl override", kHead + "name = \"abc\\u202Etxt.exe\"\n", 5,
       "control or bidirectional"},
      {"name too long", kHead + "name = \"" + std::string(101, 'n') + "\"\n", 5, "longer than 100"},
      {"name wrong type", kHead + "name = 5\n", 5, "'name' must be a string"},
      {"description bidi", kHead + "description = \"x\\u2066y\"\n", 5, "control or bidirectional"},
      {"description too long", kHead + "description = \"" + std::string(2001, 'd') + "\"\n", 5,
       "longer than 2000"},
      // [permissions].
      {"permissions not a table", kHead + "permissions = \"all\"\n", 5,
       "permissions must be a table, not a string"},
      {"unknown permission", perm + "shell = true\n", 6, "unknown key 'shell' in permissions"},
      {"quoted dotted key", perm + "\"fs.read\" = [\"**\"]\n", 6, "without quotes"},
      {"fs not a table", perm + "fs = [\"**\"]\n", 6, "permissions.fs must be a table"},
      {"net not a table", perm + "net = 5\n", 6, "permissions.net must be a table"},
      {"unknown fs key", perm + "fs.exec = [\"x\"]\n", 6, "unknown key 'exec' in permissions.fs"},
      {"unknown net key", perm + "net.ports = [443]\n", 6,
       "unknown key 'ports' in permissions.net"},
      {"fs.read not array", perm + "fs.read = \"**\"\n", 6,
       "fs.read must be an array of strings, not a string"},
      {"fs.read absolute", perm + "fs.read = [\"/etc/**\"]\n", 6, "absolute path"},
      {"fs.read dotdot", perm + "fs.read = [\"../**\"]\n", 6, "fs.read[0]"},
      {"fs.read bad double star", perm + "fs.read = [\"a**b\"]\n", 6, "whole path segment"},
      {"fs.read element on later line", perm + "fs.read = [\n  \"src/**\",\n  3,\n]\n", 8,
       "fs.read[1] must be a string, not an integer"},
      {"fs.read nested array", perm + "fs.read = [[\"**\"]]\n", 6, "not an array"},
      {"fs.write empty segment", perm + "fs.write = [\"notes//x\"]\n", 6, "fs.write[0]"},
      {"fs.write control char", perm + "fs.write = [\"a\\u001bb\"]\n", 6, "control character"},
      {"fs.read too many",
       perm + "fs.read = [" +
           [] {
             std::string items;
             for (int i = 0; i <= 100; ++i) items += "\"d" + std::to_string(i) + "/**\",";
             return items;
           }() +
           "]\n",
       6, "more than 100"},
      {"net.post string", perm + "net.post = \"yes\"\n", 6,
       "net.post must be a boolean, not a string"},
      {"net.post integer", perm + "net.post = 1\n", 6, "net.post must be a boolean"},
      {"net.hosts not array", perm + "net.hosts = \"api.example.com\"\n", 6,
       "net.hosts must be an array"},
      {"host wildcard", perm + "net.hosts = [\"*.example.com\"]\n", 6, "wildcard"},
      {"host scheme", perm + "net.hosts = [\"https://api.example.com\"]\n", 6, "scheme"},
      {"host port", perm + "net.hosts = [\"api.example.com:8443\"]\n", 6, "port"},
      {"host path", perm + "net.hosts = [\"api.example.com/v1\"]\n", 6, "path"},
      {"host userinfo", perm + "net.hosts = [\"user@api.example.com\"]\n", 6, "user information"},
      {"host upper case", perm + "net.hosts = [\"API.example.com\"]\n", 6, "lower case"},
      {"host trailing dot", perm + "net.hosts = [\"api.example.com.\"]\n", 6, "ends with a dot"},
      {"host short ipv4", perm + "net.hosts = [\"127.1\"]\n", 6, "dotted-quad"},
      {"host hex ipv4", perm + "net.hosts = [\"0x7f.0.0.1\"]\n", 6, "dotted-quad"},
      {"host octal ipv4", perm + "net.hosts = [\"0177.0.0.1\"]\n", 6, "dotted-quad"},
      {"host leading zero ipv4", perm + "net.hosts = [\"01.2.3.4\"]\n", 6, "dotted-quad"},
      {"host integer ipv4", perm + "net.hosts = [\"3232235521\"]\n", 6, "dotted-quad"},
      {"host ipv4 out of range", perm + "net.hosts = [\"1.2.3.256\"]\n", 6, "dotted-quad"},
      {"host bare ipv6", perm + "net.hosts = [\"::1\"]\n", 6, "must be in brackets"},
      {"host ipv6 not canonical", perm + "net.hosts = [\"[2001:DB8:0::1]\"]\n", 6,
       "write it as [2001:db8::1]"},
      {"host ipv6 zone", perm + "net.hosts = [\"[fe80::1%eth0]\"]\n", 6, "zone"},
      {"host ipv6 with port", perm + "net.hosts = [\"[::1]:443\"]\n", 6, "closing ']'"},
      {"host bracketed ipv4", perm + "net.hosts = [\"[1.2.3.4]\"]\n", 6, "not an IPv6 address"},
      {"host non-ascii", perm + "net.hosts = [\"bücher.example\"]\n", 6, "A-label"},
      {"host empty", perm + "net.hosts = [\"\"]\n", 6, "host is empty"},
      {"host empty label", perm + "net.hosts = [\"a..b\"]\n", 6, "empty label"},
      {"host leading dash", perm + "net.hosts = [\"-a.com\"]\n", 6, "starts or ends with '-'"},
      {"host underscore", perm + "net.hosts = [\"a_b.com\"]\n", 6, "not allowed in host"},
      {"host space", perm + "net.hosts = [\"a b.com\"]\n", 6, "not allowed in host"},
      {"host too long", perm + "net.hosts = [\"" + std::string(254, 'a') + "\"]\n", 6,
       "longer than 253"},
      {"host long label", perm + "net.hosts = [\"" + std::string(64, 'a') + ".com\"]\n", 6,
       "longer than 63"},
      {"exec path", perm + "exec = [\"/usr/bin/rg\"]\n", 6, "not a path"},
      {"exec upper case", perm + "exec = [\"RG\"]\n", 6, "executable table"},
      {"exec option-like", perm + "exec = [\"-rf\"]\n", 6, "starts with '-'"},
      {"exec with argument", perm + "exec = [\"rg --pre\"]\n", 6, "executable table"},
      {"exec shell string", perm + "exec = [\"sh -c 'id'\"]\n", 6, "executable table"},
      {"exec not array", perm + "exec = \"rg\"\n", 6, "exec must be an array"},
      {"exec empty name", perm + "exec = [\"\"]\n", 6, "executable name is empty"},
      {"exec not in the table", perm + "exec = [\"git\"]\n", 6,
       "executable 'git' is not in Anvil's executable table"},
      {"exec shell", perm + "exec = [\"rg\", \"sh\"]\n", 6, "exec[1]: executable 'sh' is not in"},
      // Not TOML at all: the parser's own position.
      {"unterminated array", kHead + "[permissions]\nexec = [\"rg\"\n", 6, "not valid TOML"},
      {"unterminated string", "id = \"a\nversion = \"1\"\n", 1, "not valid TOML"},
      {"duplicate key", kHead + "id = \"again\"\n", 5, "not valid TOML"},
      {"table defined twice", perm + "net.post = true\n[permissions.net]\npost = false\n", 7,
       "not valid TOML"},
      {"invalid utf-8", kHead + "name = \"\xff\xfe\"\n", 5, "not valid TOML"},
      {"NUL byte", kHead + "name = \"a\0b\"\n"s, 5, "not valid TOML"},
      // toml++ 3.3 asserts on these (abort in debug, __builtin_assume under clang -DNDEBUG)
      // unless its assertions are compiled out; they must be plain parse errors.
      {"backslash table header", kHead + "[\\p]\n", 5, "not valid TOML"},
      {"backslash array-of-tables header", kHead + "[[\\a]]\n", 5, "not valid TOML"},
      {"spaced backslash header", kHead + "[ \\x]\n", 5, "not valid TOML"},
      {"emoji table header", kHead + "[\xf0\x9f\x92\xa5]\n", 5,
       "non-ASCII character outside a quoted string"},
      // Deep structures are refused before toml++ recurses through them.
      {"deeply dotted key",
       kHead + "a" +
           [] {
             std::string key;
             for (int i = 0; i < 40; ++i) key += ".a";
             return key;
           }() +
           " = 1\n",
       5, "more than 32 parts"},
      {"deeply dotted quoted key",
       kHead + "[permissions]\n\"a\"" +
           [] {
             std::string key;
             for (int i = 0; i < 40; ++i) key += " . \"a\"";
             return key;
           }() +
           " = 1\n",
       6, "more than 32 parts"},
      {"deeply nested arrays", kHead + "x = " + std::string(40, '[') + std::string(40, ']') + "\n",
       5, "nest more than 32 levels"},
  };
}

TEST(ManifestParse, MalformedManifestsAreRefusedNamingTheLine) {
  const auto cases = BadManifests();
  ASSERT_GE(cases.size(), 90u);
  for (const BadManifest& c : cases) {
    SCOPED_TRACE(c.name);
    auto m = Parse(c.text);
    ASSERT_FALSE(m) << "accepted";
    EXPECT_EQ(m.error().code, "invalid");
    const std::string prefix = std::string(kSource) + ":" + std::to_string(c.line) + ":";
    EXPECT_EQ(m.error().message.rfind(prefix, 0), 0u)
        << "expected " << prefix << " in: " << m.error().ToString();
    EXPECT_NE(m.error().message.find(c.message), std::string::npos)
        << "expected '" << c.message << "' in: " << m.error().ToString();
  }
}

TEST(ManifestParse, ErrorsSayHowToFixThem) {
  auto m = Parse(kHead + "[permissions]\nnet.hosts = [\"api.example.com:8443\"]\n");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().ToString(),
            "invalid: m.toml:6:14: net.hosts[0]: host 'api.example.com:8443' includes a port; "
            "only HTTPS on port 443 is allowed (fix: remove the port)");
  auto unknown = Parse(kHead + "author = \"me\"\n");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("(fix: a manifest holds only id, version"),
            std::string::npos);
}

// An exec entry the table does not have is refused where the manifest is read (inspect,
// approve, run, serve), at the entry's own line and column, naming the tools there are; it
// never reaches consent, and never waits for the plugin's first sys.exec to fail.
TEST(ManifestParse, ExecOutsideTheTableIsRefusedAtItsPosition) {
  auto m = Parse(kHead + "[permissions]\nexec = [\"rg\",\n        \"curl\"]\n");
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().ToString(),
            "invalid: m.toml:7:9: exec[1]: executable 'curl' is not in Anvil's executable table "
            "(fix: remove it, or use one of rg, fd; docs/exec-policy.md describes them)");
  // Benign neighbour: every tool of the table is accepted.
  auto ok = Parse(kHead + "[permissions]\nexec = [\"fd\", \"rg\"]\n");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->requested.exec, (std::vector<std::string>{"fd", "rg"}));
}

TEST(ManifestParse, ErrorMessagesNeverCarryRawControlBytes) {
  for (const BadManifest& c : BadManifests()) {
    auto m = Parse(c.text);
    ASSERT_FALSE(m);
    for (char ch : m.error().message) {
      const auto byte = static_cast<unsigned char>(ch);
      EXPECT_FALSE(byte < 0x20 || byte == 0x7f) << c.name << ": " << m.error().message;
    }
  }
}

TEST(ManifestParse, DotsAndBracketsInStringsCommentsAndNumbersAreNotStructure) {
  const std::string dots(200, '.');
  auto m =
      Parse(kHead + "# " + dots + std::string(100, '[') + "\n" + "description = \"\"\"\n" + dots +
            "\n" + std::string(100, '{') + "\n\"\"\"\nname = '" + dots.substr(0, 90) + "'\n");
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->description, dots + "\n" + std::string(100, '{') + "\n");
}

TEST(ManifestParse, HugeDottedKeyDoesNotCrash) {
  // ~30000 segments: enough to overflow the stack inside toml++ if it ever reached the parser.
  std::string key = "a";
  while (key.size() < kMaxManifestBytes - 100) key += ".a";
  auto m = Parse(key + " = 1\n");
  ASSERT_FALSE(m);
  EXPECT_NE(m.error().message.find("m.toml:1:"), std::string::npos) << m.error().message;
}

TEST(ManifestParse, OversizedInputIsRefusedBeforeParsing) {
  std::string big = kValid + "# " + std::string(kMaxManifestBytes, 'x') + "\n";
  auto m = Parse(big);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, "invalid");
  EXPECT_NE(m.error().message.find("larger than 64 KiB"), std::string::npos);
}

// Fuzz-ish: random byte edits of a valid manifest never throw, and every refusal names a
// position in the file.
TEST(ManifestParse, MutatedManifestsNeverThrowAndAlwaysNameALine) {
  std::mt19937 rng(20240607);
  const std::regex located(R"(^m\.toml:[0-9]+:[0-9]+: )");
  const std::string alphabet =
      "\"'[]{}=.,#\n\\ \t\x1b\xff\xe2\x80\xae"
      "azAZ09*/:@-_";
  int refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = kValid;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      const std::size_t pos = rng() % text.size();
      switch (rng() % 3) {
        case 0:
          text[pos] = alphabet[rng() % alphabet.size()];
          break;
        case 1:
          text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          text.erase(pos, 1 + rng() % 3);
          break;
      }
    }
    Result<Manifest> m;
    ASSERT_NO_THROW(m = Parse(text)) << text;
    if (!m) {
      ++refused;
      EXPECT_EQ(m.error().code, "invalid") << text;
      EXPECT_TRUE(std::regex_search(m.error().message, located))
          << m.error().message << "\n--- input ---\n"
          << text;
    } else {
      // Whatever was accepted is still inside the grammar.
      EXPECT_TRUE(ValidatePluginId(m->id));
      for (const auto& glob : m->requested.fs_read) EXPECT_TRUE(ValidateGlob(glob)) << glob;
      for (const auto& host : m->requested.net_hosts) EXPECT_TRUE(ValidateGrantHost(host)) << host;
      for (const auto& name : m->requested.exec) EXPECT_TRUE(ValidateExecName(name)) << name;
    }
  }
  EXPECT_GT(refused, 1000);  // the mutations really do hit the validators
}

class ManifestLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-manifest-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
  }
  std::string dir_;
};

TEST_F(ManifestLoad, LoadsAndHashesTheBytesItParsed) {
  Write("anvil-plugin.toml", kValid);
  auto m = LoadManifest(dir_);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->sha256, ManifestSha256(kValid));
}

TEST_F(ManifestLoad, ErrorsNameTheFile) {
  Write("anvil-plugin.toml", kHead + "bogus = 1\n");
  auto m = LoadManifest(dir_);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().message.rfind(dir_ + "/anvil-plugin.toml:5:1: unknown key 'bogus'", 0), 0u)
      << m.error().message;
}

TEST_F(ManifestLoad, SymlinkedManifestIsRefused) {
  Write("real.toml", kValid);
  ASSERT_EQ(::symlink("real.toml", (dir_ + "/anvil-plugin.toml").c_str()), 0);
  auto m = LoadManifest(dir_);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, "denied");
  EXPECT_NE(m.error().message.find("symbolic link"), std::string::npos);
}

TEST_F(ManifestLoad, FifoManifestIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((dir_ + "/anvil-plugin.toml").c_str(), 0600), 0);
  auto m = LoadManifest(dir_);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, "invalid");
  EXPECT_NE(m.error().message.find("not a regular file"), std::string::npos);
}

// The entry as the plugin host opens it: a regular file beneath the plugin directory, with no
// symbolic link on the way. Anything else is refused with the entry's line, column and a fix.
TEST_F(ManifestLoad, EntryThatTheHostCouldNotOpenIsRefusedAtItsPosition) {
  Write("anvil-plugin.toml", kValid);
  auto m = LoadManifest(dir_);
  ASSERT_TRUE(m) << m.error().ToString();
  const std::string where = dir_ + "/anvil-plugin.toml:4:9: ";

  auto missing = CheckManifestEntry(dir_, *m);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().ToString(),
            "invalid: " + where +
                "entry 'main.lua' does not exist in the plugin directory (fix: create it, or "
                "point entry at the plugin's main .lua file)");

  Write("elsewhere.lua", "anvil.command('x', function() end)");
  ASSERT_EQ(::symlink("elsewhere.lua", (dir_ + "/main.lua").c_str()), 0);
  auto link = CheckManifestEntry(dir_, *m);
  ASSERT_FALSE(link);
  EXPECT_EQ(link.error().message.rfind(where + "entry 'main.lua' is a symbolic link", 0), 0u)
      << link.error().message;
  EXPECT_NE(link.error().message.find("(fix: "), std::string::npos);
  ASSERT_EQ(::unlink((dir_ + "/main.lua").c_str()), 0);

  ASSERT_EQ(::mkdir((dir_ + "/main.lua").c_str(), 0755), 0);
  auto directory = CheckManifestEntry(dir_, *m);
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message.find("entry 'main.lua' is not a regular file"),
            std::string::npos);
  ASSERT_EQ(::rmdir((dir_ + "/main.lua").c_str()), 0);

  // Benign neighbour: the file itself.
  Write("main.lua", "anvil.command('x', function() end)");
  EXPECT_TRUE(CheckManifestEntry(dir_, *m));
}

TEST_F(ManifestLoad, EntryThroughADirectoryLinkOutOfThePluginIsRefused) {
  char outside[] = "/tmp/anvil-manifest-outside-XXXXXX";
  ASSERT_NE(::mkdtemp(outside), nullptr);
  std::ofstream(std::string(outside) + "/main.lua") << "anvil.command('x', function() end)";
  Write("anvil-plugin.toml", kHead.substr(0, kHead.find("entry")) + "entry = \"src/main.lua\"\n");
  ASSERT_EQ(::symlink(outside, (dir_ + "/src").c_str()), 0);
  auto m = LoadManifest(dir_);
  ASSERT_TRUE(m) << m.error().ToString();
  auto s = CheckManifestEntry(dir_, *m);
  std::filesystem::remove_all(outside);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "invalid");
  EXPECT_NE(s.error().message.find(":4:9: entry 'src/main.lua' is a symbolic link or goes through "
                                   "one"),
            std::string::npos)
      << s.error().message;
  // Benign neighbour: a real subdirectory.
  ASSERT_EQ(::unlink((dir_ + "/src").c_str()), 0);
  ASSERT_EQ(::mkdir((dir_ + "/src").c_str(), 0755), 0);
  Write("src/main.lua", "anvil.command('x', function() end)");
  EXPECT_TRUE(CheckManifestEntry(dir_, *m));
}

TEST_F(ManifestLoad, MissingManifestIsNotFound) {
  auto m = LoadManifest(dir_);
  ASSERT_FALSE(m);
  EXPECT_EQ(m.error().code, "not_found");
  EXPECT_FALSE(LoadManifest(dir_ + "/nope"));
}

}  // namespace
}  // namespace manifest_test
}  // namespace anvil
