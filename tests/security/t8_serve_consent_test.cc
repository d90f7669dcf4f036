// T8 for `anvil serve` (manifest privilege escalation) and the "user attention" asset: consent
// shows exactly what a manifest requests and nothing runs without it; a malicious Anvil.toml can
// enable a plugin but never grant it anything; a manifest changed on disk needs consent again at
// reload; a plugin's notifications are attributed, stripped of escape sequences and control
// characters, capped in length and rate, and can never pose as Anvil's own prompt; a buffer is
// shared with a plugin only inside its fs.read grant, judged by the file its name leads to, and
// never edited where git runs what it holds (a core.hooksPath hook).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "serve_client.h"

namespace anvil::testing {
namespace t8_serve_consent_test {
namespace {

class T8Serve : public ServeTestBase {
 protected:
  // `anvil ARGS` as the user, with the session's grant store.
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), AnvilBin());
    RunOptions o;
    o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8",
             "XDG_STATE_HOME=" + state_.path(), "XDG_DATA_HOME=" + state_.path() + "/data"};
    return ::anvil::testing::Run(args, o);
  }
  // A plugin whose `w NAME` writes notes/NAME and whose `spin` runs past any deadline (inside
  // one builtin, so the deadline, not the instruction budget, stops it).
  void Writer(const std::string& dir, const std::string& id, const std::string& permissions) {
    WritePlugin(plugins_ / dir, id, "lua", permissions,
                "anvil.command('w', function(a) sys.fs.write('notes/' .. a[1], 'x') return "
                "'wrote' end)\nanvil.command('r', function() return sys.fs.read('src/a.c') end)\n"
                "anvil.command('spin', function() while true do string.rep('x', 1e6):find('y', 1, "
                "true) end end)\n");
  }
  static json Write(ServeClient& c, const std::string& id, const std::string& name) {
    return c.Request("anvil/runCommand",
                     {{"plugin", id}, {"command", "w"}, {"arguments", json::array({name})}});
  }
  static pid_t GatewayPid(ServeClient& c) {
    json g = c.Request("anvil/status")["result"]["gateway"]["pid"];
    return g.is_number_integer() ? g.get<pid_t>() : -1;
  }
};

