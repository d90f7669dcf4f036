// The ask-fd line protocol: how `anvil exec --ask-fd N` asks its questions through a front end
// other than the terminal (`anvil serve` forwards them to the editor as anvil/approve). One JSON
// object per line, '\n'-terminated, over descriptor N (docs/agents.md, "Asking through a
// descriptor"):
//
//   anvil exec -> front end   {"type":"question","id":1,"question":{title, text, kind, command,
//                               cwd, mode, sandbox, reason, widening?, agent_reason?, choices}}
//   front end -> anvil exec   {"id":1,"answer":"once"|"always"|"never"|null}
//   anvil exec -> front end   {"type":"report","report":{...}}   (last line: anvil exec --json's)
//
// anvil exec waits for the answer to each question before it goes on. Anything but a
// well-formed answer to that question, among the choices it offered, is a refusal: invalid
// JSON, another id, a wrong type, a line longer than kMaxAnswerLineBytes, end of file. Pure; the
// table tests are in tests/unit/ask_protocol_test.cc.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agent/exec_flow.h"
#include "common/result.h"

namespace anvil::agent {

// The longest answer line anvil exec reads (an answer is a few dozen bytes).
inline constexpr std::size_t kMaxAnswerLineBytes = 4096;
// The longest line a front end reads from anvil exec (a question, or the final report).
inline constexpr std::size_t kMaxAskMessageBytes = 4u << 20;

// What a question offers: {"once", "always", "never"}, or {"once", "never"} when "always" has
// no rule to write (a widening, or a command without a prefix to allow).
std::vector<std::string> AnswerChoices(const Question& question);

// anvil exec's side: the question line and the report line (no newline), and the answer read
// back for question `id` (nullopt: refused).
std::string QuestionLine(std::uint64_t id, const Question& question);
std::string ReportLine(const nlohmann::json& report);
std::optional<ApprovalAnswer> ParseAnswerLine(std::string_view line, std::uint64_t id,
                                              const std::vector<std::string>& choices);

// The front end's side: one line from anvil exec, and the answer line it writes back (an
// absent answer is written as null: no answer came).
struct AskMessage {
  enum class Kind : std::uint8_t { kQuestion, kReport };
  Kind kind = Kind::kQuestion;
  std::uint64_t id = 0;     // kQuestion
  nlohmann::json question;  // kQuestion: an object with string title, text and an array choices
  nlohmann::json report;    // kReport: an object
};
Result<AskMessage> ParseAskMessage(std::string_view line);
std::string AnswerLine(std::uint64_t id, std::optional<ApprovalAnswer> answer);

// An editor's reply to anvil/approve: only {"answer": CHOICE} with CHOICE among `choices` is
// an answer; an error, a missing or unknown answer, anything else: nullopt (refused).
std::optional<ApprovalAnswer> AnswerFromReply(const nlohmann::json* result,
                                              const nlohmann::json* error,
                                              const nlohmann::json& choices);

// Splits a byte stream into lines of at most `max` bytes. A longer line is an error (the
// stream cannot be trusted to resynchronise): Overflowed() stays true.
class LineSplitter {
 public:
  explicit LineSplitter(std::size_t max) : max_(max) {}
  void Append(std::string_view bytes);
  std::optional<std::string> Next();
  bool Overflowed() const { return overflow_; }

 private:
  std::size_t max_;
  std::string buffer_;
  bool overflow_ = false;
};

}  // namespace anvil::agent
