#include "policy/exec_rules.h"

#include <utility>

#include "fs/file_facts.h"
#include "fs/workspace_path.h"

namespace anvil {
namespace {

using K = OperandKind;

ExecFlag Switch(std::string long_name, char short_name = 0) {
  return ExecFlag{std::move(long_name), short_name, K::kNone, false};
}
ExecFlag WithValue(std::string long_name, char short_name = 0, K kind = K::kValue) {
  return ExecFlag{std::move(long_name), short_name, kind, false};
}
// A numeric value the tool allocates for: spelled as the tool parses it, and at most `max`.
ExecFlag Capped(std::string long_name, char short_name, ValueCap cap, std::uint64_t max) {
  ExecFlag flag = WithValue(std::move(long_name), short_name);
  flag.cap = cap;
  flag.max = max;
  return flag;
}

// ripgrep 13 (Debian 12). Every flag here only changes what is matched, which files under the
// given paths are searched, or how results are printed. Nothing here starts a program, loads a
// configuration file or names a file outside the checked path operands.
ExecRule RipgrepRule() {
  ExecRule rule;
  rule.name = "rg";
  rule.candidate_paths = {"/usr/bin/rg"};
  // The runner gives rg a fixed environment without RIPGREP_CONFIG_PATH already; --no-config
  // makes config loading impossible even if that ever changes (a config file can hold --pre).
  rule.forced_args = {"--no-config"};
  rule.allowed_flags = {
      // Matching.
      WithValue("regexp", 'e', K::kPattern),
      WithValue("file", 'f', K::kFilePath),
      Switch("case-sensitive", 's'),
      Switch("ignore-case", 'i'),
      Switch("smart-case", 'S'),
      Switch("fixed-strings", 'F'),
      Switch("word-regexp", 'w'),
      Switch("line-regexp", 'x'),
      Switch("invert-match", 'v'),
      Switch("multiline", 'U'),
      Switch("multiline-dotall"),
      Switch("crlf"),
      Switch("null-data"),
      Switch("pcre2", 'P'),
      WithValue("engine"),
      Switch("auto-hybrid-regex"),
      Switch("no-unicode"),
      Switch("no-pcre2-unicode"),
      WithValue("encoding", 'E'),
      Switch("text", 'a'),
      Switch("binary"),
      // Size caps on the compiled regex, capped in turn: a pathological pattern under a raised
      // limit grows until the limit (the runner's memory limit is the backstop).
      Capped("dfa-size-limit", 0, ValueCap::kSize, kMaxExecRegexBytes),
      Capped("regex-size-limit", 0, ValueCap::kSize, kMaxExecRegexBytes),
      // Which files under the path operands are searched.
      WithValue("glob", 'g'),
      WithValue("iglob"),
      Switch("glob-case-insensitive"),
      WithValue("type", 't'),
      WithValue("type-not", 'T'),
      WithValue("type-add"),
      WithValue("type-clear"),
      Switch("hidden", '.'),
      Switch("unrestricted", 'u'),
      Switch("no-ignore"),
      Switch("no-ignore-dot"),
      Switch("no-ignore-exclude"),
      Switch("no-ignore-files"),
      Switch("no-ignore-global"),
      Switch("no-ignore-parent"),
      Switch("no-ignore-vcs"),
      Switch("no-require-git"),
      Switch("ignore-file-case-insensitive"),
      WithValue("ignore-file", 0, K::kFilePath),
      WithValue("max-depth"),
      WithValue("max-filesize"),
      Switch("one-file-system"),
      Switch("mmap"),
      Switch("no-mmap"),
      Switch("no-config"),
      Capped("threads", 'j', ValueCap::kCount, kMaxExecThreads),
      // Output.
      Capped("after-context", 'A', ValueCap::kCount, kMaxExecContextLines),
      Capped("before-context", 'B', ValueCap::kCount, kMaxExecContextLines),
      Capped("context", 'C', ValueCap::kCount, kMaxExecContextLines),
      WithValue("context-separator"),
      Switch("byte-offset", 'b'),
      Switch("column"),
      Switch("count", 'c'),
      Switch("count-matches"),
      Switch("files-with-matches", 'l'),
      Switch("files-without-match"),
      Switch("include-zero"),
      Switch("heading"),
      Switch("no-heading"),
      Switch("with-filename", 'H'),
      Switch("no-filename", 'I'),
      Switch("line-number", 'n'),
      Switch("no-line-number", 'N'),
      Switch("only-matching", 'o'),
      Switch("passthru"),
      WithValue("replace", 'r'),
      Switch("trim"),
      Switch("vimgrep"),
      Switch("json"),
      Switch("null", '0'),
      WithValue("max-columns", 'M'),
      Switch("max-columns-preview"),
      WithValue("max-count", 'm'),
      WithValue("color"),
      WithValue("colors"),
      Switch("pretty", 'p'),
      WithValue("path-separator"),
      WithValue("field-context-separator"),
      WithValue("field-match-separator"),
      WithValue("sort"),
      WithValue("sortr"),
      Switch("line-buffered"),
      Switch("block-buffered"),
      Switch("quiet", 'q'),
      Switch("no-messages"),
      Switch("no-ignore-messages"),
      Switch("stats"),
  };
  // Modes without a pattern: the positionals are all paths.
  for (ExecFlag flag : {Switch("files"), Switch("type-list"), Switch("version", 'V')}) {
    flag.replaces_positional_pattern = true;
    rule.allowed_flags.push_back(std::move(flag));
  }
  for (ExecFlag& flag : rule.allowed_flags) {
    if (flag.long_name == "regexp" || flag.long_name == "file") {
      flag.replaces_positional_pattern = true;
    }
  }
  rule.refused_flags = {
      {"pre", 0, "runs a command for every searched file"},
      {"pre-glob", 0, "chooses the files --pre runs a command for"},
      {"search-zip", 'z', "runs decompression programs found through PATH"},
      {"follow", 'L',
       "traversal through symlinks reaches whatever the sandbox leaves readable (/etc, /usr)"},
      {"hostname-bin", 0, "runs a program to learn the hostname (ripgrep 14)"},
  };
  return rule;
}

// fd 8.6 (Debian 12 installs it as fdfind; other distributions as fd).
ExecRule FdRule() {
  ExecRule rule;
  rule.name = "fd";
  // fdfind first: on Debian /usr/bin/fd may be fdclone, an unrelated file manager.
  rule.candidate_paths = {"/usr/bin/fdfind", "/usr/bin/fd"};
  // --changed-within/--changed-before read dates in the local time zone.
  rule.runtime_files = {"/etc/localtime"};
  rule.allowed_flags = {
      // Matching.
      Switch("case-sensitive", 's'),
      Switch("ignore-case", 'i'),
      Switch("glob", 'g'),
      Switch("regex"),
      Switch("fixed-strings", 'F'),
      Switch("full-path", 'p'),
      WithValue("and", 0, K::kPattern),
      // Which entries under the path operands are visited.
      Switch("hidden", 'H'),
      Switch("no-ignore", 'I'),
      Switch("no-ignore-vcs"),
      Switch("no-ignore-parent"),
      Switch("unrestricted", 'u'),
      WithValue("ignore-file", 0, K::kFilePath),
      WithValue("search-path", 0, K::kSearchPath),
      WithValue("max-depth", 'd'),
      WithValue("min-depth"),
      WithValue("exact-depth"),
      WithValue("exclude", 'E'),
      Switch("prune"),
      WithValue("type", 't'),
      WithValue("extension", 'e'),
      WithValue("size", 'S'),
      WithValue("changed-within"),
      WithValue("changed-before"),
      WithValue("owner", 'o'),
      Switch("one-file-system"),
      Capped("threads", 'j', ValueCap::kCount, kMaxExecThreads),
      WithValue("max-results"),
      Switch("", '1'),
      // Output.
      Switch("print0", '0'),
      WithValue("color", 'c'),
      WithValue("path-separator"),
      Switch("strip-cwd-prefix"),
      Switch("quiet", 'q'),
      Switch("show-errors"),
      Switch("version", 'V'),
  };
  rule.refused_flags = {
      {"exec", 'x', "runs a command for every result"},
      {"exec-batch", 'X', "runs a command with the results"},
      {"list-details", 'l', "runs ls (an alias for --exec-batch ls -l)"},
      {"batch-size", 0, "only meaningful with --exec-batch"},
      {"base-directory", 0, "changes the directory every path operand is resolved against"},
      {"follow", 'L',
       "traversal through symlinks reaches whatever the sandbox leaves readable (/etc, /usr)"},
      {"absolute-path", 'a',
       "prints the workspace's location on the host; sys.* paths are workspace-relative"},
  };
  return rule;
}

std::string DashedLong(const std::string& long_name) { return "--" + long_name; }
std::string DashedShort(char c) { return std::string("-") + c; }

// The spelling the tool sees: the long form whenever there is one, the value attached with '='
// so it can never be read as a separate flag.
std::string Canonical(const ExecFlag& flag, const std::string* value) {
  std::string out =
      flag.long_name.empty() ? DashedShort(flag.short_name) : DashedLong(flag.long_name);
  if (value != nullptr) out += "=" + *value;
  return out;
}

tl::unexpected<Error> RefuseFlag(const ExecRule& rule, std::string_view spelling,
                                 const std::string* reason) {
  std::string message = rule.name + " flag not allowed: " + QuotePathForMessage(spelling);
  if (reason != nullptr) message += " (" + *reason + ")";
  return Fail("denied", std::move(message));
}

// Finds `spelling`'s rule entry by long name (non-empty) or short name; refused entries are
// looked at first so their reason reaches the message.
Result<const ExecFlag*> ResolveFlag(const ExecRule& rule, std::string_view long_name,
                                    char short_name, std::string_view spelling) {
  for (const auto& refused : rule.refused_flags) {
    bool hit = long_name.empty() ? (short_name != 0 && refused.short_name == short_name)
                                 : refused.long_name == long_name;
    if (hit) return RefuseFlag(rule, spelling, &refused.reason);
  }
  for (const auto& flag : rule.allowed_flags) {
    bool hit = long_name.empty() ? (short_name != 0 && flag.short_name == short_name)
                                 : (!flag.long_name.empty() && flag.long_name == long_name);
    if (hit) return &flag;
  }
  return RefuseFlag(rule, spelling, nullptr);
}

Result<std::string> CheckPathOperand(const ExecRule& rule, std::string_view what,
                                     const std::string& raw, RootPolicy root) {
  auto normalized = NormalizeWorkspacePath(raw, root);
  if (!normalized) {
    return Fail("invalid", rule.name + " " + std::string(what) + ": " + normalized.error().message);
  }
  return std::move(*normalized);
}

std::string ShowSize(std::uint64_t bytes) {
  if (bytes % (1ull << 30) == 0) return std::to_string(bytes >> 30) + "G";
  if (bytes % (1ull << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes % (1ull << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

// A capped numeric value: digits (and for a size one K/M/G suffix, as ripgrep parses it), at most
// the flag's cap. Anything the tool could read as a larger number is refused.
Status CheckCappedValue(const ExecRule& rule, const ExecFlag& flag, const std::string& value) {
  const std::string spelled = Canonical(flag, &value);
  std::string_view digits = value;
  std::uint64_t unit = 1;
  if (flag.cap == ValueCap::kSize && !digits.empty()) {
    switch (digits.back()) {
      case 'K':
        unit = 1ull << 10;
        break;
      case 'M':
        unit = 1ull << 20;
        break;
      case 'G':
        unit = 1ull << 30;
        break;
      default:
        break;
    }
    if (unit != 1) digits.remove_suffix(1);
  }
  const char* shape = flag.cap == ValueCap::kSize ? "a size (digits, then K, M or G)" : "a number";
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return Fail("invalid", rule.name + " " + QuotePathForMessage(spelled) + ": expects " + shape);
  }
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  // Twenty digits or more is over any cap (and over what 64 bits hold).
  if (digits.size() > 19 || std::stoull(std::string(digits)) > flag.max / unit) {
    const std::string cap =
        flag.cap == ValueCap::kSize ? ShowSize(flag.max) : std::to_string(flag.max);
    return Fail("limit", rule.name + " " + QuotePathForMessage(spelled) + ": over the cap of " +
                             cap + " (docs/exec-policy.md)");
  }
  return Ok();
}

// Applies the operand rule of `flag` to `value`; returns the value to pass on.
Result<std::string> CheckOperand(const ExecRule& rule, const ExecFlag& flag,
                                 const std::string& value) {
  std::string what = Canonical(flag, nullptr) + " operand";
  if (flag.cap != ValueCap::kNone) {
    ANVIL_RETURN_IF_ERROR(CheckCappedValue(rule, flag, value));
  }
  switch (flag.operand) {
    case K::kFilePath:
      return CheckPathOperand(rule, what, value, RootPolicy::kReject);
    case K::kSearchPath:
      return CheckPathOperand(rule, what, value, RootPolicy::kAllow);
    case K::kNone:
    case K::kValue:
    case K::kPattern:
      break;
  }
  return value;  // data for the tool; NUL bytes were refused for every argument already
}

Status CheckArgShapes(const ExecRule& rule, const std::vector<std::string>& args) {
  if (args.size() > kMaxExecArgs) {
    return Fail("invalid", rule.name + ": " + std::to_string(args.size()) + " arguments, at most " +
                               std::to_string(kMaxExecArgs));
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i].size() > kMaxExecArgBytes) {
      return Fail("invalid", rule.name + ": argument " + std::to_string(i + 1) + " is over " +
                                 std::to_string(kMaxExecArgBytes) + " bytes");
    }
    // execve would silently cut the argument at the NUL: the tool would see something other
    // than what was checked.
    if (args[i].find('\0') != std::string::npos) {
      return Fail("invalid",
                  rule.name + ": argument " + std::to_string(i + 1) + " contains a NUL byte");
    }
  }
  return Ok();
}

}  // namespace

bool ExecutableExistsOnHost(const std::string& absolute_path) {
  return IsExecutableFile(absolute_path);
}

const std::vector<ExecRule>& ExecPolicyTable() {
  static const std::vector<ExecRule> table = {RipgrepRule(), FdRule()};
  return table;
}

const ExecRule* FindExecRule(std::string_view name) {
  for (const auto& rule : ExecPolicyTable()) {
    if (rule.name == name) return &rule;
  }
  return nullptr;
}

Result<const ExecRule*> LookupExecRule(std::string_view program) {
  const ExecRule* rule = FindExecRule(program);
  if (rule == nullptr) {
    return Fail("denied", "executable not in the policy table: " + QuotePathForMessage(program));
  }
  return rule;
}

Result<CheckedArgv> CheckExecArgv(const ExecRule& rule, const std::vector<std::string>& args,
                                  const ExecutableExistsFn& exists) {
  ANVIL_RETURN_IF_ERROR(CheckArgShapes(rule, args));

  std::vector<std::string> flags_out;
  std::vector<std::string> positionals;
  bool pattern_replaced = false;
  bool options_ended = false;

  std::vector<std::string> flag_paths;
  auto emit = [&](const ExecFlag& flag, const std::string* value) -> Status {
    if (flag.replaces_positional_pattern) pattern_replaced = true;
    if (value == nullptr) {
      flags_out.push_back(Canonical(flag, nullptr));
      return Ok();
    }
    ANVIL_TRY(checked, CheckOperand(rule, flag, *value));
    if (flag.operand == K::kFilePath || flag.operand == K::kSearchPath) {
      flag_paths.push_back(*checked);
    }
    flags_out.push_back(Canonical(flag, &*checked));
    return Ok();
  };

  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    // "-" is stdin (data the plugin supplied itself), not a flag.
    if (options_ended || arg.size() < 2 || arg[0] != '-') {
      positionals.push_back(arg);
      continue;
    }
    if (arg == "--") {
      options_ended = true;
      continue;
    }

    if (arg[1] == '-') {  // --name, --name=value, --name value
      std::size_t eq = arg.find('=');
      std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      std::string spelling = "--" + name;
      if (name.empty()) return RefuseFlag(rule, spelling, nullptr);
      ANVIL_TRY(flag, ResolveFlag(rule, name, 0, spelling));
      const ExecFlag& f = **flag;
      if (f.operand == K::kNone) {
        if (eq != std::string::npos) {
          return Fail("invalid", rule.name + " flag " + spelling + " takes no value");
        }
        ANVIL_RETURN_IF_ERROR(emit(f, nullptr));
        continue;
      }
      std::string value;
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];  // taken as the value whatever it looks like (getopt and clap agree)
      } else {
        return Fail("invalid", rule.name + " flag " + spelling + " needs a value");
      }
      ANVIL_RETURN_IF_ERROR(emit(f, &value));
      continue;
    }

