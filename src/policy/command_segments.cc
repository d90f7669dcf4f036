#include "policy/command_segments.h"

#include <algorithm>
#include <optional>

#include "policy/shell_words.h"

namespace anvil {
namespace {

template <class List>
bool Contains(const List& list, std::string_view value) {
  return std::find(std::begin(list), std::end(list), value) != std::end(list);
}

// The shells whose `-c SCRIPT` the parser reads (shell_words.h), by the name of the program
// (or of the file it links to: ShellResolver). A name made of one of these and a version
// (`zsh5`, `bash-5.2`, `ksh2020`) is read as that shell too (ShellOfName).
constexpr std::string_view kShells[] = {"sh",    "bash", "dash", "zsh",    "ksh",   "mksh",
                                        "ash",   "yash", "lksh", "posh",   "ksh93", "pdksh",
                                        "rbash", "rzsh", "rksh", "rksh93", "rmksh"};

// Shells whose language the parser does not read (fish's `(cmd)` and `begin … end`, csh's own
// grammar, …): what they run from their command line (`fish -c`, `tcsh -c`, an init command,
// their standard input) is never understood; with only a script file, the command line is all
// there is to judge, as for `bash build.sh`.
// (Their start-up files are Anvil's in the sandbox home: policy/sandbox_home.h.)
constexpr std::string_view kUnreadShells[] = {"fish", "csh", "tcsh", "bsd-csh"};

// `name` without a version at its end (`zsh5` -> `zsh`, `zsh-5.9` -> `zsh`); `name`
// itself when nothing else is left.
std::string_view WithoutVersion(std::string_view name) {
  std::size_t end = name.size();
  while (end > 0 &&
         std::string_view("0123456789.-").find(name[end - 1]) != std::string_view::npos) {
    --end;
  }
  return end == 0 ? name : name.substr(0, end);
}

// An unread shell's command line (kUnreadShells): understood only as NAME SCRIPT-FILE [ARGS].
std::string UnreadShellWhy(const std::vector<std::string>& argv) {
  const std::string shown(ProgramName(argv[0]));
  if (argv.size() < 2) {
    return shown + " reading commands from its standard input is not understood";
  }
  if (IsWildcardWord(argv[1]))
    return "an expansion on the command line of " + shown + " is not understood";
  if (argv[1].starts_with("-") || argv[1].starts_with("+")) {
    return "the options of " + shown +
           " (its -c and init commands run code in a language the parser does not read) are not "
           "understood";
  }
  return {};
}

// Shell options a `-c` invocation may carry: login, errexit, nounset, xtrace, verbose, noglob,
// noexec. Anything else (-i interactive, --rcfile, …) is not understood.
constexpr std::string_view kShellShortOptions = "lcexuvfn";
constexpr std::string_view kShellLongOptions[] = {"--login", "--noprofile", "--norc", "--posix"};
constexpr std::string_view kShellSetOptions[] = {"pipefail", "errexit", "nounset",  "xtrace",
                                                 "verbose",  "noglob",  "noclobber"};

// Programs that run a command given to them but whose command line is not followed here: the
// command they run could not be judged, so the whole command is not understood.
constexpr std::string_view kOpaqueLaunchers[] = {
    "sudo",   "doas",        "su",      "runuser",  "pkexec",   "setsid", "flock",    "ionice",
    "chrt",   "taskset",     "unshare", "nsenter",  "chroot",   "strace", "ltrace",   "watch",
    "script", "systemd-run", "setpriv", "fakeroot", "firejail", "bwrap",  "parallel", "sg"};

// Interpreters run code from their command line (python3 -c, node -e, perl -e): rules cannot
// see inside that code. They are launchers for IsLauncherProgram but are judged as ordinary
// commands here (an "always" rule for one is exact, so its code is fixed).
constexpr std::string_view kInterpreters[] = {
    "python", "python2",   "python3", "pypy",   "pypy3", "node", "nodejs", "deno", "bun",  "perl",
    "ruby",   "php",       "lua",     "luajit", "tclsh", "wish", "awk",    "gawk", "mawk", "nawk",
    "make",   "gmake",     "npx",     "npm",    "yarn",  "pnpm", "git",    "find", "fd",   "fdfind",
    "ssh",    "osascript", "Rscript", "julia",  "emacs", "vim",  "nvim",   "vi"};

// Every command word some shell this file parses (bash, zsh, dash, ksh93, mksh, yash, busybox
// ash) reads as a builtin, precommand modifier or keyword, rather than as a program to look up.
// Many run code (eval, source, trap, compgen -C, complete -C, zsh's `-` and `repeat`, zpty, sched)
// or change how later commands run (alias, hash, read into PATH, set, a loaded builtin). Inside a
// script a word from this list is not understood unless kInertBuiltins names it or it is a
// wrapper this file follows (command, builtin, exec, noglob, nocorrect): an allowlist within the
// builtins, so a builtin nobody thought dangerous still prompts. In order: POSIX and bash; zsh
// with its precommand modifiers and module builtins; ksh93, mksh, yash and busybox ash.
// clang-format off
constexpr std::string_view kShellBuiltins[] = {
    ".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen",
    "complete", "compopt", "continue", "declare", "dirs", "disown", "echo", "enable", "eval",
    "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs",
    "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read",
    "readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test",
    "times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait",
    "coproc", "-", "repeat", "foreach", "end", "autoload", "bindkey", "bye", "cap", "chdir",
    "clone", "comparguments", "compcall", "compctl", "compdescribe", "compfiles", "compgroups",
    "compquote", "comptags", "comptry", "compvalues", "compadd", "compset", "compdef", "disable",
    "echotc", "echoti", "emulate", "float", "functions", "getcap", "getln", "integer", "limit",
    "log", "noglob", "nocorrect", "print", "private", "pushln", "r", "rehash", "sched", "setcap",
    "setopt", "stat", "ttyctl", "unfunction", "unhash", "unlimit", "unsetopt", "vared", "whence",
    "where", "which", "zcompile", "zformat", "zftp", "zle", "zmodload", "zparseopts", "zprof",
    "zpty", "zregexparse", "zsocket", "zstyle", "ztcp", "zcurses", "zsystem", "zselect", "ztie",
    "zuntie", "zgdbmpath", "zstat", "strftime", "sysopen", "sysread", "syswrite", "sysseek",
    "syserror", "pcre_compile", "pcre_match", "pcre_study", "zgetattr", "zsetattr", "zdelattr",
    "zlistattr", "zattr", "attr", "zsh_eval", "hist", "newgrp", "getconf", "sleep", "namespace",
    "global", "rename", "realpath", "array",
};
// clang-format on

// The builtins above that run no code and leave later commands as they were: judged as the
// ordinary commands they also are (printf -v is refused separately).
constexpr std::string_view kInertBuiltins[] = {
    ":",     "[",      "test",  "echo",   "printf",   "true",     "false", "pwd",   "cd",
    "kill",  "wait",   "exit",  "return", "break",    "continue", "shift", "times", "type",
    "which", "whence", "where", "sleep",  "realpath", "getconf",  "jobs",  "dirs",  "stat"};

// The forms of kInertBuiltins that are not inert, as a reason (empty when inert): bash's
// `jobs -x CMD` runs CMD, `wait -p NAME` unsets then assigns NAME, and `test -v NAME` (`[ -v`)
// evaluates an array subscript in NAME (`[ -v 'a[$(rm x)]' ]` runs rm; -R is refused with it).
// A word that expands may become any of these: any wildcard among jobs' or wait's words, an
// unquoted expansion or glob among test's (`[ $x ]` with x='-v a[…]'), or a quoted one followed
// by a word that expands or holds '[' (`[ "$o" "$y" ]`) is not understood.
std::string NotInertForm(const std::vector<std::string>& argv) {
  const std::string& name = argv[0];
  if (name == "jobs" || name == "wait") {
    for (std::size_t i = 1; i < argv.size(); ++i) {
      const std::string& arg = argv[i];
      if (IsWildcardWord(arg)) return name + " with a word that expands is not understood";
      if (arg.size() < 2 || arg[0] != '-') continue;
      if (name == "wait")
        return "wait with an option (wait -p assigns a variable) is not understood";
      if (arg.find_first_not_of("lnprs", 1) != std::string::npos) {
        return "jobs with an option other than -l, -n, -p, -r and -s (jobs -x runs a command) is "
               "not understood";
      }
    }
  }
  if (name == "test" || name == "[") {
    for (std::size_t i = 1; i < argv.size(); ++i) {
      const std::string& arg = argv[i];
      if (arg == "-v" || arg == "-R") {
        return "test -v and -R (bash evaluates an array subscript in the name) are not "
               "understood";
      }
      const bool operand_unknown =
          i + 1 < argv.size() &&
          (IsWildcardWord(argv[i + 1]) || argv[i + 1].find('[') != std::string::npos);
      if (arg == kAnyWords || (arg == kAnyWord && operand_unknown)) {
        return "test with a word that expands where it may become -v NAME is not understood";
      }
    }
  }
  return {};
}

// `set` may turn on or off only what changes no command the script runs: exiting on an error
// (-e), on an unset variable (-u), tracing (-x, -v) and pipefail. Anything else (`set --`, -k,
// -a, -o posix, a word that expands) is not understood.
constexpr std::string_view kSetShortOptions = "euxv";
constexpr std::string_view kSetLongOptions[] = {"pipefail", "errexit", "nounset", "xtrace",
                                                "verbose"};

// A variable name that changes no later command: an identifier, not ShellVariableIsSpecial.
bool PlainVariableName(std::string_view name) {
  const bool identifier = !name.empty() && !(name[0] >= '0' && name[0] <= '9') &&
                          std::all_of(name.begin(), name.end(), [](char c) {
                            return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                   (c >= '0' && c <= '9') || c == '_';
                          });
  return identifier && !ShellVariableIsSpecial(name);
}

bool SetUnderstood(const std::vector<std::string>& argv) {
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (arg.size() < 2 || (arg[0] != '-' && arg[0] != '+')) return false;
    for (std::size_t k = 1; k < arg.size(); ++k) {
      if (arg[k] == 'o' && k + 1 == arg.size()) {  // -o NAME, -euo NAME
        if (i + 1 >= argv.size() || !Contains(kSetLongOptions, argv[i + 1])) return false;
        ++i;
      } else if (kSetShortOptions.find(arg[k]) == std::string_view::npos) {
        return false;
      }
    }
  }
  return true;
}

// `read [-r] [-d DELIM] [NAME...]` assigns what it reads to NAMEs, as `NAME=value` would (the
// script assigns, so its commands are judged as such): understood when every NAME is a plain
// variable that changes no later command (not PATH, IFS, ...: ShellVariableIsSpecial) and no
// word expands (`read $X` may name any variable). Other options differ between shells (zsh's
// -p reads a coprocess, -z the editor's buffer) and are not understood.
bool ReadUnderstood(const std::vector<std::string>& argv) {
  std::size_t i = 1;
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (IsWildcardWord(arg)) return false;
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;
    for (std::size_t k = 1; k < arg.size(); ++k) {
      if (arg[k] == 'd' && k + 1 == arg.size()) {  // -d DELIM, -rd DELIM
        if (i + 1 >= argv.size() || IsWildcardWord(argv[i + 1])) return false;
        ++i;
      } else if (arg[k] != 'r') {
        return false;
      }
    }
  }
  for (; i < argv.size(); ++i) {
    if (!PlainVariableName(argv[i])) return false;
  }
  return true;
}

