#include "policy/approval.h"

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>

#include "fs/file_facts.h"
#include "fs/file_io.h"
#include "fs/utf8.h"
#include "fs/workspace_path.h"
#include "policy/consent.h"
#include "policy/shell_words.h"
#include "policy/toml_internal.h"

namespace anvil {
namespace {

constexpr std::size_t kMaxAuditArgs = 256;
constexpr std::size_t kMaxAuditArgBytes = 4096;
constexpr std::size_t kMaxAuditTargetBytes = 1000;

bool IsUtf8(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t c = 0;
    const std::size_t len = fs_internal::DecodeUtf8(text, pos, &c);
    if (len == 0) return false;
    pos += len;
  }
  return true;
}

std::string Shown(const std::vector<std::string>& argv) {
  return "`" + SanitizeForDisplay(JoinShellWords(argv), 120) + "`";
}

std::string TomlWords(const std::vector<std::string>& words) {
  std::string out = "[";
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0) out += ", ";
    out += policy_internal::TomlBasicString(words[i]);
  }
  return out + "]";
}

// How to lift a rule's forbidding or prompting, by who owns the rule.
std::string ChangeTheRule(const CommandRule& rule) {
  switch (rule.layer) {
    case RuleLayer::kAdmin:
      return "ask the administrator to change the rule at " + rule.Where();
    case RuleLayer::kWorkspace:
      return "remove the rule at " + rule.Where() + " (the workspace's own rules)";
    case RuleLayer::kUser:
      break;
  }
  return "change or remove the rule at " + rule.Where();
}

std::string AllowRuleHint(const std::vector<std::string>& argv) {
  return "add [[rule]] pattern = " + SanitizeForDisplay(TomlWords(argv), 200) +
         ", decision = \"allow\" (with a justification) to ~/.config/anvil/rules/*.toml";
}

// Whether a judged command no rule decided is more than an argv an allow rule could allow: it
// writes a file, runs with a script's variables, or has words that expand (shell_words.h).
bool BeyondAllowRules(const CommandVerdict& verdict) {
  for (const auto& seg : verdict.segments) {
    if (seg.segment.role != SegmentRole::kJudged || seg.decision || seg.harmless != nullptr) {
      continue;
    }
    if (seg.segment.writes_file || seg.segment.environment ||
        std::any_of(seg.segment.argv.begin(), seg.segment.argv.end(), IsWildcardWord)) {
      return true;
    }
  }
  return false;
}

// The commands an "always" answer would allow: every judged one that no rule decided and that
// is not harmless, if each can be written as a rule. None for a command not fully understood:
// its segments stop where reading stopped, and an allow rule never applies to it.
std::vector<std::vector<std::string>> AlwaysPrefixes(const CommandVerdict& verdict) {
  std::vector<std::vector<std::string>> out;
  if (!verdict.understood || BeyondAllowRules(verdict)) return out;
  for (const auto& seg : verdict.segments) {
    if (seg.segment.role != SegmentRole::kJudged || seg.decision || seg.harmless != nullptr) {
      continue;
    }
    // An allow rule would not speak for a program the sandboxed command may put first on PATH
    // (program_lookup.h): "always" would write a rule that never helps.
    if (!seg.allow_blocked.empty()) return {};
    if (!ValidateAlwaysPrefix(seg.segment.argv, seg.segment.argv)) return {};
    if (std::find(out.begin(), out.end(), seg.segment.argv) == out.end()) {
      out.push_back(seg.segment.argv);
    }
  }
  return out;
}

ApprovalDecision Refuse(std::string reason, std::string how) {
  return {ApprovalAction::kRefuse, std::move(reason), std::move(how), {}};
}

ApprovalDecision DecideEscalation(const CommandVerdict& verdict, ApprovalMode mode, bool can_ask,
                                  Escalation escalation) {
  const std::string widen = "widening the sandbox for " + Shown(verdict.argv);
  if (mode == ApprovalMode::kNever) {
    return Refuse("approval mode never: " + widen + " is not asked for",
                  "run with --approval on-request or on-failure to be asked");
  }
  if (escalation == Escalation::kAgentRequest && mode == ApprovalMode::kOnFailure) {
    return Refuse(
        "approval mode on-failure: a widening is offered only after the sandbox "
        "refused something",
        "run the command; if the sandbox refuses it, the widening is offered then");
  }
  if (escalation == Escalation::kAfterSandboxRefusal && mode == ApprovalMode::kOnRequest) {
    return Refuse("approval mode on-request: the sandbox's refusal is reported to the agent",
                  "the agent may ask for the widening, with a reason");
  }
  if (!can_ask) {
    return Refuse(widen + " needs an answer and nobody can be asked here",
                  "run it where Anvil can ask (a terminal, the editor, an MCP client with "
                  "elicitation)");
  }
  return {ApprovalAction::kAsk, widen + " needs an answer", "", {}};
}

}  // namespace

