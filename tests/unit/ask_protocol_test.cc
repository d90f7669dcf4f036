// The ask-fd line protocol (agent/ask_protocol.h) and anvil/exec's params and anvil/approve
// mapping (session/exec_request.h): well-formed answers only; everything else, from invalid
// JSON to a huge line or a wrong type, is a refusal or a clear error, never a crash.
#include "agent/ask_protocol.h"

#include <gtest/gtest.h>

#include "session/exec_request.h"

namespace anvil {
namespace ask_protocol_test {
namespace {

using agent::AskMessage;
using nlohmann::json;

agent::Question CommandQuestion(bool always) {
  agent::Question q;
  q.kind = agent::Question::Kind::kCommand;
  q.argv = {"touch", "x\x1b[31m"};
  q.cwd = "/w";
  q.mode = "on-request";
  q.sandbox = "workspace-write, network none";
  q.reason = "no rule matches";
  if (always) q.always_prefixes = {{"touch", "x"}};
  return q;
}

TEST(AskProtocol, ChoicesAreWhatTheQuestionOffers) {
  EXPECT_EQ(agent::AnswerChoices(CommandQuestion(true)),
            (std::vector<std::string>{"once", "always", "never"}));
  EXPECT_EQ(agent::AnswerChoices(CommandQuestion(false)),
            (std::vector<std::string>{"once", "never"}));
  agent::Question widen = CommandQuestion(true);
  widen.kind = agent::Question::Kind::kWidening;
  widen.widening = agent::Widening{agent::WideningKind::kWritableGit, ""};
  EXPECT_EQ(agent::AnswerChoices(widen), (std::vector<std::string>{"once", "never"}));
}

TEST(AskProtocol, AQuestionLineRoundTripsAndItsTextIsSanitized) {
  const std::string line = agent::QuestionLine(7, CommandQuestion(true));
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto m = agent::ParseAskMessage(line);
  ASSERT_TRUE(m) << m.error().ToString();
  EXPECT_EQ(m->kind, AskMessage::Kind::kQuestion);
  EXPECT_EQ(m->id, 7u);
  EXPECT_EQ(m->question["choices"], json({"once", "always", "never"}));
  EXPECT_EQ(m->question["mode"], "on-request");
  EXPECT_EQ(m->question["text"].get<std::string>().find('\x1b'), std::string::npos);

  const json approve = session::ApproveParams(m->question, 12);
  EXPECT_EQ(approve["argv"], json({"touch", "x\x1b[31m"}));  // exact, as data
  EXPECT_EQ(approve["text"], m->question["text"]);
  EXPECT_EQ(approve["cwd"], "/w");
  EXPECT_EQ(approve["mode"], "on-request");
  EXPECT_EQ(approve["request"], 12);
  EXPECT_TRUE(approve["widening"].is_null());
  EXPECT_TRUE(approve["agentReason"].is_null());
  EXPECT_EQ(approve["choices"], json({"once", "always", "never"}));
}

TEST(AskProtocol, OnlyAWellFormedAnswerToThisQuestionIsAnAnswer) {
  const std::vector<std::string> all = {"once", "always", "never"};
  const std::vector<std::string> no_always = {"once", "never"};
  EXPECT_EQ(agent::ParseAnswerLine(R"({"id":3,"answer":"once"})", 3, all), ApprovalAnswer::kOnce);
  EXPECT_EQ(agent::ParseAnswerLine(R"({"id":3,"answer":"always"})", 3, all),
            ApprovalAnswer::kAlways);
  EXPECT_EQ(agent::ParseAnswerLine(R"({"id":3,"answer":"never"})", 3, all), ApprovalAnswer::kNever);
  EXPECT_EQ(agent::ParseAnswerLine(agent::AnswerLine(3, ApprovalAnswer::kOnce), 3, all),
            ApprovalAnswer::kOnce);
  const std::vector<std::string> refused = {
      "",
      "once",
      "not json {",
      R"([1,2])",
      R"({"id":3})",
      R"({"id":4,"answer":"once"})",
      R"({"id":"3","answer":"once"})",
      R"({"id":-3,"answer":"once"})",
      R"({"id":3,"answer":"ONCE"})",
      R"({"id":3,"answer":["once"]})",
      R"({"id":3,"answer":null})",
      R"({"id":3,"answer":true})",
      R"({"id":3,"answer":{"a":[[[[[[[[[[1]]]]]]]]]]}})",
      agent::AnswerLine(3, std::nullopt),
      R"({"id":3,"answer":"once")" + std::string(8000, ' ') + "}",
  };
  for (const auto& line : refused) {
    EXPECT_FALSE(agent::ParseAnswerLine(line, 3, all)) << line.substr(0, 80);
  }
  // "always" when it was not offered is not an answer either.
  EXPECT_FALSE(agent::ParseAnswerLine(R"({"id":3,"answer":"always"})", 3, no_always));
}

TEST(AskProtocol, BadLinesFromAnvilExecAreErrorsNeverCrashes) {
  const std::vector<std::string> bad = {
      "",
      "{",
      "null",
      R"({"type":"question"})",
      R"({"type":"question","id":1})",
      R"({"type":"question","id":1,"question":{"title":"t","text":"x"}})",
      R"({"type":"question","id":1,"question":{"title":"t","text":"x","choices":[]}})",
      R"({"type":"question","id":1,"question":{"title":"t","text":"x","choices":["maybe"]}})",
      R"({"type":"question","id":1,"question":{"title":1,"text":"x","choices":["once"]}})",
      R"({"type":"question","id":-1,"question":{"title":"t","text":"x","choices":["once"]}})",
      R"({"type":"report"})",
      R"({"type":"report","report":[]})",
      R"({"type":"other"})",
      R"({"type":7})",
      std::string(100000, '[') + std::string(100000, ']'),
  };
  for (const auto& line : bad) {
    EXPECT_FALSE(agent::ParseAskMessage(line)) << line.substr(0, 80);
  }
  EXPECT_FALSE(agent::ParseAskMessage(std::string(agent::kMaxAskMessageBytes + 1, ' ')));
  auto report = agent::ParseAskMessage(agent::ReportLine({{"exit", 0}}));
  ASSERT_TRUE(report);
  EXPECT_EQ(report->kind, AskMessage::Kind::kReport);
  EXPECT_EQ(report->report["exit"], 0);
}

TEST(AskProtocol, AnEditorsReplyIsAnAnswerOnlyWhenItIsOneOfTheChoices) {
  const json choices = {"once", "never"};
  const json once = {{"answer", "once"}};
  const json always = {{"answer", "always"}};
  const json error = {{"code", -32603}, {"message", "x"}};
  const json wrong = {{"answer", 1}};
  const json decision = {{"decision", "approve"}};
  const json text = "once";
  EXPECT_EQ(agent::AnswerFromReply(&once, nullptr, choices), ApprovalAnswer::kOnce);
  EXPECT_FALSE(agent::AnswerFromReply(&always, nullptr, choices));
  EXPECT_FALSE(agent::AnswerFromReply(nullptr, &error, choices));
  EXPECT_FALSE(agent::AnswerFromReply(&once, &error, choices));
  EXPECT_FALSE(agent::AnswerFromReply(nullptr, nullptr, choices));
  EXPECT_FALSE(agent::AnswerFromReply(&wrong, nullptr, choices));
  EXPECT_FALSE(agent::AnswerFromReply(&decision, nullptr, choices));
  EXPECT_FALSE(agent::AnswerFromReply(&text, nullptr, choices));
  EXPECT_FALSE(agent::AnswerFromReply(&once, nullptr, json("once")));
}

TEST(AskProtocol, LinesAreSplitAndAnOverlongLineStopsTheStream) {
  agent::LineSplitter s(8);
  s.Append("ab\ncd");
  EXPECT_EQ(s.Next(), "ab");
  EXPECT_FALSE(s.Next());
  s.Append("e\n\n");
  EXPECT_EQ(s.Next(), "cde");
  EXPECT_EQ(s.Next(), "");
  EXPECT_FALSE(s.Overflowed());
  s.Append("123456789");
  EXPECT_TRUE(s.Overflowed());
  EXPECT_FALSE(s.Next());
  s.Append("\nok\n");
  EXPECT_FALSE(s.Next());  // never resynchronised

  agent::LineSplitter t(4);
  t.Append("ok\n123456\n");
  EXPECT_EQ(t.Next(), "ok");
  EXPECT_TRUE(t.Overflowed());
  EXPECT_FALSE(t.Next());
}

std::string FakeCanonical(const std::string& path) {
  if (path == "/w" || path == "/w/sub" || path == "/w/./sub") return path == "/w" ? "/w" : "/w/sub";
  if (path == "/w/link-out") return "/etc";
  if (path == "/other") return "/other";
  if (path == "/w2") return "/w2";
  return "";
}

TEST(ExecRequest, ParamsBecomeAnvilExecsCommandLine) {
  const session::ExecDefaults d{"/w", ApprovalMode::kUntrusted, std::chrono::milliseconds(1500)};
  const session::ExecDefaults on_request{"/w", ApprovalMode::kOnRequest,
                                         std::chrono::milliseconds(1500)};
  auto call = session::ParseExecParams({{"argv", {"ls", "-a"}}}, d, FakeCanonical);
  ASSERT_TRUE(call) << call.error().ToString();
  EXPECT_EQ(call->cwd, "/w");
  EXPECT_EQ(call->mode, ApprovalMode::kUntrusted);
  EXPECT_EQ(call->exec_args,
            (std::vector<std::string>{"exec", "--ask-fd", "3", "--requester", "anvil serve",
                                      "--approval", "untrusted", "--cwd", "/w", "--timeout",
                                      "1.500", "--", "ls", "-a"}));
  call = session::ParseExecParams({{"script", "make && make test"},
                                   {"cwd", "sub"},
                                   {"approval", "on-failure"},
                                   {"widen", "allow-host=example.org"},
                                   {"reason", "fetch"},
                                   {"timeout_ms", 60000},
                                   {"workDoneToken", "t1"}},
                                  on_request, FakeCanonical);
  ASSERT_TRUE(call) << call.error().ToString();
  EXPECT_EQ(call->argv, (std::vector<std::string>{"sh", "-c", "make && make test"}));
  EXPECT_EQ(call->cwd, "/w/sub");
  EXPECT_EQ(call->progress_token, "t1");
  EXPECT_EQ(call->exec_args,
            (std::vector<std::string>{"exec",        "--ask-fd",    "3",
                                      "--requester", "anvil serve", "--approval",
                                      "on-failure",  "--cwd",       "/w",
                                      "--timeout",   "60.000",      "--workdir",
                                      "/w/sub",      "--widen",     "allow-host=example.org",
                                      "--reason",    "fetch",       "--",
                                      "sh",          "-c",          "make && make test"}));
  // An option-looking command word stays the command: it comes after "--".
  call = session::ParseExecParams({{"argv", {"--help"}}}, d, FakeCanonical);
  ASSERT_TRUE(call);
  EXPECT_EQ(call->exec_args.back(), "--help");
  EXPECT_EQ(call->exec_args[call->exec_args.size() - 2], "--");
}

TEST(ExecRequest, ARequestNeverAsksLessThanTheSessionsMode) {
  using M = ApprovalMode;
  const M all[] = {M::kUntrusted, M::kOnFailure, M::kOnRequest, M::kNever};
  for (M session : all) {
    for (M requested : all) {
      const bool middle = session == M::kOnRequest || session == M::kOnFailure;
      EXPECT_EQ(session::ModeMayReplace(session, requested), requested == session || middle)
          << ToString(session) << " <- " << ToString(requested);
    }
  }
  // Attack: the agent asks for a mode that runs what the person's "untrusted" would ask about.
  const session::ExecDefaults untrusted{"/w", ApprovalMode::kUntrusted,
                                        std::chrono::milliseconds(1000)};
  for (const char* mode : {"on-request", "on-failure", "never"}) {
    auto call =
        session::ParseExecParams({{"argv", {"ls"}}, {"approval", mode}}, untrusted, FakeCanonical);
    ASSERT_FALSE(call) << mode;
    EXPECT_NE(call.error().message.find("params.approval"), std::string::npos);
    EXPECT_NE(call.error().message.find("would ask less"), std::string::npos);
  }
  EXPECT_TRUE(session::ParseExecParams({{"argv", {"ls"}}, {"approval", "untrusted"}}, untrusted,
                                       FakeCanonical));
}

TEST(ExecRequest, BadParamsNameTheField) {
  const session::ExecDefaults d{"/w", ApprovalMode::kOnRequest, std::chrono::milliseconds(1000)};
  const std::vector<std::pair<json, std::string>> cases = {
      {json::object(), "params.argv"},
      {{{"argv", {"a"}}, {"script", "b"}}, "exactly one"},
      {{{"argv", "ls"}}, "params.argv"},
      {{{"argv", {""}}}, "params.argv[0]"},
      {{{"argv", {"ls", nullptr}}}, "params.argv"},
      {{{"argv", {std::string("a\0b", 3)}}}, "NUL"},
      {{{"argv", json::array({std::string(300000, 'x')})}}, "longer than"},
      {{{"script", ""}}, "params.script"},
      {{{"argv", {"ls"}}, {"cwd", 3}}, "params.cwd"},
      {{{"argv", {"ls"}}, {"cwd", "/other"}}, "outside the workspace"},
      {{{"argv", {"ls"}}, {"cwd", "/w2"}}, "outside the workspace"},
      {{{"argv", {"ls"}}, {"cwd", "link-out"}}, "outside the workspace"},
      {{{"argv", {"ls"}}, {"cwd", "missing"}}, "not an existing directory"},
      {{{"argv", {"ls"}}, {"approval", true}}, "params.approval"},
      {{{"argv", {"ls"}}, {"timeout_ms", 1.5}}, "params.timeout_ms"},
      {{{"argv", {"ls"}}, {"timeout_ms", 0}}, "params.timeout_ms"},
      {{{"argv", {"ls"}}, {"timeout_ms", 100000000000LL}}, "params.timeout_ms"},
      {{{"argv", {"ls"}}, {"widen", 1}, {"reason", "r"}}, "params.widen"},
      {{{"argv", {"ls"}}, {"widen", "writable-git"}, {"reason", ""}}, "params.reason"},
      {{{"argv", {"ls"}}, {"reason", "r"}}, "params.reason goes with params.widen"},
      {{{"argv", {"ls"}}, {"workDoneToken", 1.5}}, "params.workDoneToken"},
  };
  for (const auto& [params, needle] : cases) {
    auto call = session::ParseExecParams(params, d, FakeCanonical);
    ASSERT_FALSE(call) << params.dump().substr(0, 100);
    EXPECT_NE(call.error().message.find(needle), std::string::npos)
        << params.dump().substr(0, 100) << " -> " << call.error().message;
  }
  json many = json::array();
  for (int i = 0; i < 5000; ++i) many.push_back("a");
  EXPECT_FALSE(session::ParseExecParams({{"argv", many}}, d, FakeCanonical));
}

}  // namespace
}  // namespace ask_protocol_test
}  // namespace anvil
