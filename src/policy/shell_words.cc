#include "policy/shell_words.h"

#include <algorithm>
#include <array>
#include <optional>

namespace anvil {
namespace {

// Reserved words are recognised only unquoted and in command position; each starts a compound
// command (or a function) whose body this parser does not follow.
// zsh adds `repeat` and `foreach` (`repeat 1 rm x` runs rm).
constexpr std::array<std::string_view, 24> kReservedWords = {
    "if",     "then",  "else",  "elif", "fi",   "case", "esac",     "for",
    "select", "while", "until", "do",   "done", "in",   "function", "time",
    "coproc", "{",     "}",     "[[",   "]]",   "!",    "repeat",   "foreach"};

bool IsReservedWord(std::string_view word) {
  return std::find(kReservedWords.begin(), kReservedWords.end(), word) != kReservedWords.end();
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Characters that end an unquoted word: blanks, the newline and the operator characters.
bool EndsWord(char c) {
  return IsBlank(c) || c == '\n' || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' ||
         c == '(' || c == ')';
}

bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

// Characters a word may hold unquoted in QuoteShellWord's output: none of them is special to
// bash, dash or zsh anywhere in a word ('=' only in some places: see QuoteShellWord).
bool IsPlainChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.' || c == '/' || c == ',' || c == '+' || c == '@' || c == '%' ||
         c == ':';
}

// bash reads a run of digits as a descriptor only while it fits an int; longer, it is a word. A
// bound far below that keeps this parser on the side where both readings agree.
constexpr std::size_t kMaxBashDescriptorDigits = 4;

class Parser {
 public:
  Parser(std::string_view text, ShellDialect dialect) : text_(text), dialect_(dialect) {}

  ShellScript Run() {
    if (text_.size() > kMaxShellScriptBytes) {
      return Refuse(0,
                    "the script is longer than " + std::to_string(kMaxShellScriptBytes) + " bytes");
    }
    while (true) {
      SkipBlanks();
      if (failed_) return Result();
      if (pos_ >= text_.size()) break;
      const char c = text_[pos_];
      if (c == '\n') {
        if (state_ == State::kInCommand && !FinishCommand()) return Result();
        // A newline may follow `&&`, `||` and `|` before the command they need.
        if (state_ != State::kNeedCommand) state_ = State::kStart;
        ++pos_;
        continue;
      }
      if (c == '#') {  // at the start of a word: a comment up to the newline
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == ';') {
        if (Peek(1) == ';') return Fail("';;' (a case branch) is not understood");
        if (state_ != State::kInCommand) return Fail("';' without a command before it");
        if (!FinishCommand()) return Result();
        state_ = State::kAfterSemicolon;
        ++pos_;
        continue;
      }
      if (c == '&' && Peek(1) == '&') {
        if (!Operator(2)) return Result();
        continue;
      }
      if (c == '|' && Peek(1) == '|') {
        if (!Operator(2)) return Result();
        continue;
      }
      if (c == '|') {
        if (Peek(1) == '&') return Fail("'|&' is not understood");
        if (!Operator(1)) return Result();
        continue;
      }
      if (c == '&' && (Peek(1) != '>' || dialect_ != ShellDialect::kBash)) {
        // In a POSIX shell `&>` is a background job followed by a redirection.
        return Fail(Peek(1) == '>' ? "'&>' is bash's: this shell reads '&' (a background job) "
                                     "then '>', which is not understood"
                                   : "'&' (a background job) is not understood");
      }
      if (c == '(' || c == ')') {
        return Fail("parentheses (a subshell, function or arithmetic) are not understood");
      }
      if (c == '&' || c == '<' || c == '>') {
        StartCommand();
        if (!Redirection(std::nullopt)) return Result();
        continue;
      }
      Word word = ReadWord();
      if (failed_) return Result();
      if (word.io_number) {
        // POSIX shells (dash) take a single digit only: `10>x` is the word 10, then `>x`.
        const std::size_t most = dialect_ == ShellDialect::kBash ? kMaxBashDescriptorDigits : 1;
        if (word.text.size() > most) {
          return Refuse(word.start,
                        "a descriptor of " + std::to_string(word.text.size()) +
                            " digits before a redirection is not understood by this shell");
        }
        StartCommand();
        if (!Redirection(word.text)) return Result();
        continue;
      }
      const bool first = StartCommand() || current_.empty();
      if (first && !word.quoted && IsReservedWord(word.text)) {
        return Refuse(word.start, "the reserved word '" + word.text +
                                      "' (control flow) is not "
                                      "understood");
      }
      if (first && word.assignment) {
        return Refuse(word.start, "a variable assignment is not understood");
      }
      if (++words_ > kMaxShellWords) {
        return Refuse(word.start,
                      "the script has more than " + std::to_string(kMaxShellWords) + " words");
      }
      current_.push_back(std::move(word.text));
    }
    if (state_ == State::kNeedCommand) {
      return Refuse(text_.size(), "the script ends where a command must follow");
    }
    if (state_ == State::kInCommand && !FinishCommand()) return Result();
    if (out_.commands.empty()) return Refuse(text_.size(), "the script has no command");
    out_.understood = true;
    return std::move(out_);
  }