std::string_view ToString(ApprovalMode mode) {
  switch (mode) {
    case ApprovalMode::kUntrusted:
      return "untrusted";
    case ApprovalMode::kOnFailure:
      return "on-failure";
    case ApprovalMode::kOnRequest:
      return "on-request";
    case ApprovalMode::kNever:
      return "never";
  }
  return "never";
}

std::optional<ApprovalMode> ParseApprovalMode(std::string_view text) {
  for (ApprovalMode mode : kApprovalModes) {
    if (ToString(mode) == text) return mode;
  }
  return std::nullopt;
}

std::string_view ToString(ApprovalAction action) {
  switch (action) {
    case ApprovalAction::kRun:
      return "run";
    case ApprovalAction::kAsk:
      return "ask";
    case ApprovalAction::kRefuse:
      return "refuse";
  }
  return "refuse";
}

std::string_view ToString(ApprovalAnswer answer) {
  switch (answer) {
    case ApprovalAnswer::kOnce:
      return "once";
    case ApprovalAnswer::kAlways:
      return "always";
    case ApprovalAnswer::kNever:
      return "never";
  }
  return "never";
}

std::optional<ApprovalAnswer> ParseApprovalAnswer(std::string_view text) {
  for (ApprovalAnswer answer :
       {ApprovalAnswer::kOnce, ApprovalAnswer::kAlways, ApprovalAnswer::kNever}) {
    if (ToString(answer) == text) return answer;
  }
  return std::nullopt;
}

ApprovalDecision DecideApproval(const CommandVerdict& verdict, ApprovalMode mode, bool can_ask,
                                Escalation escalation) {
  // A forbidden command is refused whatever the mode, and a widening cannot lift that.
  if (verdict.outcome == RulesOutcome::kForbidden) {
    return Refuse(verdict.reason, ChangeTheRule(*verdict.rule));
  }
  if (escalation != Escalation::kNone) {
    return DecideEscalation(verdict, mode, can_ask, escalation);
  }
  switch (verdict.outcome) {
    case RulesOutcome::kForbidden:
      break;
    case RulesOutcome::kAllow:
    case RulesOutcome::kHarmless:
      return {ApprovalAction::kRun, verdict.reason, "", {}};
    case RulesOutcome::kPrompt: {
      const std::string lift = verdict.rule != nullptr ? ChangeTheRule(*verdict.rule)
                                                       : "run the commands without a shell script";
      if (mode == ApprovalMode::kNever) {
        return Refuse(verdict.reason + "; approval mode never does not ask",
                      "run with --approval on-request where Anvil can ask, or " + lift);
      }
      if (!can_ask) {
        return Refuse(verdict.reason + "; nobody can be asked here",
                      "run it where Anvil can ask (a terminal, the editor, an MCP client with "
                      "elicitation), or " +
                          lift);
      }
      return {ApprovalAction::kAsk, verdict.reason, "", {}};
    }
    case RulesOutcome::kNoRule: {
      if (mode != ApprovalMode::kUntrusted) {
        return {ApprovalAction::kRun,
                verdict.reason + "; approval mode " + std::string(ToString(mode)) +
                    " runs it in the sandbox",
                "",
                {}};
      }
      const auto prefixes = AlwaysPrefixes(verdict);
      const std::vector<std::string>& first = prefixes.empty() ? verdict.argv : prefixes.front();
      if (!can_ask) {
        const std::string on_request = "run with --approval on-request (sandboxed, no question)";
        // A script's command that writes a file, assigns or expands, or a command not fully
        // understood: no rule can allow it.
        // So does a program an allow rule cannot speak for (named by a relative path, ...).
        const bool no_rule_allows =
            !verdict.understood || BeyondAllowRules(verdict) || prefixes.empty();
        return Refuse(verdict.reason +
                          "; approval mode untrusted asks, and nobody can be asked "
                          "here",
                      no_rule_allows ? on_request : AllowRuleHint(first) + ", or " + on_request);
      }
      return {ApprovalAction::kAsk, verdict.reason + "; approval mode untrusted asks", "",
              prefixes};
    }
  }
  return Refuse(verdict.reason, "");
}