// `export NAME=VALUE...` (or `export NAME`) with literal words and plain names: the variables
// reach every later program, as an assignment that may already be exported does (the script
// assigns). An option (-n, -f, -p) or a word that expands is not understood: dash before 0.5.11
// splits `export A=$X` into more words, so `X='a PATH=/tmp'` would assign PATH.
bool ExportUnderstood(const std::vector<std::string>& argv) {
  if (argv.size() < 2) return false;
  for (std::size_t i = 1; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (IsWildcardWord(arg)) return false;
    if (!PlainVariableName(arg.substr(0, arg.find('=')))) return false;
  }
  return true;
}

// A wrapper whose own options are parsed like getopt with a leading '+' (GNU's convention for
// programs that run a command: options stop at the first operand).
struct WrapperSpec {
  std::string_view name = {};
  std::string_view flags = {};              // short options without an argument
  std::string_view with_argument = {};      // short options with a required argument
  std::string_view optional_argument = {};  // short options whose argument can only be attached
  std::vector<std::string_view> long_flags = {};
  std::vector<std::string_view> long_with_argument = {};
  std::vector<std::string_view> long_optional_argument = {};
  std::string_view refused = {};  // short options whose effect cannot be followed
  std::vector<std::string_view> long_refused = {};
  std::string_view no_command_flags = {};  // short options after which nothing is run (command -v)
  bool assignments = false;                // NAME=VALUE words before the command (env)
  std::size_t operands = 0;                // operands before the command (timeout's DURATION)
  std::vector<std::string> default_command = {};  // run when none is given (xargs: echo)
};

