#include "policy/command_rules.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <memory>

#include "common/unique_fd.h"
#include "fs/file_io.h"
#include "fs/workspace_path.h"
#include "policy/consent.h"
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
        auto rule = ParseRule(*item.as_table(), RegionOf(key, node));
        if (!rule) return tl::unexpected(rule.error());
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
        if (auto s = ParsePattern(node, region, rule); !s) return tl::unexpected(s.error());
        has_pattern = true;
      } else if (k == "decision") {
        if (auto s = ParseDecisionKey(node, region, rule); !s) return tl::unexpected(s.error());
        has_decision = true;
      } else if (k == "justification") {
        if (auto s = ParseJustification(node, region, rule); !s) return tl::unexpected(s.error());
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
      if (auto s = ParseExamples(*match, at, "match", rule.match); !s) {
        return tl::unexpected(s.error());
      }
    }
    if (not_match != nullptr) {
      if (auto s = ParseExamples(*not_match, at, "not_match", rule.not_match); !s) {
        return tl::unexpected(s.error());
      }
    }
    if (auto s = CheckExamples(rule, match, not_match, at); !s) return tl::unexpected(s.error());
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
        if (auto s = CheckWord(word, at, "a pattern word"); !s) return s;
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
        if (auto s = CheckWord(text->get(), at, "an example"); !s) return s;
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
          if (auto s = CheckWord(text->get(), at, "an example word"); !s) return s;
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

struct DirCloser {
  void operator()(DIR* dir) const { ::closedir(dir); }
};

// The *.toml files of a layer's directory, in name order. A missing directory is no files.
Result<std::vector<std::string>> RulesFilesIn(const std::string& dir) {
  std::unique_ptr<DIR, DirCloser> handle(::opendir(dir.c_str()));
  if (!handle) {
    if (errno == ENOENT) return std::vector<std::string>{};
    return SysFail("io", "rules directory " + QuotePathForMessage(dir));
  }
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(handle.get())) {
    const std::string_view name = entry->d_name;
    if (name.starts_with(".") || !name.ends_with(".toml")) continue;
    if (names.size() >= kMaxRulesFilesPerDir) {
      return Fail("limit", QuotePathForMessage(dir) + " holds more than " +
                               std::to_string(kMaxRulesFilesPerDir) +
                               " rules files (fix: merge some of them)");
    }
    names.emplace_back(name);
  }
  if (errno != 0) return SysFail("io", "read rules directory " + QuotePathForMessage(dir));
  std::sort(names.begin(), names.end());
  std::vector<std::string> paths;
  paths.reserve(names.size());
  for (const auto& name : names) paths.push_back(dir + "/" + name);
  return paths;
}

// A user's or administrator's file: theirs to lay out, so a symlink (a dotfiles manager's) is
// followed; it must end at a regular file (a FIFO is not waited on).
Result<std::string> ReadTrustedRulesFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (!fd) {
    return SysFail(errno == ENOENT ? Code::kNotFound : Code::kIo,
                   "rules file " + QuotePathForMessage(path));
  }
  return ReadRegularFileFromFd(fd.Get(), QuotePathForMessage(path), kMaxRulesFileBytes);
}

