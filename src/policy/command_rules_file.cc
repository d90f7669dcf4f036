// A rules file's text to its rules (ParseRulesFile, command_rules.h): the TOML checked key by
// key, each problem named with its line and the fix. Pure; reading the files is
// command_rules.cc's.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "policy/command_rules.h"
#include "policy/shell_words.h"
#include "policy/toml_internal.h"

namespace anvil {
namespace {

using policy_internal::InvalidAt;
using policy_internal::Quoted;
using policy_internal::RegionOf;
using policy_internal::TypeName;

constexpr std::string_view kFileShapeFix =
    "a rules file holds only [[rule]] tables, each with pattern, decision, justification and "
    "optionally match, not_match and exact";
constexpr std::string_view kRuleKeysFix =
    "a rule holds pattern, decision, justification, match, not_match and exact";

bool HasControl(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return byte < 0x20 || byte == 0x7f;
  });
}

class RulesFileParser {
 public:
  RulesFileParser(std::string_view source, RuleLayer layer) : source_(source), layer_(layer) {}

  Result<std::vector<CommandRule>> Parse(const toml::table& doc) {
    std::vector<CommandRule> rules;
    for (auto&& [key, node] : doc) {
      if (key.str() != "rule") {
        return InvalidAt(Where(RegionOf(key, node)), "unknown key " + Quoted(key.str()),
                         kFileShapeFix);
      }
      const auto* list = node.as_array();
      if (list == nullptr || !list->is_array_of_tables()) {
        return InvalidAt(Where(RegionOf(key, node)),
                         "rule must be an array of tables, not " + std::string(TypeName(node)),
                         "write each rule under its own [[rule]] header (two brackets)");
      }
      if (list->size() > kMaxRulesPerFile) {
        return InvalidAt(Where(RegionOf(key, node)),
                         "more than " + std::to_string(kMaxRulesPerFile) + " rules in one file",
                         "split the rules over several files");
      }
      for (const toml::node& item : *list) {
        ANVIL_TRY(rule, ParseRule(*item.as_table(), RegionOf(key, node)));
        rules.push_back(std::move(*rule));
      }
    }
    return rules;
  }

 private:
  std::string Where(const toml::source_region& region) const {
    return policy_internal::Where(source_, region);
  }
  // A node's own position when toml++ recorded one, else `fallback`'s.
  std::string WhereNode(const toml::node& node, const toml::source_region& fallback) const {
    return Where(node.source().begin.line != 0 ? node.source() : fallback);
  }

  Result<CommandRule> ParseRule(const toml::table& table, const toml::source_region& header) {
    CommandRule rule;
    rule.layer = layer_;
    rule.file = std::string(source_);
    const toml::source_region& at = table.source().begin.line != 0 ? table.source() : header;
    rule.line = at.begin.line == 0 ? 1 : at.begin.line;
    rule.column = at.begin.column == 0 ? 1 : at.begin.column;
    const toml::node* match = nullptr;
    const toml::node* not_match = nullptr;
    bool has_pattern = false, has_decision = false, has_justification = false;
    for (auto&& [key, node] : table) {
      const std::string_view k = key.str();
      const auto& region = RegionOf(key, node);
      if (k == "pattern") {
        ANVIL_RETURN_IF_ERROR(ParsePattern(node, region, rule));
        has_pattern = true;
      } else if (k == "decision") {
        ANVIL_RETURN_IF_ERROR(ParseDecisionKey(node, region, rule));
        has_decision = true;
      } else if (k == "justification") {
        ANVIL_RETURN_IF_ERROR(ParseJustification(node, region, rule));
        has_justification = true;
      } else if (k == "match") {
        match = &node;
      } else if (k == "not_match") {
        not_match = &node;
      } else if (k == "exact") {
        const auto* flag = node.as_boolean();
        if (flag == nullptr) {
          return InvalidAt(Where(region),
                           "exact must be true or false, not " + std::string(TypeName(node)),
                           "write exact = true (the command has no word after the pattern)");
        }
        rule.exact = flag->get();
      } else {
        return InvalidAt(Where(region), "unknown key " + Quoted(k) + " in a rule", kRuleKeysFix);
      }
    }
    const std::string rule_at = Where(at);
    if (!has_pattern) {
      return InvalidAt(rule_at, "the rule has no pattern",
                       "add pattern = [\"program\", \"subcommand\"]");
    }
    if (!has_decision) {
      return InvalidAt(rule_at, "the rule has no decision",
                       "add decision = \"allow\", \"prompt\" or \"forbidden\"");
    }
    if (!has_justification) {
      return InvalidAt(rule_at, "the rule has no justification",
                       "add justification = \"why this rule exists\"");
    }
    // Examples after the pattern is known, whatever order the keys were written in.
    if (match != nullptr) {
      ANVIL_RETURN_IF_ERROR(ParseExamples(*match, at, "match", rule.match));
    }
    if (not_match != nullptr) {
      ANVIL_RETURN_IF_ERROR(ParseExamples(*not_match, at, "not_match", rule.not_match));
    }
    ANVIL_RETURN_IF_ERROR(CheckExamples(rule, match, not_match, at));
    return rule;
  }

