// Adversary 3 (malicious project) against T8: a repository's Anvil.toml may enable plugins and
// hand them settings, and nothing else. Every key that tries to reach permissions, the sandbox,
// executables or grants is refused by name with its line; settings are bounded data.
#include "policy/workspace_config.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace anvil {
namespace workspace_config_test {
namespace {

TEST(WorkspaceConfigParse, EnablesPluginsAndPassesSettingsAsJson) {
  auto config = ParseWorkspaceConfig(R"([plugins]
enable = ["example.todo-finder", "example.fmt", "example.todo-finder"]

[plugins.settings."example.todo-finder"]
pattern = "TODO|FIXME"
max_results = 200
ratio = 0.5
case_sensitive = false
globs = ["src/**", "docs/**"]
since = 2024-01-02
at = 2024-01-02T03:04:05Z
nested = { deeper = { list = [1, [2, 3]] } }
# Plugin data may use any names: it carries no authority.
permissions = "shown to the plugin only"
)");
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->enable, (std::vector<std::string>{"example.todo-finder", "example.fmt"}));
  const nlohmann::json expected = {
      {"pattern", "TODO|FIXME"},
      {"max_results", 200},
      {"ratio", 0.5},
      {"case_sensitive", false},
      {"globs", {"src/**", "docs/**"}},
      {"since", "2024-01-02"},
      {"at", "2024-01-02T03:04:05Z"},
      {"nested", {{"deeper", {{"list", {1, {2, 3}}}}}}},
      {"permissions", "shown to the plugin only"},
  };
  EXPECT_EQ(config->SettingsFor("example.todo-finder"), expected)
      << config->SettingsFor("example.todo-finder").dump();
  EXPECT_EQ(config->SettingsFor("example.fmt"), nlohmann::json::object());
}

TEST(WorkspaceConfigParse, EmptyFileIsAnEmptyConfig) {
  for (const char* text : {"", "# nothing\n", "[plugins]\n"}) {
    auto config = ParseWorkspaceConfig(text);
    ASSERT_TRUE(config) << text;
    EXPECT_TRUE(config->enable.empty());
    EXPECT_TRUE(config->settings.empty());
  }
}

// The refusal the pre-parse lexer gives before toml++ would see a non-ASCII code point.
void ExpectRefusedAsNonAsciiOutsideStrings(const char* text) {
  auto config = ParseWorkspaceConfig(text);
  ASSERT_FALSE(config) << text;
  EXPECT_NE(config.error().message.find("non-ASCII character outside a quoted string"),
            std::string::npos)
      << config.error().ToString();
}

// Found by tests/fuzz/lockfile_fuzzer: toml++ 3.3 reaches __builtin_unreachable on a non-ASCII
// code point in a bare key or value. TOML allows non-ASCII only in strings and comments, so the
// text is refused before toml++ sees it; in strings and comments (and a leading BOM) it is fine.
TEST(WorkspaceConfigParse, NonAsciiOutsideStringsIsRefusedBeforeTheTomlParser) {
  for (const char* text : {"\xc3\xa9 = 1\n", "[plugins]\nenable = [1\xc3\xa9]\n",
                           "v\xef\xbb\xaf"
                           "ersion = 1\n",
                           "[plugins]\nx\xe3\x80\x80= 1\n"}) {
    ExpectRefusedAsNonAsciiOutsideStrings(text);
  }
  auto ok = ParseWorkspaceConfig(
      "\xef\xbb\xbf# caf\xc3\xa9\n[plugins.settings.\"a\"]\nname = \"caf\xc3\xa9\"\n"
      "\"k\xc3\xa9y\" = '\xc3\xa9'\nm = \"\"\"\n\xc3\xa9\"\"\"\n");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->SettingsFor("a")["name"], "caf\xc3\xa9");
}