// The workspace's .anvil/rules.toml, opened beneath the workspace without following any
// symlink: the repository decides its contents, not which file on the machine is read.
Result<std::optional<std::string>> ReadWorkspaceRulesFile(const std::string& workspace_dir,
                                                          const std::string& shown) {
  UniqueFd dir(::open(workspace_dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir) return SysFail("io", "workspace " + QuotePathForMessage(workspace_dir));
  open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  const std::string relative(kWorkspaceRulesPath);
  long raw = -1;
  do {
    raw = ::syscall(SYS_openat2, dir.Get(), relative.c_str(), &how, sizeof(how));
  } while (raw < 0 && (errno == EINTR || errno == EAGAIN));
  if (raw < 0) {
    if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::string>{};
    if (errno == ELOOP || errno == EXDEV) {
      return Fail("denied", QuotePathForMessage(shown) +
                                ": the workspace's rules file (or its .anvil directory) is a "
                                "symbolic link; it is read only as a file of the workspace itself "
                                "(fix: replace the link with the file)");
    }
    return SysFail("io", "open " + QuotePathForMessage(shown));
  }
  UniqueFd fd(static_cast<int>(raw));
  auto text =
      ReadRegularFileFromFd(fd.Get(), QuotePathForMessage(shown), kMaxWorkspaceRulesFileBytes);
  if (!text) return tl::unexpected(text.error());
  return std::optional<std::string>(std::move(*text));
}

std::string ShownArgv(const std::vector<std::string>& argv) {
  return "`" + SanitizeForDisplay(JoinShellWords(argv), 120) + "`";
}

std::string RuleSays(const CommandRule& rule) {
  return rule.Where() + " (" + std::string(ToString(rule.layer)) +
         "): " + SanitizeForDisplay(rule.justification, 200);
}

}  // namespace

std::string_view ToString(Decision decision) {
  switch (decision) {
    case Decision::kAllow:
      return "allow";
    case Decision::kPrompt:
      return "prompt";
    case Decision::kForbidden:
      return "forbidden";
  }
  return "forbidden";
}

std::optional<Decision> ParseDecision(std::string_view text) {
  if (text == "allow") return Decision::kAllow;
  if (text == "prompt") return Decision::kPrompt;
  if (text == "forbidden") return Decision::kForbidden;
  return std::nullopt;
}

std::string_view ToString(RuleLayer layer) {
  switch (layer) {
    case RuleLayer::kAdmin:
      return "admin";
    case RuleLayer::kUser:
      return "user";
    case RuleLayer::kWorkspace:
      return "workspace";
  }
  return "workspace";
}

std::string_view ToString(RulesOutcome outcome) {
  switch (outcome) {
    case RulesOutcome::kAllow:
      return "allow";
    case RulesOutcome::kPrompt:
      return "prompt";
    case RulesOutcome::kForbidden:
      return "forbidden";
    case RulesOutcome::kHarmless:
      return "harmless";
    case RulesOutcome::kNoRule:
      return "none";
  }
  return "none";
}

bool CommandRule::Matches(const std::vector<std::string>& argv) const {
  if (pattern.empty() || argv.size() < pattern.size()) return false;
  if (exact && argv.size() != pattern.size()) return false;
  const std::string& program = argv[0];
  const bool by_path = program.find('/') != std::string::npos;
  const std::string_view name = ProgramName(program);
  bool first = false;
  for (const auto& alt : pattern[0]) {
    if (alt == program) {
      first = true;
      break;
    }
    // A restriction on a bare name holds for that program under any path.
    if (decision != Decision::kAllow && by_path && alt.find('/') == std::string::npos &&
        alt == name) {
      first = true;
      break;
    }
  }
  if (!first) return false;
  for (std::size_t i = 1; i < pattern.size(); ++i) {
    if (std::find(pattern[i].begin(), pattern[i].end(), argv[i]) == pattern[i].end()) return false;
  }
  return true;
}

std::string CommandRule::Where() const {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column);
}

std::string CommandRule::PatternText() const {
  std::string out = "[";
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (i > 0) out += ", ";
    if (pattern[i].size() == 1) {
      out += policy_internal::TomlBasicString(pattern[i][0]);
      continue;
    }
    out += "[";
    for (std::size_t k = 0; k < pattern[i].size(); ++k) {
      if (k > 0) out += ", ";
      out += policy_internal::TomlBasicString(pattern[i][k]);
    }
    out += "]";
  }
  out += "]";
  return out;
}

Result<std::vector<CommandRule>> ParseRulesFile(std::string_view text, std::string_view source_name,
                                                RuleLayer layer) {
  const std::size_t max_bytes =
      layer == RuleLayer::kWorkspace ? kMaxWorkspaceRulesFileBytes : kMaxRulesFileBytes;
  auto doc = policy_internal::ParseToml(text, source_name, max_bytes);
  if (!doc) return tl::unexpected(doc.error());
  return RulesFileParser(source_name, layer).Parse(*doc);
}