TEST_F(T8Serve, ConsentShowsTheExactRequestAndDenialRunsNothing) {
  // Its top level would write a file if it ever ran.
  WritePlugin(
      plugins_ / "p", "test.wants", "lua",
      "fs.read = [\"src/**\"]\nfs.write = [\"notes/**\"]\nnet.hosts = [\"api.example.com\"]\n"
      "exec = [\"rg\"]\n",
      "sys.fs.write('notes/ran.txt', 'x')\nanvil.command('x', function() return 1 end)\n");
  auto c = Start({"--plugin-dir", plugins_ / "p"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  std::vector<json> asked;
  c->on_request = [&](const json& r) -> json {
    asked.push_back(r);
    return {{"decision", "deny"}};
  };
  json r = c->Request("anvil/requestConsent", {{"plugin", "test.wants"}});
  EXPECT_EQ(r["result"]["granted"], false) << r;
  EXPECT_EQ(r["result"]["state"], "needs_consent");
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0]["method"], "anvil/consent");
  const json& p = asked[0]["params"];
  // Plain words, each item named...
  std::string text = p["text"].get<std::string>();
  for (const char* needle : {"Plugin test.wants 1.0.0 asks for:", "\"src/**\"", "\"notes/**\"",
                             "api.example.com", "rg", ws_.path().c_str()}) {
    EXPECT_NE(text.find(needle), std::string::npos) << needle << " missing from:\n" << text;
  }
  // ... and structured, exactly the manifest's request.
  EXPECT_EQ(p["request"]["fs.read"], json({"src/**"}));
  EXPECT_EQ(p["request"]["fs.write"], json({"notes/**"}));
  EXPECT_EQ(p["request"]["net.hosts"], json({"api.example.com"}));
  EXPECT_EQ(p["request"]["exec"], json({"rg"}));
  EXPECT_EQ(p["plugin"]["manifestSha256"].get<std::string>().size(), 64u);
  // Denied: never started, nothing written, commands refused.
  json info = PluginInfo(*c, "test.wants");
  EXPECT_TRUE(info["pid"].is_null());
  json run = c->Request("anvil/runCommand", {{"plugin", "test.wants"}, {"command", "x"}});
  EXPECT_EQ(run["error"]["data"]["code"], "consent_required") << run;
  EXPECT_FALSE(Exists(ws_ / "notes/ran.txt"));
  // An answer that is not exactly "approve" is a denial too.
  c->on_request = [](const json&) -> json { return {{"decision", "yes please"}}; };
  EXPECT_EQ(c->Request("anvil/requestConsent", {{"plugin", "test.wants"}})["result"]["granted"],
            false);
  EXPECT_FALSE(Exists(ws_ / "notes/ran.txt"));
  // Approved: exactly the request is granted and the plugin starts.
  c->on_request = [](const json&) -> json { return {{"decision", "approve"}}; };
  EXPECT_EQ(c->Request("anvil/requestConsent", {{"plugin", "test.wants"}})["result"]["granted"],
            true);
  ASSERT_TRUE(WaitForPluginState(*c, "test.wants", "ready"));
  info = PluginInfo(*c, "test.wants");
  EXPECT_EQ(info["grant"]["granted"], info["grant"]["requested"]);
  EXPECT_TRUE(Exists(ws_ / "notes/ran.txt"));
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(T8Serve, MaliciousAnvilTomlEnablesButNeverGrants) {
  // Installed on the search path, not passed on the command line: only Anvil.toml enables it.
  WritePlugin(plugins_ / "p", "test.installed", "lua", "fs.read = [\"**\"]\n",
              "anvil.command('read', function() return sys.fs.read('src/a.c') end)\n");
  WriteFile(ws_ / "Anvil.toml",
            "[plugins]\nenable = [\"test.installed\", \"test.absent\"]\n\n"
            "[plugins.settings.\"test.installed\"]\nlevel = 3\n");
  {
    auto c = Start({"--plugin-path", plugins_.path()});
    ASSERT_TRUE(c->Initialize().contains("result"));
    json info = PluginInfo(*c, "test.installed");
    EXPECT_EQ(info["enabledBy"], "Anvil.toml");
    EXPECT_EQ(info["state"], "needs_consent") << "Anvil.toml must not skip consent";
    EXPECT_EQ(PluginInfo(*c, "test.absent")["state"], "not_found");
    EXPECT_EQ(c->ShutdownAndExit(), 0);
  }
  // A file that tries to grant permissions is refused by name; it then enables nothing.
  WriteFile(ws_ / "Anvil.toml",
            "[plugins]\nenable = [\"test.installed\"]\n\n[permissions]\nfs.write = [\"**\"]\n");
  auto c = Start({"--plugin-path", plugins_.path()});
  json init = c->Initialize();
  ASSERT_TRUE(init.contains("result"));
  std::string error = init["result"]["anvil"]["workspaceConfigError"].get<std::string>();
  EXPECT_NE(error.find("permissions"), std::string::npos) << error;
  EXPECT_EQ(PluginInfo(*c, "test.installed")["state"], "disabled");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(T8Serve, ManifestThatAsksForMoreNeedsConsentAgainAtReload) {
  WritePlugin(plugins_ / "p", "test.grows", "lua", "fs.read = [\"src/**\"]\n",
              "anvil.command('x', function() return 'v1' end)\n");
  auto c = StartReady(plugins_ / "p", "test.grows");
  c.reset();  // --approve was for the first version only
  c = Start({"--plugin-dir", plugins_ / "p"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.grows", "ready"));  // the stored grant is used
  WritePlugin(plugins_ / "p", "test.grows", "lua", "fs.read = [\"src/**\"]\nfs.write = [\"**\"]\n",
              "anvil.command('x', function() return 'v2' end)\n");
  json reload = c->Request("anvil/reload", {{"plugin", "test.grows"}});
  EXPECT_EQ(reload["result"]["state"], "needs_consent") << reload;
  EXPECT_TRUE(reload["result"]["pid"].is_null());
  json run = c->Request("anvil/runCommand", {{"plugin", "test.grows"}, {"command", "x"}});
  EXPECT_EQ(run["error"]["data"]["code"], "consent_required") << run;
  // The consent request says the manifest changed and shows the previous grant.
  json seen;
  c->on_request = [&](const json& r) -> json {
    seen = r["params"];
    return {{"decision", "deny"}};
  };
  c->Request("anvil/requestConsent", {{"plugin", "test.grows"}});
  EXPECT_NE(seen["text"].get<std::string>().find("changed"), std::string::npos) << seen;
  EXPECT_EQ(seen["previous"]["fs.write"], json::array());
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(T8Serve, NotificationsAreAttributedStrippedCappedAndRateLimited) {
  WritePlugin(plugins_ / "p", "test.loud", "lua", "",
              R"LUA(
anvil.command('evil', function()
  editor.notify("\27[2J\27[H\27]0;owned\7Anvil: allow plugin test.loud to write **?\n[y/N]\r\tok\226\128\174")
  editor.notify(string.rep("A", 5000))
end)
anvil.command('spam', function()
  for i = 1, 50 do editor.notify("n" .. i) end
end)
)LUA");
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "p"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(c->Request("anvil/runCommand", {{"plugin", "test.loud"}, {"command", "evil"}})
                  .contains("result"));
  auto shown = c->Seen("window/showMessage");
  ASSERT_EQ(shown.size(), 2u);
  for (const auto& m : shown) {
    std::string text = m["params"]["message"].get<std::string>();
    EXPECT_EQ(text.rfind("[test.loud] ", 0), 0u) << text;  // attributed, first thing on the line
    EXPECT_EQ(m["params"]["anvil"]["source"], "plugin");
    for (unsigned char ch : text) {
      EXPECT_FALSE(ch < 0x20 || ch == 0x7f) << "control byte " << int(ch) << " in " << text;
    }
    EXPECT_EQ(text.find("\xe2\x80\xae"), std::string::npos) << "a bidi override survived";
    EXPECT_LE(text.size(), 12u + 500u * 3 + 3) << "not capped";
  }
  std::string first = shown[0]["params"]["message"].get<std::string>();
  EXPECT_NE(first.find("Anvil: allow plugin"), std::string::npos);  // shown, but as the plugin's
  // The escape sequences are shown, not run: ESC, BEL, the bidi override as \u{...}.
  EXPECT_EQ(first.rfind("[test.loud] \\u{1b}[2J\\u{1b}[H\\u{1b}]0;owned\\u{7}Anvil: allow", 0), 0u)
      << first;
  EXPECT_NE(first.find("\\u{202e}"), std::string::npos) << first;
  EXPECT_LT(shown[1]["params"]["message"].get<std::string>().size(), 600u);
  // Consent never travels as a notification: the only prompts are anvil/consent requests.
  EXPECT_TRUE(c->Seen("anvil/consent").empty());

  c->seen.clear();
  ASSERT_TRUE(c->Request("anvil/runCommand", {{"plugin", "test.loud"}, {"command", "spam"}})
                  .contains("result"));
  EXPECT_LE(c->Seen("window/showMessage").size(), 10u) << "a plugin can flood the user";
  bool warned = false;
  for (const auto& m : c->Seen("window/logMessage")) {
    warned |= m["params"]["message"].get<std::string>().find("dropping notifications") !=
              std::string::npos;
  }
  EXPECT_TRUE(warned);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(T8Serve, BuffersAreSharedOnlyInsideTheReadGrant) {
  WritePlugin(
      plugins_ / "p", "test.peek", "lua", "fs.read = [\"src/**\"]\n",
      "anvil.command('get', function(a) return editor.buffer.get(a[1]).text end)\n"
      "anvil.command('edit', function(a) return editor.buffer.edit(a[1], 1, {{text = 'x'}}) "
      "end)\n");
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "p"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  auto open = [&](const std::string& uri) {
    c->Notify("textDocument/didOpen",
              {{"textDocument",
                {{"uri", uri}, {"languageId", "text"}, {"version", 1}, {"text", "secret"}}}});
  };
  open(Uri("src/a.c"));
  open(Uri(".env"));
  open("file:///root/.ssh/id_ed25519");
  open("untitled:Untitled-1");
  open(Uri("src/%2E%2E/.env"));
  auto get = [&](const std::string& target) {
    return c->Request("anvil/runCommand",
                      {{"plugin", "test.peek"}, {"command", "get"}, {"arguments", {target}}});
  };
  EXPECT_EQ(get(Uri("src/a.c"))["result"]["value"], "secret");
  EXPECT_EQ(get("src/a.c")["result"]["value"], "secret");  // by workspace path
  for (const std::string& target :
       {Uri(".env"), std::string(".env"), std::string("file:///root/.ssh/id_ed25519"),
        std::string("untitled:Untitled-1"), Uri("src/%2E%2E/.env"), std::string("src/../.env")}) {
    json r = get(target);
    EXPECT_TRUE(r.contains("error")) << target << ": " << r;
    std::string code = r["error"]["data"]["code"];
    EXPECT_TRUE(code == "denied" || code == "invalid") << target << ": " << r;
  }
  json edit =
      c->Request("anvil/runCommand",
                 {{"plugin", "test.peek"}, {"command", "edit"}, {"arguments", {Uri(".env")}}});
  EXPECT_EQ(edit["error"]["data"]["code"], "denied") << edit;
  EXPECT_TRUE(c->Seen("workspace/applyEdit").empty());
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// Red team 3 F1: a buffer's name is granted ("src/**") but it leads elsewhere (a symlink to a
// file outside the grant or the workspace, a hard link, a link into .git). The plugin sees and
// edits the buffer exactly when sys.fs.read (get) or sys.fs.write's rules (edit) allow the file
// it leads to; its benign neighbours (a plain file, a link that stays inside the grant, a new
// file not on disk yet) still work.
TEST_F(T8Serve, BuffersAreJudgedByTheFileTheirNameLeadsTo) {
  TempDir outside("anvil-serve-outside");
  WriteFile(ws_ / "private.txt", "secret\n");
  WriteFile(outside / "id_ed25519", "key\n");
  WriteFile(ws_ / "src/b.c", "b\n");
  WriteFile(ws_ / "hard-target.txt", "secret\n");
  ASSERT_EQ(::symlink("../private.txt", (ws_ / "src/link.txt").c_str()), 0);
  ASSERT_EQ(::symlink(outside.path().c_str(), (ws_ / "src/k").c_str()), 0);
  ASSERT_EQ(::link((ws_ / "hard-target.txt").c_str(), (ws_ / "src/hard.txt").c_str()), 0);
  ASSERT_EQ(::symlink("../.git/config", (ws_ / "src/gitcfg").c_str()), 0);
  ASSERT_EQ(::symlink("b.c", (ws_ / "src/inner.c").c_str()), 0);
  ASSERT_EQ(::symlink("../nowhere/x", (ws_ / "src/dangling").c_str()), 0);
  ASSERT_EQ(::symlink("..", (ws_ / "src/up").c_str()), 0);
  ASSERT_EQ(::mkdir((ws_ / ".git").c_str(), 0755), 0);
  WriteFile(ws_ / ".git/config", "[core]\n");
  const std::string code =
      "anvil.command('get', function(a) return editor.buffer.get(a[1]).text end)\n"
      "anvil.command('edit', function(a) return editor.buffer.edit(a[1], 1, {{text = 'OWNED'}}) "
      "end)\n";
  WritePlugin(plugins_ / "p", "test.peek", "lua", "fs.read = [\"src/**\"]\n", code);
  WritePlugin(plugins_ / "q", "test.all", "lua", "fs.read = [\"**\"]\nfs.write = [\"**\"]\n", code);
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "p", "--plugin-dir", plugins_ / "q"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  for (const char* rel :
       {"src/a.c", "src/link.txt", "src/k/id_ed25519", "src/hard.txt", "src/gitcfg", "src/inner.c",
        "src/new/unsaved.c", "src/dangling/y", "src/up/private.txt", "src/up/src/new.c"}) {
    c->Notify("textDocument/didOpen",
              {{"textDocument",
                {{"uri", Uri(rel)}, {"languageId", "text"}, {"version", 1}, {"text", "shown"}}}});
  }
  auto run = [&](const std::string& plugin, const std::string& command, const std::string& rel) {
    return c->Request("anvil/runCommand",
                      {{"plugin", plugin}, {"command", command}, {"arguments", {rel}}});
  };
  // Refused, read and edit alike: the name is granted, the file it leads to is not (or cannot
  // be told apart from one that is not).
  for (const char* rel : {"src/link.txt", "src/k/id_ed25519", "src/hard.txt", "src/gitcfg",
                          "src/dangling/y", "src/up/private.txt"}) {
    for (const char* command : {"get", "edit"}) {
      json r = run("test.peek", command, rel);
      EXPECT_TRUE(r.contains("error")) << command << " " << rel << ": " << r;
      EXPECT_EQ(r["error"]["data"]["code"], "denied") << command << " " << rel << ": " << r;
    }
  }
  // A link into .git under a read grant of everything: shown (sys.fs.read shows .git/config
  // too), but never edited: the file it leads to is protected, and "**" is no literal grant.
  EXPECT_EQ(run("test.all", "get", "src/gitcfg")["result"]["value"], "shown");
  json into_git = run("test.all", "edit", "src/gitcfg");
  EXPECT_EQ(into_git["error"]["data"]["code"], "denied") << into_git;
  EXPECT_TRUE(c->Seen("workspace/applyEdit").empty());
  // The benign neighbours.
  EXPECT_EQ(run("test.peek", "get", "src/a.c")["result"]["value"], "shown");
  EXPECT_EQ(run("test.peek", "get", "src/inner.c")["result"]["value"], "shown");
  EXPECT_EQ(run("test.peek", "get", "src/new/unsaved.c")["result"]["value"], "shown");
  EXPECT_EQ(run("test.peek", "get", "src/up/src/new.c")["result"]["value"], "shown");
  for (const char* rel : {"src/a.c", "src/inner.c", "src/new/unsaved.c"}) {
    json r = run("test.peek", "edit", rel);
    EXPECT_TRUE(r.contains("result")) << rel << ": " << r;
  }
  EXPECT_EQ(c->Seen("workspace/applyEdit").size(), 3u);
  EXPECT_EQ(ReadFile(ws_ / "private.txt"), "secret\n");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// Red team: a plugin that may write everything ("**") edits the open buffer of a hook that
// core.hooksPath names, and the user's save plants it: the next `git commit` runs it on the host.
// An edit is refused what the gateway refuses a plugin's fs writes (linux/git_run_guard.h), by
// the buffer's name and by the file it leads to, a hooksPath set while serve runs included;
// unless a grant names the exact path. The benign neighbour, an ordinary file, is still edited.
TEST_F(T8Serve, BufferEditsNeverReachWhatGitRuns) {
  constexpr char kGit[] = "/usr/bin/git";
  if (::access(kGit, X_OK) != 0) GTEST_SKIP() << kGit << " is not installed";
  auto git = [&](const std::string& args) {
    return Shell("cd " + ShellQuote(ws_.path()) + " && HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 " +
                 kGit + " " + args + " >/dev/null 2>&1");
  };
  ASSERT_EQ(git("init -q"), 0);
  ASSERT_EQ(git("config core.hooksPath .githooks"), 0);
  for (const char* dir : {".githooks", "tools", "tools/hooks"}) {
    ASSERT_EQ(::mkdir((ws_ / dir).c_str(), 0755), 0) << dir;
  }
  WriteFile(ws_ / ".githooks/pre-commit", "#!/bin/sh\necho lint ok\n", 0755);
  WriteFile(ws_ / "tools/hooks/pre-push", "#!/bin/sh\n", 0755);
  WriteFile(ws_ / "notes.txt", "notes\n");
  ASSERT_EQ(::symlink("../.githooks/pre-commit", (ws_ / "src/hook").c_str()), 0);
  const std::string code =
      "anvil.command('edit', function(a) return editor.buffer.edit(a[1], 1, {{text = 'OWNED'}}) "
      "end)\n";
  WritePlugin(plugins_ / "q", "test.all", "lua", "fs.read = [\"**\"]\nfs.write = [\"**\"]\n", code);
  WritePlugin(plugins_ / "e", "test.exact", "lua",
              "fs.read = [\"**\"]\nfs.write = [\".githooks/pre-commit\"]\n", code);
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "q", "--plugin-dir", plugins_ / "e"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  for (const char* rel : {".githooks/pre-commit", "src/hook", "tools/hooks/pre-push", "notes.txt",
                          ".githooks/new-hook"}) {
    c->Notify("textDocument/didOpen",
              {{"textDocument",
                {{"uri", Uri(rel)}, {"languageId", "text"}, {"version", 1}, {"text", "shown"}}}});
  }
  auto edit = [&](const std::string& plugin, const std::string& rel) {
    return c->Request("anvil/runCommand",
                      {{"plugin", plugin}, {"command", "edit"}, {"arguments", {rel}}});
  };
  for (const char* rel : {".githooks/pre-commit", "src/hook", ".githooks/new-hook"}) {
    json r = edit("test.all", rel);
    EXPECT_EQ(r["error"]["data"]["code"], "denied") << rel << ": " << r;
    EXPECT_NE(r.dump().find("a path git runs or follows"), std::string::npos) << rel << ": " << r;
  }
  EXPECT_TRUE(c->Seen("workspace/applyEdit").empty());
  // The benign neighbours: an ordinary file, and a directory named like hooks that no config
  // names (yet).
  EXPECT_TRUE(edit("test.all", "notes.txt").contains("result"));
  EXPECT_TRUE(edit("test.all", "tools/hooks/pre-push").contains("result"));
  EXPECT_EQ(c->Seen("workspace/applyEdit").size(), 2u);
  // A grant that names the exact path opens it.
  EXPECT_TRUE(edit("test.exact", ".githooks/pre-commit").contains("result"));
  EXPECT_EQ(c->Seen("workspace/applyEdit").size(), 3u);
  // A hooksPath set while serve runs is seen at the next edit.
  ASSERT_EQ(git("config core.hooksPath tools/hooks"), 0);
  json moved = edit("test.all", "tools/hooks/pre-push");
  EXPECT_EQ(moved["error"]["data"]["code"], "denied") << moved;
  EXPECT_EQ(c->Seen("workspace/applyEdit").size(), 3u);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// The gateway keeps a plugin from writing into a git directory under another name (a bare
// repository kept in the workspace: git run in or beneath it uses its config and hooks) or
// from completing one; a buffer edit, saved by the editor, is a write as well and gets the same
// rule (fs/git_dir_guard.h). So does a missing include target a config names ("../local.gitconfig"
// of .git/config): written with a core.fsmonitor command, the user's next `git status` runs it.
TEST_F(T8Serve, BufferEditsNeverReachAGitDirUnderAnotherNameOrAMissingInclude) {
  constexpr char kGit[] = "/usr/bin/git";
  if (::access(kGit, X_OK) != 0) GTEST_SKIP() << kGit << " is not installed";
  auto git = [&](const std::string& args) {
    return Shell("cd " + ShellQuote(ws_.path()) + " && HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1 " +
                 kGit + " " + args + " >/dev/null 2>&1");
  };
  ASSERT_EQ(git("init -q"), 0);
  ASSERT_EQ(git("config include.path ../local.gitconfig"), 0);
  ASSERT_EQ(git("init -q --bare vendor/mirror.git"), 0);
  ASSERT_EQ(::mkdir((ws_ / "docs").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((ws_ / "docs/objects").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((ws_ / "docs/refs").c_str(), 0755), 0);
  WriteFile(ws_ / "notes.txt", "notes\n");
  const std::string code =
      "anvil.command('edit', function(a) return editor.buffer.edit(a[1], 1, {{text = 'OWNED'}}) "
      "end)\n";
  WritePlugin(plugins_ / "q", "test.all", "lua", "fs.read = [\"**\"]\nfs.write = [\"**\"]\n", code);
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "q"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  const std::vector<std::string> refused = {"vendor/mirror.git/config",
                                            "vendor/mirror.git/hooks/post-checkout", "docs/HEAD",
                                            "local.gitconfig"};
  for (const std::string& rel : refused) {
    c->Notify("textDocument/didOpen",
              {{"textDocument",
                {{"uri", Uri(rel)}, {"languageId", "text"}, {"version", 1}, {"text", "shown"}}}});
  }
  for (const char* rel : {"notes.txt", "docs/objects/readme", "vendor/README"}) {
    c->Notify("textDocument/didOpen",
              {{"textDocument",
                {{"uri", Uri(rel)}, {"languageId", "text"}, {"version", 1}, {"text", "shown"}}}});
  }
  auto edit = [&](const std::string& rel) {
    return c->Request("anvil/runCommand",
                      {{"plugin", "test.all"}, {"command", "edit"}, {"arguments", {rel}}});
  };
  for (const std::string& rel : refused) {
    json r = edit(rel);
    EXPECT_EQ(r["error"]["data"]["code"], "denied") << rel << ": " << r;
  }
  EXPECT_TRUE(c->Seen("workspace/applyEdit").empty());
  // The benign neighbours: an ordinary file, a file in a directory that only looks partly like
  // a git dir, a file beside a bare repository.
  for (const char* rel : {"notes.txt", "docs/objects/readme", "vendor/README"}) {
    EXPECT_TRUE(edit(rel).contains("result")) << rel;
  }
  EXPECT_EQ(c->Seen("workspace/applyEdit").size(), 3u);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// `anvil plugin revoke` while `anvil serve` runs the plugin (red team): the running host kept
// writing, and every host started after it — past a deadline kill, after a gateway killed -9 —
// got a new token with the grant cached when the session admitted it; anvil/listPlugins still
// said ready and granted; only anvil/reload noticed. Now the session watches the grant store:
// the host is stopped at once (token revoked), the request sent after the revoke already finds
// the plugin needs_consent, no restart brings it back, and only consent does. The plugin beside
// it, granted in the same session, goes on untouched.
TEST_F(T8Serve, ARevokedGrantStopsItsPluginInTheRunningSession) {
  const std::string grant = "fs.read = [\"src/**\"]\nfs.write = [\"notes/**\"]\n";
  Writer("rev", "test.rev", grant);
  Writer("other", "test.other", grant);
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "rev", "--plugin-dir", plugins_ / "other",
                  "--timeout", "2"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.rev", "ready"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.other", "ready"));
  EXPECT_EQ(Write(*c, "test.rev", "before")["result"]["value"], "wrote");
  const pid_t host = HostPid(*c, "test.rev");
  RunResult revoked = Anvil({"plugin", "revoke", "--workspace", ws_.path(), "test.rev"});
  ASSERT_EQ(revoked.status, 0) << revoked.err;
  json after = Write(*c, "test.rev", "after-revoke");
  EXPECT_EQ(after["error"]["data"]["code"], "consent_required") << after;
  // Said as it is: revoked, and how to grant it again; not "not granted yet".
  const std::string refusal = after["error"]["message"];
  EXPECT_NE(refusal.find("revoked"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("anvil/requestConsent"), std::string::npos) << refusal;
  EXPECT_EQ(refusal.find("yet"), std::string::npos) << refusal;
  EXPECT_FALSE(Exists(ws_ / "notes/after-revoke"));
  EXPECT_FALSE(ProcessAlive(host)) << "the revoked plugin's host still runs";
  json info = PluginInfo(*c, "test.rev");
  EXPECT_EQ(info["state"], "needs_consent") << info;
  EXPECT_EQ(info["grant"]["state"], "needs_consent") << info;
  EXPECT_TRUE(info["pid"].is_null()) << info;
  bool told = false;
  for (const auto& m : c->Seen("window/logMessage")) {
    const std::string text = m["params"]["message"];
    told |= text.find("plugin test.rev stopped") != std::string::npos &&
            text.find("revoked") != std::string::npos;
  }
  EXPECT_TRUE(told) << "the client was not told";
  // A gateway killed -9 starts new hosts with new tokens: not for the revoked plugin.
  const pid_t gateway = GatewayPid(*c);
  ASSERT_GT(gateway, 0);
  ASSERT_EQ(::kill(gateway, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] {
    const pid_t now = GatewayPid(*c);
    return now > 0 && now != gateway && PluginInfo(*c, "test.other")["state"] == "ready";
  }));
  EXPECT_EQ(Write(*c, "test.rev", "after-gateway")["error"]["data"]["code"], "consent_required");
  EXPECT_FALSE(Exists(ws_ / "notes/after-gateway"));
  EXPECT_EQ(PluginInfo(*c, "test.rev")["state"], "needs_consent");
  // The neighbour kept its grant through all of it.
  EXPECT_EQ(Write(*c, "test.other", "other")["result"]["value"], "wrote");
  EXPECT_TRUE(Exists(ws_ / "notes/other"));
  // Consent given again: the plugin runs again, with a fresh host.
  c->on_request = [](const json&) -> json { return {{"decision", "approve"}}; };
  json consent = c->Request("anvil/requestConsent", {{"plugin", "test.rev"}});
  EXPECT_EQ(consent["result"]["granted"], true) << consent;
  ASSERT_TRUE(WaitForPluginState(*c, "test.rev", "ready"));
  EXPECT_EQ(Write(*c, "test.rev", "again")["result"]["value"], "wrote");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// A grant narrowed while the session runs (the store edited to drop fs.write): the host started
// with the wider grant is stopped and a new one runs with the narrower grant; reads, which it
// still holds, go on.
TEST_F(T8Serve, ANarrowedGrantRestartsItsHostWithTheNarrowerGrant) {
  Writer("narrow", "test.narrow", "fs.read = [\"src/**\"]\nfs.write = [\"notes/**\"]\n");
  auto c = StartReady(plugins_ / "narrow", "test.narrow");
  EXPECT_EQ(Write(*c, "test.narrow", "before")["result"]["value"], "wrote");
  const pid_t host = HostPid(*c, "test.narrow");
  const std::string store = state_ / "anvil/grants.json";
  std::stringstream text;
  text << std::ifstream(store).rdbuf();
  json grants = json::parse(text.str());
  ASSERT_EQ(grants["grants"].size(), 1u) << grants;
  grants["grants"][0]["grant"]["fs.write"] = json::array();
  WriteFile(store + ".new", grants.dump(2));
  ASSERT_EQ(::chmod((store + ".new").c_str(), 0600), 0);
  ASSERT_EQ(std::rename((store + ".new").c_str(), store.c_str()), 0);
  ASSERT_TRUE(WaitUntil([&] {
    const pid_t now = HostPid(*c, "test.narrow");
    return now > 0 && now != host && PluginInfo(*c, "test.narrow")["state"] == "ready";
  }));
  EXPECT_FALSE(ProcessAlive(host));
  EXPECT_EQ(PluginInfo(*c, "test.narrow")["grant"]["granted"]["fs.write"], json::array());
  json w = Write(*c, "test.narrow", "after");
  EXPECT_EQ(w["error"]["data"]["code"], "denied") << w;
  EXPECT_FALSE(Exists(ws_ / "notes/after"));
  json r = c->Request("anvil/runCommand", {{"plugin", "test.narrow"}, {"command", "r"}});
  EXPECT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// Each new token comes from an admission of its own, not only the grant's: before, a host
// started again after a deadline kill or a gateway crash was handed the grant and the pins its
// first admission found, so a plugin that anvil.lock no longer matches (nor a signature, nor a
// workspace a sandboxed command left unchecked) kept running across restarts. The benign
// neighbours: a restart with the lock unchanged, and a plugin the lock does not name.
TEST_F(T8Serve, AHostStartedAgainIsAdmittedAgain) {
  const std::string grant = "fs.read = [\"src/**\"]\nfs.write = [\"notes/**\"]\n";
  Writer("locked", "test.locked", grant);
  Writer("free", "test.free", grant);
  RunResult lock = Anvil({"plugin", "lock", "--workspace", ws_.path(), plugins_ / "locked"});
  ASSERT_EQ(lock.status, 0) << lock.err;
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "locked", "--plugin-dir",
                  plugins_ / "free", "--timeout", "1", "--no-watch"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.locked", "ready"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.free", "ready"));
  auto spin = [&] {
    json r = c->Request("anvil/runCommand", {{"plugin", "test.locked"}, {"command", "spin"}});
    EXPECT_EQ(r["error"]["data"]["code"], "timeout") << r;
  };
  // The lock unchanged: killed at its deadline, started again, it writes.
  spin();
  ASSERT_TRUE(WaitForPluginState(*c, "test.locked", "ready"));
  EXPECT_EQ(Write(*c, "test.locked", "first")["result"]["value"], "wrote");
  // The lock now pins other code (a newer version, locked where it was tried out; the files
  // here are as they were).
  const std::string main_lua = plugins_ / "locked/main.lua";
  std::stringstream code;
  code << std::ifstream(main_lua).rdbuf();
  WriteFile(main_lua, code.str() + "-- v2\n");
  RunResult relock = Anvil({"plugin", "lock", "--workspace", ws_.path(), plugins_ / "locked"});
  ASSERT_EQ(relock.status, 0) << relock.err;
  WriteFile(main_lua, code.str());
  spin();
  ASSERT_TRUE(WaitForPluginState(*c, "test.locked", "refused"));
  json w = Write(*c, "test.locked", "after-lock");
  EXPECT_EQ(w["error"]["data"]["code"], "unavailable") << w;
  EXPECT_FALSE(Exists(ws_ / "notes/after-lock"));
  // A gateway killed -9: new hosts only for what is admitted now.
  const pid_t gateway = GatewayPid(*c);
  ASSERT_GT(gateway, 0);
  ASSERT_EQ(::kill(gateway, SIGKILL), 0);
  ASSERT_TRUE(WaitUntil([&] {
    const pid_t now = GatewayPid(*c);
    return now > 0 && now != gateway && PluginInfo(*c, "test.free")["state"] == "ready";
  }));
  EXPECT_EQ(PluginInfo(*c, "test.locked")["state"], "refused");
  EXPECT_FALSE(Exists(ws_ / "notes/after-lock"));
  EXPECT_EQ(Write(*c, "test.free", "free")["result"]["value"], "wrote");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// A plugin stopped because anvil.lock no longer matches is not said to have lost its grant: the
// client's warning and the answers to its commands name anvil.lock and `anvil plugin lock`
// (before: "the grant ... was revoked or changed" to the command in flight, and "grant revoked"
// as the reason its host was stopped). The benign neighbour keeps running.
TEST_F(T8Serve, AnAdmissionLostToTheLockSaysSoNotGrantRevoked) {
  const std::string grant = "fs.read = [\"src/**\"]\nfs.write = [\"notes/**\"]\n";
  Writer("locked", "test.locked", grant);
  Writer("free", "test.free", grant);
  RunResult lock = Anvil({"plugin", "lock", "--workspace", ws_.path(), plugins_ / "locked"});
  ASSERT_EQ(lock.status, 0) << lock.err;
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "locked", "--plugin-dir",
                  plugins_ / "free", "--timeout", "5", "--no-watch"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.locked", "ready"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.free", "ready"));
  // The lock now pins other code; the files here are as they were.
  const std::string main_lua = plugins_ / "locked/main.lua";
  std::stringstream code;
  code << std::ifstream(main_lua).rdbuf();
  WriteFile(main_lua, code.str() + "-- v2\n");
  RunResult relock = Anvil({"plugin", "lock", "--workspace", ws_.path(), plugins_ / "locked"});
  ASSERT_EQ(relock.status, 0) << relock.err;
  WriteFile(main_lua, code.str());
  // A command in flight, then any change of the grant store: every plugin is admitted again.
  const json spin =
      c->SendRequest("anvil/runCommand", {{"plugin", "test.locked"}, {"command", "spin"}});
  RunResult approve = Anvil({"plugin", "approve", "--workspace", ws_.path(), plugins_ / "free"});
  ASSERT_EQ(approve.status, 0) << approve.err;
  json stopped = c->ReadResponse(spin);
  const std::string answer = stopped["error"]["message"];
  EXPECT_NE(answer.find("anvil.lock"), std::string::npos) << stopped;
  EXPECT_EQ(answer.find("grant"), std::string::npos) << stopped;
  ASSERT_TRUE(WaitForPluginState(*c, "test.locked", "refused"));
  json w = Write(*c, "test.locked", "after-lock");
  EXPECT_EQ(w["error"]["data"]["code"], "unavailable") << w;
  EXPECT_NE(w["error"]["message"].get<std::string>().find("anvil plugin lock"), std::string::npos)
      << w;
  EXPECT_FALSE(Exists(ws_ / "notes/after-lock"));
  bool told = false;
  for (const auto& m : c->Seen("window/logMessage")) {
    const std::string text = m["params"]["message"];
    if (text.find("plugin test.locked stopped") == std::string::npos) continue;
    told = true;
    EXPECT_NE(text.find("anvil.lock"), std::string::npos) << text;
    EXPECT_EQ(text.find("grant"), std::string::npos) << text;
  }
  EXPECT_TRUE(told);
  EXPECT_EQ(Write(*c, "test.free", "free")["result"]["value"], "wrote");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
  const RunResult audit = ::anvil::testing::Run(
      {"/bin/sh", "-c", "cat " + ShellQuote(state_.path()) + "/anvil/audit/*.jsonl"});
  EXPECT_EQ(audit.out.find("grant revoked"), std::string::npos) << audit.out;
}

// The plugin's directory made again with other code, and that code approved (`anvil plugin
// approve`) while serve runs: the approval of the code the running host loaded is gone (one
// approval per plugin and workspace), so the host is stopped and a new one runs the approved
// code (before: the grant was compared, not the code, and the old host ran on). Other code put
// there without an approval never runs: a host started again finds it not approved, and says so.
TEST_F(T8Serve, AnApprovalOfOtherCodeRestartsTheHostOnIt) {
  const std::string perms = "fs.read = [\"src/**\"]\n";
  auto version = [&](const std::string& v) {
    std::filesystem::remove_all(plugins_ / "p");
    WritePlugin(plugins_ / "p", "test.code", "lua", perms,
                "anvil.command('v', function() return '" + v + "' end)\n");
  };
  version("v1");
  auto c = Start({"--approve", "--plugin-dir", plugins_ / "p", "--no-watch"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  ASSERT_TRUE(WaitForPluginState(*c, "test.code", "ready"));
  auto v = [&] {
    return c->Request("anvil/runCommand", {{"plugin", "test.code"}, {"command", "v"}});
  };
  EXPECT_EQ(v()["result"]["value"], "v1");
  const pid_t first = HostPid(*c, "test.code");
  version("v2");  // a new directory, other code: not approved yet; the host runs v1 still
  EXPECT_EQ(v()["result"]["value"], "v1");
  RunResult approve = Anvil({"plugin", "approve", "--workspace", ws_.path(), plugins_ / "p"});
  ASSERT_EQ(approve.status, 0) << approve.err;
  json now = v();
  EXPECT_EQ(now["result"]["value"], "v2") << now;
  EXPECT_FALSE(ProcessAlive(first)) << "the host of the code no longer approved still runs";
  // Other code again, not approved: a host started again (after a kill) does not run it.
  version("v3");
  const pid_t second = HostPid(*c, "test.code");
  ASSERT_GT(second, 0);
  ASSERT_EQ(::kill(second, SIGKILL), 0);
  ASSERT_TRUE(WaitForPluginState(*c, "test.code", "needs_consent"));
  json refused = v();
  EXPECT_EQ(refused["error"]["data"]["code"], "consent_required") << refused;
  const std::string why = refused["error"]["message"];
  EXPECT_NE(why.find("not approved"), std::string::npos) << why;
  EXPECT_EQ(why.find("revoked"), std::string::npos) << why;
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

// The grant store could not be opened when serve started (a grants.json that did not parse):
// before, serve then never watched it, so a plugin granted later in the session and revoked
// after ran on until its host next started. Now the watch does not depend on the store: a
// revocation is honoured at the next message. The store's directory moved away and made again
// (by the next approval) is watched again through its parent.
TEST_F(T8Serve, ARevocationIsSeenWhenTheStoreWasUnreadableAtTheStart) {
  Writer("late", "test.late", "fs.read = [\"src/**\"]\nfs.write = [\"notes/**\"]\n");
  const std::string dir = state_ / "anvil";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  WriteFile(dir + "/grants.json", "{ torn");
  ASSERT_EQ(::chmod((dir + "/grants.json").c_str(), 0600), 0);
  auto c = Start({"--plugin-dir", plugins_ / "late"});
  ASSERT_TRUE(c->Initialize().contains("result"));
  EXPECT_EQ(PluginInfo(*c, "test.late")["state"], "failed");
  ASSERT_EQ(::unlink((dir + "/grants.json").c_str()), 0);
  c->on_request = [](const json&) -> json { return {{"decision", "approve"}}; };
  auto grant = [&] {
    EXPECT_EQ(c->Request("anvil/reload", {{"plugin", "test.late"}})["result"]["state"],
              "needs_consent");
    json consent = c->Request("anvil/requestConsent", {{"plugin", "test.late"}});
    EXPECT_EQ(consent["result"]["granted"], true) << consent;
    EXPECT_TRUE(WaitForPluginState(*c, "test.late", "ready"));
  };
  grant();
  EXPECT_EQ(Write(*c, "test.late", "granted")["result"]["value"], "wrote");
  RunResult revoked = Anvil({"plugin", "revoke", "--workspace", ws_.path(), "test.late"});
  ASSERT_EQ(revoked.status, 0) << revoked.err;
  json after = Write(*c, "test.late", "after-revoke");
  EXPECT_EQ(after["error"]["data"]["code"], "consent_required") << after;
  EXPECT_FALSE(Exists(ws_ / "notes/after-revoke"));
  // The directory moved away: no grant is found any more; the next approval makes it again,
  // and a revocation there is seen as well.
  ASSERT_EQ(std::rename(dir.c_str(), (dir + ".old").c_str()), 0);
  grant();
  EXPECT_EQ(Write(*c, "test.late", "again")["result"]["value"], "wrote");
  revoked = Anvil({"plugin", "revoke", "--workspace", ws_.path(), "test.late"});
  ASSERT_EQ(revoked.status, 0) << revoked.err;
  after = Write(*c, "test.late", "after-second-revoke");
  EXPECT_EQ(after["error"]["data"]["code"], "consent_required") << after;
  EXPECT_FALSE(Exists(ws_ / "notes/after-second-revoke"));
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

}  // namespace
}  // namespace t8_serve_consent_test
}  // namespace anvil::testing