const std::vector<WrapperSpec>& Wrappers() {
  static const std::vector<WrapperSpec> kWrappers = {
      {.name = "env",
       .flags = "i0v",
       .with_argument = "uC",
       .long_flags = {"ignore-environment", "null", "debug"},
       .long_with_argument = {"unset", "chdir"},
       .long_optional_argument = {"block-signal", "default-signal", "ignore-signal"},
       .refused = "S",
       .long_refused = {"split-string"},
       .assignments = true},
      {.name = "nice", .with_argument = "n", .long_with_argument = {"adjustment"}},
      {.name = "nohup"},
      {.name = "timeout",
       .flags = "v",
       .with_argument = "sk",
       .long_flags = {"preserve-status", "foreground", "verbose"},
       .long_with_argument = {"signal", "kill-after"},
       .operands = 1},
      {.name = "stdbuf",
       .with_argument = "ioe",
       .long_with_argument = {"input", "output", "error"}},
      {.name = "time",
       .flags = "apqvV",
       .with_argument = "fo",
       .long_flags = {"append", "portability", "quiet", "verbose"},
       .long_with_argument = {"format", "output"}},
      {.name = "xargs",
       .flags = "0prtx",
       .with_argument = "aEILnPsd",
       .optional_argument = "eil",
       .long_flags = {"null", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits",
                      "open-tty"},
       .long_with_argument = {"arg-file", "delimiter", "max-args", "max-procs", "max-chars",
                              "process-slot-var"},
       .long_optional_argument = {"eof", "replace", "max-lines"},
       .default_command = {"echo"}},
      {.name = "command", .flags = "pvV", .no_command_flags = "vV"},
      {.name = "exec", .flags = "cl", .with_argument = "a"},
      {.name = "builtin"},
      {.name = "noglob"},
      {.name = "nocorrect"},
  };
  return kWrappers;
}