// Found by tests/fuzz/manifest_fuzzer and lockfile_fuzzer: toml++ scans a bare value up to the
// next terminator, quotes included, so a quote glued to a bare key or value does not open a
// string and the non-ASCII text after it is refused too. Strings where TOML puts them still
// carry non-ASCII text.
TEST(WorkspaceConfigParse, AQuoteGluedToABareTokenOpensNoString) {
  for (const char* text :
       {"[plugins]\nv = 93'r\xd2\x92t'\n", "[plugins]\nv = 9.'\xd2\x92'\n",
        "[plugins]\nv = true\"\xc3\xa9\"\n", "[plugins]\nv = [1, 2\"\xc3\xa9\"]\n",
        "[plugins]\nv = 1979-05-27 07:32:00'\xc3\xa9'\n", "veir\"\"\"\xc3\xa9\"\"\" = 1\n",
        "[plugins]\nv = 1'x'\"\xc3\xa9\"\n"}) {
    ExpectRefusedAsNonAsciiOutsideStrings(text);
  }
  auto ok = ParseWorkspaceConfig(
      "[plugins.settings.\"a\"]\nlist = [ \"\xc3\xa9\", '\xc3\xa9',\n  \"\xc3\xa9\" ]\n"
      "t = { k = \"\xc3\xa9\", \"\xc3\xa9\" = 1 }\na.\"\xc3\xa9\" = [[\"\xc3\xa9\"]]\n");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->SettingsFor("a")["t"]["k"], "\xc3\xa9");
  EXPECT_EQ(ok->SettingsFor("a")["list"][2], "\xc3\xa9");
}

// Found by tests/fuzz/manifest_fuzzer in CI: inside a basic string toml++ 3.3 classifies the
// character after a backslash, and in a multi-line one the first character after a line-ending
// backslash, with the same undefined-behaviour table. Both are refused before it parses.
TEST(WorkspaceConfigParse, BackslashBeforeNonAsciiInAStringIsRefusedBeforeTheTomlParser) {
  for (const char* text :
       {"[plugins]\nv = \"a\\\xc8\xa3\"\n", "[plugins]\nv = \"\"\"a\\\xc8\xa3\"\"\"\n",
        "[plugins]\nv = \"\"\"a\\\n   \xc8\xa3\"\"\"\n",
        "[plugins]\nv = \"\"\"a\\  \r\n\n\t\xc3\xa9\"\"\"\n"}) {
    auto config = ParseWorkspaceConfig(text);
    ASSERT_FALSE(config) << text;
    EXPECT_NE(config.error().message.find("non-ASCII character"), std::string::npos)
        << config.error().ToString();
  }
  // Non-ASCII text elsewhere in the same strings, and line-ending backslashes before ASCII.
  auto ok = ParseWorkspaceConfig(
      "[plugins.settings.\"a\"]\ns = \"\xc8\xa3\\t\xc8\xa3\"\nm = \"\"\"\xc8\xa3\\\n  "
      "x\xc8\xa3\"\"\"\n");
  ASSERT_TRUE(ok) << ok.error().ToString();
  EXPECT_EQ(ok->SettingsFor("a")["s"], "\xc8\xa3\t\xc8\xa3");
  EXPECT_EQ(ok->SettingsFor("a")["m"], "\xc8\xa3x\xc8\xa3");
}

TEST(WorkspaceConfigParse, PermissionsTableIsRefusedWithTheDocumentedMessage) {
  auto config = ParseWorkspaceConfig(R"([plugins]
enable = ["example.todo-finder"]
[permissions]
fs.write = ["**"]
)");
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().ToString(),
            "invalid: Anvil.toml:3: 'permissions' is not allowed here: a workspace cannot widen a "
            "grant");
}

struct Hostile {
  const char* name;
  std::string text;
  int line;
  const char* message;
};