 private:
  enum class State { kStart, kAfterSemicolon, kNeedCommand, kInCommand };

  struct Word {
    std::string text;
    std::size_t start = 0;
    bool quoted = false;      // any part was quoted or escaped
    bool assignment = false;  // NAME= or NAME+= unquoted at its start
    bool io_number = false;   // unquoted digits directly before '<' or '>'
  };

  char Peek(std::size_t ahead) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  ShellScript Result() {
    ShellScript refused;
    refused.why = std::move(out_.why);
    refused.offset = out_.offset;
    return refused;
  }

  ShellScript Refuse(std::size_t at, std::string why) {
    Fail(std::move(why), at);
    return Result();
  }

  ShellScript Fail(std::string why) { return Refuse(pos_, std::move(why)); }

  // Records the first failure; returns false so callers can `return Fail(...)` in bool paths.
  bool Fail(std::string why, std::size_t at) {
    if (!failed_) {
      failed_ = true;
      out_.why = std::move(why);
      out_.offset = at;
    }
    return false;
  }

  // Blanks and line continuations between words.
  void SkipBlanks() {
    while (pos_ < text_.size()) {
      if (IsBlank(text_[pos_])) {
        ++pos_;
      } else if (text_[pos_] == '\\' && Peek(1) == '\n') {
        pos_ += 2;
      } else {
        break;
      }
    }
  }

  // Begins a simple command if none is open; returns whether it did.
  bool StartCommand() {
    if (state_ == State::kInCommand) return false;
    state_ = State::kInCommand;
    current_.clear();
    return true;
  }

  bool FinishCommand() {
    if (current_.empty()) return Fail("a redirection without a command", pos_);
    if (out_.commands.size() >= kMaxShellCommands) {
      return Fail("the script has more than " + std::to_string(kMaxShellCommands) + " commands",
                  pos_);
    }
    out_.commands.push_back(std::move(current_));
    current_.clear();
    return true;
  }

  // `&&`, `||` or `|`: ends the command before it and requires one after it.
  bool Operator(std::size_t length) {
    if (state_ != State::kInCommand) {
      return Fail("'" + std::string(text_.substr(pos_, length)) + "' without a command before it",
                  pos_);
    }
    if (!FinishCommand()) return false;
    state_ = State::kNeedCommand;
    pos_ += length;
    return true;
  }

  // A redirection at pos_ (after its descriptor number, if any). Understood only when it goes
  // nowhere: to or from /dev/null, or a duplication among descriptors.
  bool Redirection(const std::optional<std::string>& descriptor) {
    const std::size_t start = pos_;
    bool duplicate = false;
    if (text_[pos_] == '&') {  // &> and &>>: stdout and stderr
      if (descriptor) return Fail("a descriptor before '&>' is not understood", start);
      pos_ += Peek(2) == '>' ? 3 : 2;
    } else if (text_[pos_] == '<') {
      if (Peek(1) == '<') return Fail("a here-document or here-string is not understood", start);
      if (Peek(1) == '>') return Fail("a read-write redirection ('<>') is not understood", start);
      duplicate = Peek(1) == '&';
      pos_ += duplicate ? 2 : 1;
    } else {
      duplicate = Peek(1) == '&';
      pos_ += (Peek(1) == '>' || Peek(1) == '|' || duplicate) ? 2 : 1;
    }
    SkipBlanks();
    if (pos_ >= text_.size() || EndsWord(text_[pos_]) || text_[pos_] == '#') {
      return Fail("a redirection without a target", start);
    }
    Word target = ReadWord();
    if (failed_) return false;
    if (target.io_number) return Fail("a redirection followed by another", start);
    if (duplicate) {
      const bool digit = target.text.size() == 1 && target.text[0] >= '0' && target.text[0] <= '9';
      if (digit || target.text == "-") return true;
      return Fail("a redirection to a file is not understood (only /dev/null and descriptors)",
                  start);
    }
    if (target.text == "/dev/null") return true;
    return Fail("a redirection to a file is not understood (only /dev/null and descriptors)",
                start);
  }

