// Agents' command rules (command_rules.h): the layers' files (found and read by
// fs/rules_files.h) parsed, their rules merged in layer order, and a command evaluated against
// them. A file's text becomes rules in command_rules_file.cc.
#include "policy/command_rules.h"

#include <algorithm>

#include "fs/rules_files.h"
#include "policy/consent.h"
#include "policy/global_options.h"
#include "policy/shell_words.h"
#include "policy/toml_internal.h"

namespace anvil {
namespace {

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

namespace {

bool Contains(const std::vector<std::string>& alternatives, const std::string& word) {
  return std::find(alternatives.begin(), alternatives.end(), word) != alternatives.end();
}

// Whether some expansion of argv's wildcard words (shell_words.h) matches the pattern from its
// second element on: kAnyWord stands for one arbitrary word, kAnyWords for any number of them.
// A set of reachable pattern positions, advanced one argv word at a time.
bool CouldMatchRest(const std::vector<std::vector<std::string>>& pattern, bool exact,
                    const std::vector<std::string>& argv) {
  const std::size_t n = pattern.size();
  // Bounded work whatever argv holds: an exact rule cannot match more fixed words than it has,
  // a run of kAnyWords is one kAnyWords, and the walk stops once its outcome is settled, so it
  // visits O(n) words.
  if (exact) {
    const auto fixed = static_cast<std::size_t>(std::count_if(
        argv.begin() + 1, argv.end(), [](const std::string& w) { return w != kAnyWords; }));
    if (fixed > n - 1) return false;
  }
  std::vector<char> at(n + 1, 0), next(n + 1, 0);
  at[1] = 1;
  for (std::size_t a = 1; a < argv.size(); ++a) {
    if (!exact && at[n]) return true;  // the prefix is matched; later words do not matter
    if (std::find(at.begin(), at.end(), 1) == at.end()) return false;  // nothing reachable
    const std::string& word = argv[a];
    if (word == kAnyWords && argv[a - 1] == kAnyWords) continue;
    std::fill(next.begin(), next.end(), 0);
    for (std::size_t p = 1; p <= n; ++p) {
      if (!at[p]) continue;
      if (word == kAnyWords) {
        for (std::size_t q = p; q <= n; ++q) next[q] = 1;  // none, or as many as it takes
        break;
      }
      if (p == n) {
        if (!exact) next[n] = 1;
      } else if (word == kAnyWord || Contains(pattern[p], word)) {
        next[p + 1] = 1;
      }
    }
    at.swap(next);
  }
  return at[n] != 0;
}

}  // namespace

bool CommandRule::Matches(const std::vector<std::string>& argv) const {
  if (MatchesAsWritten(argv)) return true;
  // A restriction also meets the command without its global options (`git -C . push` is `git
  // push`); an allow rule only the command as written.
  if (decision == Decision::kAllow) return false;
  const std::optional<std::vector<std::string>> bare = WithoutGlobalOptions(argv);
  return bare && MatchesAsWritten(*bare);
}

bool CommandRule::MatchesAsWritten(const std::vector<std::string>& argv) const {
  if (pattern.empty() || argv.empty()) return false;
  // A restriction applies when it COULD match some expansion of the command's wildcard words;
  // an allow rule only when it matches every expansion, which is when its words match literal
  // words (a wildcard word equals no pattern word) and, for an exact rule, the count is fixed.
  const bool wildcards =
      decision != Decision::kAllow && std::any_of(argv.begin(), argv.end(), IsWildcardWord);
  if (!wildcards && argv.size() < pattern.size()) return false;
  if (!wildcards && exact && argv.size() != pattern.size()) return false;
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
  if (wildcards) return CouldMatchRest(pattern, exact, argv);
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

void CommandRules::Add(std::vector<CommandRule> rules) {
  for (auto& rule : rules) {
    const auto index = static_cast<std::uint32_t>(rules_.size());
    if (rule.decision != Decision::kAllow) ++restrictions_;
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

Result<CommandRules> LoadCommandRules(const RulesLocations& where) {
  CommandRules rules;
  auto load_dir = [&](const std::string& dir, RuleLayer layer) -> Status {
    if (dir.empty()) return Ok();
    ANVIL_TRY(files, RulesFilesIn(dir, kMaxRulesFilesPerDir));
    for (const auto& path : *files) {
      ANVIL_TRY(text, ReadTrustedRulesFile(path, kMaxRulesFileBytes));
      ANVIL_TRY(parsed, ParseRulesFile(*text, path, layer));
      rules.Add(std::move(*parsed));
    }
    return Ok();
  };
  ANVIL_RETURN_IF_ERROR(load_dir(where.admin_dir, RuleLayer::kAdmin));
  if (where.user_files.empty()) {
    ANVIL_RETURN_IF_ERROR(load_dir(where.user_dir, RuleLayer::kUser));
  } else {
    for (const auto& path : where.user_files) {
      ANVIL_TRY(text, ReadTrustedRulesFile(path, kMaxRulesFileBytes));
      ANVIL_TRY(parsed, ParseRulesFile(*text, path, RuleLayer::kUser));
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
    ANVIL_TRY(text,
              ReadWorkspaceRulesFile(dir, kWorkspaceRulesPath, shown, kMaxWorkspaceRulesFileBytes));
    if (*text) {
      ANVIL_TRY(parsed, ParseRulesFile(**text, shown, RuleLayer::kWorkspace));
      rules.Add(std::move(*parsed));
    }
  }
  return rules;
}

CommandVerdict EvaluateCommand(const CommandRules& rules, const std::vector<std::string>& argv,
                               const ProgramSearch* search) {
  CommandVerdict verdict;
  verdict.argv = argv;
  ProgramResolver resolve;
  if (search != nullptr) {
    resolve = [search](const std::string& argv0) { return ResolvedProgramNames(argv0, *search); };
  }
  CommandSegments split = SplitCommand(argv, resolve);
  verdict.understood = split.understood;
  verdict.not_understood = std::move(split.why);
  verdict.segments.reserve(split.segments.size());
  int forbidden = -1, prompt = -1;
  bool all_allowed = true, all_harmless = true;
  for (auto& segment : split.segments) {
    SegmentVerdict seg;
    seg.segment = std::move(segment);
    const std::string& program = seg.segment.argv[0];
    if (search != nullptr && program.find('/') == std::string::npos &&
        !RunsAsShellBuiltin(seg.segment)) {
      // What runs is what PATH finds, not what the name says (program_lookup.h).
      seg.not_system = JudgeSystemProgram(program, *search).Why(program);
      seg.allow_blocked = AllowRuleBlocked(program, *search);
      // A shell only interprets its script, whoever installed it; one the sandboxed command or
      // the workspace may put first on PATH may be any program, so it is judged itself too.
      if (seg.segment.shell_by_name && !seg.allow_blocked.empty()) {
        seg.segment.role = SegmentRole::kJudged;
      }
    } else if (search != nullptr) {
      // A program named by its path in a system directory that a writable root holds
      // (`--writable-root /usr/local`) is not the system's: neither an allow rule nor the shell's
      // "only interprets its script" speaks for it.
      seg.not_system = SystemPathNotSystems(program, *search);
      if (!seg.not_system.empty()) {
        seg.allow_blocked = seg.not_system;
        seg.segment.role = SegmentRole::kJudged;
      }
    }
    if (seg.allow_blocked.empty() && program.find('/') != std::string::npos) {
      // A program named by a relative path, or by its path in a writable root, is a file the
      // workspace holds or the command may write: an allow rule for it would speak for any
      // repository's `./build.sh` (program_lookup.h).
      seg.allow_blocked = ProgramPathAllowBlocked(program, search);
    }
    const bool narrowing = seg.segment.role == SegmentRole::kNarrowing;
    // A command that writes a file or runs with a script's variables is more than the argv an
    // allow rule allows: only restrictions apply to it.
    const bool more_than_argv = seg.segment.writes_file || seg.segment.environment;
    rules.Matching(seg.segment.argv, narrowing || more_than_argv || !seg.allow_blocked.empty(),
                   seg.matched);
    if (!narrowing && !more_than_argv && !seg.allow_blocked.empty()) {
      // Only to say why the allow rule did not decide.
      std::vector<const CommandRule*> would;
      rules.Matching(seg.segment.argv, false, would);
      for (const CommandRule* rule : would) {
        if (rule->decision == Decision::kAllow) {
          seg.blocked_allow = rule;
          break;
        }
      }
    }
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
      if (!seg.decision && more_than_argv) all_harmless = false;
      if (!seg.decision && !more_than_argv) {
        if (seg.not_system.empty()) seg.harmless = FindHarmless(seg.segment.argv);
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
  } else if (!verdict.understood && rules.HasRestrictions()) {
    // What was not read may run a command a prompt or forbidden rule is about.
    verdict.outcome = RulesOutcome::kPrompt;
    verdict.reason = "not fully understood, so it needs approval: " + verdict.not_understood;
  } else if (!verdict.understood) {
    // No layer restricts anything, so nothing can hide from a rule; no allow rule or harmless
    // entry speaks for what was not read either. Like any command no rule decides, it runs in
    // the sandbox or is asked about, as the approval mode says.
    verdict.outcome = RulesOutcome::kNoRule;
    verdict.reason = "not fully understood (" + verdict.not_understood +
                     "); no layer has a prompt or forbidden rule, so no rule decides it";
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
    auto program_has_path = [](const SegmentVerdict& seg) {
      return seg.segment.argv[0].find('/') != std::string::npos;
    };
    for (const auto& seg : verdict.segments) {
      if (seg.segment.role == SegmentRole::kJudged && !seg.decision && seg.harmless == nullptr) {
        verdict.reason = "no rule matches " + ShownArgv(seg.segment.argv);
        if (seg.segment.writes_file) {
          verdict.reason += "; it writes a file (a redirection), so it is not harmless";
        } else if (seg.segment.environment) {
          verdict.reason += "; the script assigns variables, so it is not harmless";
        } else if (seg.blocked_allow != nullptr) {
          verdict.reason += "; the allow rule at " + seg.blocked_allow->Where() +
                            " does not apply: " + seg.allow_blocked;
        } else if (!seg.not_system.empty() && FindHarmless(seg.segment.argv) != nullptr) {
          verdict.reason += "; not built-in harmless here: " + seg.not_system;
        } else if (seg.segment.shell_by_name && !seg.allow_blocked.empty()) {
          verdict.reason += "; the shell is judged itself: " + seg.allow_blocked;
        } else if (!seg.not_system.empty() && program_has_path(seg)) {
          verdict.reason += "; " + seg.not_system;
        } else if (const HarmlessCommand* entry = HarmlessEntryFor(seg.segment.argv)) {
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