TEST(WorkspaceConfigParse, KeysThatReachForAuthorityAreRefusedByName) {
  const std::string widen = "is not allowed here: a workspace cannot widen a grant";
  const std::string sandbox = "is not allowed here: a workspace cannot change sandbox settings";
  const std::string exec = "is not allowed here: a workspace cannot point at executables";
  const std::vector<Hostile> cases = {
      {"top-level permissions dotted", "permissions.fs.read = [\"**\"]\n", 1, "'permissions' "},
      {"grants table", "\n[grants.\"example.x\"]\nnet.post = true\n", 2, "'grants' "},
      {"grant inline", "grant = { exec = [\"sh\"] }\n", 1, "'grant' "},
      {"net", "[net]\nhosts = [\"evil.example\"]\n", 1, "'net' "},
      {"fs", "fs = { write = [\"**\"] }\n", 1, "'fs' "},
      {"trust", "trusted = true\n", 1, "'trusted' "},
      {"manifest hash", "manifest_sha256 = \"00\"\n", 1, "'manifest_sha256' "},
      {"plugins.permissions", "[plugins]\nenable = []\npermissions = { exec = [\"sh\"] }\n", 3,
       "'permissions' "},
      {"plugins.grants", "[plugins.grants]\nx = 1\n", 1, "'grants' "},
      {"plugins.net dotted", "[plugins]\nnet.hosts = [\"evil.example\"]\n", 2, "'net' "},
  };
  const std::vector<Hostile> sandbox_cases = {
      {"policy", "[policy]\nkind = \"danger-full-access\"\n", 1, "'policy' "},
      {"writable_roots", "writable_roots = [\"/\"]\n", 1, "'writable_roots' "},
      {"writable-roots hyphen", "writable-roots = [\"/home\"]\n", 1, "'writable-roots' "},
      {"upper case", "Sandbox = \"off\"\n", 1, "'Sandbox' "},
      {"read_only_subpaths", "read_only_subpaths = []\n", 1, "'read_only_subpaths' "},
      {"writable_git", "writable_git = true\n", 1, "'writable_git' "},
      {"env", "[env]\nLD_PRELOAD = \"/tmp/x.so\"\n", 1, "'env' "},
      {"unsafe test flags", "unsafe_test_resolver = \"127.0.0.1:53\"\n", 1,
       "'unsafe_test_resolver' "},
      {"unsafe hyphen", "unsafe-test-ca = \"/tmp/ca.pem\"\n", 1, "'unsafe-test-ca' "},
      {"plugins.sandbox", "[plugins]\n\nsandbox = false\n", 3, "'sandbox' "},
      {"landlock", "landlock = false\n", 1, "'landlock' "},
      {"seccomp", "seccomp = \"off\"\n", 1, "'seccomp' "},
  };
  const std::vector<Hostile> exec_cases = {
      {"exec", "exec = [\"sh\"]\n", 1, "'exec' "},
      {"executables", "[executables]\nrg = \"/tmp/evil/rg\"\n", 1, "'executables' "},
      {"plugins.exec", "[plugins]\nenable = [\"a\"]\nexec = [\"bash\"]\n", 3, "'exec' "},
      {"runner", "runner = \"/tmp/runner\"\n", 1, "'runner' "},
      {"path", "path = \"/tmp/bin\"\n", 1, "'path' "},
      {"shell", "shell = \"/bin/sh\"\n", 1, "'shell' "},
  };
  auto check = [](const std::vector<Hostile>& list, const std::string& reason) {
    for (const Hostile& c : list) {
      SCOPED_TRACE(c.name);
      auto config = ParseWorkspaceConfig(c.text);
      ASSERT_FALSE(config) << "accepted";
      EXPECT_EQ(config.error().code, "invalid");
      const std::string prefix = "Anvil.toml:" + std::to_string(c.line) + ": ";
      EXPECT_EQ(config.error().message.rfind(prefix, 0), 0u) << config.error().ToString();
      EXPECT_NE(config.error().message.find(std::string(c.message) + reason), std::string::npos)
          << config.error().ToString();
    }
  };
  check(cases, widen);
  check(sandbox_cases, sandbox);
  check(exec_cases, exec);
}

