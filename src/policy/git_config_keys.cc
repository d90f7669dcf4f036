// The config keys git executes or follows (ClassifyGitConfigKey, GitEntryIsActive) and the
// words of a command line one names (GitCommandWords): policy/git_metadata.h; pure.
#include <algorithm>
#include <cctype>

#include "policy/git_metadata.h"
#include "policy/git_metadata_internal.h"

namespace anvil {
namespace {

using git_internal::Trim;

constexpr size_t kMaxCommandWords = 512;  // words taken from one command line

enum class Sub { kNone, kAny, kEither };
struct KeyRule {
  std::string_view section;
  Sub sub;
  std::string_view key;  // "*": any key
  GitKeyUse use;
};

// Every key whose value git (or a command git starts for it) executes, or follows as a path to
// more config or to hooks. Not here, by design: paths git only reads as data
// (core.excludesFile, core.attributesFile, commit.template, mailmap.file, ...): they can select
// which of the configured drivers runs, never add one.
constexpr KeyRule kKeyRules[] = {
    {"include", Sub::kNone, "path", GitKeyUse::kInclude},
    {"includeif", Sub::kAny, "path", GitKeyUse::kInclude},
    {"core", Sub::kNone, "hookspath", GitKeyUse::kHooksDir},
    {"init", Sub::kNone, "templatedir", GitKeyUse::kTemplateDir},
    {"core", Sub::kNone, "fsmonitor", GitKeyUse::kCommandOrBool},
    {"core", Sub::kNone, "sshcommand", GitKeyUse::kCommand},
    {"core", Sub::kNone, "pager", GitKeyUse::kCommand},
    {"core", Sub::kNone, "editor", GitKeyUse::kCommand},
    {"core", Sub::kNone, "askpass", GitKeyUse::kCommand},
    {"core", Sub::kNone, "gitproxy", GitKeyUse::kCommand},
    {"core", Sub::kNone, "alternaterefscommand", GitKeyUse::kCommand},
    {"sequence", Sub::kNone, "editor", GitKeyUse::kCommand},
    {"diff", Sub::kNone, "external", GitKeyUse::kCommand},
    {"diff", Sub::kAny, "textconv", GitKeyUse::kCommand},
    {"diff", Sub::kAny, "command", GitKeyUse::kCommand},
    {"difftool", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"difftool", Sub::kAny, "path", GitKeyUse::kCommand},
    {"mergetool", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"mergetool", Sub::kAny, "path", GitKeyUse::kCommand},
    {"merge", Sub::kAny, "driver", GitKeyUse::kCommand},
    {"filter", Sub::kAny, "clean", GitKeyUse::kCommand},
    {"filter", Sub::kAny, "smudge", GitKeyUse::kCommand},
    {"filter", Sub::kAny, "process", GitKeyUse::kCommand},
    {"credential", Sub::kEither, "helper", GitKeyUse::kCommand},
    {"gpg", Sub::kEither, "program", GitKeyUse::kCommand},
    {"gpg", Sub::kAny, "defaultkeycommand", GitKeyUse::kCommand},
    {"pager", Sub::kNone, "*", GitKeyUse::kCommandOrBool},
    {"alias", Sub::kNone, "*", GitKeyUse::kBangCommand},
    {"submodule", Sub::kAny, "update", GitKeyUse::kBangCommand},
    {"uploadpack", Sub::kNone, "packobjectshook", GitKeyUse::kCommand},
    {"remote", Sub::kAny, "uploadpack", GitKeyUse::kCommand},
    {"remote", Sub::kAny, "receivepack", GitKeyUse::kCommand},
    {"interactive", Sub::kNone, "difffilter", GitKeyUse::kCommand},
    {"hook", Sub::kAny, "command", GitKeyUse::kCommand},
    {"trailer", Sub::kAny, "command", GitKeyUse::kCommand},
    {"trailer", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "smtpserver", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "sendmailcmd", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "tocmd", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "cccmd", GitKeyUse::kCommand},
    {"sendemail", Sub::kEither, "headercmd", GitKeyUse::kCommand},
    {"imap", Sub::kNone, "tunnel", GitKeyUse::kCommand},
    {"browser", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"browser", Sub::kAny, "path", GitKeyUse::kCommand},
    {"man", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"man", Sub::kAny, "path", GitKeyUse::kCommand},
    {"guitool", Sub::kAny, "cmd", GitKeyUse::kCommand},
    {"gui", Sub::kNone, "editor", GitKeyUse::kCommand},
    {"instaweb", Sub::kNone, "httpd", GitKeyUse::kCommand},
    {"svn", Sub::kEither, "authorsprog", GitKeyUse::kCommand},
    {"lfs", Sub::kAny, "path", GitKeyUse::kCommand},  // lfs.customtransfer.<name>.path
};

}  // namespace

namespace git_internal {

std::string KeyName(const GitConfigEntry& e) {
  return e.has_subsection ? e.section + "." + e.subsection + "." + e.key : e.section + "." + e.key;
}

}  // namespace git_internal

GitKeyUse ClassifyGitConfigKey(const GitConfigEntry& e) {
  for (const auto& rule : kKeyRules) {
    if (e.section != rule.section) continue;
    if (rule.sub == Sub::kNone && e.has_subsection) continue;
    if (rule.sub == Sub::kAny && !e.has_subsection) continue;
    if (rule.key != "*" && e.key != rule.key) continue;
    return rule.use;
  }
  return GitKeyUse::kNone;
}

bool GitEntryIsActive(const GitConfigEntry& e) {
  switch (ClassifyGitConfigKey(e)) {
    case GitKeyUse::kNone:
      return false;
    case GitKeyUse::kInclude:
      return true;  // even without a value: git refuses such a config
    case GitKeyUse::kHooksDir:
    case GitKeyUse::kTemplateDir:
    case GitKeyUse::kCommand:
      return e.value && !Trim(*e.value).empty();
    case GitKeyUse::kCommandOrBool:
      return e.value && !Trim(*e.value).empty() && !GitConfigBool(e.value).has_value();
    case GitKeyUse::kBangCommand:
      return e.value && !e.value->empty() && (*e.value)[0] == '!';
  }
  return false;
}

namespace {

bool IsShellName(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

void SplitCommand(std::string_view text, int depth, std::vector<GitCommandWord>& words) {
  // Tokens: words (quotes and escapes removed) and the operators between simple commands.
  struct Token {
    std::string text;
    bool op = false;
    bool quoted_blank = false;  // a quoted part held blanks or operators: split it again
  };
  std::vector<Token> tokens;
  Token cur;
  bool in_word = false;
  auto flush = [&] {
    if (in_word) tokens.push_back(std::move(cur));
    cur = Token{};
    in_word = false;
  };
  auto note_quoted = [&](std::string_view part) {
    if (part.find_first_of(" \t\n;&|()<>`") != std::string_view::npos) cur.quoted_blank = true;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\\') {
      if (i + 1 < text.size()) {
        if (text[i + 1] != '\n') cur.text += text[i + 1];
        ++i;
      }
      in_word = true;
    } else if (c == '\'') {
      auto close = text.find('\'', i + 1);
      if (close == std::string_view::npos) close = text.size();
      std::string_view part = text.substr(i + 1, close - i - 1);
      cur.text.append(part);
      note_quoted(part);
      i = close;
      in_word = true;
    } else if (c == '"') {
      std::string part;
      size_t j = i + 1;
      for (; j < text.size() && text[j] != '"'; ++j) {
        if (text[j] == '\\' && j + 1 < text.size() &&
            std::string_view("\"\\$`\n").find(text[j + 1]) != std::string_view::npos) {
          ++j;
        }
        part += text[j];
      }
      cur.text += part;
      note_quoted(part);
      i = j;
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      flush();
    } else if (c == '\n' || std::string_view(";&|()<>`").find(c) != std::string_view::npos) {
      flush();
      tokens.push_back(Token{std::string(1, c), true, false});
    } else {
      cur.text += c;
      in_word = true;
    }
  }
  flush();
  bool program = true;  // at the start of a simple command
  for (auto& t : tokens) {
    if (words.size() >= kMaxCommandWords) return;
    if (t.op) {
      // After a redirection comes a file name, not a program.
      program = !(t.text == "<" || t.text == ">");
      continue;
    }
    auto eq = t.text.find('=');
    if (program && eq != std::string::npos && IsShellName(std::string_view(t.text).substr(0, eq))) {
      words.push_back({t.text.substr(eq + 1), false});  // VAR=value before the program
      continue;
    }
    words.push_back({t.text, program});
    if (eq != std::string::npos && eq + 1 < t.text.size()) {
      words.push_back({t.text.substr(eq + 1), false});  // --file=PATH
    }
    if (t.quoted_blank && depth < 2) SplitCommand(t.text, depth + 1, words);  // sh -c "..."
    // A reserved word is followed by a command: `{ x; }`, `if x; then y; fi`, `! x`.
    static constexpr std::string_view kReserved[] = {"{",    "}",    "!",     "if",    "then",
                                                     "else", "elif", "while", "until", "do"};
    program = program &&
              std::find(std::begin(kReserved), std::end(kReserved), t.text) != std::end(kReserved);
  }
}

}  // namespace

std::vector<GitCommandWord> GitCommandWords(std::string_view command) {
  std::vector<GitCommandWord> words;
  SplitCommand(command, 0, words);
  return words;
}

}  // namespace anvil