  // One word at pos_, which is not a blank or an operator character.
  Word ReadWord() {
    Word word;
    word.start = pos_;
    bool digits_only = true;
    bool name_prefix = true;  // still inside an unquoted NAME at the word's start
    while (pos_ < text_.size() && !failed_) {
      const char c = text_[pos_];
      if (EndsWord(c)) break;
      if (name_prefix && c == '=' && pos_ > word.start) {
        word.assignment = true;
      } else if (name_prefix && c == '+' && Peek(1) == '=' && pos_ > word.start) {
        word.assignment = true;
      }
      name_prefix = name_prefix && (pos_ == word.start ? IsNameStart(c) : IsNameChar(c));
      if (c != '\\' && (c < '0' || c > '9')) digits_only = false;
      switch (c) {
        case '\\':
          if (pos_ + 1 >= text_.size()) {
            Fail("a backslash at the end of the script", pos_);
            break;
          }
          if (text_[pos_ + 1] == '\n') {  // a line continuation inside a word
            pos_ += 2;
            break;
          }
          if (text_[pos_ + 1] == '\0') {
            Fail("a NUL byte", pos_ + 1);
            break;
          }
          word.text += text_[pos_ + 1];
          word.quoted = true;
          digits_only = false;
          name_prefix = false;
          pos_ += 2;
          break;
        case '\'': {
          const std::size_t close = text_.find('\'', pos_ + 1);
          if (close == std::string_view::npos) {
            Fail("an unterminated single quote", pos_);
            break;
          }
          const std::string_view inside = text_.substr(pos_ + 1, close - pos_ - 1);
          if (inside.find('\0') != std::string_view::npos) {
            Fail("a NUL byte", pos_ + 1 + inside.find('\0'));
            break;
          }
          word.text.append(inside);
          word.quoted = true;
          name_prefix = false;
          pos_ = close + 1;
          break;
        }
        case '"':
          DoubleQuoted(word.text);
          word.quoted = true;
          name_prefix = false;
          break;
        case '$':
          Fail(
              "an expansion ('$': a variable, command substitution or $'…' quoting) is not "
              "understood",
              pos_);
          break;
        case '`':
          Fail("a command substitution (backticks) is not understood", pos_);
          break;
        case '*':
        case '?':
        case '[':
          Fail("a glob pattern ('*', '?', '[') is not understood: it expands to file names", pos_);
          break;
        case '{':
        case '}':
          Fail("a brace ('{', '}') is not understood", pos_);
          break;
        case '~':
          Fail("a tilde ('~') is not understood: it expands to a home directory", pos_);
          break;
        case '!':
          Fail("'!' is not understood", pos_);
          break;
        case '\0':
          Fail("a NUL byte", pos_);
          break;
        case '=':
          if (pos_ == word.start) {
            Fail("a word starting with '=' is not understood (zsh runs a path lookup)", pos_);
            break;
          }
          word.text += c;
          ++pos_;
          break;
        default:
          word.text += c;
          ++pos_;
          break;
      }
    }
    word.io_number = !failed_ && digits_only && !word.quoted && !word.text.empty() &&
                     pos_ < text_.size() && (text_[pos_] == '<' || text_[pos_] == '>');
    return word;
  }

  // A "..." string starting at pos_: backslash escapes only $ ` " \ and the newline; any
  // expansion inside is not understood.
  void DoubleQuoted(std::string& out) {
    const std::size_t open = pos_;
    ++pos_;
    while (true) {
      if (pos_ >= text_.size()) {
        Fail("an unterminated double quote", open);
        return;
      }
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return;
      }
      if (c == '\\') {
        const char next = Peek(1);
        if (pos_ + 1 >= text_.size()) {
          Fail("an unterminated double quote", open);
          return;
        }
        if (next == '$' || next == '`' || next == '"' || next == '\\') {
          out += next;
          pos_ += 2;
        } else if (next == '\n') {
          pos_ += 2;
        } else {
          out += '\\';
          ++pos_;
        }
        continue;
      }
      if (c == '$' || c == '`') {
        Fail("an expansion inside double quotes is not understood", pos_);
        return;
      }
      if (c == '\0') {
        Fail("a NUL byte", pos_);
        return;
      }
      out += c;
      ++pos_;
    }
  }

  std::string_view text_;
  ShellDialect dialect_;
  std::size_t pos_ = 0;
  State state_ = State::kStart;
  bool failed_ = false;
  std::size_t words_ = 0;
  std::vector<std::string> current_;
  ShellScript out_;
};

}  // namespace

ShellDialect DialectOfShell(std::string_view program) {
  return program == "bash" || program == "rbash" ? ShellDialect::kBash : ShellDialect::kPosix;
}

ShellScript ParseShellScript(std::string_view script, ShellDialect dialect) {
  return Parser(script, dialect).Run();
}

std::string QuoteShellWord(std::string_view word) {
  // '=' may stay bare inside a word, not first (zsh's =cmd) and not after a leading NAME, where
  // the word would be an assignment in a command's first position.
  std::size_t name = 0;
  while (name < word.size() && (name == 0 ? IsNameStart(word[name]) : IsNameChar(word[name]))) {
    ++name;
  }
  const bool assignment_like =
      name > 0 && name < word.size() &&
      (word[name] == '=' || (word[name] == '+' && name + 1 < word.size() && word[name + 1] == '='));
  const bool plain =
      !word.empty() && word[0] != '=' && !assignment_like &&
      std::all_of(word.begin(), word.end(), [](char c) { return IsPlainChar(c) || c == '='; }) &&
      !IsReservedWord(word);
  if (plain) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string JoinShellWords(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& word : argv) {
    if (!out.empty()) out += ' ';
    out += QuoteShellWord(word);
  }
  return out;
}

}  // namespace anvil
