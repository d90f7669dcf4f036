// The shell parser behind command rules (src/policy/shell_words.h): what it understands it
// must read exactly as a real shell does (checked against bash and dash), and everything else
// must be "not understood" so that rules judge it prompt, never allow.
#include "policy/shell_words.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace anvil {
namespace {

using Commands = std::vector<std::vector<std::string>>;

struct Understood {
  std::string script;
  Commands commands;
};

TEST(ShellWords, UnderstoodScriptsSplitIntoSimpleCommands) {
  const std::vector<Understood> cases = {
      {"ls", {{"ls"}}},
      {"ls -la src", {{"ls", "-la", "src"}}},
      {"  ls\t-1  ", {{"ls", "-1"}}},
      {"ls && pwd", {{"ls"}, {"pwd"}}},
      {"ls || true", {{"ls"}, {"true"}}},
      {"ls; pwd;", {{"ls"}, {"pwd"}}},
      {"ls | wc -l", {{"ls"}, {"wc", "-l"}}},
      {"ls\npwd\n\n", {{"ls"}, {"pwd"}}},
      {"ls &&\n  pwd", {{"ls"}, {"pwd"}}},
      {"cargo build && cargo test", {{"cargo", "build"}, {"cargo", "test"}}},
      {"echo 'a b' \"c d\"", {{"echo", "a b", "c d"}}},
      {"echo a\\ b", {{"echo", "a b"}}},
      {"echo \"a\\\"b\" 'x\\y'", {{"echo", "a\"b", "x\\y"}}},
      {"echo \"\\a\\$\\`\\\\\"", {{"echo", "\\a$`\\"}}},
      {"echo ''", {{"echo", ""}}},
      {"echo a''b\"\"c", {{"echo", "abc"}}},
      {"echo '/usr'\"/\"'local'/bin", {{"echo", "/usr/local/bin"}}},
      {"rg -n \"foo\" -g\"*.py\"", {{"rg", "-n", "foo", "-g*.py"}}},
      {"git commit -m \"line1\nline2\"", {{"git", "commit", "-m", "line1\nline2"}}},
      {"ls \\\n -l", {{"ls", "-l"}}},
      {"ec\\\nho hi", {{"echo", "hi"}}},
      {"ls # a comment; rm -rf /", {{"ls"}}},
      {"ls;# comment\npwd", {{"ls"}, {"pwd"}}},
      {"echo a#b", {{"echo", "a#b"}}},
      {"ls 2>/dev/null", {{"ls"}}},
      {"ls >/dev/null 2>&1", {{"ls"}}},
      {"ls 2> /dev/null | wc", {{"ls"}, {"wc"}}},
      {"ls >>'/dev/null'", {{"ls"}}},
      {"ls >&2", {{"ls"}}},
      {"ls 1>&- 2<&0", {{"ls"}}},
      {"wc -l </dev/null", {{"wc", "-l"}}},
      {">/dev/null ls", {{"ls"}}},
      {"echo a2>/dev/null", {{"echo", "a2"}}},
      {"echo \"2\">/dev/null", {{"echo", "2"}}},
      {"git log HEAD^..main", {{"git", "log", "HEAD^..main"}}},
      {"git log --format=%H", {{"git", "log", "--format=%H"}}},
      {"echo a=b", {{"echo", "a=b"}}},
      {"'if' x", {{"if", "x"}}},
      {"echo if then fi", {{"echo", "if", "then", "fi"}}},
      {"\"FOO=bar\" ls", {{"FOO=bar", "ls"}}},
  };
  for (const auto& c : cases) {
    const ShellScript parsed = ParseShellScript(c.script);
    EXPECT_TRUE(parsed.understood) << c.script << ": " << parsed.why;
    EXPECT_EQ(parsed.commands, c.commands) << c.script;
  }
}

// The attack: dash (/bin/sh) runs `ls &>/dev/null rm -rf victim` as `ls &` then
// `>/dev/null rm -rf victim`, and `10>/dev/null rm x` as `10 rm x`. Only bash reads `&>`, `&>>`
// and multi-digit descriptors as redirections, so only the bash dialect understands them.
TEST(ShellWords, BashOnlyRedirectionsAreNotUnderstoodForPosixShells) {
  const std::vector<std::string> bash_only = {
      "ls &>/dev/null rm -rf victim",  "ls &>> /dev/null", "ls &>/dev/null",
      "ls 10>/dev/null rm -rf victim", "ls 12>&1",         "ls 10<&-",
      "ls 1>&2 99>/dev/null"};
  for (const auto& script : bash_only) {
    const ShellScript posix = ParseShellScript(script, ShellDialect::kPosix);
    EXPECT_FALSE(posix.understood) << script;
    EXPECT_FALSE(ParseShellScript(script).understood) << script << " (the default is POSIX)";
    const ShellScript bash = ParseShellScript(script, ShellDialect::kBash);
    EXPECT_TRUE(bash.understood) << script << ": " << bash.why;
  }
  EXPECT_EQ(ParseShellScript("ls &>/dev/null rm -rf victim", ShellDialect::kBash).commands,
            (Commands{{"ls", "rm", "-rf", "victim"}}));
  // Benign neighbours: single-digit descriptors mean the same in every shell.
  for (const auto dialect : {ShellDialect::kPosix, ShellDialect::kBash}) {
    EXPECT_TRUE(ParseShellScript("ls >/dev/null 2>&1", dialect).understood);
    EXPECT_TRUE(ParseShellScript("ls 1>&- 2<&0 9>/dev/null", dialect).understood);
  }
  // bash reads a descriptor too long for an int as a word: never understood.
  EXPECT_FALSE(ParseShellScript("ls 99999999999>/dev/null rm x", ShellDialect::kBash).understood);
  // Which dialect each shell gets.
  EXPECT_EQ(DialectOfShell("bash"), ShellDialect::kBash);
  EXPECT_EQ(DialectOfShell("rbash"), ShellDialect::kBash);
  for (const char* shell : {"sh", "dash", "ash", "ksh", "mksh", "posh", "zsh", "yash", "busybox"}) {
    EXPECT_EQ(DialectOfShell(shell), ShellDialect::kPosix) << shell;
  }
}

struct Refused {
  std::string script;
  std::string why;  // a part of the reason
};

TEST(ShellWords, AnythingNotFullyUnderstoodIsRefusedWithItsReason) {
  const std::vector<Refused> cases = {
      {"echo $HOME", "expansion"},
      {"echo ${HOME}", "expansion"},
      {"echo \"$HOME\"", "expansion inside double quotes"},
      {"echo $(rm -rf /)", "expansion"},
      {"echo \"$(id)\"", "expansion inside double quotes"},
      {"echo `id`", "backticks"},
      {"echo \"`id`\"", "expansion inside double quotes"},
      {"echo $'a\\nb'", "expansion"},
      {"ls *.txt", "glob"},
      {"ls file?", "glob"},
      {"ls [ab]", "glob"},
      {"[ -f x ]", "glob"},
      {"echo {a,b}", "brace"},
      {"{ ls; }", "brace"},
      {"cat ~/.ssh/id_rsa", "tilde"},
      {"echo a=~/x", "tilde"},
      {"! ls", "'!'"},
      {"FOO=bar ls", "assignment"},
      {"PATH=/tmp/evil ls", "assignment"},
      {"A+=b ls", "assignment"},
      {"x=1", "assignment"},
      {">/dev/null A=1 ls", "assignment"},
      {"ls > out.txt", "redirection to a file"},
      {"echo x >> ~/.bashrc", "tilde"},
      {"echo x >>.bashrc", "redirection to a file"},
      {"ls 2>err.log", "redirection to a file"},
      {"ls >&out", "redirection to a file"},
      {"cat < /etc/passwd", "redirection to a file"},
      {"ls <> /dev/null", "read-write"},
      {"cat <<EOF\nhi\nEOF", "here-document"},
      {"cat <<< hi", "here-document"},
      {"ls >", "without a target"},
      {"ls > ;", "without a target"},
      {">/dev/null", "redirection without a command"},
      {"(ls)", "parentheses"},
      {"ls || (pwd && echo hi)", "parentheses"},
      {"f() { ls; }", "parentheses"},
      {"ls & pwd", "background"},
      {"ls &", "background"},
      {"ls |& wc", "'|&'"},
      {"if true; then ls; fi", "reserved word 'if'"},
      {"for f in a; do ls; done", "reserved word 'for'"},
      {"while true; do ls; done", "reserved word 'while'"},
      {"time ls", "reserved word 'time'"},
      {"function f { ls; }", "reserved word 'function'"},
      {"case x in x) ls;; esac", "reserved word 'case'"},
      {"ls ;; pwd", "';;'"},
      {"&& ls", "without a command"},
      {"ls &&", "ends where a command must follow"},
      {"ls | | wc", "without a command"},
      {"ls; ;", "without a command"},
      {"; ls", "without a command"},
      {"ls |", "ends where a command must follow"},
      {"", "no command"},
      {"   \n# only a comment\n", "no command"},
      {"echo 'unterminated", "unterminated single quote"},
      {"echo \"unterminated", "unterminated double quote"},
      {"echo \\", "backslash at the end"},
      {"ls =ls", "starting with '='"},
      {std::string("echo a\0b", 8), "NUL"},
      {std::string("echo 'a\0b'", 10), "NUL"},
      {std::string("echo \\\0", 7), "NUL"},
      {std::string("echo \"\\\0\"", 9), "NUL"},
  };
  for (const auto& c : cases) {
    const ShellScript parsed = ParseShellScript(c.script);
    EXPECT_FALSE(parsed.understood) << c.script;
    EXPECT_TRUE(parsed.commands.empty()) << c.script;
    EXPECT_NE(parsed.why.find(c.why), std::string::npos) << c.script << ": " << parsed.why;
    EXPECT_LE(parsed.offset, c.script.size()) << c.script;
  }
}

TEST(ShellWords, TheOffsetPointsAtWhatWasNotUnderstood) {
  const ShellScript parsed = ParseShellScript("ls && echo $HOME");
  ASSERT_FALSE(parsed.understood);
  EXPECT_EQ(parsed.offset, 11u);
}

TEST(ShellWords, OversizedScriptsAreNotUnderstood) {
  std::string long_script(kMaxShellScriptBytes + 1, 'a');
  EXPECT_FALSE(ParseShellScript(long_script).understood);
  std::string many_commands;
  for (std::size_t i = 0; i <= kMaxShellCommands; ++i) many_commands += "ls;";
  const ShellScript parsed = ParseShellScript(many_commands);
  EXPECT_FALSE(parsed.understood);
  EXPECT_NE(parsed.why.find("commands"), std::string::npos) << parsed.why;
  std::string many_words = "echo";
  for (std::size_t i = 0; i <= kMaxShellWords; ++i) many_words += " a";
  EXPECT_FALSE(ParseShellScript(many_words).understood);
}

TEST(ShellWords, QuotedWordsReadBackUnchanged) {
  const std::vector<std::string> words = {"plain",
                                          "",
                                          "a b",
                                          "it's",
                                          "'",
                                          "\"",
                                          "\\",
                                          "$HOME",
                                          "`id`",
                                          "*",
                                          "~",
                                          "if",
                                          "!",
                                          "A=b",
                                          "=x",
                                          "#c",
                                          "a;b",
                                          "a|b",
                                          "a&b",
                                          "<x>",
                                          "(x)",
                                          "{x}",
                                          "line1\nline2",
                                          "tab\there",
                                          "héllo",
                                          "\x01\x7f",
                                          "--flag=value",
                                          "-n",
                                          "./path/to.file",
                                          "100%",
                                          "a,b+c@d:e"};
  for (const auto& word : words) {
    const std::string script = "cmd " + QuoteShellWord(word);
    const ShellScript parsed = ParseShellScript(script);
    ASSERT_TRUE(parsed.understood) << script << ": " << parsed.why;
    ASSERT_EQ(parsed.commands.size(), 1u) << script;
    EXPECT_EQ(parsed.commands[0], (std::vector<std::string>{"cmd", word})) << script;
  }
  EXPECT_EQ(QuoteShellWord("ls"), "ls");
  EXPECT_EQ(QuoteShellWord("it's"), "'it'\\''s'");
  EXPECT_EQ(JoinShellWords({"git", "commit", "-m", "a b"}), "git commit -m 'a b'");
  EXPECT_EQ(JoinShellWords({"git", "log", "--output=x", "A=1", "a+=1", "=x", "-c", "a-b=c"}),
            "git log --output=x 'A=1' 'a+=1' '=x' -c a-b=c");
}

// Runs SHELL -c SCRIPT and returns its stdout.
std::string RunShell(const std::string& shell, const std::string& script) {
  int out[2];
  if (::pipe(out) != 0) return "<pipe failed>";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    ::close(out[1]);
    ::execl(shell.c_str(), shell.c_str(), "-c", script.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(out[0], buf, sizeof(buf))) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return text;
}

// Differential: for scripts whose every command is `printf '%s\0' WORDS…`, the words bash and
// dash print must be exactly the words this parser found (printf's own first two dropped).
TEST(ShellWords, WordsAgreeWithBashAndDash) {
  const std::vector<std::string> tails = {
      "a b c",
      "'a b' \"c d\" e\\ f",
      "\"a\\\"b\" 'x\\y' \"\\a\\$\\`\\\\\"",
      "a''b\"\"c '' \"\"",
      "'/usr'\"/\"'local'/bin",
      "-g\"*.py\" --format=%H HEAD^..main a=b",
      "\"line1\nline2\" 'tab\there'",
      "x \\\n y",
      "a#b c # comment dropped",
      "a 2>/dev/null b 2>&2 c",
      "é 'ü' \"ñ\"",
      "if then fi do done",
      "\\' \\\" \\\\ \\a",
  };
  const std::vector<std::string> separators = {" && ", "; ", "\n", " ;\n\n"};
  std::vector<std::string> shells;
  for (const char* shell : {"/bin/bash", "/bin/dash", "/usr/bin/zsh"}) {
    if (::access(shell, X_OK) == 0) shells.push_back(shell);
  }
  ASSERT_FALSE(shells.empty());
  for (std::size_t s = 0; s < tails.size(); ++s) {
    // One command, and two joined by an operator.
    const std::string one = "printf '%s\\0' " + tails[s];
    const std::string two =
        one + separators[s % separators.size()] + "printf '%s\\0' " + tails[(s + 1) % tails.size()];
    for (const std::string& script : {one, two}) {
      const ShellScript parsed = ParseShellScript(script);
      ASSERT_TRUE(parsed.understood) << script << ": " << parsed.why;
      std::string expected;
      for (const auto& command : parsed.commands) {
        ASSERT_GE(command.size(), 2u) << script;
        ASSERT_EQ(command[0], "printf") << script;
        for (std::size_t i = 2; i < command.size(); ++i) expected += command[i] + '\0';
      }
      for (const auto& shell : shells) {
        EXPECT_EQ(RunShell(shell, script), expected) << shell << " -c " << script;
      }
    }
  }
}

}  // namespace
}  // namespace anvil