  // The examples of one rule against that rule alone (as Codex's execpolicy does): they
  // document the rule's own edges, whatever other rules say.
  Status CheckExamples(const CommandRule& rule, const toml::node* match,
                       const toml::node* not_match, const toml::source_region& rule_at) const {
    auto example_at = [&](const toml::node* list, std::size_t index) {
      const toml::node* item = list->as_array()->get(index);
      return item != nullptr ? WhereNode(*item, rule_at) : Where(rule_at);
    };
    for (std::size_t i = 0; i < rule.match.size(); ++i) {
      if (!rule.Matches(rule.match[i])) {
        return InvalidAt(example_at(match, i),
                         "the match example " + Quoted(JoinShellWords(rule.match[i])) +
                             " does not match this rule's pattern " + rule.PatternText(),
                         "correct the pattern or the example");
      }
    }
    for (std::size_t i = 0; i < rule.not_match.size(); ++i) {
      if (rule.Matches(rule.not_match[i])) {
        return InvalidAt(example_at(not_match, i),
                         "the not_match example " + Quoted(JoinShellWords(rule.not_match[i])) +
                             " matches this rule's pattern " + rule.PatternText(),
                         "correct the pattern or the example");
      }
    }
    return Ok();
  }

  Status CheckWord(std::string_view word, const std::string& where, std::string_view what) const {
    if (word.size() > kMaxRuleStringBytes) {
      return InvalidAt(
          where,
          std::string(what) + " is longer than " + std::to_string(kMaxRuleStringBytes) + " bytes",
          "shorten it");
    }
    if (word.find('\0') != std::string_view::npos) {
      return InvalidAt(where, std::string(what) + " holds a NUL byte, which no argv word can",
                       "remove it");
    }
    return Ok();
  }

  Status ParsePattern(const toml::node& node, const toml::source_region& region,
                      CommandRule& rule) {
    const std::string where = Where(region);
    constexpr std::string_view kFix = "write pattern = [\"git\", [\"push\", \"fetch\"]]";
    const auto* list = node.as_array();
    if (list == nullptr) {
      return InvalidAt(where, "pattern must be an array, not " + std::string(TypeName(node)), kFix);
    }
    if (list->empty()) return InvalidAt(where, "pattern is empty", kFix);
    if (list->size() > kMaxPatternElements) {
      return InvalidAt(where,
                       "pattern has more than " + std::to_string(kMaxPatternElements) + " elements",
                       "a prefix this long is a whole command: shorten it");
    }
    for (const toml::node& element : *list) {
      const std::string at = WhereNode(element, region);
      std::vector<std::string> alternatives;
      if (const auto* text = element.as_string()) {
        alternatives.push_back(text->get());
      } else if (const auto* alts = element.as_array()) {
        if (alts->empty()) {
          return InvalidAt(at, "a list of alternatives is empty",
                           "list at least one word, e.g. [\"push\", \"fetch\"]");
        }
        if (alts->size() > kMaxAlternatives) {
          return InvalidAt(at, "more than " + std::to_string(kMaxAlternatives) + " alternatives",
                           "split the rule");
        }
        for (const toml::node& alt : *alts) {
          const auto* word = alt.as_string();
          if (word == nullptr) {
            return InvalidAt(WhereNode(alt, region),
                             "an alternative must be a string, not " + std::string(TypeName(alt)),
                             "quote it");
          }
          alternatives.push_back(word->get());
        }
      } else {
        return InvalidAt(at,
                         "a pattern element must be a string or a list of strings, not " +
                             std::string(TypeName(element)),
                         kFix);
      }
      for (const auto& word : alternatives) {
        ANVIL_RETURN_IF_ERROR(CheckWord(word, at, "a pattern word"));
        if (rule.pattern.empty() && word.empty()) {
          return InvalidAt(at, "the program (the first pattern element) is empty",
                           "name the program, e.g. \"git\"");
        }
      }
      rule.pattern.push_back(std::move(alternatives));
    }
    return Ok();
  }

  Status ParseDecisionKey(const toml::node& node, const toml::source_region& region,
                          CommandRule& rule) {
    const std::string where = Where(region);
    const auto* text = node.as_string();
    const std::optional<Decision> decision =
        text != nullptr ? ParseDecision(text->get()) : std::nullopt;
    if (!decision) {
      return InvalidAt(where,
                       "decision must be \"allow\", \"prompt\" or \"forbidden\", not " +
                           (text != nullptr ? Quoted(text->get()) : std::string(TypeName(node))),
                       "write decision = \"prompt\"");
    }
    if (*decision == Decision::kAllow && layer_ == RuleLayer::kWorkspace) {
      return InvalidAt(where,
                       "decision = \"allow\" is not allowed here: a workspace's rules can only "
                       "make commands stricter, never allow one",
                       "use \"prompt\" or \"forbidden\"; allow commands in your own rules "
                       "(~/.config/anvil/rules/), not in the repository's");
    }
    if (*decision == Decision::kAllow && layer_ == RuleLayer::kAdmin) {
      return InvalidAt(where, "decision = \"allow\" is not allowed in the admin layer",
                       "admin rules can only prompt or forbid; allow rules belong in a user's "
                       "~/.config/anvil/rules/");
    }
    rule.decision = *decision;
    return Ok();
  }

