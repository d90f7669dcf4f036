#include "agent/ask_protocol.h"

#include <algorithm>

#include "common/json_depth.h"

namespace anvil::agent {
namespace {

using json = nlohmann::json;

std::string Dump(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

bool IsChoice(const std::string& s) { return s == "once" || s == "always" || s == "never"; }

bool Offers(const json& choices, const std::string& answer) {
  if (!choices.is_array()) return false;
  return std::any_of(choices.begin(), choices.end(),
                     [&](const json& c) { return c.is_string() && c == answer; });
}

}  // namespace

std::vector<std::string> AnswerChoices(const Question& question) {
  if (question.kind == Question::Kind::kCommand && !question.always_prefixes.empty()) {
    return {"once", "always", "never"};
  }
  return {"once", "never"};
}

std::string QuestionLine(std::uint64_t id, const Question& question) {
  json q = question.ToJson();
  q["title"] = question.kind == Question::Kind::kCommand
                   ? "Anvil: an agent wants to run a command"
                   : "Anvil: widen the sandbox for this command?";
  q["text"] = question.Text();
  q["mode"] = question.mode;
  q["choices"] = AnswerChoices(question);
  return Dump({{"type", "question"}, {"id", id}, {"question", std::move(q)}});
}

std::string ReportLine(const json& report) {
  return Dump({{"type", "report"}, {"report", report}});
}

std::optional<ApprovalAnswer> ParseAnswerLine(std::string_view line, std::uint64_t id,
                                              const std::vector<std::string>& choices) {
  if (line.size() > kMaxAnswerLineBytes) return std::nullopt;
  const json j = ParseBoundedJson(line, nullptr, 4);
  if (!j.is_object()) return std::nullopt;
  auto id_it = j.find("id");
  if (id_it == j.end() || !id_it->is_number_unsigned() || id_it->get<std::uint64_t>() != id) {
    return std::nullopt;
  }
  auto answer_it = j.find("answer");
  if (answer_it == j.end() || !answer_it->is_string()) return std::nullopt;
  const std::string answer = answer_it->get<std::string>();
  if (std::find(choices.begin(), choices.end(), answer) == choices.end()) return std::nullopt;
  return ParseApprovalAnswer(answer);
}

Result<AskMessage> ParseAskMessage(std::string_view line) {
  if (line.size() > kMaxAskMessageBytes) {
    return Fail("invalid",
                "an ask-fd line is longer than " + std::to_string(kMaxAskMessageBytes) + " bytes");
  }
  bool too_deep = false;
  const json j = ParseBoundedJson(line, &too_deep);
  if (!j.is_object()) {
    return Fail("invalid", too_deep ? "an ask-fd line is nested too deep"
                                    : "an ask-fd line is not a JSON object");
  }
  auto type = j.find("type");
  if (type == j.end() || !type->is_string()) {
    return Fail("invalid", "an ask-fd line has no string \"type\"");
  }
  AskMessage out;
  if (*type == "report") {
    auto report = j.find("report");
    if (report == j.end() || !report->is_object()) {
      return Fail("invalid", "an ask-fd report has no object \"report\"");
    }
    out.kind = AskMessage::Kind::kReport;
    out.report = *report;
    return out;
  }
  if (*type != "question") {
    return Fail("invalid", "an ask-fd line has an unknown type (fix: question or report)");
  }
  auto id = j.find("id");
  if (id == j.end() || !id->is_number_unsigned()) {
    return Fail("invalid", "an ask-fd question has no unsigned integer \"id\"");
  }
  auto q = j.find("question");
  if (q == j.end() || !q->is_object()) {
    return Fail("invalid", "an ask-fd question has no object \"question\"");
  }
  for (const char* key : {"title", "text"}) {
    auto it = q->find(key);
    if (it == q->end() || !it->is_string()) {
      return Fail("invalid", std::string("an ask-fd question has no string \"") + key + "\"");
    }
  }
  auto choices = q->find("choices");
  if (choices == q->end() || !choices->is_array() || choices->empty() || choices->size() > 3 ||
      !std::all_of(choices->begin(), choices->end(),
                   [](const json& c) { return c.is_string() && IsChoice(c.get<std::string>()); })) {
    return Fail("invalid",
                "an ask-fd question's \"choices\" must be some of \"once\", \"always\", \"never\"");
  }
  out.kind = AskMessage::Kind::kQuestion;
  out.id = id->get<std::uint64_t>();
  out.question = *q;
  return out;
}

std::string AnswerLine(std::uint64_t id, std::optional<ApprovalAnswer> answer) {
  return Dump({{"id", id}, {"answer", answer ? json(ToString(*answer)) : json(nullptr)}});
}

std::optional<ApprovalAnswer> AnswerFromReply(const json* result, const json* error,
                                              const json& choices) {
  if (error != nullptr || result == nullptr || !result->is_object()) return std::nullopt;
  auto it = result->find("answer");
  if (it == result->end() || !it->is_string()) return std::nullopt;
  const std::string answer = it->get<std::string>();
  if (!Offers(choices, answer)) return std::nullopt;
  return ParseApprovalAnswer(answer);
}

void LineSplitter::Append(std::string_view bytes) {
  if (overflow_) return;
  buffer_.append(bytes);
  // Overflow only when no complete line fits: a full line followed by more is fine.
  const auto nl = buffer_.find('\n');
  if ((nl == std::string::npos && buffer_.size() > max_) ||
      (nl != std::string::npos && nl > max_)) {
    overflow_ = true;
    buffer_.clear();
  }
}

std::optional<std::string> LineSplitter::Next() {
  if (overflow_) return std::nullopt;
  const auto nl = buffer_.find('\n');
  if (nl == std::string::npos) return std::nullopt;
  std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  // The next line must also fit.
  const auto next = buffer_.find('\n');
  if ((next == std::string::npos && buffer_.size() > max_) ||
      (next != std::string::npos && next > max_)) {
    overflow_ = true;
    buffer_.clear();
  }
  return line;
}

}  // namespace anvil::agent
