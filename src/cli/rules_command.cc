#include "cli/rules_command.h"

#include <iostream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "cli/rules_spec.h"
#include "policy/approval.h"
#include "policy/command_rules.h"
#include "policy/consent.h"
#include "policy/shell_words.h"

namespace anvil::cli {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;

std::string Show(std::string_view text, std::size_t max = 400) {
  return SanitizeForDisplay(text, max);
}

std::string ShowArgv(const std::vector<std::string>& argv) { return Show(JoinShellWords(argv)); }

nlohmann::json PatternJson(const CommandRule& rule) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& element : rule.pattern) {
    if (element.size() == 1) {
      out.push_back(element[0]);
    } else {
      out.push_back(element);
    }
  }
  return out;
}

nlohmann::json RuleJson(const CommandRule& rule) {
  return {{"file", rule.file},
          {"line", rule.line},
          {"column", rule.column},
          {"layer", ToString(rule.layer)},
          {"decision", ToString(rule.decision)},
          {"pattern", PatternJson(rule)},
          {"justification", rule.justification}};
}

std::string Dump(const nlohmann::json& value) {
  // Rules and commands are text from files and the command line; never fail on bad UTF-8.
  return value.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

struct ModeOutcome {
  ApprovalMode mode;
  ApprovalDecision asked;       // a person can be asked
  ApprovalDecision unattended;  // nobody can be asked
};

std::vector<ModeOutcome> Modes(const CommandVerdict& verdict) {
  std::vector<ModeOutcome> out;
  for (ApprovalMode mode : kApprovalModes) {
    out.push_back(
        {mode, DecideApproval(verdict, mode, true), DecideApproval(verdict, mode, false)});
  }
  return out;
}

void PrintJson(const CommandVerdict& verdict) {
  nlohmann::json out;
  out["command"] = verdict.argv;
  out["decision"] = ToString(verdict.outcome);
  out["reason"] = verdict.reason;
  out["understood"] = verdict.understood;
  if (!verdict.understood) out["not_understood"] = verdict.not_understood;
  out["rule"] = verdict.rule != nullptr ? RuleJson(*verdict.rule) : nlohmann::json();
  nlohmann::json commands = nlohmann::json::array();
  for (const auto& seg : verdict.segments) {
    nlohmann::json item = {
        {"argv", seg.segment.argv},
        {"role", seg.segment.role == SegmentRole::kJudged ? "judged" : "narrowing"},
        {"depth", seg.segment.depth},
        {"via", seg.segment.via},
        {"decision", seg.decision ? nlohmann::json(ToString(*seg.decision)) : nlohmann::json()},
        {"harmless",
         seg.harmless != nullptr ? nlohmann::json(HarmlessName(*seg.harmless)) : nlohmann::json()}};
    nlohmann::json rules = nlohmann::json::array();
    for (const CommandRule* rule : seg.matched) rules.push_back(RuleJson(*rule));
    item["rules"] = std::move(rules);
    commands.push_back(std::move(item));
  }
  out["commands"] = std::move(commands);
  nlohmann::json approval = nlohmann::json::object();
  for (const auto& mode : Modes(verdict)) {
    nlohmann::json entry = {{"action", ToString(mode.asked.action)},
                            {"without_asking", ToString(mode.unattended.action)},
                            {"reason", mode.asked.reason}};
    if (!mode.unattended.how_to_allow.empty()) {
      entry["how_to_allow"] = mode.unattended.how_to_allow;
    }
    if (!mode.asked.always_prefixes.empty()) entry["always_prefixes"] = mode.asked.always_prefixes;
    approval[std::string(ToString(mode.mode))] = std::move(entry);
  }
  out["approval"] = std::move(approval);
  std::cout << Dump(out) << "\n";
}

void PrintText(const CommandVerdict& verdict) {
  std::cout << "command:  " << ShowArgv(verdict.argv) << "\n";
  std::cout << "decision: " << ToString(verdict.outcome) << "\n";
  std::cout << "reason:   " << Show(verdict.reason, 600) << "\n";
  if (verdict.rule != nullptr) {
    std::cout << "rule:     " << Show(verdict.rule->Where()) << " ("
              << ToString(verdict.rule->layer)
              << ") pattern = " << Show(verdict.rule->PatternText()) << "\n";
  }
  if (verdict.segments.size() > 1) {
    std::cout << "commands:\n";
    for (const auto& seg : verdict.segments) {
      std::string decision = seg.decision              ? std::string(ToString(*seg.decision))
                             : seg.harmless != nullptr ? "harmless"
                             : seg.segment.role == SegmentRole::kJudged ? "none"
                                                                        : "-";
      decision.resize(10, ' ');
      std::cout << "  " << std::string(seg.segment.depth * 2, ' ') << decision
                << ShowArgv(seg.segment.argv);
      if (seg.rule != nullptr) {
        std::cout << "  [" << Show(seg.rule->Where()) << "]";
      } else if (seg.harmless != nullptr) {
        std::cout << "  [built-in harmless: " << HarmlessName(*seg.harmless) << "]";
      }
      if (seg.segment.role == SegmentRole::kNarrowing) {
        std::cout << "  (" << (seg.segment.via.empty() ? "" : Show(seg.segment.via) + "; ")
                  << "only prompt and forbidden rules apply)";
      }
      std::cout << "\n";
    }
  }
  const auto modes = Modes(verdict);
  std::cout << "approval:";
  for (const auto& mode : modes) {
    std::cout << " " << ToString(mode.mode) << "=" << ToString(mode.asked.action);
  }
  std::cout << "\n";
  // The way to let it run where nobody can be asked, from the first mode that refuses.
  for (const auto& mode : modes) {
    if (mode.unattended.action == ApprovalAction::kRefuse &&
        !mode.unattended.how_to_allow.empty()) {
      std::cout << "how to allow: " << Show(mode.unattended.how_to_allow, 600) << "\n";
      break;
    }
  }
}

int RunCheck(const std::vector<std::string>& args) {
  RulesFlagValues flags;
  flags.where.user_dir = UserRulesDir();
  flags.where.workspace_dir = ".";
  auto parsed = ParseFlags(RulesFlags(flags), args);
  if (!parsed) {
    std::cerr << "anvil rules check: " << parsed.error().ToString() << "\n";
    return kExitUsage;
  }
  if (parsed->help) {
    std::cout << RenderHelp(RulesCommandSpec());
    return kExitOk;
  }
  const RulesLocations& where = flags.where;
  const bool json = flags.json;
  const std::vector<std::string>& command = parsed->operands;
  if (command.empty()) {
    std::cerr << "anvil rules check: invalid: no command to check (fix: anvil rules check -- "
                 "git status)\n";
    return kExitUsage;
  }
  auto rules = LoadCommandRules(where);
  if (!rules) {
    std::cerr << "anvil rules check: " << Show(rules.error().ToString(), 1000) << "\n";
    return kExitUsage;
  }
  const CommandVerdict verdict = EvaluateCommand(*rules, command);
  if (json) {
    PrintJson(verdict);
  } else {
    PrintText(verdict);
  }
  return kExitOk;
}

}  // namespace

int RunRulesCommand(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << RenderHelp(RulesCommandSpec());
    return args.empty() ? kExitUsage : kExitOk;
  }
  if (args[0] == "check") return RunCheck({args.begin() + 1, args.end()});
  std::cerr << "anvil rules: invalid: unknown subcommand " << Show(args[0])
            << " (see anvil rules --help)\n";
  return kExitUsage;
}

}  // namespace anvil::cli