  Status ParseJustification(const toml::node& node, const toml::source_region& region,
                            CommandRule& rule) {
    const std::string where = Where(region);
    const auto* text = node.as_string();
    if (text == nullptr) {
      return InvalidAt(where, "justification must be a string, not " + std::string(TypeName(node)),
                       "write justification = \"why this rule exists\"");
    }
    const std::string& value = text->get();
    if (value.find_first_not_of(" \t") == std::string::npos) {
      return InvalidAt(where, "justification is empty", "say why this rule exists");
    }
    if (value.size() > kMaxJustificationBytes) {
      return InvalidAt(
          where,
          "justification is longer than " + std::to_string(kMaxJustificationBytes) + " bytes",
          "one short line is shown with every decision; keep it short");
    }
    if (HasControl(value)) {
      return InvalidAt(where, "justification holds a control character or a line break",
                       "write it on one line");
    }
    rule.justification = value;
    return Ok();
  }

  Status ParseExamples(const toml::node& node, const toml::source_region& rule_at,
                       std::string_view name, std::vector<std::vector<std::string>>& out) {
    const std::string where = WhereNode(node, rule_at);
    const auto* list = node.as_array();
    if (list == nullptr) {
      return InvalidAt(
          where,
          std::string(name) + " must be an array of examples, not " + std::string(TypeName(node)),
          "write " + std::string(name) + " = [\"git push origin main\", [\"git\", \"push\"]]");
    }
    if (list->size() > kMaxExamplesPerRule) {
      return InvalidAt(
          where,
          std::string(name) + " has more than " + std::to_string(kMaxExamplesPerRule) + " examples",
          "keep the examples that show the rule's edges");
    }
    for (const toml::node& item : *list) {
      const std::string at = WhereNode(item, rule_at);
      std::vector<std::string> argv;
      if (const auto* text = item.as_string()) {
        ANVIL_RETURN_IF_ERROR(CheckWord(text->get(), at, "an example"));
        const ShellScript script = ParseShellScript(text->get());
        if (!script.understood) {
          return InvalidAt(at,
                           "the " + std::string(name) + " example " + Quoted(text->get()) +
                               " is not one plain command: " + script.why,
                           "write the example as an array of words, e.g. [\"git\", \"push\"]");
        }
        if (script.commands.size() != 1) {
          return InvalidAt(at,
                           "the " + std::string(name) + " example " + Quoted(text->get()) +
                               " holds " + std::to_string(script.commands.size()) + " commands",
                           "an example is one command; give each its own entry");
        }
        argv = script.commands.front();
        if (std::any_of(argv.begin(), argv.end(), IsWildcardWord) || script.writes_file.front() ||
            script.assigns) {
          return InvalidAt(at,
                           "the " + std::string(name) + " example " + Quoted(text->get()) +
                               " expands, redirects to a file or assigns a variable",
                           "an example is one plain command: write its words as they will be");
        }
      } else if (const auto* words = item.as_array()) {
        if (words->empty()) {
          return InvalidAt(at, "an example is an empty list", "list the command's words");
        }
        if (words->size() > kMaxRuleStringBytes) {
          return InvalidAt(at, "an example has too many words", "shorten it");
        }
        for (const toml::node& word : *words) {
          const auto* text = word.as_string();
          if (text == nullptr) {
            return InvalidAt(
                WhereNode(word, rule_at),
                "an example's words must be strings, not " + std::string(TypeName(word)),
                "quote it");
          }
          ANVIL_RETURN_IF_ERROR(CheckWord(text->get(), at, "an example word"));
          argv.push_back(text->get());
        }
      } else {
        return InvalidAt(
            at,
            "an example must be a string or a list of words, not " + std::string(TypeName(item)),
            "write \"git push\" or [\"git\", \"push\"]");
      }
      out.push_back(std::move(argv));
    }
    return Ok();
  }

  std::string_view source_;
  RuleLayer layer_;
};
}  // namespace

Result<std::vector<CommandRule>> ParseRulesFile(std::string_view text, std::string_view source_name,
                                                RuleLayer layer) {
  const std::size_t max_bytes =
      layer == RuleLayer::kWorkspace ? kMaxWorkspaceRulesFileBytes : kMaxRulesFileBytes;
  ANVIL_TRY(doc, policy_internal::ParseToml(text, source_name, max_bytes));
  return RulesFileParser(source_name, layer).Parse(*doc);
}

}  // namespace anvil
