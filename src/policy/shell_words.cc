// The shell parser of shell_words.h. One thing: a lexer and parser sharing one loop and one
// state, with the tables it reads by; longer than most files for that reason.
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

// Shell variables that change how a shell reads or runs later commands, upper-cased: PATH picks
// the programs, IFS splits words, ENV/BASH_ENV/ZDOTDIR name startup files, PS4 and the prompts
// are expanded under xtrace, CDPATH moves `cd`, SHELLOPTS/BASHOPTS turn options on, and zsh's
// lowercase tied arrays (path, cdpath, fpath, …) are the same variables; STTY and READNULLCMD
// make zsh run programs, and an assignment to UID, EUID, GID, EGID or USERNAME changes zsh's
// user and group ids. LD_*, BASH_* and ZSH* are refused as families.
constexpr std::string_view kSpecialVariables[] = {"PATH",
                                                  "IFS",
                                                  "ENV",
                                                  "CDPATH",
                                                  "HOME",
                                                  "PS1",
                                                  "PS2",
                                                  "PS3",
                                                  "PS4",
                                                  "PROMPT",
                                                  "PROMPT2",
                                                  "PROMPT3",
                                                  "PROMPT4",
                                                  "RPROMPT",
                                                  "SPROMPT",
                                                  "PROMPT_COMMAND",
                                                  "SHELLOPTS",
                                                  "BASHOPTS",
                                                  "GLOBIGNORE",
                                                  "FIGNORE",
                                                  "EXECIGNORE",
                                                  "POSIXLY_CORRECT",
                                                  "FUNCNEST",
                                                  "OPTIND",
                                                  "OPTARG",
                                                  "TMOUT",
                                                  "HISTFILE",
                                                  "MAIL",
                                                  "MAILPATH",
                                                  "MAILCHECK",
                                                  "FPATH",
                                                  "MODULE_PATH",
                                                  "MANPATH",
                                                  "PSVAR",
                                                  "STTY",
                                                  "NULLCMD",
                                                  "READNULLCMD",
                                                  "ARGV0",
                                                  "ARGC",
                                                  "ARGV",
                                                  "STATUS",
                                                  "PIPESTATUS",
                                                  "HISTCHARS",
                                                  "TMPPREFIX",
                                                  "WORDCHARS",
                                                  "KEYBOARD_HACK",
                                                  "SHELL",
                                                  "TERM",
                                                  "PWD",
                                                  "OLDPWD",
                                                  "LINENO",
                                                  "RANDOM",
                                                  "SECONDS",
                                                  "SRANDOM",
                                                  "EPOCHSECONDS",
                                                  "EPOCHREALTIME",
                                                  "GROUPS",
                                                  "HOSTNAME",
                                                  "INPUTRC",
                                                  "LANG",
                                                  "LANGUAGE",
                                                  "TEXTDOMAIN",
                                                  "TEXTDOMAINDIR",
                                                  "HISTIGNORE",
                                                  "HISTCONTROL",
                                                  "HISTSIZE",
                                                  "HISTFILESIZE",
                                                  "TIMEFORMAT",
                                                  "TMPDIR",
                                                  "COMP_WORDBREAKS",
                                                  "CHILD_MAX",
                                                  "PPID",
                                                  "UID",
                                                  "EUID",
                                                  "GID",
                                                  "EGID",
                                                  "USERNAME",
                                                  "ZDOTDIR",
                                                  "OPTERR",
                                                  "POSIXLY",
                                                  "PROMPT_EOL_MARK",
                                                  "SAVEHIST",
                                                  "GCONV_PATH",
                                                  "GETCONF_DIR",
                                                  "HOSTALIASES",
                                                  "LOCALDOMAIN",
                                                  "LOCPATH",
                                                  "MALLOC_TRACE",
                                                  "NIS_PATH",
                                                  "NLSPATH",
                                                  "RESOLV_HOST_CONF",
                                                  "RES_OPTIONS",
                                                  "GLIBC_TUNABLES"};

