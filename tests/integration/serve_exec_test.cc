// anvil/exec in `anvil serve`: an agent's command through the same flow as `anvil exec`, its
// questions asked in the editor as anvil/approve (a test client answers them): once, always
// (the rule written, the next run not asked), never, an error reply, no answer and a
// cancellation (nothing left running), the widening after a refused .git write, mode never, and
// bad params naming the field.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "serve_client.h"

namespace anvil::testing {
namespace serve_exec_test {
namespace {

// Processes whose command line holds `marker`.
std::vector<pid_t> ProcessesWith(const std::string& marker) {
  std::vector<pid_t> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  while (dirent* e = readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    // ReadFile: a process that exits mid-read is an empty text, not an exception.
    std::string cmdline = ReadFile("/proc/" + std::string(e->d_name) + "/cmdline");
    for (char& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline.find(marker) != std::string::npos) out.push_back(static_cast<pid_t>(pid));
  }
  closedir(proc);
  return out;
}

class ServeExec : public ServeTestBase {
 protected:
  void SetUp() override {
    ServeTestBase::SetUp();
    Shell("mkdir -p " + ShellQuote(config_ / "anvil/rules"));
    WriteFile(config_ / "anvil/rules/test.toml", R"([[rule]]
pattern = ["touch"]
decision = "prompt"
justification = "touching files is asked first"
)");
  }
  std::unique_ptr<ServeClient> StartExec(std::vector<std::string> args = {}) {
    auto c = Start(std::move(args), {"XDG_CONFIG_HOME=" + config_.path()});
    EXPECT_TRUE(c->Initialize().contains("result"));
    return c;
  }
  // The anvil/approve requests the client saw.
  static std::vector<json> Approvals(const ServeClient& c) { return c.Seen("anvil/approve"); }
  std::vector<json> AuditLines() const {
    std::vector<json> out;
    for (const auto& line : Lines(ReadFileOr(state_ / "anvil/audit"))) {
      json j = json::parse(line, nullptr, false);
      if (j.is_object()) out.push_back(j);
    }
    return out;
  }
  // Every audit file of the state directory, concatenated.
  static std::string ReadFileOr(const std::string& dir) {
    std::string all;
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) return all;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      all += ReadFile(dir + "/" + e->d_name);
    }
    closedir(d);
    return all;
  }