TEST(WorkspaceConfigParse, AnythingElseOutsideTheShapeIsRefused) {
  const std::vector<Hostile> cases = {
      {"unknown top key", "color = \"blue\"\n", 1, "unknown key 'color'"},
      {"unknown plugins key", "[plugins]\nenabled = [\"a\"]\n", 2, "unknown key 'enabled'"},
      {"per-plugin table outside settings", "[plugins.\"example.x\"]\npermissions = {}\n", 1,
       "unknown key 'example.x'"},
      {"plugins not a table", "plugins = [\"a\"]\n", 1, "plugins must be a table"},
      {"enable not an array", "[plugins]\nenable = \"a\"\n", 2,
       "plugins.enable must be an array of plugin ids, not a string"},
      {"enable holds a number", "[plugins]\nenable = [\n  \"a\",\n  7,\n]\n", 4,
       "plugins.enable holds an integer"},
      {"enable bad id", "[plugins]\nenable = [\"../../evil\"]\n", 2, "plugins.enable: plugin id"},
      {"enable escape", "[plugins]\nenable = [\"a\\u001b[2J\"]\n", 2, "\\x1b[2J"},
      {"settings not a table", "[plugins]\nsettings = 1\n", 2, "plugins.settings must be a table"},
      {"settings bad id", "[plugins.settings.\"Bad Id\"]\nx = 1\n", 1,
       "plugins.settings: plugin id"},
      {"settings value not a table", "[plugins.settings]\n\"example.x\" = 5\n", 2,
       "settings for 'example.x' must be a table, not an integer"},
      {"nan", "[plugins.settings.p]\nx = nan\n", 2, "nan or inf"},
      {"inf in array", "[plugins.settings.p]\nx = [1.0, -inf]\n", 2, "nan or inf"},
      {"not toml", "[plugins\n", 1, "not valid TOML"},
  };
  for (const Hostile& c : cases) {
    SCOPED_TRACE(c.name);
    auto config = ParseWorkspaceConfig(c.text);
    ASSERT_FALSE(config) << "accepted";
    EXPECT_EQ(config.error().code, "invalid");
    const std::string prefix = "Anvil.toml:" + std::to_string(c.line) + ":";
    EXPECT_EQ(config.error().message.rfind(prefix, 0), 0u) << config.error().ToString();
    EXPECT_NE(config.error().message.find(c.message), std::string::npos)
        << config.error().ToString();
    for (char ch : config.error().message) {
      EXPECT_FALSE(static_cast<unsigned char>(ch) < 0x20) << config.error().message;
    }
  }
}

TEST(WorkspaceConfigParse, SettingsAreBounded) {
  // Depth: a table nested kMaxSettingsDepth + 1 levels below the plugin's own table.
  std::string deep = "[plugins.settings.p]\nx = ";
  for (std::size_t i = 0; i < kMaxSettingsDepth; ++i) deep += "[";
  for (std::size_t i = 0; i < kMaxSettingsDepth; ++i) deep += "]";
  auto too_deep = ParseWorkspaceConfig(deep + "\n");
  ASSERT_FALSE(too_deep);
  EXPECT_NE(too_deep.error().message.find("nest deeper than"), std::string::npos)
      << too_deep.error().message;
  std::string ok_depth = "[plugins.settings.p]\nx = ";
  for (std::size_t i = 1; i < kMaxSettingsDepth; ++i) ok_depth += "[";
  for (std::size_t i = 1; i < kMaxSettingsDepth; ++i) ok_depth += "]";
  EXPECT_TRUE(ParseWorkspaceConfig(ok_depth + "\n"));

  // Count: more values than the cap, across plugins.
  std::string many = "[plugins.settings.a]\nx = [";
  for (std::size_t i = 0; i < kMaxSettingsValues; ++i) many += "1,";
  many += "]\n";
  auto too_many = ParseWorkspaceConfig(many);
  ASSERT_FALSE(too_many);
  EXPECT_NE(too_many.error().message.find("more than 4096 values"), std::string::npos);

  // String length and file size.
  auto long_string = ParseWorkspaceConfig("[plugins.settings.p]\nx = \"" +
                                          std::string(kMaxSettingsStringBytes + 1, 's') + "\"\n");
  ASSERT_FALSE(long_string);
  EXPECT_NE(long_string.error().message.find("Anvil.toml:2:"), std::string::npos);
  auto huge = ParseWorkspaceConfig("# " + std::string(kMaxWorkspaceConfigBytes, 'x'));
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("larger than"), std::string::npos);
}