void CommandRules::Add(std::vector<CommandRule> rules) {
  for (auto& rule : rules) {
    const auto index = static_cast<std::uint32_t>(rules_.size());
    for (const auto& program : rule.pattern.front()) {
      auto& list = by_program_[program];
      if (list.empty() || list.back() != index) list.push_back(index);
    }
    rules_.push_back(std::move(rule));
  }
}

void CommandRules::Matching(const std::vector<std::string>& argv, bool narrowing,
                            std::vector<const CommandRule*>& out) const {
  out.clear();
  if (argv.empty()) return;
  auto check = [&](const std::vector<std::uint32_t>& indices) {
    for (const std::uint32_t index : indices) {
      const CommandRule& rule = rules_[index];
      if (narrowing && rule.decision == Decision::kAllow) continue;
      if (rule.Matches(argv)) out.push_back(&rule);
    }
  };
  const auto exact = by_program_.find(argv[0]);
  const std::string_view name = ProgramName(argv[0]);
  const auto by_name = name.size() == argv[0].size() || name.empty()
                           ? by_program_.end()
                           : by_program_.find(std::string(name));
  if (by_name == by_program_.end()) {
    // One list, in load order and without repeats: the common case needs no merging.
    if (exact != by_program_.end()) check(exact->second);
    return;
  }
  // A path: rules for the path itself and for its last component, merged into load order (a
  // rule listing both spellings as alternatives appears in both lists, and once in `out`).
  std::vector<std::uint32_t> candidates = by_name->second;
  if (exact != by_program_.end()) {
    candidates.insert(candidates.end(), exact->second.begin(), exact->second.end());
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  check(candidates);
}

std::string UserRulesDirFrom(const char* xdg_config_home, const char* home) {
  if (xdg_config_home != nullptr && xdg_config_home[0] == '/') {
    return std::string(xdg_config_home) + "/anvil/rules";
  }
  if (home != nullptr && home[0] == '/') return std::string(home) + "/.config/anvil/rules";
  return {};
}

std::string UserRulesDir() {
  return UserRulesDirFrom(std::getenv("XDG_CONFIG_HOME"), std::getenv("HOME"));
}

Result<CommandRules> LoadCommandRules(const RulesLocations& where) {
  CommandRules rules;
  auto load_dir = [&](const std::string& dir, RuleLayer layer) -> Status {
    if (dir.empty()) return Ok();
    auto files = RulesFilesIn(dir);
    if (!files) return tl::unexpected(files.error());
    for (const auto& path : *files) {
      auto text = ReadTrustedRulesFile(path);
      if (!text) return tl::unexpected(text.error());
      auto parsed = ParseRulesFile(*text, path, layer);
      if (!parsed) return tl::unexpected(parsed.error());
      rules.Add(std::move(*parsed));
    }
    return Ok();
  };
  if (auto s = load_dir(where.admin_dir, RuleLayer::kAdmin); !s) return tl::unexpected(s.error());
  if (where.user_files.empty()) {
    if (auto s = load_dir(where.user_dir, RuleLayer::kUser); !s) return tl::unexpected(s.error());
  } else {
    for (const auto& path : where.user_files) {
      auto text = ReadTrustedRulesFile(path);
      if (!text) return tl::unexpected(text.error());
      auto parsed = ParseRulesFile(*text, path, RuleLayer::kUser);
      if (!parsed) return tl::unexpected(parsed.error());
      rules.Add(std::move(*parsed));
    }
  }
  std::vector<std::string> workspaces;
  if (!where.workspace_dir.empty()) workspaces.push_back(where.workspace_dir);
  for (const auto& dir : where.more_workspace_dirs) {
    if (!dir.empty() && std::find(workspaces.begin(), workspaces.end(), dir) == workspaces.end()) {
      workspaces.push_back(dir);
    }
  }
  for (const auto& dir : workspaces) {
    const std::string shown = dir + "/" + std::string(kWorkspaceRulesPath);
    auto text = ReadWorkspaceRulesFile(dir, shown);
    if (!text) return tl::unexpected(text.error());
    if (*text) {
      auto parsed = ParseRulesFile(**text, shown, RuleLayer::kWorkspace);
      if (!parsed) return tl::unexpected(parsed.error());
      rules.Add(std::move(*parsed));
    }
  }
  return rules;
}

CommandVerdict EvaluateCommand(const CommandRules& rules, const std::vector<std::string>& argv) {
  CommandVerdict verdict;
  verdict.argv = argv;
  CommandSegments split = SplitCommand(argv);
  verdict.understood = split.understood;
  verdict.not_understood = std::move(split.why);
  verdict.segments.reserve(split.segments.size());
  int forbidden = -1, prompt = -1;
  bool all_allowed = true, all_harmless = true;
  for (auto& segment : split.segments) {
    SegmentVerdict seg;
    seg.segment = std::move(segment);
    const bool narrowing = seg.segment.role == SegmentRole::kNarrowing;
    rules.Matching(seg.segment.argv, narrowing, seg.matched);
    for (const CommandRule* rule : seg.matched) {
      if (!seg.decision || rule->decision > *seg.decision) {
        seg.decision = rule->decision;
        seg.rule = rule;
      }
    }
    const int index = static_cast<int>(verdict.segments.size());
    if (seg.decision == Decision::kForbidden && forbidden < 0) forbidden = index;
    if (seg.decision == Decision::kPrompt && prompt < 0) prompt = index;
    if (!narrowing) {
      if (seg.decision != Decision::kAllow) all_allowed = false;
      if (!seg.decision) {
        seg.harmless = FindHarmless(seg.segment.argv);
        if (seg.harmless == nullptr) all_harmless = false;
      }
    }
    verdict.segments.push_back(std::move(seg));
  }
  auto decided_by = [&](int index, RulesOutcome outcome, std::string_view says) {
    verdict.outcome = outcome;
    verdict.deciding_segment = index;
    verdict.rule = verdict.segments[static_cast<std::size_t>(index)].rule;
    const auto& segment = verdict.segments[static_cast<std::size_t>(index)].segment;
    verdict.reason = (segment.depth == 0 ? std::string() : ShownArgv(segment.argv) + " ") +
                     std::string(says) + " " + RuleSays(*verdict.rule);
  };
  if (forbidden >= 0) {
    decided_by(forbidden, RulesOutcome::kForbidden, "forbidden by");
  } else if (prompt >= 0) {
    decided_by(prompt, RulesOutcome::kPrompt, "needs approval by");
  } else if (!verdict.understood) {
    verdict.outcome = RulesOutcome::kPrompt;
    verdict.reason = "not fully understood, so it needs approval: " + verdict.not_understood;
  } else if (all_allowed) {
    // The last judged command's rule names the decision; every judged one was allowed.
    for (int i = static_cast<int>(verdict.segments.size()) - 1; i >= 0; --i) {
      if (verdict.segments[static_cast<std::size_t>(i)].segment.role == SegmentRole::kJudged) {
        decided_by(i, RulesOutcome::kAllow, "allowed by");
        break;
      }
    }
  } else if (all_harmless) {
    verdict.outcome = RulesOutcome::kHarmless;
    std::string names;
    for (const auto& seg : verdict.segments) {
      if (seg.harmless == nullptr) continue;
      if (!names.empty()) names += ", ";
      names += HarmlessName(*seg.harmless);
    }
    verdict.reason = "no rule matches; built-in harmless (" + names + ")";
  } else {
    verdict.outcome = RulesOutcome::kNoRule;
    for (const auto& seg : verdict.segments) {
      if (seg.segment.role == SegmentRole::kJudged && !seg.decision && seg.harmless == nullptr) {
        verdict.reason = "no rule matches " + ShownArgv(seg.segment.argv);
        if (const HarmlessCommand* entry = HarmlessEntryFor(seg.segment.argv)) {
          verdict.reason += "; not harmless as written (" + HarmlessName(*entry) + ": " +
                            std::string(entry->why) + ")";
        }
        break;
      }
    }
  }
  return verdict;
}

}  // namespace anvil
