// T1 through the gateway's fs.rename: moving a directory moves everything inside it, so a
// directory that holds a protected name (.git, .anvil, anvil.lock, Anvil.toml) anywhere beneath
// it, in any spelling a case-folding or ignoring file system maps to it, is never renamed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>
#include <utility>
#include <vector>

#include "gateway_fixture.h"

namespace anvil::testing {
namespace t1_gateway_rename_test {
namespace {

class T1GatewayRename : public GatewayTest {
 protected:
  void SetUp() override {
    GatewayTest::SetUp();
    Shell("mkdir -p '" + ws_->path() + "/notes'");
  }
  // Starts the gateway with a grant that may write anything under notes/ and moved/.
  std::unique_ptr<ipc::GatewayClient> Start(const std::vector<std::string>& flags = {},
                                            std::vector<std::string> read = {"**"},
                                            std::vector<std::string> write = {"notes/**",
                                                                              "moved/**"}) {
    StartGateway(flags);
    Grant grant;
    grant.fs_read = std::move(read);
    grant.fs_write = std::move(write);
    auto token = RegisterPlugin("t1.mover", grant);
    return Client(token, "t1.mover");
  }
  std::string Read(ipc::GatewayClient& client, const std::string& path) {
    auto r = client.Call("fs.read", {path});
    if (!r) return "transport: " + r.error().ToString();
    return r->ok ? "ok" : r->ErrorText();
  }
  std::string Rename(ipc::GatewayClient& client, const std::string& from, const std::string& to) {
    auto r = client.Call("fs.rename", {from, to});
    if (!r) return "transport: " + r.error().ToString();
    return r->ok ? "ok" : r->ErrorText();
  }
  void Mkdirs(const std::string& rel) { Shell("mkdir -p '" + *ws_ / rel + "'"); }
};

TEST_F(T1GatewayRename, DirectoryHoldingAProtectedNameAtAnyDepthIsNotMoved) {
  // A nested repository: .git three levels down, and the other protected names as files.
  Mkdirs("notes/vendor/lib/deep/.git/hooks");
  WriteFile(*ws_ / "notes/vendor/lib/deep/.git/hooks/pre-commit", "#!/bin/sh\n");
  Mkdirs("notes/a/b/.anvil");
  Mkdirs("notes/c/d/e");
  WriteFile(*ws_ / "notes/c/d/e/anvil.lock", "version = 1\n");
  Mkdirs("notes/f/g");
  WriteFile(*ws_ / "notes/f/g/Anvil.toml", "");
  auto client = Start();
  for (const char* dir : {"notes/vendor", "notes/vendor/lib", "notes/a", "notes/c", "notes/f"}) {
    std::string out = Rename(*client, dir, "moved");
    EXPECT_EQ(out.rfind("denied: fs.write: directory holds protected", 0), 0u)
        << dir << ": " << out;
  }
  EXPECT_TRUE(Exists(*ws_ / "notes/vendor/lib/deep/.git/hooks/pre-commit"));
  EXPECT_FALSE(Exists(*ws_ / "moved"));
  // The refusal is audited with its reason.
  bool audited = false;
  for (const auto& l : AuditLines()) {
    audited |= l["op"] == "fs.rename" && l["verdict"] == "deny" &&
               l["reason"].get<std::string>().find("deep/.git") != std::string::npos;
  }
  EXPECT_TRUE(audited);
}

TEST_F(T1GatewayRename, CaseAndIgnorableVariantsOfProtectedNamesCount) {
  // Each is the same entry as a protected name on some file system Anvil may serve: ext4/f2fs
  // casefold (case, KELVIN SIGN for k), HFS+ (ignorable code points), NTFS/SMB (trailing dots).
  const char* variants[] = {".GIT",
                            ".Git",
                            ".ANVIL",
                            "ANVIL.LOCK",
                            "anvil.toml",
                            "anvil.loc\xE2\x84\xAA",
                            ".g\xE2\x80\x8Cit",
                            ".git.",
                            ".git  "};
  int i = 0;
  for (const char* name : variants) {
    const std::string dir = "notes/v" + std::to_string(i++);
    Mkdirs(dir + "/sub");
    WriteFile(*ws_ / dir + "/sub/" + name, "x");
  }
  auto client = Start();
  for (int k = 0; k < i; ++k) {
    const std::string dir = "notes/v" + std::to_string(k);
    std::string out = Rename(*client, dir, "moved");
    EXPECT_EQ(out.rfind("denied: fs.write: directory holds protected", 0), 0u)
        << variants[k] << ": " << out;
    EXPECT_TRUE(Exists(*ws_ / dir));
  }
}

TEST_F(T1GatewayRename, TreeTooLargeOrDeepToCheckIsRefusedNotMoved) {
  std::string deep = "notes/deep";
  for (int i = 0; i < 70; ++i) deep += "/d";
  Mkdirs(deep);
  Mkdirs("notes/wide");
  ASSERT_EQ(Shell("cd '" + *ws_ / "notes/wide" + "' && seq 1 1050 | xargs touch"), 0);
  auto client = Start({"--max-rename-entries", "1000"});
  std::string out = Rename(*client, "notes/deep", "moved");
  EXPECT_EQ(out.rfind("limit: fs.rename: cannot check notes/deep", 0), 0u) << out;
  out = Rename(*client, "notes/wide", "moved");
  EXPECT_EQ(out.rfind("limit: fs.rename: cannot check notes/wide", 0), 0u) << out;
  EXPECT_TRUE(Exists(*ws_ / "notes/deep"));
  EXPECT_TRUE(Exists(*ws_ / "notes/wide/1"));
}

TEST_F(T1GatewayRename, ASymlinkToARepositoryIsMovedAsTheLinkOnly) {
  // The link holds nothing: renaming it moves the link, never the repository it points to.
  Mkdirs("repo/.git");
  ASSERT_EQ(Shell("ln -s ../repo '" + *ws_ / "notes/link" + "'"), 0);
  auto client = Start();
  EXPECT_EQ(Rename(*client, "notes/link", "moved"), "ok");
  struct stat st {};
  ASSERT_EQ(lstat((*ws_ / "moved").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_TRUE(Exists(*ws_ / "repo/.git"));
}

// fs.write over two names is no read grant: a rename never gives a file a name fs.read covers
// when fs.read does not cover it where it is (rename .env into pub/, read it, rename it back),
// nor carries such a file inside a directory. Renames within the read grant, out of it, and
// between names it does not cover go on as before.
TEST_F(T1GatewayRename, ARenameNeverMovesAFileIntoTheReadGrant) {
  Mkdirs("pub");
  Mkdirs("secret/keys");
  WriteFile(*ws_ / ".env", "SECRET=1\n");
  WriteFile(*ws_ / "notes/key.pem", "KEY\n");
  WriteFile(*ws_ / "secret/keys/id", "ID\n");
  WriteFile(*ws_ / "pub/a.md", "a\n");
  WriteFile(*ws_ / "notes/b.md", "b\n");
  auto client = Start({}, {"pub/**", "notes/*.md"}, {"**"});
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {".env", "pub/env"}, {"notes/key.pem", "notes/key.md"}, {"secret", "pub/secret"}}) {
    std::string r = Rename(*client, from, to);
    EXPECT_EQ(r.rfind("denied: fs.rename would make ", 0), 0u) << from << ": " << r;
    EXPECT_NE(r.find("fs.read"), std::string::npos) << r;
  }
  EXPECT_EQ(ReadFile(*ws_ / ".env"), "SECRET=1\n");
  EXPECT_EQ(ReadFile(*ws_ / "notes/key.pem"), "KEY\n");
  EXPECT_TRUE(Exists(*ws_ / "secret/keys/id"));
  EXPECT_NE(Read(*client, "pub/env"), "ok");
  // The benign neighbours.
  EXPECT_EQ(Rename(*client, "pub/a.md", "pub/c.md"), "ok");    // within the grant
  EXPECT_EQ(Rename(*client, "notes/b.md", "pub/b.md"), "ok");  // readable at both names
  EXPECT_EQ(Rename(*client, "pub/c.md", "private.md"), "ok");  // out of the grant
  EXPECT_EQ(Rename(*client, ".env", "old.env"), "ok");         // neither name readable
  EXPECT_EQ(Rename(*client, "secret", "hidden"), "ok");
}

// The benign neighbour: ordinary files and directories (names that merely resemble protected
// ones included) are renamed as before.
// VS Code's tasks.json and mcp.json are protected in a `.vscode` directory only: a plugin can
// neither write one there nor get one there by renaming the directory that holds it (or the
// file) into place, nor remove the directory with it. .vscode's other files, and a tasks.json
// elsewhere, are the plugin's to write and move.
TEST_F(T1GatewayRename, VsCodesTasksAreNotRenamedIntoPlace) {
  Mkdirs("notes/.vscode");
  WriteFile(*ws_ / "notes/.vscode/tasks.json", "{}");
  Mkdirs("notes/staged");
  WriteFile(*ws_ / "notes/staged/tasks.json", "evil");
  WriteFile(*ws_ / "notes/staged/settings.json", "{}");
  Mkdirs("notes/plain");
  Mkdirs("notes/sub");
  Mkdirs("other");
  WriteFile(*ws_ / "notes/plain/settings.json", "{}");
  WriteFile(*ws_ / "notes/mcp.json", "evil");
  auto client = Start({}, {"**"}, {"**"});
  auto call = [&](const char* op, std::vector<std::string> args) {
    auto r = client->Call(op, args);
    if (!r) return "transport: " + r.error().ToString();
    return r->ok ? std::string("ok") : r->ErrorText();
  };
  EXPECT_EQ(call("fs.write", {"notes/.vscode/tasks.json", "evil"}).rfind("denied: ", 0), 0u);
  EXPECT_EQ(call("fs.write", {"sub/.VSCODE/mcp.json", "evil", "1"}).rfind("denied: ", 0), 0u);
  EXPECT_EQ(Rename(*client, "notes/mcp.json", "notes/.vscode/mcp.json").rfind("denied: ", 0), 0u);
  const std::string into = Rename(*client, "notes/staged", "other/.vscode");
  EXPECT_EQ(into.rfind("denied: fs.write: directory holds protected", 0), 0u) << into;
  const std::string away = Rename(*client, "notes/.vscode", "notes/old");
  EXPECT_EQ(away.rfind("denied: fs.write: directory holds protected", 0), 0u) << away;
  EXPECT_EQ(call("fs.remove", {"notes/.vscode", "1"}).rfind("denied: ", 0), 0u);
  EXPECT_EQ(ReadFile(*ws_ / "notes/.vscode/tasks.json"), "{}");
  EXPECT_FALSE(Exists(*ws_ / "other/.vscode"));
  EXPECT_FALSE(Exists(*ws_ / "notes/.vscode/mcp.json"));
  // Benign: the rest of .vscode, a directory without those files renamed to .vscode, a
  // tasks.json elsewhere.
  EXPECT_EQ(call("fs.write", {"notes/.vscode/settings.json", "{}"}), "ok");
  EXPECT_EQ(Rename(*client, "notes/plain", "notes/sub/.vscode"), "ok");
  EXPECT_EQ(call("fs.write", {"notes/staged/tasks.json", "fine"}), "ok");
  EXPECT_EQ(Rename(*client, "notes/staged", "notes/moved-staged"), "ok");
}

TEST_F(T1GatewayRename, OrdinaryFilesAndDirectoriesAreRenamed) {
  Mkdirs("notes/project/src/.github/workflows");
  WriteFile(*ws_ / "notes/project/src/.gitignore", "build/\n");
  WriteFile(*ws_ / "notes/project/src/git.md", "x");
  WriteFile(*ws_ / "notes/project/anvil.lock.bak", "x");
  WriteFile(*ws_ / "notes/file.txt", "x");
  auto client = Start();
  EXPECT_EQ(Rename(*client, "notes/file.txt", "notes/renamed.txt"), "ok");
  EXPECT_EQ(ReadFile(*ws_ / "notes/renamed.txt"), "x");
  EXPECT_EQ(Rename(*client, "notes/project", "moved"), "ok");
  EXPECT_EQ(ReadFile(*ws_ / "moved/src/.gitignore"), "build/\n");
  EXPECT_EQ(Rename(*client, "moved", "notes/project"), "ok");
}

}  // namespace
}  // namespace t1_gateway_rename_test
}  // namespace anvil::testing