const WrapperSpec* FindWrapper(std::string_view name) {
  for (const auto& spec : Wrappers()) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

struct Unwrapped {
  bool understood = true;
  std::string why;
  std::optional<std::vector<std::string>> inner;  // nullopt: the wrapper runs nothing
};

Unwrapped NotUnderstood(std::string why) {
  Unwrapped out;
  out.understood = false;
  out.why = std::move(why);
  return out;
}

Unwrapped Unwrap(const WrapperSpec& spec, const std::vector<std::string>& argv) {
  const std::string name(spec.name);
  std::size_t i = 1;
  bool runs_nothing = false;
  std::optional<std::string> replace;  // xargs -I R, -i[R], --replace[=R]
  while (i < argv.size()) {
    const std::string& arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (spec.name == "env" && arg == "-") {  // the historical spelling of -i
      ++i;
      continue;
    }
    if (spec.name == "nice" && arg.size() > 1 && arg[0] == '-' &&
        std::all_of(arg.begin() + 1, arg.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      ++i;  // the obsolete `nice -10 CMD`
      continue;
    }
    if (arg.size() < 2 || arg[0] != '-') break;
    if (arg.starts_with("--")) {
      const std::size_t eq = arg.find('=');
      const std::string_view option =
          std::string_view(arg).substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      if (Contains(spec.long_refused, option)) {
        return NotUnderstood(name + " --" + std::string(option) + " is not understood");
      }
      if (spec.name == "xargs" && option == "replace") {
        replace = eq == std::string::npos ? "{}" : arg.substr(eq + 1);
      }
      if (Contains(spec.long_flags, option) && eq == std::string::npos) {
        ++i;
      } else if (Contains(spec.long_optional_argument, option)) {
        ++i;
      } else if (Contains(spec.long_with_argument, option)) {
        i += eq == std::string::npos ? 2 : 1;
      } else {
        // Unknown, or an abbreviation getopt would accept: not followed.
        return NotUnderstood("the option " + arg.substr(0, eq) + " of " + name +
                             " is not understood");
      }
      continue;
    }
    // A cluster of short options, as getopt reads it.
    bool consumed_next = false;
    for (std::size_t k = 1; k < arg.size(); ++k) {
      const char c = arg[k];
      if (spec.refused.find(c) != std::string_view::npos) {
        return NotUnderstood(name + " -" + std::string(1, c) + " is not understood");
      }
      if (spec.no_command_flags.find(c) != std::string_view::npos) runs_nothing = true;
      if (spec.name == "xargs" && (c == 'I' || c == 'i')) {
        replace = k + 1 < arg.size()    ? arg.substr(k + 1)
                  : c == 'i'            ? std::string("{}")
                  : i + 1 < argv.size() ? argv[i + 1]
                                        : std::string();
      }
      if (spec.flags.find(c) != std::string_view::npos) continue;
      if (spec.optional_argument.find(c) != std::string_view::npos) break;
      if (spec.with_argument.find(c) != std::string_view::npos) {
        consumed_next = k + 1 == arg.size();
        break;
      }
      return NotUnderstood("the option -" + std::string(1, c) + " of " + name +
                           " is not understood");
    }
    i += consumed_next ? 2 : 1;
  }
  if (i > argv.size()) return NotUnderstood("an option of " + name + " lacks its argument");
  if (spec.assignments) {
    while (i < argv.size() && argv[i].find('=') != std::string::npos) ++i;
  }
  for (std::size_t k = 0; k < spec.operands; ++k) {
    if (i >= argv.size()) return NotUnderstood(name + " without its operands");
    ++i;
  }
  // A word that expands among the wrapper's own words may be any number of words, options or
  // none: where the command starts is then unknown.
  for (std::size_t k = 1; k < i && k < argv.size(); ++k) {
    if (IsWildcardWord(argv[k])) {
      return NotUnderstood("an expansion among the options or operands of " + name +
                           " is not understood");
    }
  }
  Unwrapped out;
  if (runs_nothing) return out;
  if (i < argv.size()) {
    out.inner = std::vector<std::string>(argv.begin() + static_cast<std::ptrdiff_t>(i), argv.end());
  } else if (!spec.default_command.empty()) {
    out.inner = spec.default_command;
  }
  // xargs runs its command with the words it reads added at the end, or, with a replace
  // string, put in place of it in every word that holds it (each then one arbitrary word):
  // `echo rm x | xargs env` runs rm, `xargs -I{} {} x` runs what it reads.
  if (spec.name == "xargs" && out.inner) {
    if (!replace) {
      out.inner->push_back(std::string(kAnyWords));
    } else if (replace->empty()) {
      return NotUnderstood("xargs with an empty replace string is not understood");
    } else {
      for (std::string& word : *out.inner) {
        if (!IsWildcardWord(word) && word.find(*replace) != std::string::npos) {
          word = std::string(kAnyWord);
        }
      }
    }
  }
  return out;
}

// A shell the splitter reads a `-c` script of: the kShells name whose dialect it has, and
// whether the program surely is that shell (its own name, or the file it links to) rather than a
// name that only looks like one with a version (`zsh5`): a shell that surely is one only
// interprets its script; another is judged itself as well.
struct ShellName {
  std::string name;
  bool sure = false;
};

class Splitter {
 public:
  explicit Splitter(const ProgramResolver& resolve) : resolve_(resolve) {}

  CommandSegments Run(const std::vector<std::string>& argv) {
    Visit(argv, SegmentRole::kJudged, 0, false, "", Traits{});
    return std::move(out_);
  }

 private:
  void NotUnderstood(std::string why) {
    if (out_.understood) {
      out_.understood = false;
      out_.why = std::move(why);
    }
  }

  // What a script says about a command beyond its argv (CommandSegment), inherited by what it
  // runs.
  struct Traits {
    bool writes_file = false;
    bool environment = false;
  };

  void Visit(const std::vector<std::string>& argv, SegmentRole role, std::size_t depth,
             bool in_script, const std::string& via, Traits traits) {
    if (!out_.understood) return;
    if (argv.empty()) return NotUnderstood("an empty command");
    if (IsWildcardWord(argv[0])) {
      return NotUnderstood("an expansion as the command name is not understood");
    }
    if (depth > kMaxSegmentDepth) {
      return NotUnderstood("commands nest more than " + std::to_string(kMaxSegmentDepth) +
                           " levels deep");
    }
    if (out_.segments.size() >= kMaxSegments) {
      return NotUnderstood("more than " + std::to_string(kMaxSegments) + " commands");
    }
    if (argv[0].empty()) return NotUnderstood("an empty program name");
    const std::size_t index = out_.segments.size();
    out_.segments.push_back({argv, role, depth, via, traits.writes_file, traits.environment});
    const std::string_view program = ProgramName(argv[0]);
    const std::string shown = QuoteShellWord(program);

    if (in_script && argv[0] == "set") {
      if (SetUnderstood(argv)) return;
      return NotUnderstood(
          "set with options other than -e, -u, -x, -v and -o pipefail is not understood");
    }
    // Straight from the script only: the parser counts a script running `read` or `export` as
    // assigning (ShellScript::assigns), not one running it through `command` or `builtin`.
    if (in_script && argv[0] == "read") {
      if (via.ends_with(" -c script") && ReadUnderstood(argv)) return;
      return NotUnderstood(
          "read other than `read [-r] [-d DELIM] NAME...` into plain variables is not "
          "understood");
    }
    if (in_script && argv[0] == "export") {
      if (via.ends_with(" -c script") && ExportUnderstood(argv)) return;
      return NotUnderstood(
          "export other than `export NAME=VALUE...` with literal values and plain names is not "
          "understood");
    }
    if (in_script) {
      std::string not_inert = NotInertForm(argv);
      if (!not_inert.empty()) return NotUnderstood(std::move(not_inert));
    }
    if (in_script && Contains(kShellBuiltins, argv[0]) && !Contains(kInertBuiltins, argv[0]) &&
        FindWrapper(argv[0]) == nullptr) {
      return NotUnderstood("the shell builtin " + QuoteShellWord(argv[0]) +
                           " (it runs code or changes later commands) is not understood");
    }
    if (in_script && argv[0] == "printf" && argv.size() > 1 &&
        ((argv[1].starts_with("-") && argv[1] != "--") || IsWildcardWord(argv[1]))) {
      return NotUnderstood(
          "printf with an option (printf -v assigns a variable) is not "
          "understood");
    }
    if (Contains(kOpaqueLaunchers, program)) {
      return NotUnderstood("a command run through " + shown + " is not understood");
    }
    // What the program is: by its name, else by the file it resolves to (a link such as
    // rzsh -> zsh, or sh -> dash, named by a name the lists do not know).
    std::vector<std::string> names{std::string(program)};
    if (resolve_ && !Contains(kShells, program) && FindWrapper(program) == nullptr &&
        program != "busybox") {
      for (std::string& resolved : resolve_(argv[0])) {
        if (!resolved.empty() && !Contains(names, resolved)) names.push_back(std::move(resolved));
      }
    }
    for (const std::string& name : names) {
      if (Contains(kShells, name)) {
        return VisitShell(argv, role, depth, index, traits, {name, true});
      }
    }
    for (const std::string& name : names) {
      if (Contains(kUnreadShells, name) || Contains(kUnreadShells, WithoutVersion(name))) {
        std::string why = UnreadShellWhy(argv);
        if (!why.empty()) return NotUnderstood(std::move(why));
        return;
      }
    }
    if (const std::string_view bare = WithoutVersion(program);
        bare != program && Contains(kShells, bare)) {
      return VisitShell(argv, role, depth, index, traits, {std::string(bare), false});
    }
    if (program == "busybox") {
      if (argv.size() < 2) return;
      if (argv[1].starts_with("-")) return;  // --list, --help: runs no applet
      std::vector<std::string> inner(argv.begin() + 1, argv.end());
      return Visit(inner, SegmentRole::kNarrowing, depth + 1, in_script, "busybox", traits);
    }
    if (const WrapperSpec* spec = FindWrapper(program)) {
      Unwrapped unwrapped = Unwrap(*spec, argv);
      if (!unwrapped.understood) return NotUnderstood(std::move(unwrapped.why));
      if (unwrapped.inner) {
        Visit(*unwrapped.inner, SegmentRole::kNarrowing, depth + 1, in_script, std::string(program),
              traits);
      }
    }
  }

  void VisitShell(const std::vector<std::string>& argv, SegmentRole role, std::size_t depth,
                  std::size_t index, Traits traits, const ShellName& as) {
    const std::string shell(ProgramName(argv[0]));
    // A word that expands is not understood on the shell's command line, but after a -c
    // script, where it is only $0, $1, … (`xargs sh -c 'wc -l "$@"' sh` adds words there).
    auto expands = [&argv](std::size_t from, std::size_t to) {
      for (std::size_t k = from; k < to && k < argv.size(); ++k) {
        if (IsWildcardWord(argv[k])) return true;
      }
      return false;
    };
    std::size_t i = 1;
    bool command_mode = false;
    while (i < argv.size()) {
      const std::string& arg = argv[i];
      if (arg == "--" || arg == "-") {
        ++i;
        break;
      }
      if (arg.size() < 2 || (arg[0] != '-' && arg[0] != '+')) break;
      if (arg.starts_with("--")) {
        if (!Contains(kShellLongOptions, arg)) {
          return NotUnderstood("the option " + QuoteShellWord(arg) + " of " + shell +
                               " is not understood");
        }
        ++i;
        continue;
      }
      if (arg == "-o" || arg == "+o") {
        if (i + 1 >= argv.size() || !Contains(kShellSetOptions, argv[i + 1])) {
          return NotUnderstood(shell + " " + arg + " with this option is not understood");
        }
        i += 2;
        continue;
      }
      for (std::size_t k = 1; k < arg.size(); ++k) {
        if (kShellShortOptions.find(arg[k]) == std::string_view::npos) {
          return NotUnderstood("the option -" + std::string(1, arg[k]) + " of " + shell +
                               " is not understood");
        }
        if (arg[k] == 'c') command_mode = true;
      }
      ++i;
    }
    // Without -c the shell runs a script file (a program running others by its own logic: the
    // shell's own command line is all there is to judge) or, with no operand, reads commands from
    // its standard input (`echo "git push" | sh`, `sh < file`): commands nobody has judged.
    if (expands(1, command_mode ? i + 1 : argv.size())) {
      return NotUnderstood("an expansion on the command line of " + shell + " is not understood");
    }
    if (!command_mode) {
      if (i >= argv.size()) {
        return NotUnderstood(shell + " reading commands from its standard input is not understood");
      }
      return;
    }
    if (i >= argv.size()) return NotUnderstood(shell + " -c without a script");
    const ShellScript script = ParseShellScript(argv[i], DialectOfShell(as.name));
    if (!script.understood) {
      return NotUnderstood("the " + shell + " script is not understood: " + script.why +
                           " (at byte " + std::to_string(script.offset) + ")");
    }
    // The shell only interprets the script: its commands are what is judged. Only the system's
    // shell, though: one named by a relative path (`./sh`, `tools/bash`) or found outside the
    // system's directories may be any program (as `./ls` is not harmless), so it is judged too.
    if (as.sure && IsSystemProgramPath(argv[0])) {
      out_.segments[index].role = SegmentRole::kNarrowing;
      out_.segments[index].shell_by_name =
          role == SegmentRole::kJudged && argv[0].find('/') == std::string::npos;
    }
    for (std::size_t k = 0; k < script.commands.size(); ++k) {
      const Traits inner{.writes_file = traits.writes_file || script.writes_file[k],
                         .environment = traits.environment || script.assigns};
      Visit(script.commands[k], role, depth + 1, true, shell + " -c script", inner);
      if (!out_.understood) return;
    }
  }

  const ProgramResolver& resolve_;
  CommandSegments out_;
};

}  // namespace

bool IsSystemProgramPath(std::string_view argv0) {
  if (argv0.find('/') == std::string_view::npos) return true;  // looked up on PATH
  for (std::string_view dir :
       {"/bin/", "/usr/bin/", "/sbin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/"}) {
    if (argv0.starts_with(dir) && argv0.find('/', dir.size()) == std::string_view::npos &&
        argv0.find("..") == std::string_view::npos) {
      return true;
    }
  }
  return false;
}

std::string_view ProgramName(std::string_view argv0) {
  const std::size_t slash = argv0.rfind('/');
  return slash == std::string_view::npos ? argv0 : argv0.substr(slash + 1);
}

bool IsShellProgram(std::string_view name) {
  const std::string_view bare = WithoutVersion(name);
  return Contains(kShells, name) || Contains(kShells, bare) || Contains(kUnreadShells, name) ||
         Contains(kUnreadShells, bare);
}

std::vector<std::string_view> RecognisedShells() {
  std::vector<std::string_view> out(std::begin(kShells), std::end(kShells));
  out.insert(out.end(), std::begin(kUnreadShells), std::end(kUnreadShells));
  return out;
}

bool RunsAsShellBuiltin(const CommandSegment& segment) {
  // Builtins of every shell in kShells (dash, bash, zsh, the ksh family, yash, posh): printf and
  // type are not among them (mksh and posh look printf up; pdksh's type is an alias).
  static constexpr std::string_view kEveryShellBuiltin[] = {"cd",    "pwd",  "echo", "true",
                                                            "false", "test", "["};
  return !segment.argv.empty() && segment.via.ends_with(" -c script") &&
         Contains(kEveryShellBuiltin, segment.argv[0]);
}

bool IsLauncherProgram(std::string_view name) {
  return IsShellProgram(name) || Contains(kOpaqueLaunchers, name) ||
         Contains(kInterpreters, name) || FindWrapper(name) != nullptr || name == "busybox";
}

bool RunsAnotherProgram(std::string_view name) {
  return IsShellProgram(name) || Contains(kOpaqueLaunchers, name) || FindWrapper(name) != nullptr ||
         name == "busybox";
}

CommandSegments SplitCommand(const std::vector<std::string>& argv, const ProgramResolver& resolve) {
  return Splitter(resolve).Run(argv);
}

}  // namespace anvil