    // A cluster of short flags: -n, -uuz, -nA3, -A 3, -A=3 (clap drops the '=').
    for (std::size_t j = 1; j < arg.size(); ++j) {
      char c = arg[j];
      std::string spelling = DashedShort(c);
      ANVIL_TRY(flag, ResolveFlag(rule, "", c, spelling));
      const ExecFlag& f = **flag;
      if (f.operand == K::kNone) {
        ANVIL_RETURN_IF_ERROR(emit(f, nullptr));
        continue;
      }
      std::string value;
      if (j + 1 < arg.size()) {
        value = arg.substr(j + 1);
        if (value[0] == '=') value.erase(0, 1);
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Fail("invalid", rule.name + " flag " + spelling + " needs a value");
      }
      ANVIL_RETURN_IF_ERROR(emit(f, &value));
      break;  // the value consumed the rest of the cluster
    }
  }

  // Positionals: [pattern] path...
  std::size_t first_path = rule.first_positional_is_pattern && !pattern_replaced ? 1 : 0;
  for (std::size_t p = first_path; p < positionals.size(); ++p) {
    ANVIL_TRY(checked, CheckPathOperand(rule, "path operand", positionals[p], RootPolicy::kAllow));
    positionals[p] = std::move(*checked);
  }

  CheckedArgv out;
  out.path_operands = std::move(flag_paths);
  for (std::size_t p = first_path; p < positionals.size(); ++p) {
    out.path_operands.push_back(positionals[p]);
  }
  for (const auto& candidate : rule.candidate_paths) {
    if (exists(candidate)) {
      out.program_path = candidate;
      break;
    }
  }
  if (out.program_path.empty()) {
    std::string looked;
    for (const auto& candidate : rule.candidate_paths) {
      looked += (looked.empty() ? "" : ", ") + candidate;
    }
    return Fail("not_found", rule.name + " is not installed (looked in " + looked + ")");
  }

  out.argv.reserve(1 + rule.forced_args.size() + flags_out.size() + 1 + positionals.size());
  out.argv.push_back(rule.name);
  out.argv.insert(out.argv.end(), rule.forced_args.begin(), rule.forced_args.end());
  out.argv.insert(out.argv.end(), flags_out.begin(), flags_out.end());
  if (!positionals.empty()) {
    // After "--" a pattern such as "--pre" or "-x" can only be a pattern.
    out.argv.push_back("--");
    out.argv.insert(out.argv.end(), positionals.begin(), positionals.end());
  }
  // The caps bound what the tool receives, so they hold for the canonical spelling too:
  // `-bbb…` expands to one `--byte-offset` per letter and `-gV` grows into `--glob=V`. (Found by
  // tests/fuzz/exec_argv_fuzzer: the canonical argv must re-check to itself.)
  const std::vector<std::string> expanded(
      out.argv.begin() + static_cast<std::ptrdiff_t>(1 + rule.forced_args.size()), out.argv.end());
  if (auto shapes = CheckArgShapes(rule, expanded); !shapes) {
    return Fail("invalid", shapes.error().message + " once written in canonical form");
  }
  return out;
}

}  // namespace anvil