AnswerEffect ApplyAnswer(const ApprovalDecision& asked, ApprovalAnswer answer,
                         std::string_view when) {
  AnswerEffect effect;
  switch (answer) {
    case ApprovalAnswer::kNever:
      effect.action = ApprovalAction::kRefuse;
      effect.note = "refused: the user answered never";
      return effect;
    case ApprovalAnswer::kOnce:
      effect.action = ApprovalAction::kRun;
      effect.note = "approved once";
      return effect;
    case ApprovalAnswer::kAlways:
      break;
  }
  effect.action = ApprovalAction::kRun;
  if (asked.always_prefixes.empty()) {
    // Nothing a rule could record (a prompt rule is stricter than any allow rule): the person
    // said yes, so it runs this time.
    effect.note = "approved once: 'always' cannot be recorded for this question";
    return effect;
  }
  for (const auto& prefix : asked.always_prefixes) {
    effect.rules.push_back(
        {prefix, prefix, "approved by the user (always) on " + SanitizeForDisplay(when, 40)});
  }
  effect.note = "approved always: " + std::to_string(effect.rules.size()) + " allow rule" +
                (effect.rules.size() == 1 ? "" : "s") + " written to " +
                std::string(kApprovedRulesFile);
  return effect;
}

Status ValidateAlwaysPrefix(const std::vector<std::string>& prefix,
                            const std::vector<std::string>& command) {
  // An "always" rule is exact: a prefix would allow every longer command later (`git fetch`
  // would allow `git fetch --upload-pack=CMD`, `make` would allow `make --eval=…`).
  if (prefix.empty() || prefix != command) {
    return Fail("invalid", "an \"always\" rule allows exactly the command " + Shown(command) +
                               " (fix: give all of its words)");
  }
  if (prefix.size() > kMaxPatternElements) {
    return Fail("invalid", "the prefix to allow is longer than " +
                               std::to_string(kMaxPatternElements) + " words (fix: answer once)");
  }
  for (const auto& word : command) {
    if (word.size() > kMaxRuleStringBytes || word.find('\0') != std::string::npos ||
        !IsUtf8(word)) {
      return Fail("invalid", "the command " + Shown(command) +
                                 " cannot be written as a rule (a word is not UTF-8 text or is "
                                 "too long) (fix: answer once)");
    }
  }
  // A shell, wrapper or launcher runs a program that is not all on its command line (a shell
  // without -c reads its script from stdin or a file, xargs takes its arguments from stdin,
  // env/nice/timeout run whatever follows): even the exact command is not a fixed thing to
  // allow forever.
  // A program named by a relative path is whatever file of that name is where it runs: the
  // rule would run any repository's `./build.sh` without a question.
  if (prefix[0].find('/') != std::string::npos && prefix[0][0] != '/') {
    return Fail("invalid", "'" + SanitizeForDisplay(prefix[0], 80) +
                               "' is named by a relative path (any directory's file of that "
                               "name), so \"always\" cannot be recorded for it (fix: answer once)");
  }
  const std::string_view program = ProgramName(prefix[0]);
  if (RunsAnotherProgram(program)) {
    return Fail("invalid", "'" + SanitizeForDisplay(program, 40) +
                               "' runs another program, so \"always\" cannot be recorded for it "
                               "(fix: answer once, or write a rule for the program it runs)");
  }
  return Ok();
}

std::string RenderAlwaysRule(const AlwaysRule& rule) {
  return "[[rule]]\npattern = " + TomlWords(rule.prefix) +
         "\nexact = true\ndecision = \"allow\"\njustification = " +
         policy_internal::TomlBasicString(rule.justification) + "\nmatch = [" +
         TomlWords(rule.example) + "]\n";
}

