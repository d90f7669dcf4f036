#include "policy/harmless_commands.h"

#include <algorithm>

#include "policy/shell_words.h"

namespace anvil {
namespace {

bool IsDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// "10p", "1,20p", "$p" is not accepted (an address other than line numbers is not needed here).
bool IsSedLinesPrint(std::string_view word) {
  if (!word.ends_with('p')) return false;
  word.remove_suffix(1);
  const std::size_t comma = word.find(',');
  if (comma == std::string_view::npos) return IsDigits(word);
  return IsDigits(word.substr(0, comma)) && IsDigits(word.substr(comma + 1));
}

bool Refuses(std::string_view refused, std::string_view arg) {
  if (refused.starts_with("--")) {
    if (!arg.starts_with("--") || arg.size() <= 2) return false;
    const std::string_view name = arg.substr(0, arg.find('='));
    // The option itself, with a value, or any abbreviation getopt_long would expand to it.
    return refused.starts_with(name);
  }
  if (refused.size() == 2) {
    // A short option: anywhere in a cluster of short options.
    return arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' &&
           arg.find(refused[1], 1) != std::string_view::npos;
  }
  return arg == refused;  // a single-dash word such as find's -exec
}

// Read-only by construction: no option of these writes, deletes or runs another program.
constexpr std::string_view kReadOnly = "reads and prints only; no option writes or runs a program";

std::vector<HarmlessCommand> Plain(std::initializer_list<std::string_view> programs) {
  std::vector<HarmlessCommand> out;
  for (std::string_view program : programs) {
    out.push_back({.program = program, .why = kReadOnly, .match = {program}, .not_match = {}});
  }
  return out;
}

std::vector<HarmlessCommand> BuildTable() {
  // Git: only the subcommand right after `git` (no -c, -C, --git-dir, --exec-path before it),
  // and never an option that writes a file or runs a configured program.
  const std::vector<std::string_view> git_refused = {"--output", "--ext-diff", "--textconv",
                                                     "--show-signature", "--open-files-in-pager"};
  std::vector<HarmlessCommand> table = {
      {.program = "ls",
       .why = kReadOnly,
       .match = {"ls", "ls -la src", "ls --color=never -R"},
       .not_match = {"./ls -la", "/tmp/ls", "ls2"}},
      {.program = "cat",
       .why = kReadOnly,
       .match = {"cat README.md", "cat -n a b"},
       .not_match = {"./cat README.md"}},
      {.program = "head", .why = kReadOnly, .match = {"head -n 20 src/main.cc"}},
      {.program = "tail", .why = kReadOnly, .match = {"tail -n 50 build.log"}},
      {.program = "wc", .why = kReadOnly, .match = {"wc -l src/main.cc"}},
      {.program = "grep",
       .why = kReadOnly,
       .match = {"grep -rn TODO src", "grep -e foo -- -x"},
       .not_match = {"/usr/local/bin/grep x"}},
      {.program = "egrep", .why = kReadOnly, .match = {"egrep 'a|b' f"}},
      {.program = "fgrep", .why = kReadOnly, .match = {"fgrep x f"}},
      {.program = "rg",
       .refused = {"--pre", "--pre-glob", "--search-zip", "-z", "--hostname-bin"},
       .double_dash = true,
       .why = "--pre runs a program per file, -z/--search-zip runs decompressors, "
              "--hostname-bin runs a program",
       .match = {"rg TODO", "rg -n --hidden -g '*.py' foo src", "rg -e pattern -t cc"},
       .not_match = {"rg --pre cat x", "rg --pre=./evil x", "rg --pr=./evil x", "rg -z x",
                     "rg -nz x", "rg --search-zip x", "rg --hostname-bin=./h x"}},
      {.program = "find",
       .refused = {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0",
                   "-fprintf"},
       .why = "-exec/-execdir/-ok/-okdir run programs, -delete deletes, -fls/-fprint* write files",
       .match = {"find . -name '*.cc'", "find src -type f -newer CMakeLists.txt"},
       .not_match = {"find . -exec rm '{}' ';'", "find . -name x -delete",
                     "find . -execdir sh -c x ';'", "find . -fprint out.txt",
                     "find . -ok rm '{}' ';'"}},
      {.program = "fd",
       .refused = {"--exec", "-x", "--exec-batch", "-X", "--list-details", "-l"},
       .double_dash = true,
       .why = "-x/--exec and -X/--exec-batch run programs, -l/--list-details runs ls",
       .match = {"fd -e cc src", "fd --hidden name"},
       .not_match = {"fd -x rm", "fd --exec=rm", "fd -HX rm", "fd --exec-batch rm", "fd -l x",
                     "fd -Hl x", "fd --list-details x"}},
      {.program = "fdfind",
       .refused = {"--exec", "-x", "--exec-batch", "-X", "--list-details", "-l"},
       .double_dash = true,
       .why = "-x/--exec and -X/--exec-batch run programs, -l/--list-details runs ls",
       .match = {"fdfind -e cc"},
       .not_match = {"fdfind -x rm"}},
      {.program = "sed",
       .leading = {"-n", kSedLinesPrint},
       .why = "only `sed -n Np`/`sed -n M,Np` (print lines): other sed scripts can write files "
              "(w) or run commands (e)",
       .match = {"sed -n 1,50p src/main.cc", "sed -n '10p' a b"},
       .not_match = {"sed -n 1,50p -i x", "sed -i s/a/b/ x", "sed -n 1w/tmp/x f", "sed -n 1e f",
                     "sed 1p f", "sed -n 1,50p --in-place f"}},
      {.program = "sort",
       .refused = {"--output", "-o", "--compress-program", "--temporary-directory", "-T"},
       .double_dash = true,
       .why = "-o/--output writes a file, --compress-program runs a program, -T writes "
              "temporary files",
       .match = {"sort -u names.txt", "sort -k2 -n f"},
       .not_match = {"sort -o out f", "sort --output=out f", "sort --out=x f", "sort -uo out f",
                     "sort --compress-program=sh f"}},
      {.program = "tree",
       .refused = {"-o", "-R"},
       .why = "-o writes the listing to a file, -R writes files in every directory",
       .match = {"tree -L 2 src"},
       .not_match = {"tree -o out.txt", "tree -RH . -o x"}},
      {.program = "file",
       .refused = {"--compile", "-C", "--uncompress", "-z", "--uncompress-noexec", "-Z"},
       .double_dash = true,
       .why = "-C/--compile writes a compiled magic file; -z/--uncompress runs decompressors "
              "(-Z too is refused: one rule for looking inside compressed files)",
       .match = {"file -b src/main.cc"},
       .not_match = {"file -C -m magic", "file -z x.lz4", "file -bz x.gz", "file --uncompress x",
                     "file -Z x.gz"}},
      {.program = "date",
       .refused = {"--set", "-s"},
       .why = "-s/--set sets the clock",
       .match = {"date -u +%s"},
       .not_match = {"date -s 2020-01-01", "date --set=x"}},
      {.program = "git",
       .subcommand = {"status"},
       .refused = git_refused,
       .double_dash = true,
       .why = "only right after `git`; never -c/-C/--git-dir before it",
       .match = {"git status", "git status --short --branch"},
       .not_match = {"git -c core.fsmonitor=./x status", "git -C /etc status",
                     "git --git-dir=/tmp/x status", "git stash", "git statusx"}},
      {.program = "git",
       .subcommand = {"diff"},
       .refused = git_refused,
       .double_dash = true,
       .why = "--output writes a file; --ext-diff and --textconv run configured programs",
       .match = {"git diff", "git diff --stat 'HEAD~1'", "git diff --no-ext-diff -- src"},
       .not_match = {"git diff --output=patch.txt", "git diff --ext-diff", "git diff --textconv",
                     "git diff --outp=x", "git -c diff.external=x diff"}},
      {.program = "git",
       .subcommand = {"log"},
       .refused = git_refused,
       .refused_text = {"%G"},
       .double_dash = true,
       .why = "--output writes a file; --ext-diff, --textconv, --show-signature and the %G "
              "format placeholders run configured programs (gpg)",
       .match = {"git log --oneline -20", "git log -p -1 -- src", "git log --format='%h %s'"},
       .not_match = {"git log --output=FILE", "git log --output FILE", "git log --out=x",
                     "git log -p --ext-diff", "git -c core.pager=sh log",
                     "git log --show-signature", "git log '--format=%G?'",
                     "git log '--pretty=format:%h %GS'", "git log --format=%GK"}},
      {.program = "git",
       .subcommand = {"show"},
       .refused = git_refused,
       .refused_text = {"%G"},
       .double_dash = true,
       .why = "--output writes a file; --ext-diff, --textconv and %G placeholders run "
              "configured programs",
       .match = {"git show HEAD", "git show --stat 'HEAD~2'"},
       .not_match = {"git show --output=x HEAD", "git show --textconv HEAD",
                     "git show --format=%GG HEAD"}},
      {.program = "git",
       .subcommand = {"ls-files"},
       .why = kReadOnly,
       .match = {"git ls-files -m"}},
      {.program = "git",
       .subcommand = {"rev-parse"},
       .why = kReadOnly,
       .match = {"git rev-parse --show-toplevel", "git rev-parse HEAD"}},
      {.program = "git",
       .subcommand = {"blame"},
       .refused = git_refused,
       .double_dash = true,
       .why = "--textconv runs a configured program",
       .match = {"git blame -L 1,20 src/main.cc"},
       .not_match = {"git blame --textconv f"}},
  };
  for (auto& entry :
       Plain({"pwd",     "echo",   "printf",   "true",    "false",    "test",      "which",
              "type",    "whoami", "id",       "groups",  "uname",    "nproc",     "arch",
              "stat",    "du",     "df",       "cut",     "tr",       "nl",        "rev",
              "tac",     "paste",  "comm",     "fold",    "column",   "expand",    "od",
              "strings", "base64", "cksum",    "md5sum",  "sha1sum",  "sha256sum", "sha512sum",
              "cmp",     "diff",   "basename", "dirname", "realpath", "readlink",  "seq",
              "sleep",   "cd",     "jq"})) {
    table.push_back(std::move(entry));
  }
  return table;
}

bool Accepts(const HarmlessCommand& entry, const std::vector<std::string>& argv) {
  if (argv.empty() || argv[0] != entry.program) return false;
  std::size_t i = 1;
  for (std::string_view word : entry.subcommand) {
    if (i >= argv.size() || argv[i] != word) return false;
    ++i;
  }
  for (std::string_view word : entry.leading) {
    if (i >= argv.size()) return false;
    const bool ok = word == kSedLinesPrint ? IsSedLinesPrint(argv[i]) : argv[i] == word;
    if (!ok) return false;
    ++i;
  }
  const bool refuses_nothing =
      entry.leading.empty() && entry.refused.empty() && entry.refused_text.empty();
  bool operands_only = false;  // after a `--` that ends the options
  for (; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (IsWildcardWord(arg)) {
      if (refuses_nothing || operands_only) continue;
      return false;
    }
    // `--` ends the options unless it is the value of the option before it (`rg -e -- *`):
    // only after the subcommand, an operand, or an option with its value attached.
    if (entry.double_dash && arg == "--" && !operands_only) {
      const std::string& before = argv[i - 1];
      operands_only = i == 1 + entry.subcommand.size() || !before.starts_with("-") ||
                      (before.starts_with("--") && before.find('=') != std::string::npos);
    }
    if (!entry.leading.empty() && arg.starts_with("-")) return false;
    for (std::string_view refused : entry.refused) {
      if (Refuses(refused, arg)) return false;
    }
    for (std::string_view text : entry.refused_text) {
      if (arg.find(text) != std::string::npos) return false;
    }
  }
  return true;
}

}  // namespace

const std::vector<HarmlessCommand>& HarmlessCommands() {
  static const std::vector<HarmlessCommand> kTable = BuildTable();
  return kTable;
}

const HarmlessCommand* FindHarmless(const std::vector<std::string>& argv) {
  for (const auto& entry : HarmlessCommands()) {
    if (Accepts(entry, argv)) return &entry;
  }
  return nullptr;
}

const HarmlessCommand* HarmlessEntryFor(const std::vector<std::string>& argv) {
  for (const auto& entry : HarmlessCommands()) {
    if (argv.empty() || argv[0] != entry.program || argv.size() <= entry.subcommand.size()) {
      continue;
    }
    if (std::equal(entry.subcommand.begin(), entry.subcommand.end(), argv.begin() + 1)) {
      return &entry;
    }
  }
  return nullptr;
}

std::string HarmlessName(const HarmlessCommand& entry) {
  std::string name(entry.program);
  for (std::string_view word : entry.subcommand) {
    name += ' ';
    name += word;
  }
  return name;
}

}  // namespace anvil
