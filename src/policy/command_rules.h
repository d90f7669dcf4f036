// Command rules: whether a command an agent asks Anvil to run may run without a question
// (allow), only after one (prompt), or never (forbidden). Codex's execpolicy semantics in a TOML
// format of Anvil's own:
//
//   [[rule]]
//   pattern = ["git", ["push", "fetch"]]   # an argv prefix; a list is a set of alternatives
//   decision = "prompt"                    # allow | prompt | forbidden
//   justification = "talks to the remote: ask first"
//   match = ["git push origin main", ["git", "fetch"]]   # must match this rule
//   not_match = ["git status"]                            # must not match this rule
//   exact = true                           # optional: the argv must END with the pattern too
//
// A rule matches a command whose argv starts with its pattern; with `exact = true`, only a
// command with exactly as many words as the pattern (an "always" answer writes such rules, so
// approving `env` or `git fetch` once does not allow `env sh -c …` or `git fetch --upload-pack=…`
// later). Among all matching rules the
// strictest decision wins (forbidden > prompt > allow), whichever file or layer it came from.
// The examples are checked when the file is loaded: a rule whose own examples disagree with it
// is an error naming the file, line and example, so a rule cannot silently mean something other
// than its author thought.
//
// Three layers, read in this order (which only orders ties in reports, never precedence):
//   admin      /etc/anvil/rules/*.toml          prompt and forbidden only
//   user       ~/.config/anvil/rules/*.toml     ($XDG_CONFIG_HOME honoured) any decision
//   workspace  <workspace>/.anvil/rules.toml    prompt and forbidden only: it comes with the
//              repository (UNTRUSTED input), and a cloned repository must never allow itself
//              anything
// A layer refusing a decision refuses the whole file with line, column and `fix:`, the way
// Anvil.toml refuses a key that would widen a grant: silently dropping the rule would hide the
// attempt. Every malformed file fails closed: nothing is judged on a partial rule set.
//
// Matching is exact on argv words. A rule's program may be a bare name ("rm") or a path; a bare
// name in a prompt or forbidden rule also matches that program named by any path ("/bin/rm",
// "./rm"), so a path cannot step around a restriction; an allow rule never does ("./git" in a
// repository is not the git the user allowed). Commands are looked through first
// (command_segments.h): the commands of a `bash -c` script are judged one by one, and a wrapper
// such as env or timeout cannot hide a forbidden program. A prompt or forbidden rule also
// matches the command with its global options removed (global_options.h: `git -c k=v push` is
// `git push` to a rule on `git push`); an allow rule only the command as written.
//
// A command that is not fully understood (a script construct the parser refuses, a launcher it
// cannot follow) may run commands nobody read. That matters only to a prompt or forbidden rule
// they could hide from, so it is `prompt` while any layer has one, and `none` (no rule decides:
// the approval mode does, as for any other command) when no layer has any. Never `allow` or
// `harmless`, and an "always" answer is never offered for it (approval.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "fs/rules_files.h"
#include "policy/command_segments.h"
#include "policy/harmless_commands.h"
#include "policy/program_lookup.h"

namespace anvil {

// Ordered by strictness: a larger value wins.
enum class Decision : std::uint8_t { kAllow = 0, kPrompt = 1, kForbidden = 2 };
std::string_view ToString(Decision decision);  // "allow", "prompt", "forbidden"
std::optional<Decision> ParseDecision(std::string_view text);

enum class RuleLayer : std::uint8_t { kAdmin, kUser, kWorkspace };
std::string_view ToString(RuleLayer layer);  // "admin", "user", "workspace"

inline constexpr std::string_view kAdminRulesDir = "/etc/anvil/rules";
inline constexpr std::string_view kWorkspaceRulesPath = ".anvil/rules.toml";
inline constexpr std::size_t kMaxRulesFileBytes = 1024 * 1024;
inline constexpr std::size_t kMaxWorkspaceRulesFileBytes = 256 * 1024;
inline constexpr std::size_t kMaxRulesPerFile = 10000;
inline constexpr std::size_t kMaxRulesFilesPerDir = 256;
inline constexpr std::size_t kMaxPatternElements = 64;
inline constexpr std::size_t kMaxAlternatives = 64;
inline constexpr std::size_t kMaxExamplesPerRule = 64;
inline constexpr std::size_t kMaxRuleStringBytes = 4096;
inline constexpr std::size_t kMaxJustificationBytes = 1000;

struct CommandRule {
  // One element per argv word; each holds the alternatives that word may be (one: a literal).
  std::vector<std::vector<std::string>> pattern;
  Decision decision = Decision::kPrompt;
  std::string justification;
  std::vector<std::vector<std::string>> match;  // examples as argv, checked at load
  std::vector<std::vector<std::string>> not_match;
  bool exact = false;  // the argv has no word after the pattern's
  RuleLayer layer = RuleLayer::kUser;
  std::string file;  // as named when loaded
  std::size_t line = 0;
  std::size_t column = 0;