Status RecordAlwaysRules(const std::string& user_rules_dir, const std::vector<AlwaysRule>& rules) {
  if (user_rules_dir.empty() || user_rules_dir[0] != '/') {
    return Fail("invalid", "no user rules directory (fix: set HOME or XDG_CONFIG_HOME)");
  }
  for (const auto& rule : rules) {
    ANVIL_RETURN_IF_ERROR(ValidateAlwaysPrefix(rule.prefix, rule.example));
  }
  // mkdir -p, 0700: the rules decide what runs without a question.
  ANVIL_RETURN_IF_ERROR(MakePrivateDirs(user_rules_dir, "create "));
  ANVIL_TRY(dir, OpenDirectory(user_rules_dir, DirOpen::kRead));
  ANVIL_TRY(lock, DirLock::Acquire(dir->Get(), "lock " + QuotePathForMessage(user_rules_dir)));

  const std::string name(kApprovedRulesFile);
  const std::string shown = user_rules_dir + "/" + name;
  std::string text;
  if (auto existing = ReadRegularFileNoFollow(dir->Get(), name, kMaxRulesFileBytes)) {
    text = std::move(*existing);
  } else if (existing.error().code != "not_found") {
    return tl::unexpected(existing.error());
  }
  auto current = ParseRulesFile(text, shown, RuleLayer::kUser);
  if (!current) {
    return Fail("invalid",
                current.error().message + " (the rule was not written: fix " + shown + " first)");
  }
  std::string added;
  for (const auto& rule : rules) {
    const bool present = std::any_of(current->begin(), current->end(), [&](const CommandRule& r) {
      // An allow rule of these literal words, exact or not, already allows the command.
      if (r.decision != Decision::kAllow || r.pattern.size() != rule.prefix.size()) return false;
      for (std::size_t i = 0; i < r.pattern.size(); ++i) {
        if (r.pattern[i].size() != 1 || r.pattern[i][0] != rule.prefix[i]) return false;
      }
      return true;
    });
    const std::string rendered = RenderAlwaysRule(rule);
    if (present || added.find(rendered) != std::string::npos) continue;
    // A blank line between rules, none at the top of a new file.
    if (!text.empty() || !added.empty()) added += "\n";
    added += rendered;
  }
  if (added.empty()) return Ok();
  if (!text.empty() && text.back() != '\n') text += '\n';
  text += added;
  // The new file must load exactly as a later session will load it.
  ANVIL_RETURN_IF_ERROR(ParseRulesFile(text, shown, RuleLayer::kUser));
  return WriteFileAtomically(dir->Get(), name, text, 0600);
}

namespace {

nlohmann::json AuditBase(const CommandAuditContext& context, const CommandVerdict& verdict,
                         std::string_view op, std::string_view audit_verdict, double unix_seconds) {
  std::string target = JoinShellWords(verdict.argv);
  if (target.size() > kMaxAuditTargetBytes) {
    target.resize(kMaxAuditTargetBytes);
    target += "…";
  }
  nlohmann::json argv = nlohmann::json::array();
  for (std::size_t i = 0; i < verdict.argv.size() && i < kMaxAuditArgs; ++i) {
    argv.push_back(verdict.argv[i].substr(0, kMaxAuditArgBytes));
  }
  nlohmann::json line = {{"time", unix_seconds},
                         {"session", context.session},
                         {"plugin", context.requester},
                         {"op", op},
                         {"target", target},
                         {"verdict", audit_verdict},
                         {"bytes", 0},
                         {"duration_us", context.duration_us},
                         {"id", context.id},
                         {"argv", argv},
                         {"cwd", context.cwd},
                         {"mode", ToString(context.mode)},
                         {"decision", ToString(verdict.outcome)}};
  if (verdict.rule != nullptr) {
    line["rule"] = verdict.rule->Where();
    line["layer"] = ToString(verdict.rule->layer);
  }
  return line;
}

std::string Dump(const nlohmann::json& line) {
  // Arguments and justifications are untrusted text: dump() escapes control characters and
  // replaces invalid UTF-8, so one entry is always exactly one line.
  return line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string CommandDecisionAuditLine(const CommandAuditContext& context,
                                     const CommandVerdict& verdict,
                                     const ApprovalDecision& decision, double unix_seconds) {
  const std::string_view audit_verdict = decision.action == ApprovalAction::kRun   ? "allow"
                                         : decision.action == ApprovalAction::kAsk ? "ask"
                                                                                   : "deny";
  nlohmann::json line = AuditBase(context, verdict, "command", audit_verdict, unix_seconds);
  if (decision.action != ApprovalAction::kRun) {
    line["code"] = decision.action == ApprovalAction::kAsk ? "approval_required" : "denied";
  }
  line["reason"] = decision.reason;
  if (!decision.how_to_allow.empty()) line["how_to_allow"] = decision.how_to_allow;
  return Dump(line);
}

std::string CommandAnswerAuditLine(const CommandAuditContext& context,
                                   const CommandVerdict& verdict, ApprovalAnswer answer,
                                   const AnswerEffect& effect, double unix_seconds) {
  const bool runs = effect.action == ApprovalAction::kRun;
  nlohmann::json line =
      AuditBase(context, verdict, "command.answer", runs ? "allow" : "deny", unix_seconds);
  if (!runs) line["code"] = "denied";
  line["answer"] = ToString(answer);
  line["reason"] = effect.note;
  if (!effect.rules.empty()) {
    nlohmann::json written = nlohmann::json::array();
    for (const auto& rule : effect.rules) written.push_back(rule.prefix);
    line["rules_written"] = written;
  }
  return Dump(line);
}

}  // namespace anvil