TEST(WorkspaceConfigParse, HostileStructureIsRefusedWithoutCrashing) {
  // A dotted key with ~100000 parts (just under the size cap) would overflow the stack inside
  // toml++; it is refused before the parser builds anything.
  std::string key = "a";
  while (key.size() < kMaxWorkspaceConfigBytes - 100) key += ".a";
  auto dotted = ParseWorkspaceConfig("[plugins]\n" + key + " = 1\n");
  ASSERT_FALSE(dotted);
  EXPECT_EQ(dotted.error().message.rfind("Anvil.toml:2:", 0), 0u) << dotted.error().message;
  auto header = ParseWorkspaceConfig("[" + key + "]\n");
  ASSERT_FALSE(header);
  EXPECT_NE(header.error().message.find("more than 32 parts"), std::string::npos);
  auto nested = ParseWorkspaceConfig("[plugins.settings.p]\nx = " + std::string(50000, '[') +
                                     std::string(50000, ']') + "\n");
  ASSERT_FALSE(nested);
  EXPECT_NE(nested.error().message.find("nest more than 32"), std::string::npos);
  std::string inline_tables = "[plugins.settings.p]\nx = ";
  for (int i = 0; i < 20000; ++i) inline_tables += "{a.a.a.a=";
  EXPECT_FALSE(ParseWorkspaceConfig(inline_tables + "\n"));
  // toml++ 3.3 asserts on a header key starting with a non-key character.
  auto backslash = ParseWorkspaceConfig("[plugins]\n[\\plugins]\n");
  ASSERT_FALSE(backslash);
  EXPECT_EQ(backslash.error().message.rfind("Anvil.toml:2:", 0), 0u);
}

TEST(WorkspaceConfigParse, FloatsAndStringsDoNotCountAsStructure) {
  std::string floats = "[";
  for (int i = 0; i < 500; ++i) floats += std::to_string(i) + ".5, ";
  floats += "]";
  const std::string text = "[plugins.settings.p]\nx = " + floats + "\ny = \"" +
                           std::string(300, '.') + std::string(100, '[') + "\"\nz = '''\n" +
                           std::string(100, '{') + "\n'''\n";
  auto config = ParseWorkspaceConfig(text);
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->SettingsFor("p")["x"].size(), 500u);
}

class WorkspaceConfigLoad : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-wsconfig-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(WorkspaceConfigLoad, MissingFileIsEmpty) {
  auto config = LoadWorkspaceConfig(dir_);
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_TRUE(config->enable.empty());
}

TEST_F(WorkspaceConfigLoad, ReadsTheFile) {
  std::ofstream(dir_ + "/Anvil.toml") << "[plugins]\nenable = [\"a\"]\n";
  auto config = LoadWorkspaceConfig(dir_);
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_EQ(config->enable, std::vector<std::string>{"a"});
}

TEST_F(WorkspaceConfigLoad, SymlinkedConfigIsRefused) {
  // A repository can point Anvil.toml anywhere (/dev/zero, another user's file): not followed.
  ASSERT_EQ(::symlink("/dev/zero", (dir_ + "/Anvil.toml").c_str()), 0);
  auto config = LoadWorkspaceConfig(dir_);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, "denied");
}

// The placeholder a sandbox running in the workspace holds there (policy/protected_names_plan.h):
// no configuration, as no file is, so that other runs meanwhile start as they would without it.
TEST_F(WorkspaceConfigLoad, ADirectoryNamedAnvilTomlIsNoConfiguration) {
  ASSERT_EQ(::mkdir((dir_ + "/Anvil.toml").c_str(), 0755), 0);
  auto config = LoadWorkspaceConfig(dir_);
  ASSERT_TRUE(config) << config.error().ToString();
  EXPECT_TRUE(config->enable.empty());
  EXPECT_TRUE(config->settings.empty());
}

TEST_F(WorkspaceConfigLoad, FifoConfigIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((dir_ + "/Anvil.toml").c_str(), 0644), 0);
  auto config = LoadWorkspaceConfig(dir_);
  ASSERT_FALSE(config);
  EXPECT_EQ(config.error().code, "invalid");
}

}  // namespace
}  // namespace workspace_config_test
}  // namespace anvil