  // Whether argv starts with the pattern, and for an exact rule ends with it (with the bare-name
  // rule above for prompt/forbidden, and for them argv without its global options too).
  bool Matches(const std::vector<std::string>& argv) const;
  // The same with no global options removed (what an allow rule means).
  bool MatchesAsWritten(const std::vector<std::string>& argv) const;
  std::string Where() const;        // "file:line:column"
  std::string PatternText() const;  // ["git", ["push", "fetch"]]
};

// Parses one rules file and checks every rule's examples. `source_name` names it in errors
// ("invalid: <source>:<line>:<column>: <what> (fix: <what to do>)") and in CommandRule::file.
Result<std::vector<CommandRule>> ParseRulesFile(std::string_view text, std::string_view source_name,
                                                RuleLayer layer);

// The rules of every layer, indexed by program so a command is checked against the few rules
// that can match it, not all of them.
class CommandRules {
 public:
  // Appends in load order (admin, user, workspace).
  void Add(std::vector<CommandRule> rules);
  const std::vector<CommandRule>& rules() const { return rules_; }
  // Whether any layer holds a prompt or forbidden rule: only then can a part of a command that
  // is not understood hide a command from a rule that would stop it.
  bool HasRestrictions() const { return restrictions_ > 0; }

  // Every rule matching argv, in load order, into `out` (cleared first). With `narrowing`,
  // allow rules are left out (command_segments.h, SegmentRole::kNarrowing).
  void Matching(const std::vector<std::string>& argv, bool narrowing,
                std::vector<const CommandRule*>& out) const;

 private:
  std::vector<CommandRule> rules_;
  std::unordered_map<std::string, std::vector<std::uint32_t>> by_program_;
  std::size_t restrictions_ = 0;
};

struct RulesLocations {
  std::string admin_dir = std::string(kAdminRulesDir);  // empty: no admin layer
  std::string user_dir;                                 // empty: no user layer
  // Non-empty: these files are the user layer instead of user_dir (anvil rules check --rules).
  std::vector<std::string> user_files;
  std::string workspace_dir;  // empty: no workspace layer; else its .anvil/rules.toml
  // More directories whose .anvil/rules.toml joins the workspace layer (which can only narrow,
  // so another file never loosens anything): a workspace and the tree it sits in.
  std::vector<std::string> more_workspace_dirs;
};

// The user layer's directory: UserRulesDirFrom and UserRulesDir (this process's environment)
// in fs/rules_files.h.

// Reads every layer. A missing directory or file is an empty layer; anything else that cannot
// be read or parsed is an error (fail closed). The workspace file is opened beneath the
// workspace without following any symlink (a link is "denied").
Result<CommandRules> LoadCommandRules(const RulesLocations& where);

// What the rules say about a whole command.
enum class RulesOutcome : std::uint8_t {
  kAllow,      // every judged command is allowed by a rule
  kPrompt,     // a prompt rule matched, or the command is not fully understood and some layer
               // has a prompt or forbidden rule (CommandRules::HasRestrictions)
  kForbidden,  // a forbidden rule matched
  kHarmless,   // no rule decided, and every judged command without a rule is built-in harmless
  kNoRule,     // no rule decided for some judged command that is not harmless, or the command
               // is not fully understood and no layer has a prompt or forbidden rule
};
std::string_view ToString(RulesOutcome outcome);  // "allow", …, "harmless", "none"

struct SegmentVerdict {
  CommandSegment segment;
  std::vector<const CommandRule*> matched;    // in load order
  std::optional<Decision> decision;           // the strictest of `matched`
  const CommandRule* rule = nullptr;          // the first matched rule with that decision
  const HarmlessCommand* harmless = nullptr;  // judged, no rule, and in the built-in set
  // With a ProgramSearch, for a program named without a slash (program_lookup.h): why it is not
  // taken for the system's program, so it is not harmless ("" when it is, or is not looked up:
  // a path, a shell's own builtin), and why an allow rule may not speak for it.
  std::string not_system;
  std::string allow_blocked;
  const CommandRule* blocked_allow = nullptr;  // an allow rule that would have matched
};

struct CommandVerdict {
  std::vector<std::string> argv;
  RulesOutcome outcome = RulesOutcome::kNoRule;
  // Whether every part was taken apart (command_segments.h). A command that is not is never
  // allow or harmless: no allow rule or harmless entry can speak for what was not read.
  bool understood = true;
  std::string not_understood;  // why, when !understood
  std::vector<SegmentVerdict> segments;
  int deciding_segment = -1;          // the segment whose rule decided; -1 when none did
  const CommandRule* rule = nullptr;  // that rule
  std::string reason;                 // one line for people
};

// Pure. The verdict points into `rules`, which must outlive it. With `search`, every program
// named without a slash is judged by the PATH it will be looked up on (program_lookup.h): it is
// built-in harmless, and a shell's script is judged instead of the shell, only for the system's
// program; an allow rule does not speak for it when the sandboxed command may put a program of
// that name first. Without one (`anvil rules check`, which knows no command environment), by
// the name alone.
CommandVerdict EvaluateCommand(const CommandRules& rules, const std::vector<std::string>& argv,
                               const ProgramSearch* search = nullptr);

}  // namespace anvil
