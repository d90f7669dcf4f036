// Command rules files (src/policy/command_rules: a workspace's .anvil/rules.toml comes with the
// repository and is untrusted input). The input is parsed as a workspace file and as a user's.
// Invariants for an accepted file: a workspace file holds no allow rule, and no command it
// alone judges may run without a question (never allow, never harmless); every rule's pattern
// is non-empty with a non-empty program and bounded; every match example matches its rule and
// every not_match example does not (the load-time check cannot be skipped), an exact rule never
// matches a match example with a word appended, and evaluating a
// match example with only that file's rules yields at least the rule's decision; an example that
// is not understood is prompt (or forbidden) when the file restricts anything, none otherwise.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "policy/command_rules.h"

using anvil::fuzz::Require;

namespace {

void Check(const std::string& text, anvil::RuleLayer layer) {
  auto parsed = anvil::ParseRulesFile(text, "fuzz.toml", layer);
  if (!parsed) {
    Require(parsed.error().code == "invalid" || parsed.error().code == "limit",
            "unexpected error code", parsed.error().ToString());
    Require(parsed.error().message.find("fuzz.toml") != std::string::npos,
            "an error that does not name the file", parsed.error().message);
    return;
  }
  Require(parsed->size() <= anvil::kMaxRulesPerFile, "too many rules");
  const std::vector<anvil::CommandRule> rules = *parsed;
  anvil::CommandRules set;
  set.Add(*parsed);
  for (const auto& rule : rules) {
    Require(!rule.pattern.empty() && rule.pattern.size() <= anvil::kMaxPatternElements,
            "pattern size", rule.PatternText());
    Require(!rule.pattern[0].empty(), "no program", rule.PatternText());
    for (const auto& program : rule.pattern[0]) {
      Require(!program.empty(), "an empty program", rule.PatternText());
    }
    Require(!rule.justification.empty(), "no justification", rule.PatternText());
    if (layer != anvil::RuleLayer::kUser) {
      Require(rule.decision != anvil::Decision::kAllow, "allow outside the user layer",
              rule.PatternText());
    }
    for (const auto& example : rule.match) {
      Require(rule.Matches(example), "a match example that does not match", rule.PatternText());
      if (rule.exact) {
        // The end anchor: an exact rule never matches a command with one more word.
        std::vector<std::string> longer = example;
        longer.emplace_back("--x");
        Require(!rule.Matches(longer), "an exact rule matched a longer command",
                rule.PatternText());
      }
      const anvil::CommandVerdict verdict = anvil::EvaluateCommand(set, example);
      if (rule.decision == anvil::Decision::kForbidden) {
        Require(verdict.outcome == anvil::RulesOutcome::kForbidden,
                "a forbidden rule's example not forbidden", rule.PatternText());
      } else if (rule.decision == anvil::Decision::kPrompt) {
        Require(verdict.outcome == anvil::RulesOutcome::kPrompt ||
                    verdict.outcome == anvil::RulesOutcome::kForbidden,
                "a prompt rule's example runs without a question", rule.PatternText());
      }
      if (!verdict.understood) {
        // Not understood: a question while any rule restricts, else no rule decides; never
        // allowed or harmless.
        Require(set.HasRestrictions() ? verdict.outcome == anvil::RulesOutcome::kPrompt ||
                                            verdict.outcome == anvil::RulesOutcome::kForbidden
                                      : verdict.outcome == anvil::RulesOutcome::kNoRule,
                "a command not understood judged other than prompt or none", rule.PatternText());
      }
      if (layer == anvil::RuleLayer::kWorkspace) {
        Require(verdict.outcome != anvil::RulesOutcome::kAllow,
                "a workspace file allowed a command", rule.PatternText());
      }
    }
    for (const auto& example : rule.not_match) {
      Require(!rule.Matches(example), "a not_match example that matches", rule.PatternText());
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(anvil::fuzz::AsView(data, size));
  Check(text, anvil::RuleLayer::kWorkspace);
  Check(text, anvil::RuleLayer::kUser);
  return 0;
}
