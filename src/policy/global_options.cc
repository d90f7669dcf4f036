// Global options before a subcommand (global_options.h): the table and the walk over it.
#include "policy/global_options.h"

#include <algorithm>
#include <cctype>

#include "policy/command_segments.h"
#include "policy/shell_words.h"

namespace anvil {
namespace {

enum class Takes {
  kNothing,   // --bare
  kValue,     // -C DIR, -CDIR, --git-dir DIR, --git-dir=DIR
  kAttached,  // --list-cmds=GROUP only
  kOptional,  // --exec-path or --exec-path=DIR (never the next word)
};

struct GlobalOption {
  std::string_view spelling;
  Takes takes = Takes::kNothing;
  bool sets_config = false;  // the value is NAME=VALUE configuration (its NAME is checked)
};

struct ProgramTable {
  std::string_view program;
  std::vector<GlobalOption> options = {};
  // Words that read like options but are the subcommand (git runs `git --help push` as `git
  // help push`): where the walk stops, kept.
  std::vector<std::string_view> subcommands = {};
  // Configuration names (lower case prefixes) that define a new subcommand: unreadable.
  std::vector<std::string_view> config_defines_subcommand = {};
  // A configuration value without `=` names a file of settings (cargo's `--config FILE`), which
  // may define anything, a subcommand included: unreadable.
  bool config_may_be_file = false;
  // `--no-NAME` is a boolean option for every NAME (npm's flags).
  bool negated_booleans = false;
  // A first word `+NAME` picks a toolchain (rustup's `cargo +nightly build`).
  bool toolchain_word = false;
};

// git(1), and git.c's handle_options: the options are compared whole (no abbreviations); `-c`
// and `-C` take the next word (the attached `-cNAME=VALUE` is read as one too: removing a word
// git would refuse only ever makes a restriction match more).
const std::vector<ProgramTable>& Tables() {
  static const std::vector<ProgramTable> kTables = {
      {.program = "git",
       .options =
           {
               {"-C", Takes::kValue},
               {"-c", Takes::kValue, true},
               {"--config-env", Takes::kValue, true},
               {"--git-dir", Takes::kValue},
               {"--work-tree", Takes::kValue},
               {"--namespace", Takes::kValue},
               {"--super-prefix", Takes::kValue},
               {"--attr-source", Takes::kValue},
               {"--shallow-file", Takes::kValue},
               {"--exec-path", Takes::kOptional},
               {"--list-cmds", Takes::kAttached},
               {"--html-path"},
               {"--man-path"},
               {"--info-path"},
               {"-p"},
               {"--paginate"},
               {"-P"},
               {"--no-pager"},
               {"--no-replace-objects"},
               {"--no-lazy-fetch"},
               {"--no-advice"},
               {"--bare"},
               {"--literal-pathspecs"},
               {"--no-literal-pathspecs"},
               {"--glob-pathspecs"},
               {"--noglob-pathspecs"},
               {"--icase-pathspecs"},
               {"--no-optional-locks"},
           },
       .subcommands = {"--help", "-h", "--version", "-v"},
       .config_defines_subcommand = {"alias."}},
      // cargo(1) OPTIONS: `--config KEY=VALUE` can define `alias.NAME`, and `--config FILE` any
      // setting.
      {.program = "cargo",
       .options =
           {
               {"-C", Takes::kValue},
               {"--config", Takes::kValue, true},
               {"-Z", Takes::kValue},
               {"--color", Takes::kValue},
               {"--explain", Takes::kValue},
               {"-v"},
               {"-vv"},
               {"--verbose"},
               {"-q"},
               {"--quiet"},
               {"--locked"},
               {"--offline"},
               {"--frozen"},
           },
       .subcommands = {"--help", "-h", "--version", "-V", "--list"},
       .config_defines_subcommand = {"alias."},
       .config_may_be_file = true,
       .toolchain_word = true},
      // docker(1)'s global options (the CLI's own, before the management command).
      {.program = "docker",
       .options =
           {
               {"--config", Takes::kValue},
               {"-c", Takes::kValue},
               {"--context", Takes::kValue},
               {"-H", Takes::kValue},
               {"--host", Takes::kValue},
               {"-l", Takes::kValue},
               {"--log-level", Takes::kValue},
               {"--tlscacert", Takes::kValue},
               {"--tlscert", Takes::kValue},
               {"--tlskey", Takes::kValue},
               {"-D"},
               {"--debug"},
               {"--tls"},
               {"--tlsverify"},
           },
       .subcommands = {"--help", "-h", "--version", "-v"}},
      // kubectl options (the flags every command inherits).
      {.program = "kubectl",
       .options =
           {
               {"--as", Takes::kValue},
               {"--as-group", Takes::kValue},
               {"--as-uid", Takes::kValue},
               {"--cache-dir", Takes::kValue},
               {"--certificate-authority", Takes::kValue},
               {"--client-certificate", Takes::kValue},
               {"--client-key", Takes::kValue},
               {"--cluster", Takes::kValue},
               {"--context", Takes::kValue},
               {"--kubeconfig", Takes::kValue},
               {"--log-flush-frequency", Takes::kValue},
               {"-n", Takes::kValue},
               {"--namespace", Takes::kValue},
               {"--password", Takes::kValue},
               {"--profile", Takes::kValue},
               {"--profile-output", Takes::kValue},
               {"--request-timeout", Takes::kValue},
               {"-s", Takes::kValue},
               {"--server", Takes::kValue},
               {"--tls-server-name", Takes::kValue},
               {"--token", Takes::kValue},
               {"--user", Takes::kValue},
               {"--username", Takes::kValue},
               {"-v", Takes::kValue},
               {"--v", Takes::kValue},
               {"--vmodule", Takes::kValue},
               {"--disable-compression"},
               {"--insecure-skip-tls-verify"},
               {"--match-server-version"},
               {"--warnings-as-errors"},
           },
       .subcommands = {"--help", "-h"}},
      // npm's common flags before the command (npm help config); any `--no-NAME` is a boolean.
      // Another option is unreadable: npm takes the next word as an unknown option's value.
      {.program = "npm",
       .options =
           {
               {"-C", Takes::kValue},
               {"--prefix", Takes::kValue},
               {"--registry", Takes::kValue},
               {"--userconfig", Takes::kValue},
               {"--globalconfig", Takes::kValue},
               {"--cache", Takes::kValue},
               {"--loglevel", Takes::kValue},
               {"-w", Takes::kValue},
               {"--workspace", Takes::kValue},
               {"--tag", Takes::kValue},
               {"--otp", Takes::kValue},
               {"-g"},
               {"--global"},
               {"-s"},
               {"--silent"},
               {"-q"},
               {"--quiet"},
               {"-d"},
               {"-dd"},
               {"--verbose"},
               {"--json"},
               {"-y"},
               {"--yes"},
               {"-f"},
               {"--force"},
               {"--dry-run"},
               {"-ws"},
               {"--workspaces"},
               {"--include-workspace-root"},
               {"--offline"},
               {"--prefer-offline"},
               {"--ignore-scripts"},
           },
       .subcommands = {"--help", "-h", "--version", "-v"},
       .negated_booleans = true},
  };
  return kTables;
}

const ProgramTable* TableFor(std::string_view name) {
  for (const auto& table : Tables()) {
    if (table.program == name) return &table;
  }
  return nullptr;
}

bool DefinesSubcommand(const ProgramTable& table, std::string_view config) {
  if (table.config_may_be_file && config.find('=') == std::string_view::npos) return true;
  std::string lower(config.substr(0, config.find('=')));
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(
      table.config_defines_subcommand.begin(), table.config_defines_subcommand.end(),
      [&](std::string_view prefix) { return std::string_view(lower).starts_with(prefix); });
}

std::vector<std::string> Unreadable(const std::vector<std::string>& argv) {
  return {argv[0], std::string(kAnyWords)};
}

}  // namespace

bool HasGlobalOptions(std::string_view program_name) { return TableFor(program_name) != nullptr; }

std::optional<std::vector<std::string>> WithoutGlobalOptions(const std::vector<std::string>& argv) {
  if (argv.empty()) return std::nullopt;
  const ProgramTable* table = TableFor(ProgramName(argv[0]));
  if (table == nullptr) return std::nullopt;
  std::size_t i = 1;
  if (table->toolchain_word && i < argv.size() && argv[i].starts_with('+')) ++i;
  while (i < argv.size()) {
    const std::string& word = argv[i];
    // An expansion here may be any option, one that takes the next word included.
    if (IsWildcardWord(word)) return Unreadable(argv);
    if (word.size() < 2 || word[0] != '-') break;
    if (std::find(table->subcommands.begin(), table->subcommands.end(), word) !=
        table->subcommands.end()) {
      break;
    }
    const GlobalOption* found = nullptr;
    std::optional<std::string_view> value;  // attached
    // The whole word first (npm's `-ws` is not `-w s`), then a value attached to it.
    for (const auto& option : table->options) {
      if (word == option.spelling) {
        found = &option;
        break;
      }
    }
    static constexpr GlobalOption kNegatedBoolean{"--no-"};
    if (found == nullptr && table->negated_booleans && word.starts_with("--no-") &&
        word.size() > 5 && word.find('=') == std::string::npos) {
      found = &kNegatedBoolean;
    }
    for (const auto& option : table->options) {
      if (found != nullptr) break;
      const std::string_view spelling = option.spelling;
      if (option.takes == Takes::kNothing || !word.starts_with(spelling)) continue;
      const std::string_view rest = std::string_view(word).substr(spelling.size());
      const bool is_short = spelling.size() == 2;
      if (!is_short && rest.starts_with('=')) {
        found = &option;
        value = rest.substr(1);
        break;
      }
      if (is_short && option.takes == Takes::kValue) {
        found = &option;
        value = rest;
        break;
      }
    }
    if (found == nullptr) return Unreadable(argv);
    if (!value && found->takes == Takes::kAttached) return Unreadable(argv);
    if (!value && found->takes == Takes::kValue) {
      if (i + 1 >= argv.size()) {  // the program refuses it; nothing runs past it
        i = argv.size();
        break;
      }
      ++i;
      const std::string& next = argv[i];
      if (found->sets_config && (IsWildcardWord(next) || DefinesSubcommand(*table, next))) {
        return Unreadable(argv);
      }
    } else if (value && found->sets_config && DefinesSubcommand(*table, *value)) {
      return Unreadable(argv);
    }
    ++i;
  }
  if (i == 1) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(argv.size() - i + 1);
  out.push_back(argv[0]);
  out.insert(out.end(), argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
  return out;
}

}  // namespace anvil