std::string UpperAscii(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

enum class WordKind { kLiteral, kOne, kMany };

constexpr char kCommentInSubstitution[] =
    "a comment inside a command substitution is not understood";

class Parser {
 public:
  Parser(std::string_view text, ShellDialect dialect) : text_(text), dialect_(dialect) {}

  ShellScript Run() {
    if (text_.size() > kMaxShellScriptBytes) {
      return Refuse(0,
                    "the script is longer than " + std::to_string(kMaxShellScriptBytes) + " bytes");
    }
    bool closed = false;  // a command substitution's ')' was read
    while (true) {
      SkipBlanks();
      if (failed_) return Result();
      if (pos_ >= text_.size()) break;
      const char c = text_[pos_];
      if (c == '\n') {
        if (state_ == State::kInCommand && !FinishCommand()) return Result();
        // A newline may follow `&&`, `||`, `|` and the words that open a list.
        if (state_ != State::kNeedCommand) state_ = State::kStart;
        // A here-document's body follows the line of its operator; a line that a quoted
        // newline or a continuation made longer is not followed.
        if (!pending_.empty() &&
            text_.substr(pending_.front().at, pos_ - pending_.front().at).find('\n') !=
                std::string_view::npos) {
          return Refuse(pending_.front().at,
                        "a here-document whose line continues over a newline is not understood");
        }
        ++pos_;
        if (!HereDocumentBodies()) return Result();
        continue;
      }
      if (c == '#') {  // at the start of a word: a comment up to the newline
        if (substitution_) return Fail(kCommentInSubstitution);
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
        continue;
      }
      if (c == ';') {
        if (Peek(1) == ';') return Fail("';;' (a case branch) is not understood");
        if (state_ != State::kInCommand && state_ != State::kAfterCompound) {
          return Fail("';' without a command before it");
        }
        if (state_ == State::kInCommand && !FinishCommand()) return Result();
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
      if (c == '(') {
        if (!AtCommandStart() || PeekJoined(1) == '(') {
          return Fail(
              "parentheses (a function, arithmetic or a subshell not at a command's start) are "
              "not understood");
        }
        if (!Open(Frame::kSubshell)) return Result();
        ++pos_;
        continue;
      }
      if (c == ')') {
        if (substitution_ && stack_.empty()) {  // the end of `$(…)`
          ++pos_;
          closed = true;
          break;
        }
        if (!CloseSubshell()) return Result();
        ++pos_;
        continue;
      }
      if (c == '&' || c == '<' || c == '>') {
        if (state_ != State::kAfterCompound) StartCommand();
        if (!Redirection(std::nullopt)) return Result();
        continue;
      }
      if ((c == '{' || c == '}') && (AtCommandStart() || (c == '}' && AfterCompound())) &&
          (pos_ + 1 >= text_.size() || EndsWord(Peek(1)))) {
        if (!(c == '{' ? Open(Frame::kBrace) : CloseBrace())) return Result();
        ++pos_;
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
        if (state_ != State::kAfterCompound) StartCommand();
        if (!Redirection(word.text)) return Result();
        continue;
      }
      // `[[` reads as a word that expands (a bracket that never closes is a glob), but unquoted
      // where a command starts it is a keyword of bash, ksh and zsh: name it as one.
      const bool double_bracket = IsDoubleBracket(word);
      if (double_bracket && AtCommandStart()) {
        if (dialect_ != ShellDialect::kBash) {
          return Refuse(word.start,
                        "`[[ … ]]` (a bash keyword) is not understood for this shell (dash runs a "
                        "program named [[, zsh and ksh read it their own way)");
        }
        if (!DoubleBracket(word.start)) return Result();
        continue;
      }
      if ((AtCommandStart() || (AfterCompound() && ContinuesAList(word.text))) && !word.quoted &&
          word.kind == WordKind::kLiteral && IsReservedWord(word.text)) {
        if (!ReservedWord(word)) return Result();
        continue;
      }
      if (state_ == State::kAfterCompound) {
        return Refuse(word.start, "a word right after a compound command is not understood");
      }
      StartCommand();
      const bool first = current_.empty();  // the command-name position
      if (first &&
          ((!word.quoted && word.kind == WordKind::kLiteral && IsReservedWord(word.text)) ||
           double_bracket)) {
        return Refuse(word.start, "the reserved word '" + word.text +
                                      "' after an assignment or redirection is not understood");
      }
      if (++words_ > kMaxShellWords) {
        return Refuse(word.start,
                      "the script has more than " + std::to_string(kMaxShellWords) + " words");
      }
      if (first && word.empty_braces) {
        return Refuse(word.start,
                      "'{}' in the command-name position is not understood (zsh reads it as an "
                      "empty block)");
      }
      if (first && word.assignment) {
        if (!Assignment(word)) return Result();
        continue;
      }
      if (first && word.kind != WordKind::kLiteral) {
        return Refuse(word.start,
                      "an expansion (a variable, glob or tilde) as the command name is not "
                      "understood");
      }
      current_.push_back(word.kind == WordKind::kMany  ? std::string(kAnyWords)
                         : word.kind == WordKind::kOne ? std::string(kAnyWord)
                                                       : std::move(word.text));
    }
    if (substitution_ && !closed) {
      return Refuse(text_.size(), "an unterminated command substitution ('$(' without ')')");
    }
    if (!pending_.empty()) {
      return Refuse(text_.size(), "a here-document without its body (no newline after it)");
    }
    if (state_ == State::kNeedCommand) {
      return Refuse(text_.size(), "the script ends where a command must follow");
    }
    if (state_ == State::kInCommand && !FinishCommand()) return Result();
    if (!stack_.empty()) {
      return Refuse(stack_.back().at, "a compound command that is never closed");
    }
    if (out_.commands.empty()) return Refuse(text_.size(), "the script has no command");
    out_.assigns = assigns_;
    out_.understood = true;
    return std::move(out_);
  }

 private:
  enum class State { kStart, kAfterSemicolon, kNeedCommand, kInCommand, kAfterCompound };
  // An open compound command. kIf's phase: 0 condition, 1 then-branch, 2 else-branch; kLoop's:
  // 0 condition, 1 body.
  enum class Frame { kIf, kLoop, kBrace, kSubshell };
  struct OpenFrame {
    Frame kind;
    int phase = 0;
    std::size_t first_command = 0;  // out_.commands.size() when it opened
    std::size_t list_start = 0;     // out_.commands.size() when its current list began
    std::size_t at = 0;
  };
  struct HereDocument {
    std::string delimiter;
    bool strip_tabs = false;
    bool quoted = false;
    std::size_t at = 0;
  };

  struct Word {
    std::string text;
    std::size_t start = 0;
    bool quoted = false;        // any part was quoted or escaped
    bool assignment = false;    // NAME= unquoted at its start
    bool io_number = false;     // unquoted digits directly before '<' or '>'
    bool empty_braces = false;  // holds an unquoted `{}`
    WordKind kind = WordKind::kLiteral;
  };

  // Whether `word` (just read, pos_ right after it) is written `[[`, line continuations aside:
  // its text alone cannot tell (`[[$X` has the text "[[" too).
  bool IsDoubleBracket(const Word& word) const {
    if (word.quoted || word.text != "[[") return false;
    std::string raw(text_.substr(word.start, pos_ - word.start));
    for (std::size_t at = raw.find("\\\n"); at != std::string::npos; at = raw.find("\\\n", at)) {
      raw.erase(at, 2);
    }
    return raw == "[[";
  }

  char Peek(std::size_t ahead) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  // The character `ahead` places after pos_ as the shells' lexers see it: they remove every line
  // continuation (backslash-newline) before they look for operators, so `(\<newline>(` is `((`
  // (arithmetic) and `$(\<newline>(` is `$((`. pos_ must not be inside a continuation.
  char PeekJoined(std::size_t ahead) const {
    std::size_t at = pos_;
    for (std::size_t k = 0;; ++k) {
      while (at + 1 < text_.size() && text_[at] == '\\' && text_[at + 1] == '\n') at += 2;
      if (at >= text_.size()) return '\0';
      if (k == ahead) return text_[at];
      ++at;
    }
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

  // Whether a word here would be in the position where reserved words are recognised.
  bool AtCommandStart() const {
    return state_ == State::kStart || state_ == State::kAfterSemicolon ||
           state_ == State::kNeedCommand;
  }

  // Right after a compound command the words that end or continue the list around it are
  // reserved words too (`then { ls; } else …`, `do (ls) done`); any other word is refused.
  bool AfterCompound() const { return state_ == State::kAfterCompound; }
  static bool ContinuesAList(std::string_view word) {
    return word == "then" || word == "elif" || word == "else" || word == "fi" || word == "do" ||
           word == "done";
  }

  // Begins a simple command if none is open.
  void StartCommand() {
    if (state_ == State::kInCommand) return;
    state_ = State::kInCommand;
    current_.clear();
    current_writes_ = false;
    current_assigned_ = false;
    current_redirected_ = false;
    current_ifs_.reset();
  }

  bool FinishCommand() {
    if (current_ifs_ && (current_.empty() || current_[0] != "read")) {
      return Fail(
          "assigning the variable IFS (it changes how the shell reads or runs later "
          "commands) is not understood, except right before read",
          *current_ifs_);
    }
    if (current_.empty()) {
      if (current_assigned_ && !current_redirected_) return true;  // `x=1` alone
      return Fail("a redirection without a command", pos_);
    }
    if (out_.commands.size() >= kMaxShellCommands) {
      return Fail("the script has more than " + std::to_string(kMaxShellCommands) + " commands",
                  pos_);
    }
    // `read NAME` and `export NAME=…` assign as `NAME=value` does (command_segments.cc judges
    // their words).
    if (current_[0] == "read" || current_[0] == "export") assigns_ = true;
    out_.commands.push_back(std::move(current_));
    out_.writes_file.push_back(current_writes_);
    current_.clear();
    return true;
  }

  // `&&`, `||` or `|`: ends the command before it and requires one after it.
  bool Operator(std::size_t length) {
    if (state_ != State::kInCommand && state_ != State::kAfterCompound) {
      return Fail("'" + std::string(text_.substr(pos_, length)) + "' without a command before it",
                  pos_);
    }
    if (state_ == State::kInCommand && !FinishCommand()) return false;
    state_ = State::kNeedCommand;
    pos_ += length;
    return true;
  }

  bool Open(Frame kind) {
    if (stack_.size() >= kMaxShellNesting) {
      return Fail(
          "compound commands nest more than " + std::to_string(kMaxShellNesting) + " levels deep",
          pos_);
    }
    stack_.push_back({kind, 0, out_.commands.size(), out_.commands.size(), pos_});
    state_ = State::kNeedCommand;
    return true;
  }

  // Whether the list since the frame's list_start ended with a separator and holds a command.
  bool ListEnded(std::string_view word) {
    if (state_ == State::kNeedCommand || out_.commands.size() == stack_.back().list_start) {
      return Fail("'" + std::string(word) + "' without a command before it", pos_);
    }
    return true;
  }

  void Close() {
    last_compound_first_ = stack_.back().first_command;
    stack_.pop_back();
    state_ = State::kAfterCompound;
  }

  bool CloseBrace() {
    if (stack_.empty() || stack_.back().kind != Frame::kBrace) {
      return Fail("a '}' that closes no '{' is not understood", pos_);
    }
    if (!ListEnded("}")) return false;
    Close();
    return true;
  }

  bool CloseSubshell() {
    if (stack_.empty() || stack_.back().kind != Frame::kSubshell) {
      return Fail("a ')' that closes no '(' is not understood", pos_);
    }
    if (state_ == State::kInCommand && !FinishCommand()) return false;
    if (!ListEnded(")")) return false;
    Close();
    return true;
  }

  // A reserved word in the position where the shell reads one.
  bool ReservedWord(const Word& word) {
    const std::string& w = word.text;
    auto top_is = [&](Frame kind, int phase) {
      return !stack_.empty() && stack_.back().kind == kind && stack_.back().phase == phase;
    };
    auto next_list = [&](int phase) {
      stack_.back().phase = phase;
      stack_.back().list_start = out_.commands.size();
      state_ = State::kNeedCommand;
      return true;
    };
    if (w == "if") return Open(Frame::kIf);
    if (w == "while" || w == "until") return Open(Frame::kLoop);
    if (w == "for") return ForHeader(word.start);
    if (w == "then" && top_is(Frame::kIf, 0)) return ListEnded(w) && next_list(1);
    if (w == "elif" && top_is(Frame::kIf, 1)) return ListEnded(w) && next_list(0);
    if (w == "else" && top_is(Frame::kIf, 1)) return ListEnded(w) && next_list(2);
    if (w == "do" && top_is(Frame::kLoop, 0)) return ListEnded(w) && next_list(1);
    if (w == "fi" && (top_is(Frame::kIf, 1) || top_is(Frame::kIf, 2))) {
      if (!ListEnded(w)) return false;
      Close();
      return true;
    }
    if (w == "done" && top_is(Frame::kLoop, 1)) {
      if (!ListEnded(w)) return false;
      Close();
      return true;
    }
    return Fail("the reserved word '" + w + "' is not understood here", word.start);
  }

  // bash's `[[ EXPR ]]`, pos_ right after the `[[`: a test that runs no program. Understood on
  // one line, for EXPR made of `! EXPR`, `EXPR && EXPR`, `EXPR || EXPR`, a file or string test
  // `-OP WORD`, a comparison `WORD (=|==|!=|-nt|-ot|-ef) WORD`, or a WORD. Its words expand as
  // anywhere (a `$(…)` is parsed and its commands listed before it), without splitting or globs.
  // Not understood: the arithmetic comparisons (-eq, -lt, …), whose operands bash evaluates as
  // arithmetic, where an array subscript runs code (x='a[$(rm -rf ~)]'; [[ $x -eq 0 ]] runs
  // rm, and a bare NAME is looked up the same way); -v and -R (a subscript too); =~ (assigns
  // BASH_REMATCH, and bash lexes a regex by rules of its own); `<`, `>` and parentheses. It is
  // listed as the command `[[ WORDS… ]]` and judged like one, so a prompt or forbidden rule on
  // `[[` holds; a program named `[[` (written '[[') has the same argv and gains nothing from it,
  // for neither is harmless.
  bool DoubleBracket(std::size_t start) {
    // What the next token may be: a term, the word after a unary test, what follows a word (a
    // comparison, `&&`, `||` or `]]`), the right side of a comparison, what follows a term.
    enum class Next { kTerm, kUnaryOperand, kAfterWord, kRight, kAfterTerm };
    static constexpr std::string_view kUnary[] = {"-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h",
                                                  "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x",
                                                  "-G", "-L", "-N", "-O", "-S", "-z", "-n", "-o"};
    static constexpr std::string_view kRefused[] = {"-eq", "-ne", "-lt", "-le", "-gt",
                                                    "-ge", "-v",  "-R",  "=~"};
    auto in = [](const auto& list, std::string_view w) {
      return std::find(std::begin(list), std::end(list), w) != std::end(list);
    };
    auto ends_here = [this](std::size_t ahead) {
      return pos_ + ahead >= text_.size() || EndsWord(Peek(ahead));
    };
    const std::size_t first_command = out_.commands.size();
    std::vector<std::string> argv;
    Next next = Next::kTerm;
    // Every word of the listed command counts against kMaxShellWords, `[[` and `]]` too.
    auto token = [&](std::string_view what) -> bool {
      if (++words_ > kMaxShellWords) {
        return Fail("the script has more than " + std::to_string(kMaxShellWords) + " words", pos_);
      }
      argv.emplace_back(what);
      return true;
    };
    if (!token("[[")) return false;
    while (true) {
      SkipBlanks();
      if (failed_) return false;
      if (pos_ >= text_.size()) return Fail("a `[[` without its `]]`", start);
      const std::size_t at = pos_;
      const char c = text_[pos_];
      if (c == '\n' || c == '#') {
        return Fail("a newline or comment inside `[[ … ]]` is not understood", at);
      }
      if ((c == '&' && Peek(1) == '&') || (c == '|' && Peek(1) == '|')) {
        if (next != Next::kAfterWord && next != Next::kAfterTerm) {
          return Fail("'&&' or '||' inside `[[ … ]]` without a test before it", at);
        }
        if (!token(text_.substr(pos_, 2))) return false;
        pos_ += 2;
        next = Next::kTerm;
        continue;
      }
      if (c == '(' || c == ')' || c == '<' || c == '>') {
        return Fail("'(', ')', '<' or '>' inside `[[ … ]]` is not understood", at);
      }
      if (EndsWord(c)) {
        return Fail("an operator inside `[[ … ]]` is not understood", at);
      }
      if (c == '=' && Peek(1) == '~') {
        return Fail("'=~' inside `[[ … ]]` (a regular expression) is not understood", at);
      }
      const bool not_equal = c == '!' && Peek(1) == '=' && ends_here(2);
      const bool double_equal = c == '=' && Peek(1) == '=' && ends_here(2);
      if (not_equal || double_equal) {
        if (next != Next::kAfterWord) {
          return Fail("a comparison inside `[[ … ]]` without a word before it", at);
        }
        if (!token(text_.substr(pos_, 2))) return false;
        pos_ += 2;
        next = Next::kRight;
        continue;
      }
      if (c == '!' && ends_here(1)) {
        if (next != Next::kTerm) return Fail("a misplaced '!' inside `[[ … ]]`", at);
        if (!token("!")) return false;
        ++pos_;
        continue;
      }
      Word word = ReadWord();
      if (failed_) return false;
      const bool literal = !word.quoted && word.kind == WordKind::kLiteral;
      if (literal && word.text == "]]") {
        if (next != Next::kAfterWord && next != Next::kAfterTerm) {
          return Fail("a `[[ … ]]` that ends where a test must follow", at);
        }
        break;
      }
      if (word.kind == WordKind::kLiteral && in(kRefused, word.text)) {
        return Fail("'" + word.text +
                        "' inside `[[ … ]]` is not understood (bash evaluates its operands as "
                        "arithmetic or a name's subscript, which may run code)",
                    at);
      }
      const bool unary = literal && in(kUnary, word.text);
      const bool binary = literal && (word.text == "=" || word.text == "-nt" ||
                                      word.text == "-ot" || word.text == "-ef");
      switch (next) {
        case Next::kTerm:
          if (binary) return Fail("a comparison inside `[[ … ]]` without a word before it", at);
          next = unary ? Next::kUnaryOperand : Next::kAfterWord;
          break;
        case Next::kAfterWord:
          if (!binary) return Fail("two words in a row inside `[[ … ]]` are not understood", at);
          next = Next::kRight;
          break;
        case Next::kUnaryOperand:
        case Next::kRight:
          if (unary || binary) {
            return Fail("an operator where `[[ … ]]` needs a word is not understood", at);
          }
          next = Next::kAfterTerm;
          break;
        case Next::kAfterTerm:
          return Fail("two words in a row inside `[[ … ]]` are not understood", at);
      }
      if (!token(word.kind == WordKind::kMany  ? std::string(kAnyWords)
                 : word.kind == WordKind::kOne ? std::string(kAnyWord)
                                               : word.text)) {
        return false;
      }
    }
    if (out_.commands.size() >= kMaxShellCommands) {
      return Fail("the script has more than " + std::to_string(kMaxShellCommands) + " commands",
                  start);
    }
    if (!token("]]")) return false;
    out_.commands.push_back(std::move(argv));
    out_.writes_file.push_back(false);
    // A redirection after `]]` is the compound's: it marks the test and, to be safe, the
    // commands of its substitutions.
    last_compound_first_ = first_command;
    state_ = State::kAfterCompound;
    return true;
  }

  // `for NAME in WORDS… (;|newline) do`, after the `for`; opens the loop's body.
  bool ForHeader(std::size_t at) {
    SkipBlanks();
    const Word name = ReadWord();
    if (failed_) return false;
    if (name.quoted || name.kind != WordKind::kLiteral || name.text.empty() ||
        !IsNameStart(name.text[0]) ||
        !std::all_of(name.text.begin(), name.text.end(), IsNameChar)) {
      return Fail("a 'for' without a variable name is not understood", name.start);
    }
    if (!VariableUnderstood(name.text, name.start)) return false;
    if (!SkipLineBreaks()) return false;
    const Word in = ReadWord();
    if (failed_) return false;
    if (in.quoted || in.text != "in") {
      return Fail("a 'for' without 'in WORDS' is not understood", in.start);
    }
    while (true) {
      SkipBlanks();
      if (pos_ >= text_.size()) return Fail("a 'for' without 'do'", at);
      const char c = text_[pos_];
      if (c == ';' || c == '\n' || c == '#') break;
      if (EndsWord(c)) return Fail("an operator in a 'for' word list is not understood", pos_);
      const Word item = ReadWord();
      if (failed_) return false;
      if (++words_ > kMaxShellWords) {
        return Fail("the script has more than " + std::to_string(kMaxShellWords) + " words",
                    item.start);
      }
    }
    if (text_[pos_] == ';') {
      if (Peek(1) == ';') return Fail("';;' (a case branch) is not understood", pos_);
      ++pos_;
    }
    if (!SkipLineBreaks()) return false;
    const Word body = ReadWord();
    if (failed_) return false;
    if (body.quoted || body.text != "do") {
      return Fail("a 'for' without 'do' after its words is not understood", body.start);
    }
    assigns_ = true;
    if (!Open(Frame::kLoop)) return false;
    stack_.back().phase = 1;
    stack_.back().at = at;
    return true;
  }

  // Blanks, comments and newlines inside a compound command's header (no here-document may be
  // waiting for its body there).
  bool SkipLineBreaks() {
    while (true) {
      SkipBlanks();
      if (pos_ >= text_.size()) return true;
      if (text_[pos_] == '#') {
        if (substitution_) return Fail(kCommentInSubstitution, pos_);
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (text_[pos_] == '\n') {
        if (!pending_.empty()) return Fail("a here-document inside a 'for' header", pos_);
        ++pos_;
      } else {
        return true;
      }
    }
  }

  bool VariableUnderstood(const std::string& name, std::size_t at) {
    if (ShellVariableIsSpecial(name)) {
      return Fail("assigning the variable " + name +
                      " (it changes how the shell reads or runs later commands) is not understood",
                  at);
    }
    return true;
  }

  // NAME=VALUE before a command or alone: the value is never a command word.
  bool Assignment(const Word& word) {
    const std::size_t eq = word.text.find('=');
    const std::string name = word.text.substr(0, eq);
    if (eq > 0 && word.text[eq - 1] == '+') {
      return Fail("'+=' is not understood (dash reads the word as a command name)", word.start);
    }
    // `IFS= read -r line`: an assignment before a command that is not a special builtin lasts
    // for that command only, and read's splitting is all IFS changes there. FinishCommand
    // refuses it before anything else.
    if (name == "IFS" && word.kind == WordKind::kLiteral && !current_ifs_) {
      current_ifs_ = word.start;
    } else if (!VariableUnderstood(name, word.start)) {
      return false;
    }
    current_assigned_ = true;
    assigns_ = true;
    return true;
  }

  // Marks the open command, or the compound command just closed, as writing a file.
  void Writes() {
    if (state_ == State::kAfterCompound) {
      for (std::size_t i = last_compound_first_; i < out_.writes_file.size(); ++i) {
        out_.writes_file[i] = true;
      }
    } else {
      current_writes_ = true;
    }
  }

  // A redirection at pos_ (after its descriptor number, if any).
  bool Redirection(const std::optional<std::string>& descriptor) {
    const std::size_t start = pos_;
    current_redirected_ = state_ != State::kAfterCompound;
    bool duplicate = false;
    bool output = true;
    if (text_[pos_] == '&') {  // &> and &>>: stdout and stderr
      if (descriptor) return Fail("a descriptor before '&>' is not understood", start);
      pos_ += Peek(2) == '>' ? 3 : 2;
    } else if (text_[pos_] == '<') {
      output = false;
      if (Peek(1) == '<') return HereInput(start);
      if (Peek(1) == '>') return Fail("a read-write redirection ('<>') is not understood", start);
      duplicate = Peek(1) == '&';
      pos_ += duplicate ? 2 : 1;
    } else {
      duplicate = Peek(1) == '&';
      pos_ += (Peek(1) == '>' || Peek(1) == '|' || duplicate) ? 2 : 1;
    }
    SkipBlanks();
    if (pos_ >= text_.size() || EndsWord(text_[pos_]) || text_[pos_] == '#') {
      return Fail("a redirection without a target (or a process substitution)", start);
    }
    Word target = ReadWord();
    if (failed_) return false;
    if (target.io_number) return Fail("a redirection followed by another", start);
    if (duplicate) {
      const bool digit = target.kind == WordKind::kLiteral && target.text.size() == 1 &&
                         target.text[0] >= '0' && target.text[0] <= '9';
      if (digit || (target.kind == WordKind::kLiteral && target.text == "-")) return true;
      return Fail("a duplication to anything but a descriptor ('>&file') is not understood", start);
    }
    if (output && !(target.kind == WordKind::kLiteral && target.text == "/dev/null")) Writes();
    return true;
  }

  // `<<DELIM`, `<<-DELIM` or bash's here-string `<<< WORD` at pos_. A here-document's body is
  // read after the next newline.
  bool HereInput(std::size_t start) {
    if (Peek(2) == '<') {
      if (dialect_ != ShellDialect::kBash) {
        return Fail("a here-string ('<<<') is bash's and not understood for this shell", start);
      }
      pos_ += 3;
      SkipBlanks();
      if (pos_ >= text_.size() || EndsWord(text_[pos_]) || text_[pos_] == '#') {
        return Fail("a here-string without a word", start);
      }
      ReadWord();  // data for stdin; its expansions are understood like any word's
      return !failed_;
    }
    if (substitution_) {
      return Fail("a here-document inside a command substitution is not understood", start);
    }
    const bool strip = Peek(2) == '-';
    pos_ += strip ? 3 : 2;
    SkipBlanks();
    if (pos_ >= text_.size() || EndsWord(text_[pos_]) || text_[pos_] == '#') {
      return Fail("a here-document without a delimiter", start);
    }
    const Word delimiter = ReadWord();
    if (failed_) return false;
    if (delimiter.kind != WordKind::kLiteral || delimiter.text.empty() ||
        delimiter.text.find('\n') != std::string::npos) {
      return Fail("a here-document delimiter that is empty, expands or spans lines", start);
    }
    if (pending_.size() + here_documents_ >= kMaxShellHereDocuments) {
      return Fail(
          "the script has more than " + std::to_string(kMaxShellHereDocuments) + " here-documents",
          start);
    }
    pending_.push_back({delimiter.text, strip, delimiter.quoted, start});
    return true;
  }

  // The bodies of the here-documents opened on the line that just ended, in order.
  bool HereDocumentBodies() {
    for (const HereDocument& doc : pending_) {
      ++here_documents_;
      while (true) {
        if (pos_ >= text_.size()) return Fail("an unterminated here-document", doc.at);
        std::size_t end = text_.find('\n', pos_);
        if (end == std::string_view::npos) end = text_.size();
        std::string_view line = text_.substr(pos_, end - pos_);
        if (doc.strip_tabs) {
          while (!line.empty() && line[0] == '\t') line.remove_prefix(1);
        }
        if (line.find('\0') != std::string_view::npos) return Fail("a NUL byte", pos_);
        pos_ = end < text_.size() ? end + 1 : end;
        if (line == doc.delimiter) break;
        if (!doc.quoted && line.find_first_of("$`\\") != std::string_view::npos) {
          return Fail(
              "a here-document with an unquoted delimiter whose body holds '$', '`' or '\\' "
              "(it expands) is not understood; quote the delimiter (<<'EOF')",
              end - line.size());
        }
      }
    }
    pending_.clear();
    return true;
  }

  // `$NAME`, `${NAME}` or a special parameter at pos_ (on the '$'): consumed (true), or refused.
  // `many` tells a "$@"-like one (many words even when quoted).
  bool Parameter(bool& many) {
    const std::size_t at = pos_;
    many = false;
    const char next = Peek(1);
    std::size_t length = 0;
    bool braced = false;
    if (IsNameStart(next)) {
      length = 1;
      while (IsNameChar(Peek(1 + length))) ++length;
    } else if ((next >= '0' && next <= '9') || next == '@' || next == '*' || next == '#' ||
               next == '?' || next == '$' || next == '!' || next == '-') {
      length = 1;
      many = next == '@';
    } else if (next == '{') {
      braced = true;
      const char first = Peek(2);
      if (IsNameStart(first)) {
        length = 1;
        while (IsNameChar(Peek(2 + length))) ++length;
      } else if ((first >= '0' && first <= '9') || first == '@' || first == '*' || first == '?' ||
                 first == '$') {
        length = 1;
        many = first == '@';
      }
      if (length == 0 || Peek(2 + length) != '}') {
        return Fail(
            "a parameter expansion other than ${NAME} (an operator, length or indirection) is not "
            "understood",
            at);
      }
    } else if (next == '(' && PeekJoined(2) != '(') {
      return CommandSubstitution();
    } else if (next == '(') {
      if (!Arithmetic()) return false;
      length = 0;
    } else {
      return Fail("an expansion ($'…' quoting, $\"…\" or another form) is not understood", at);
    }
    if (length > 0) pos_ += braced ? length + 3 : length + 1;
    // The shells join a continuation to what precedes it: `$AB\<newline>C` is $ABC, and
    // `$X\<newline>[1]` zsh's subscript.
    if (Peek(0) == '\\' && Peek(1) == '\n') {
      return Fail("a line continuation right after $NAME is not understood", pos_);
    }
    // zsh subscripts `$X[…]` (arithmetic on variables' contents) and modifies `$X:h`.
    const bool modifier = !braced && Peek(0) == ':' && (IsNameStart(Peek(1)) || Peek(1) == '&');
    if (Peek(0) == '[' || modifier) {
      return Fail("'[' or ':' right after $NAME (a zsh subscript or modifier) is not understood",
                  pos_);
    }
    return true;
  }

  // `$(( … ))` at pos_ (on the '$'), consumed when it holds only digits, blanks, parentheses and
  // operators: a number computed from literals, the same in every shell. A NAME is refused, and
  // so is $NAME: bash evaluates a name's value as arithmetic in turn, and an array subscript
  // there runs its command substitutions (x='a[$(rm -rf ~)]'; echo $((x + 1)) runs rm), from a
  // value the script or its environment set. The closing `))` must be where bash finds it: at
  // parenthesis depth zero, the two characters together.
  bool Arithmetic() {
    const std::size_t at = pos_;
    constexpr char kRefused[] =
        "an arithmetic expansion other than digits and operators ('$((' with a name, a $NAME or "
        "anything else inside: bash evaluates names' values as code) is not understood";
    if (Peek(1) != '(' || Peek(2) != '(') return Fail(kRefused, at);  // a continuation between
    std::size_t k = pos_ + 3;
    std::size_t depth = 0;
    while (true) {
      if (k >= text_.size()) return Fail("an unterminated arithmetic expansion ('$((')", at);
      const char c = text_[k];
      if (c == '(') {
        ++depth;
      } else if (c == ')') {
        if (depth == 0) {
          if (k + 1 < text_.size() && text_[k + 1] == ')') break;
          return Fail(kRefused, at);
        }
        --depth;
      } else if (!((c >= '0' && c <= '9') || IsBlank(c) ||
                   std::string_view("+-*/%<>=!&|^~?:").find(c) != std::string_view::npos)) {
        return Fail(kRefused, at);
      }
      ++k;
    }
    pos_ = k + 2;
    return true;
  }

  // `$(SCRIPT)` at pos_ (on the '$'). SCRIPT is parsed as a script of its own, up to the ')'
  // that closes it, and its commands join this script's (they run, so they are judged); what it
  // prints is a word that expands, as $NAME is. Inside it, comments, here-documents and `case`
  // are not understood: bash before 5.2 finds the closing ')' by scanning, not parsing, and
  // those are where the scan and the parse part ways.
  bool CommandSubstitution() {
    const std::size_t at = pos_;
    if (depth_ + 1 >= kMaxShellNesting) {
      return Fail("command substitutions nest more than " + std::to_string(kMaxShellNesting) +
                      " levels deep",
                  at);
    }
    Parser inner(text_, dialect_);
    inner.pos_ = pos_ + 2;
    inner.substitution_ = true;
    inner.depth_ = depth_ + 1;
    inner.words_ = words_;
    ShellScript script = inner.Run();
    if (!script.understood) return Fail(std::move(script.why), script.offset);
    if (out_.commands.size() + script.commands.size() > kMaxShellCommands) {
      return Fail("the script has more than " + std::to_string(kMaxShellCommands) + " commands",
                  at);
    }
    for (std::size_t k = 0; k < script.commands.size(); ++k) {
      out_.commands.push_back(std::move(script.commands[k]));
      out_.writes_file.push_back(script.writes_file[k]);
    }
    assigns_ = assigns_ || script.assigns;
    words_ = inner.words_;
    pos_ = inner.pos_;
    return true;
  }

  // One word at pos_, which is not a blank or an operator character.
  Word ReadWord() {
    Word word;
    word.start = pos_;
    bool digits_only = true;
    bool name_prefix = true;  // still inside an unquoted NAME at the word's start
    auto widen = [&word](WordKind kind) {
      if (kind == WordKind::kMany || word.kind == WordKind::kLiteral) word.kind = kind;
    };
    while (pos_ < text_.size() && !failed_) {
      const char c = text_[pos_];
      if (EndsWord(c)) break;
      if (c == '\\' && Peek(1) == '\n') {
        // A line continuation inside a word is removed before the shells read the word: it
        // quotes nothing, and `A\<newline>=1 rm x` is an assignment before rm.
        pos_ += 2;
        continue;
      }
      if (name_prefix && c == '=' && pos_ > word.start) {
        word.assignment = true;
      } else if (name_prefix && c == '+' && PeekJoined(1) == '=' && pos_ > word.start) {
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
          DoubleQuoted(word);
          word.quoted = true;
          name_prefix = false;
          break;
        case '$': {
          bool many = false;
          if (Parameter(many)) widen(WordKind::kMany);
          name_prefix = false;
          break;
        }
        case '`':
          Fail("a command substitution (backticks) is not understood", pos_);
          break;
        case '[':
          // A lone `[` (the test command) matches nothing as a pattern: it is itself.
          if (pos_ == word.start && (pos_ + 1 >= text_.size() || EndsWord(Peek(1)))) {
            word.text += c;
            ++pos_;
            break;
          }
          [[fallthrough]];
        case '*':
        case '?':
          widen(WordKind::kMany);  // a glob: any file names, or itself
          word.text += c;
          ++pos_;
          break;
        case '{':
          // `{}` (find -exec, xargs -I{}) is itself in every shell: brace expansion needs a
          // comma or `..` between the braces.
          if (Peek(1) == '}') {
            word.text += "{}";
            word.empty_braces = true;
            pos_ += 2;
            break;
          }
          [[fallthrough]];
        case '}':
          Fail("a brace ('{', '}') is not understood", pos_);
          break;
        case '~':
          widen(WordKind::kOne);  // a home directory (or itself): one word
          word.text += c;
          ++pos_;
          break;
        case '!':
          Fail(pos_ == word.start && (pos_ + 1 >= text_.size() || EndsWord(Peek(1))) &&
                       AtCommandStart()
                   ? "'!' (a keyword negating a pipeline's status) is not understood"
                   : "'!' is not understood",
               pos_);
          break;
        case '\0':
          Fail("a NUL byte", pos_);
          break;
        case '=':
          // A lone `=` (`[ "$a" = b ]`) is itself in zsh too; `==` and `=cmd` are path lookups.
          if (pos_ == word.start && !(pos_ + 1 >= text_.size() || EndsWord(Peek(1)))) {
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

  // A "..." string starting at pos_: backslash escapes only $ ` " \ and the newline; "$NAME" is
  // one arbitrary word ("$@" any number), any other expansion inside is not understood.
  void DoubleQuoted(Word& word) {
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
          word.text += next;
          pos_ += 2;
        } else if (next == '\n') {
          pos_ += 2;
        } else {
          word.text += '\\';
          ++pos_;
        }
        continue;
      }
      if (c == '$') {
        bool many = false;
        if (!Parameter(many)) return;
        if (many || word.kind == WordKind::kMany) {
          word.kind = WordKind::kMany;
        } else {
          word.kind = WordKind::kOne;
        }
        continue;
      }
      if (c == '`') {
        Fail("a command substitution inside double quotes is not understood", pos_);
        return;
      }
      if (c == '\0') {
        Fail("a NUL byte", pos_);
        return;
      }
      word.text += c;
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
  bool current_writes_ = false;
  bool current_assigned_ = false;
  bool current_redirected_ = false;
  bool assigns_ = false;
  std::optional<std::size_t> current_ifs_;  // where the open command assigns IFS
  bool substitution_ = false;               // parsing the script of a `$(…)`
  std::size_t depth_ = 0;                   // how many `$(…)` this one is inside
  std::vector<OpenFrame> stack_;
  std::size_t last_compound_first_ = 0;
  std::vector<HereDocument> pending_;
  std::size_t here_documents_ = 0;
  ShellScript out_;
};

}  // namespace

bool ShellVariableIsSpecial(std::string_view name) {
  const std::string upper = UpperAscii(name);
  if (upper.starts_with("LD_") || upper.starts_with("BASH") || upper.starts_with("ZSH") ||
      upper.starts_with("LC_") || upper.starts_with("HIST") || upper.starts_with("COMP")) {
    return true;
  }
  return std::find(std::begin(kSpecialVariables), std::end(kSpecialVariables), upper) !=
         std::end(kSpecialVariables);
}

ShellDialect DialectOfShell(std::string_view program) {
  return program == "bash" || program == "rbash" ? ShellDialect::kBash : ShellDialect::kPosix;
}

ShellScript ParseShellScript(std::string_view script, ShellDialect dialect) {
  return Parser(script, dialect).Run();
}

std::string QuoteShellWord(std::string_view word) {
  if (word == kAnyWords) return "<*>";
  if (word == kAnyWord) return "<?>";
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
