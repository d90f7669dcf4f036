// Approval modes and the user's answers: what happens to a command once the rules have spoken
// (command_rules.h). Decisions are pure; only RecordAlwaysRules touches the filesystem.
//
// The modes are Codex's:
//   untrusted   only harmless or allowed commands run without a question; the rest is asked
//   on-failure  run sandboxed; a widening is asked for only after the sandbox refused something
//   on-request  run sandboxed; the agent may ask for a widening, with a reason
//   never       never ask: whatever would be asked is refused, and refusals are final
// In every mode a forbidden command is refused and a prompt rule (or, while any layer has a
// prompt or forbidden rule, a shell script the parser does not fully understand) is asked, or
// refused where nobody can be asked. Every command that runs, runs in the sandbox: "allow" means
// "no question", never "unsandboxed".
//
// Answers: once (run this time), always (write an allow rule for the command's prefix, with the
// command as its match example, into the user's rules, then run), never (refuse this time).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "policy/command_rules.h"

namespace anvil {

enum class ApprovalMode : std::uint8_t { kUntrusted, kOnFailure, kOnRequest, kNever };
inline constexpr ApprovalMode kApprovalModes[] = {ApprovalMode::kUntrusted,
                                                  ApprovalMode::kOnFailure,
                                                  ApprovalMode::kOnRequest, ApprovalMode::kNever};
std::string_view ToString(ApprovalMode mode);  // "untrusted", "on-failure", "on-request", "never"
std::optional<ApprovalMode> ParseApprovalMode(std::string_view text);

// A question beyond the rules: whether the sandbox may be widened for this command.
enum class Escalation : std::uint8_t {
  kNone,
  kAgentRequest,         // the agent asks up front, with a reason (on-request)
  kAfterSandboxRefusal,  // the sandbox refused something during the run (on-failure)
};

enum class ApprovalAction : std::uint8_t { kRun, kAsk, kRefuse };
std::string_view ToString(ApprovalAction action);  // "run", "ask", "refuse"

struct ApprovalDecision {
  ApprovalAction action = ApprovalAction::kRefuse;
  std::string reason;        // one line: why
  std::string how_to_allow;  // one line for a refusal: the way to make it run; else empty
  // For kAsk: the prefixes an "always" answer would write as allow rules (the commands that had
  // no rule, each whole). Empty when "always" cannot help: a prompt rule applies (the strictest
  // rule wins, so an allow rule would change nothing), the command is not understood, or the
  // question is about widening the sandbox.
  std::vector<std::vector<std::string>> always_prefixes;
};

// `can_ask`: whether a person can be asked here (a terminal, the editor, an MCP client that
// declared elicitation).
ApprovalDecision DecideApproval(const CommandVerdict& verdict, ApprovalMode mode, bool can_ask,
                                Escalation escalation = Escalation::kNone);

enum class ApprovalAnswer : std::uint8_t { kOnce, kAlways, kNever };
std::string_view ToString(ApprovalAnswer answer);  // "once", "always", "never"
std::optional<ApprovalAnswer> ParseApprovalAnswer(std::string_view text);

// One allow rule an "always" answer writes.
struct AlwaysRule {
  std::vector<std::string> prefix;   // the pattern, all literals
  std::vector<std::string> example;  // the command answered; the rule's match example
  std::string justification;
};

struct AnswerEffect {
  ApprovalAction action = ApprovalAction::kRefuse;  // kRun for once/always, kRefuse for never
  std::vector<AlwaysRule> rules;                    // what to write (always, when it can help)
  std::string note;                                 // one line for the user and the audit log
};

// Pure. `when` goes into the written rules' justification (an ISO 8601 time).
AnswerEffect ApplyAnswer(const ApprovalDecision& asked, ApprovalAnswer answer,
                         std::string_view when);

// Whether `prefix` may be written as an "always" rule for `command`. Such a rule is exact
// (`exact = true`: no word may follow), so `prefix` must be the whole command, in UTF-8 (TOML can
// hold nothing else), and the program must not be one that runs another program not fixed by
// its command line (a shell, env, nice, timeout, xargs, busybox, sudo, …: RunsAnotherProgram).
Status ValidateAlwaysPrefix(const std::vector<std::string>& prefix,
                            const std::vector<std::string>& command);

inline constexpr std::string_view kApprovedRulesFile = "approved.toml";

// The TOML appended for one rule.
std::string RenderAlwaysRule(const AlwaysRule& rule);

// Appends `rules` to <user_rules_dir>/approved.toml (the directory is made 0700 if missing):
// under an exclusive lock on the directory (two sessions answering at once both land), reads
// the file, appends the rules not already there, checks that the new text loads (examples
// included) and replaces the file atomically (temporary file, fsync, rename): a crash leaves the
// old file or the new one, never a torn one. A symlinked approved.toml is refused rather than
// replaced by a file.
Status RecordAlwaysRules(const std::string& user_rules_dir, const std::vector<AlwaysRule>& rules);

// One audit line (docs/protocol.md, "Audit log"), as JSON text without the newline.
struct CommandAuditContext {
  std::string session;
  std::string requester;  // who asked to run it: an agent's name, a plugin id
  std::string cwd;
  ApprovalMode mode = ApprovalMode::kUntrusted;
  std::uint64_t id = 0;
  std::uint64_t duration_us = 0;
};
// op "command": the decision. verdict "allow" (run), "ask", or "deny" (refused).
std::string CommandDecisionAuditLine(const CommandAuditContext& context,
                                     const CommandVerdict& verdict,
                                     const ApprovalDecision& decision, double unix_seconds);
// op "command.answer": the person's answer. verdict "allow" (once, always) or "deny" (never).
std::string CommandAnswerAuditLine(const CommandAuditContext& context,
                                   const CommandVerdict& verdict, ApprovalAnswer answer,
                                   const AnswerEffect& effect, double unix_seconds);

}  // namespace anvil