  TempDir config_{"anvil-serve-config"};
};

TEST_F(ServeExec, APromptRuleIsAskedInTheEditorAndAnsweredOnce) {
  auto c = StartExec();
  c->on_request = [](const json& r) -> json {
    if (r["method"] == "anvil/approve") return {{"answer", "once"}};
    return nullptr;
  };
  json r = c->Request("anvil/exec", {{"argv", {"touch", "made-once"}}});
  ASSERT_TRUE(r.contains("result")) << r;
  const json& result = r["result"];
  EXPECT_EQ(result["decision"], "prompt") << result;
  EXPECT_EQ(result["exit"], 0) << result;
  EXPECT_TRUE(result["ran"]) << result;
  ASSERT_EQ(result["questions"].size(), 1u) << result;
  EXPECT_EQ(result["questions"][0]["answer"], "once");
  EXPECT_EQ(result["stdout"], "");
  EXPECT_EQ(result["output_cap_bytes"], 256 * 1024);
  EXPECT_TRUE(Exists(ws_ / "made-once"));

  auto asked = Approvals(*c);
  ASSERT_EQ(asked.size(), 1u);
  const json& q = asked[0]["params"];
  EXPECT_EQ(q["argv"], json({"touch", "made-once"}));
  EXPECT_EQ(q["cwd"], ws_.path());
  EXPECT_EQ(q["mode"], "on-request");
  // A prompt rule is the user's own: "always" is not offered against it.
  EXPECT_EQ(q["choices"], json({"once", "never"}));
  EXPECT_NE(q["text"].get<std::string>().find("touch made-once"), std::string::npos) << q;
  EXPECT_NE(q["sandbox"].get<std::string>().find("workspace-write"), std::string::npos) << q;
  EXPECT_TRUE(q["widening"].is_null());
  EXPECT_EQ(q["request"], r["id"]);

  // The decision and the answer, each one audit line, by "anvil serve".
  int decisions = 0, answers = 0;
  for (const json& j : AuditLines()) {
    if (j.value("plugin", "") != "anvil serve") continue;
    if (j["op"] == "command" && j["target"] == "touch made-once") ++decisions;
    if (j["op"] == "command.answer" && j["answer"] == "once") ++answers;
  }
  EXPECT_EQ(decisions, 1) << ReadFileOr(state_ / "anvil/audit");
  EXPECT_EQ(answers, 1) << ReadFileOr(state_ / "anvil/audit");
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(ServeExec, AlwaysWritesTheRuleAndTheNextRunIsNotAsked) {
  auto c = StartExec({"--approval", "untrusted"});
  c->on_request = [](const json& r) -> json {
    if (r["method"] == "anvil/approve") {
      EXPECT_EQ(r["params"]["choices"], json({"once", "always", "never"})) << r;
      return {{"answer", "always"}};
    }
    return nullptr;
  };
  json r = c->Request("anvil/exec", {{"argv", {"mkdir", "made-always"}}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["exit"], 0) << r;
  EXPECT_EQ(r["result"]["rules_written"], json::array({{"mkdir", "made-always"}})) << r;
  const std::string approved = config_ / "anvil/rules/approved.toml";
  ASSERT_TRUE(Exists(approved));
  EXPECT_NE(ReadFile(approved).find(R"(pattern = ["mkdir", "made-always"])"), std::string::npos)
      << ReadFile(approved);
  // Written atomically: no temporary file beside it.
  EXPECT_EQ(Shell("test $(ls -A " + ShellQuote(config_ / "anvil/rules") + " | wc -l) = 2"), 0);

  Shell("rmdir " + ShellQuote(ws_ / "made-always"));
  c->on_request = [](const json&) -> json { return {{"answer", "never"}}; };
  r = c->Request("anvil/exec", {{"argv", {"mkdir", "made-always"}}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["decision"], "allow") << r;
  EXPECT_TRUE(r["result"]["questions"].empty()) << r;
  EXPECT_TRUE(Exists(ws_ / "made-always"));
  EXPECT_EQ(Approvals(*c).size(), 1u);
}

TEST_F(ServeExec, NeverAndAnErrorReplyAndAWrongAnswerAreRefusals) {
  auto c = StartExec();
  int n = 0;
  c->on_request = [&n](const json& r) -> json {
    if (r["method"] != "anvil/approve") return nullptr;
    switch (n++) {
      case 0:
        return {{"answer", "never"}};
      case 1:
        return ServeClient::ErrorReply(-32603, "the editor failed");
      case 2:
        return {{"answer", "yes please"}};
      default:
        return {{"answer", json::array({"once"})}};
    }
  };
  for (int i = 0; i < 4; ++i) {
    const std::string file = "refused-" + std::to_string(i);
    json r = c->Request("anvil/exec", {{"argv", {"touch", file}}});
    ASSERT_TRUE(r.contains("result")) << r;
    EXPECT_EQ(r["result"]["exit"], 3) << r;
    EXPECT_TRUE(r["result"].value("refused", false)) << r;
    EXPECT_FALSE(r["result"]["ran"]) << r;
    EXPECT_FALSE(Exists(ws_ / file));
  }
  EXPECT_EQ(Approvals(*c).size(), 4u);
  EXPECT_FALSE(Exists(config_ / "anvil/rules/approved.toml"));
  // Attack: the agent asks for a mode that would not ask, in a session the person started as
  // untrusted.
  EXPECT_EQ(c->ShutdownAndExit(), 0);
  c = StartExec({"--approval", "untrusted"});
  for (const char* mode : {"never", "on-request"}) {
    json loose = c->Request("anvil/exec", {{"argv", {"mkdir", "loose"}}, {"approval", mode}});
    EXPECT_EQ(loose["error"]["code"], -32602) << loose;
  }
  EXPECT_FALSE(Exists(ws_ / "loose"));
  EXPECT_TRUE(Approvals(*c).empty());
  // The benign neighbour: in an on-request session a request may use on-failure, which runs
  // what it is not sure of in the sandbox without a question; the output and the command's
  // own status come back.
  EXPECT_EQ(c->ShutdownAndExit(), 0);
  c = StartExec();
  json r = c->Request("anvil/exec",
                      {{"script", "echo out; echo err >&2; exit 4"}, {"approval", "on-failure"}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["exit"], 4) << r;
  EXPECT_EQ(r["result"]["stdout"], "out\n") << r;
  EXPECT_NE(r["result"]["stderr"].get<std::string>().find("err\n"), std::string::npos) << r;
  EXPECT_EQ(Approvals(*c).size(), 0u);
}

TEST_F(ServeExec, ACwdBelowTheWorkspaceKeepsItsNarrowingItsQuestionAndItsAuditLog) {
  // Attack: a cwd in a subdirectory made the subdirectory the sandbox's workspace, so the
  // workspace's Anvil.toml narrowing (here: read-only) and its audit log were left behind, and
  // the person was shown the wrong directory.
  WriteFile(ws_ / "Anvil.toml", "[sandbox]\npolicy = \"read-only\"\n");
  ASSERT_EQ(Shell("mkdir -p " + ShellQuote(ws_ / "sub")), 0);
  WriteFile(ws_ / "sub/keep.txt", "x\n");
  auto c = StartExec();
  c->on_request = [](const json& r) -> json {
    if (r["method"] == "anvil/approve") return {{"answer", "once"}};
    return nullptr;
  };
  json r = c->Request("anvil/exec", {{"argv", {"touch", "made-here"}}, {"cwd", "sub"}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_NE(r["result"]["exit"], 0) << r;
  EXPECT_FALSE(Exists(ws_ / "sub/made-here"));
  auto asked = Approvals(*c);
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0]["params"]["cwd"], std::filesystem::canonical(ws_ / "sub").string())
      << asked[0];
  // Every line in the session's one audit file, naming where the command ran.
  DIR* d = opendir((state_ / "anvil/audit").c_str());
  ASSERT_NE(d, nullptr);
  int files = 0;
  while (dirent* e = readdir(d)) files += e->d_name[0] != '.';
  closedir(d);
  EXPECT_EQ(files, 1);
  bool named = false;
  for (const json& line : AuditLines())
    named = named || line.dump().find("/sub") != std::string::npos;
  EXPECT_TRUE(named);
  // The benign neighbour: reading there works.
  r = c->Request("anvil/exec", {{"argv", {"cat", "keep.txt"}}, {"cwd", "sub"}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["stdout"], "x\n") << r;
}

TEST_F(ServeExec, HarmlessCommandsRunWithoutAQuestionAndTheirOutputComesBack) {
  auto c = StartExec();
  WriteFile(ws_ / "notes/a.txt", "hello\n");
  json r = c->Request("anvil/exec", {{"argv", {"cat", "notes/a.txt"}}, {"approval", "untrusted"}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["decision"], "harmless") << r;
  EXPECT_EQ(r["result"]["exit"], 0) << r;
  EXPECT_EQ(r["result"]["stdout"], "hello\n") << r;
  EXPECT_FALSE(r["result"]["stdout_truncated"]);
  // cwd inside the workspace.
  r = c->Request("anvil/exec", {{"argv", {"cat", "a.txt"}}, {"cwd", "notes"}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["stdout"], "hello\n") << r;
  // Output beyond the cap is dropped and said so.
  r = c->Request("anvil/exec", {{"argv", {"head", "-c", "300000", "/dev/zero"}}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["stdout"].get<std::string>().size(), 256u * 1024) << r["result"]["exit"];
  EXPECT_TRUE(r["result"]["stdout_truncated"]);
  EXPECT_TRUE(Approvals(*c).empty());
}

TEST_F(ServeExec, NoAnswerThenCancelIsCancelledAndNothingIsLeft) {
  auto c = StartExec();
  const std::vector<pid_t> before = ChildrenOf(c->pid());  // the policy gateway
  c->on_request = [](const json&) -> json { return ServeClient::NoReply(); };
  json id = c->SendRequest("anvil/exec", {{"argv", {"touch", "never-answered"}}});
  ASSERT_TRUE(WaitUntil([&] {
    if (auto m = c->Read(std::chrono::milliseconds(50))) c->seen.push_back(*m);
    return !Approvals(*c).empty();
  }));
  // The loop does not wait for the person: other requests are answered meanwhile.
  json status = c->Request("anvil/status");
  ASSERT_TRUE(status.contains("result")) << status;
  json other = c->Request("anvil/exec", {{"argv", {"true"}}});
  ASSERT_TRUE(other.contains("result")) << other;
  EXPECT_EQ(other["result"]["exit"], 0) << other;
  c->Notify("$/cancelRequest", {{"id", id}});
  json r = c->ReadResponse(id);
  ASSERT_TRUE(r.contains("error")) << r;
  EXPECT_EQ(r["error"]["code"], -32800) << r;
  EXPECT_FALSE(Exists(ws_ / "never-answered"));
  EXPECT_EQ(ChildrenOf(c->pid()), before);

  // A running command: cancelled, its whole sandboxed tree gone.
  const std::string marker = "3071.25";
  id = c->SendRequest("anvil/exec", {{"argv", {"sleep", marker}}, {"timeout_ms", 60000}});
  ASSERT_TRUE(WaitUntil([&] { return !ProcessesWith("sleep " + marker).empty(); }));
  c->Notify("$/cancelRequest", {{"id", id}});
  r = c->ReadResponse(id);
  ASSERT_TRUE(r.contains("error")) << r;
  EXPECT_EQ(r["error"]["code"], -32800) << r;
  // Answered after anvil exec exited; a sandbox killed at the end of the grace period goes with
  // its supervisor (its init dies with it), which may take the kernel a moment.
  EXPECT_TRUE(WaitUntil([&] { return ProcessesWith("sleep " + marker).empty(); }));
  EXPECT_EQ(ChildrenOf(c->pid()), before);
  EXPECT_EQ(c->ShutdownAndExit(), 0);
}

TEST_F(ServeExec, ShutdownStopsEveryCommandStillRunning) {
  auto c = StartExec();
  const std::string marker = "3072.5";
  json id = c->SendRequest("anvil/exec", {{"argv", {"sleep", marker}}, {"timeout_ms", 60000}});
  ASSERT_TRUE(WaitUntil([&] { return !ProcessesWith("sleep " + marker).empty(); }));
  json r = c->Request("shutdown");
  EXPECT_TRUE(r.contains("result")) << r;
  // The exec request was answered (an error) before shutdown's.
  bool answered = false;
  for (const auto& m : c->seen) answered = answered || (m.contains("id") && m["id"] == id);
  EXPECT_TRUE(answered);
  c->Notify("exit");
  EXPECT_EQ(c->Wait(), 0);
  EXPECT_TRUE(WaitUntil([&] { return ProcessesWith("sleep " + marker).empty(); }));
}

TEST_F(ServeExec, ARefusedGitWriteOffersWritableGitAndTheRerunSucceeds) {
  ASSERT_EQ(Shell("git init -q " + ShellQuote(ws_.path())), 0);
  auto c = StartExec();
  c->on_request = [](const json& r) -> json {
    if (r["method"] == "anvil/approve") return {{"answer", "once"}};
    return nullptr;
  };
  json r = c->Request("anvil/exec", {{"argv", {"/bin/sh", "-c", "echo x > .git/config-probe"}},
                                     {"approval", "on-failure"}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["exit"], 0) << r;
  EXPECT_EQ(r["result"]["escalation"]["state"], "approved") << r;
  EXPECT_TRUE(Exists(ws_ / ".git/config-probe"));
  // The script has no rule (it writes a file: `none`), so the only question is the widening.
  auto asked = Approvals(*c);
  ASSERT_EQ(asked.size(), 1u);
  const json& widen = asked[0]["params"];
  EXPECT_EQ(widen["kind"], "widening");
  EXPECT_EQ(widen["widening"]["flags"], json({"--writable-git"})) << widen;
  EXPECT_EQ(widen["choices"], json({"once", "never"})) << widen;
  EXPECT_EQ(r["result"]["runs"].size(), 2u) << r;
}

TEST_F(ServeExec, ModeNeverRefusesWithoutAsking) {
  auto c = StartExec({"--approval", "never"});
  c->on_request = [](const json&) -> json { return {{"answer", "once"}}; };
  json r = c->Request("anvil/exec", {{"argv", {"touch", "not-asked"}}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["exit"], 3) << r;
  EXPECT_EQ(r["result"]["mode"], "never") << r;
  EXPECT_FALSE(Exists(ws_ / "not-asked"));
  EXPECT_TRUE(Approvals(*c).empty());
}

TEST_F(ServeExec, BadParamsNameTheField) {
  ASSERT_EQ(symlink("/etc", (ws_ / "out").c_str()), 0);  // a link out of the workspace
  auto c = StartExec();
  const std::vector<std::pair<json, std::string>> cases = {
      {json::object(), "params.argv"},
      {{{"argv", {"a"}}, {"script", "b"}}, "params.argv"},
      {{{"argv", json::array()}}, "params.argv"},
      {{{"argv", {"ls", 1}}}, "params.argv"},
      {{{"script", 7}}, "params.script"},
      {{{"argv", {"ls"}}, {"cwd", "/"}}, "params.cwd"},
      {{{"argv", {"ls"}}, {"cwd", "no-such-dir"}}, "params.cwd"},
      {{{"argv", {"ls"}}, {"cwd", "out"}}, "outside the workspace"},
      {{{"argv", {"ls"}}, {"approval", "sometimes"}}, "params.approval"},
      {{{"argv", {"ls"}}, {"timeout_ms", "10"}}, "params.timeout_ms"},
      {{{"argv", {"ls"}}, {"timeout_ms", -1}}, "params.timeout_ms"},
      {{{"argv", {"ls"}}, {"widen", "everything"}, {"reason", "x"}}, "params.widen"},
      {{{"argv", {"ls"}}, {"widen", "writable-git"}}, "params.reason"},
      {{{"argv", {"ls"}}, {"workDoneToken", json::object()}}, "params.workDoneToken"},
  };
  for (const auto& [params, field] : cases) {
    json r = c->Request("anvil/exec", params);
    ASSERT_TRUE(r.contains("error")) << params << " -> " << r;
    EXPECT_EQ(r["error"]["code"], -32602) << params << " -> " << r;
    EXPECT_NE(r["error"]["message"].get<std::string>().find(field), std::string::npos)
        << params << " -> " << r;
  }
  // The server keeps serving.
  json r = c->Request("anvil/exec", {{"argv", {"true"}}});
  ASSERT_TRUE(r.contains("result")) << r;
  EXPECT_EQ(r["result"]["exit"], 0) << r;
}

}  // namespace
}  // namespace serve_exec_test
}  // namespace anvil::testing
