// The shell parser behind command rules (src/policy/shell_words.h): what it understands it
// must read exactly as a real shell does (checked against bash and dash), and everything else
// must be "not understood" so that rules never judge it allow.
#include "policy/shell_words.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace anvil {
namespace shell_words_test {
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
      // A continuation inside a word does not quote it: `A\<newline>=1 rm` assigns and runs rm.
      {"A\\\n=1 rm -rf victim", {{"rm", "-rf", "victim"}}},
      {"A=\\\n1 rm x", {{"rm", "x"}}},
      {"( (ls) )", {{"ls"}}},
      {"echo $( (ls) )", {{"ls"}, {"echo", std::string(kAnyWords)}}},
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
      {"echo $((x))", "arithmetic"},
      {"echo $(ls # )\n)", "comment inside a command substitution"},
      {"echo `id`", "backticks"},
      {"echo \"`id`\"", "command substitution"},
      {"echo $'a\\nb'", "expansion"},
      {"echo {a,b}", "brace"},
      {"! ls", "'!'"},
      {"PATH=/tmp/evil ls", "assigning the variable PATH"},
      {"A+=b ls", "'+='"},
      {"x=1", "no command"},
      {"ls >&out", "duplication"},
      {"ls <> /dev/null", "read-write"},
      {"cat <<< hi", "here-string"},
      {"ls >", "without a target"},
      {"ls > ;", "without a target"},
      {">/dev/null", "redirection without a command"},
      {"f() { ls; }", "parentheses"},
      {"ls & pwd", "background"},
      {"ls &", "background"},
      {"ls |& wc", "'|&'"},
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
  const ShellScript parsed = ParseShellScript("ls && echo $((x))");
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
      "{} -I{} a{}b {}{} {}.bak,x a,{}",
      "a = b '==' \\=x",
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

// Differential: a line continuation inside an assignment's name or right after its '=' still
// makes it an assignment in bash, dash and zsh, so the command after it is the printf.
TEST(ShellWords, LineContinuationsInsideAssignmentsAgreeWithBashDashAndZsh) {
  const std::vector<std::string> scripts = {
      "A\\\n=1 printf '%s\\0' a b",
      "A=\\\n1 printf '%s\\0' a",
      "A\\\nB\\\n=1 B=2 printf '%s\\0' c; printf '%s\\0' d",
  };
  std::vector<std::string> shells;
  for (const char* shell : {"/bin/bash", "/bin/dash", "/usr/bin/zsh"}) {
    if (::access(shell, X_OK) == 0) shells.push_back(shell);
  }
  ASSERT_FALSE(shells.empty());
  for (const auto& script : scripts) {
    const ShellScript parsed = ParseShellScript(script);
    ASSERT_TRUE(parsed.understood) << script << ": " << parsed.why;
    EXPECT_TRUE(parsed.assigns) << script;
    std::string expected;
    for (const auto& command : parsed.commands) {
      ASSERT_EQ(command[0], "printf") << script;
      for (std::size_t i = 2; i < command.size(); ++i) expected += command[i] + '\0';
    }
    for (const auto& shell : shells) {
      EXPECT_EQ(RunShell(shell, script), expected) << shell << " -c " << script;
    }
  }
  // And bash, dash and zsh all read `$(\<newline>(` as arithmetic, not a subshell.
  for (const auto& shell : shells) {
    EXPECT_EQ(RunShell(shell, "printf '%s|' $(\\\n(1+2))"), "3|") << shell;
  }
}

const std::string kMany(kAnyWords);
const std::string kOne(kAnyWord);

struct Read {
  std::string script;
  Commands commands;
  std::vector<bool> writes;  // per command
  bool assigns = false;
  ShellDialect dialect = ShellDialect::kPosix;
};

// What agents write every day: redirections to files, here-documents, words that expand,
// assignments and compound commands are understood, with what they leave unknown marked.
TEST(ShellWords, EverydayScriptsAreUnderstoodWithWildcardsAndWrites) {
  const std::vector<Read> cases = {
      {"echo hi > f.txt", {{"echo", "hi"}}, {true}},
      {"echo hi >> f.txt 2>err.log", {{"echo", "hi"}}, {true}},
      {"ls >| out", {{"ls"}}, {true}},
      {"ls 2>&1 >/dev/null", {{"ls"}}, {false}},
      {"wc -l < in.txt", {{"wc", "-l"}}, {false}},
      {"python3 -m pytest -q > log.txt 2>&1", {{"python3", "-m", "pytest", "-q"}}, {true}},
      {"make &> build.log", {{"make"}}, {true}, false, ShellDialect::kBash},
      {"echo > \"$LOG\" x", {{"echo", "x"}}, {true}},
      {"cat > f.txt <<'EOF'\nhello $(rm -rf /) `id` \\\nEOF\nls", {{"cat"}, {"ls"}}, {true, false}},
      {"cat <<\"EOF\"\n$x\nEOF", {{"cat"}}, {false}},
      {"cat <<\\EOF\n$x\nEOF", {{"cat"}}, {false}},
      {"cat <<EOF\nplain text\nEOF\n", {{"cat"}}, {false}},
      {"cat <<-'EOF'\n\tbody\n\tEOF\necho done", {{"cat"}, {"echo", "done"}}, {false, false}},
      {"cat <<'A' <<'B'\na\nA\nb\nB\nls", {{"cat"}, {"ls"}}, {false, false}},
      {"cat <<'EOF'\nrm -rf /\nEOF", {{"cat"}}, {false}},
      {"cat <<< \"$x\"", {{"cat"}}, {false}, false, ShellDialect::kBash},
      {"ls *.py", {{"ls", kMany}}, {false}},
      {"ls src/*.c file? [ab]", {{"ls", kMany, kMany, kMany}}, {false}},
      {"[ -f x ] && echo y", {{"[", "-f", "x", "]"}, {"echo", "y"}}, {false, false}},
      {"echo $HOME ${HOME} \"$HOME\" \"$@\" \"$*\" $1 $?",
       {{"echo", kMany, kMany, kOne, kMany, kOne, kMany, kMany}},
       {false}},
      {"echo \"a $x b\" pre$x", {{"echo", kOne, kMany}}, {false}},
      {"cd \"$HOME/x\"", {{"cd", kOne}}, {false}},
      {"cat ~/.bashrc ~", {{"cat", kOne, kOne}}, {false}},
      {"echo $HOME:$PATH", {{"echo", kMany}}, {false}},
      {"x=1 cmd a", {{"cmd", "a"}}, {false}, true},
      {"x=1; y=$x ls", {{"ls"}}, {false}, true},
      {">/dev/null A=1 ls", {{"ls"}}, {false}, true},
      {"for f in *.c; do echo \"$f\"; done", {{"echo", kOne}}, {false}, true},
      {"for f in a b\ndo\n  gcc -c \"$f\"\ndone > log", {{"gcc", "-c", kOne}}, {true}, true},
      {"if [ -d x ]; then ls x; elif true; then pwd; else echo no; fi",
       {{"[", "-d", "x", "]"}, {"ls", "x"}, {"true"}, {"pwd"}, {"echo", "no"}},
       {false, false, false, false, false}},
      {"while false; do ls; done; until true; do pwd; done",
       {{"false"}, {"ls"}, {"true"}, {"pwd"}},
       {false, false, false, false}},
      {"{ ls; pwd; } > out; echo x", {{"ls"}, {"pwd"}, {"echo", "x"}}, {true, true, false}},
      {"(cd sub && make) 2>/dev/null || echo failed",
       {{"cd", "sub"}, {"make"}, {"echo", "failed"}},
       {false, false, false}},
      {"( ( ls ) )", {{"ls"}}, {false}},
      {"if true\nthen\n  ls | wc -l\nfi", {{"true"}, {"ls"}, {"wc", "-l"}}, {false, false, false}},
      {"echo if fi done '{'", {{"echo", "if", "fi", "done", "{"}}, {false}},
      {"if true; then { ls; } else (pwd) fi", {{"true"}, {"ls"}, {"pwd"}}, {false, false, false}},
      {"while false; do (ls) done; { { pwd; } }",
       {{"false"}, {"ls"}, {"pwd"}},
       {false, false, false}},
      // Command substitutions: their commands run, so they are listed (before the command
      // whose word they are); what they print is a word that expands.
      {"cd \"$(git rev-parse --show-toplevel)\" && ls",
       {{"git", "rev-parse", "--show-toplevel"}, {"cd", kOne}, {"ls"}},
       {false, false, false}},
      {"make -j$(nproc)", {{"nproc"}, {"make", kMany}}, {false, false}},
      {"echo \"done: $(date)\" > log", {{"date"}, {"echo", kOne}}, {false, true}},
      {"for f in $(git ls-files); do wc -l \"$f\"; done",
       {{"git", "ls-files"}, {"wc", "-l", kOne}},
       {false, false},
       true},
      {"x=$(id -u) ls", {{"id", "-u"}, {"ls"}}, {false, false}, true},
      {"echo $(cat $(ls) > out; pwd)",
       {{"ls"}, {"cat", kMany}, {"pwd"}, {"echo", kMany}},
       {false, true, false, false}},
      {"echo $( (cd a && ls) )", {{"cd", "a"}, {"ls"}, {"echo", kMany}}, {false, false, false}},
      {"echo \"$(echo \")\" ')')\"", {{"echo", ")", ")"}, {"echo", kOne}}, {false, false}},
      {"[ \"$x\" = y ] && ls", {{"[", kOne, "=", "y", "]"}, {"ls"}}, {false, false}},
      {"if [ -n \"$(uname)\" ]; then ls; fi",
       {{"uname"}, {"[", "-n", kOne, "]"}, {"ls"}},
       {false, false, false}},
      {"cat <<< \"$(ls)\"", {{"ls"}, {"cat"}}, {false, false}, false, ShellDialect::kBash},
      // `{}` is itself in every shell (find -exec, xargs -I{}).
      {"find . -name '*.py' -exec grep -l foo {} +",
       {{"find", ".", "-name", "*.py", "-exec", "grep", "-l", "foo", "{}", "+"}},
       {false}},
      {"ls | xargs -I{} echo {}.bak",
       {{"ls"}, {"xargs", "-I{}", "echo", "{}.bak"}},
       {false, false}},
      // read assigns as NAME=value does, IFS right before it lasts for it alone.
      {"ls | while IFS= read -r f; do wc -l \"$f\"; done",
       {{"ls"}, {"read", "-r", "f"}, {"wc", "-l", kOne}},
       {false, false, false},
       true},
      {"read line", {{"read", "line"}}, {false}, true},
      {"export CI=1 && make", {{"export", "CI=1"}, {"make"}}, {false, false}, true},
  };
  for (const auto& c : cases) {
    const ShellScript parsed = ParseShellScript(c.script, c.dialect);
    ASSERT_TRUE(parsed.understood) << c.script << ": " << parsed.why;
    EXPECT_EQ(parsed.commands, c.commands) << c.script;
    EXPECT_EQ(parsed.writes_file, c.writes) << c.script;
    EXPECT_EQ(parsed.assigns, c.assigns) << c.script;
  }
}

// Attacks on each new construct: what would run code, change what runs, or hide a command is
// not understood.
TEST(ShellWords, ExpansionsThatRunCodeOrHideACommandStayNotUnderstood) {
  const std::vector<Refused> cases = {
      // An expansion as the command name, directly or after an assignment or a loop.
      {"$cmd -rf x", "command name"},
      {"\"$c\" x", "command name"},
      {"*.sh", "command name"},
      {"~/bin/tool", "command name"},
      {"for c in rm; do $c -rf x; done", "command name"},
      {"x=1 $c", "command name"},
      // Code inside expansions.
      {"echo ${x:-$(id)}", "parameter expansion"},
      {"echo ${#x}", "parameter expansion"},
      {"echo ${!x}", "parameter expansion"},
      {"echo $((x+2))", "arithmetic"},
      {"echo \"$((x))\"", "arithmetic"},
      {"echo $x[1]", "zsh subscript"},
      {"echo \"$x[$(id)]\"", "zsh subscript"},
      {"echo $x:h", "zsh subscript or modifier"},
      {"cat <<EOF\n$(rm -rf /)\nEOF", "here-document with an unquoted delimiter"},
      {"cat <<EOF\n`id`\nEOF", "here-document with an unquoted delimiter"},
      {"cat <<EOF\na\\\nEOF", "here-document with an unquoted delimiter"},
      {"cat <<EOF\nno end", "unterminated here-document"},
      {"cat <<EOF", "without its body"},
      {"cat <<$x\n$x\n", "delimiter"},
      {"cat <<EOF \"a\nb\"\nEOF\n", "continues over a newline"},
      {"diff <(ls a) <(ls b)", "process substitution"},
      {"tee >(sh) < x", "process substitution"},
      {"cat <(id)", "process substitution"},
      {"((x=1))", "parentheses"},
      {"echo (x)", "parentheses"},
      // `[[` where a command starts is a keyword, not an expansion (understood for bash only:
      // DoubleBracketsAreUnderstoodInBashOnly).
      {"x=1 [[ -f x ]]", "reserved word '[[' after an assignment or redirection"},
      {">/dev/null [[ -f x ]]", "reserved word '[[' after an assignment or redirection"},
      {"[[$x -f x ]]", "command name"},
      {"[[* -f x ]]", "command name"},
      {"! ls", "'!' (a keyword negating a pipeline's status)"},
      {"ls && ! ls", "'!' (a keyword negating a pipeline's status)"},
      // Assignments that change how later commands run.
      {"PATH=/tmp ls", "assigning the variable PATH"},
      {"path=/tmp; ls", "assigning the variable path"},
      {"IFS=/ ls", "assigning the variable IFS"},
      {"BASH_ENV=./x bash -c ls", "assigning the variable BASH_ENV"},
      {"ENV=./x sh -c ls", "assigning the variable ENV"},
      {"LD_PRELOAD=./x.so ls", "assigning the variable LD_PRELOAD"},
      {"PS4='$(id)' ls", "assigning the variable PS4"},
      {"SHELLOPTS=xtrace ls", "assigning the variable SHELLOPTS"},
      {"USERNAME=nobody; id", "assigning the variable USERNAME"},
      {"GID=0 ls", "assigning the variable GID"},
      {"EGID=0 ls", "assigning the variable EGID"},
      {"ZDOTDIR=. zsh -c ls", "assigning the variable ZDOTDIR"},
      {"CDPATH=/ cd x", "assigning the variable CDPATH"},
      {"for PATH in /tmp; do ls; done", "assigning the variable PATH"},
      {"for IFS in x; do ls; done", "assigning the variable IFS"},
      {"x=$(PATH=/tmp id) ls", "assigning the variable PATH"},
      // Compound commands the parser does not follow, or broken ones.
      {"for ((i=0;i<3;i++)); do ls; done", "variable name"},
      {"for f; do ls; done", "'in WORDS'"},
      {"for f in a b do ls; done", "without 'do'"},
      {"for f in $((x)); do rm $f; done", "arithmetic"},
      {"for f in a | b; do ls; done", "operator"},
      {"if true; then ls", "never closed"},
      {"if then ls; fi", "without a command before it"},
      {"if ls; fi", "'fi' is not understood here"},
      {"while ls; done", "'done' is not understood here"},
      {"{ ls }", "brace"},
      {"{ ls; } x", "right after a compound command"},
      {"{ ls; } if true; then ls; fi", "right after a compound command"},
      {"(ls) then", "'then' is not understood here"},
      {"(ls) }", "closes no '{'"},
      {"if ls; then pwd; fi rm -rf x", "right after a compound command"},
      {"( ls", "never closed"},
      {"ls )", "closes no '('"},
      {"}", "closes no '{'"},
      {"()", "without a command before it"},
      {"() { ls; }", "without a command before it"},
      {"f() { ls; }", "parentheses"},
      {"case x in x) ls;; esac", "reserved word 'case'"},
      {"select x in a; do ls; done", "reserved word 'select'"},
      {">/dev/null if true; then ls; fi", "after an assignment or redirection"},
      {"x=1 { ls; }", "brace"},
      {"ls >&$fd", "duplication"},
      // Command substitutions: what is not understood in a script is not inside one, and its
      // output never names the program.
      {"$(echo rm) -rf x", "command name"},
      {"\"$(echo rm)\" -rf x", "command name"},
      {"x=1 $(echo rm)", "command name"},
      {"echo $(ls", "unterminated command substitution"},
      {"echo \"$(ls\"", "unterminated"},
      {"echo $(ls # )\n)", "comment inside a command substitution"},
      {"echo $(for f in a # )\ndo ls; done)", "comment inside a command substitution"},
      {"echo $(cat <<'E'\n)\nE\n)", "here-document inside a command substitution"},
      {"echo $(case x in x) ls;; esac)", "reserved word 'case'"},
      {"echo $(ls &)", "background"},
      {"echo $(PATH=/tmp ls)", "assigning the variable PATH"},
      {"echo $(IFS=x; ls)", "assigning the variable IFS"},
      {"echo $(`id`)", "backticks"},
      {"echo $()", "no command"},
      {"echo $(ls &&)", "a command must follow"},
      {"echo $(if true; then ls)", "closes no '('"},
      {"echo $((x+2))", "arithmetic"},
      {"echo $(echo $((x)))", "arithmetic"},
      // Braces other than a bare `{}`; `{}` as a command name (zsh: an empty block).
      {"echo {a,b}", "brace"},
      {"[ a == b ]", "starting with '='"},
      {"echo =x", "starting with '='"},
      {"echo {},a}", "brace"},
      {"echo {x}", "brace"},
      {"{}", "'{}' in the command-name position"},
      {"{} rm -rf x", "'{}' in the command-name position"},
      {"x={} ls", "'{}' in the command-name position"},
      // IFS only right before read.
      {"IFS=: ls", "except right before read"},
      {"IFS=:; read x", "except right before read"},
      {"IFS=: x=1", "except right before read"},
      {"IFS=$x read a", "assigning the variable IFS"},
      {"IFS= IFS=x read a", "assigning the variable IFS"},
      // A line continuation is removed before the shells find operators and assignments:
      // `$(\<newline>(x))` is bash's arithmetic `$((x))` (x='a[$(rm …)]' runs rm),
      // `(\<newline>(x))` its arithmetic command, and `PS\<newline>4=…` an assignment.
      {"x='a[$(rm -rf v)]'; echo $(\\\n(x))", "arithmetic"},
      {"echo \"$(\\\n\\\n(x))\"", "arithmetic"},
      {"x='a[$(rm -rf v)]'; (\\\n(x))", "arithmetic"},
      {"PS\\\n4='$(rm -rf v)'; set -x; ls", "assigning the variable PS4"},
      {"BASH_E\\\nNV=./x bash -c ls", "assigning the variable BASH_ENV"},
      {"PATH+\\\n=/tmp ls", "'+='"},
      {"IFS\\\n=: ls", "except right before read"},
      {"for PA\\\nTH in /x; do ls; done", "assigning the variable PATH"},
      {"echo $x\\\n[1]", "line continuation right after $NAME"},
      {"echo \"$x\\\n:h\"", "line continuation right after $NAME"},
  };
  for (const auto& c : cases) {
    for (const auto dialect : {ShellDialect::kPosix, ShellDialect::kBash}) {
      const ShellScript parsed = ParseShellScript(c.script, dialect);
      EXPECT_FALSE(parsed.understood) << c.script;
      EXPECT_TRUE(parsed.commands.empty()) << c.script;
      EXPECT_NE(parsed.why.find(c.why), std::string::npos) << c.script << ": " << parsed.why;
      EXPECT_LE(parsed.offset, c.script.size()) << c.script;
    }
  }
  // Bash's own syntax is bash's: a POSIX shell reads `&>` as a background job and has no
  // here-strings.
  for (const std::string script : {"make &> log", "cat <<< hi", "cat <<<x"}) {
    EXPECT_FALSE(ParseShellScript(script, ShellDialect::kPosix).understood) << script;
    EXPECT_TRUE(ParseShellScript(script, ShellDialect::kBash).understood) << script;
  }
  EXPECT_FALSE(ParseShellScript("cat <<< $(`id`)", ShellDialect::kBash).understood);
  // Nesting is bounded, command substitutions too.
  std::string subs = "echo ";
  for (std::size_t i = 0; i <= kMaxShellNesting; ++i) subs += "$(echo ";
  subs += std::string(kMaxShellNesting + 1, ')');
  EXPECT_NE(ParseShellScript(subs).why.find("command substitutions nest"), std::string::npos)
      << ParseShellScript(subs).why;
  std::string deep;
  for (std::size_t i = 0; i <= kMaxShellNesting; ++i) deep += "{ ";
  deep += "ls;";
  for (std::size_t i = 0; i <= kMaxShellNesting; ++i) deep += " };";
  const ShellScript nested = ParseShellScript(deep);
  EXPECT_FALSE(nested.understood);
  EXPECT_NE(nested.why.find("nest"), std::string::npos) << nested.why;
  std::string fine;
  for (std::size_t i = 0; i < kMaxShellNesting; ++i) fine += "if true; then ";
  fine += "ls;";
  for (std::size_t i = 0; i < kMaxShellNesting; ++i) fine += " fi;";
  EXPECT_TRUE(ParseShellScript(fine).understood) << ParseShellScript(fine).why;
  std::string docs;
  for (std::size_t i = 0; i <= kMaxShellHereDocuments; ++i) docs += "cat <<'E'\nE\n";
  EXPECT_FALSE(ParseShellScript(docs).understood);
  // Wildcard words are shown for people, never as a word that reads back the same.
  EXPECT_EQ(JoinShellWords({"rm", kMany, kOne}), "rm <*> <?>");
  // Away from where a command starts, or quoted, `[[` is no keyword: a glob among the
  // arguments (it may match files), a program's name when quoted.
  EXPECT_EQ(ParseShellScript("echo [[").commands, (Commands{{"echo", kMany}}));
  EXPECT_EQ(ParseShellScript("'[[' -f x").commands, (Commands{{"[[", "-f", "x"}}));
}

// bash's `[[ … ]]` runs no program: it is listed as the command `[[ WORDS… ]]` (judged like
// one, never harmless) after the commands of its substitutions. Anything in it that evaluates a
// value as code (the arithmetic comparisons, -v, -R), and anything whose reading differs (=~, <,
// >, parentheses, a newline) is not understood; nor is `[[` for any other shell, where dash runs
// a program named `[[` and zsh and ksh read it their own way.
TEST(ShellWords, DoubleBracketsAreUnderstoodInBashOnly) {
  const std::vector<Read> understood = {
      {"[[ -f x ]] && echo y", {{"[[", "-f", "x", "]]"}, {"echo", "y"}}, {false, false}},
      {"[[ x ]]", {{"[[", "x", "]]"}}, {false}},
      {"[[ -n \"$x\" && ! -d $y ]]", {{"[[", "-n", kOne, "&&", "!", "-d", kMany, "]]"}}, {false}},
      {"[[ $a == \"b\" || $a != b* ]]",
       {{"[[", kMany, "==", "b", "||", kMany, "!=", kMany, "]]"}},
       {false}},
      {"[[ a = b ]]", {{"[[", "a", "=", "b", "]]"}}, {false}},
      {"[[ ! ! -e ~ ]]", {{"[[", "!", "!", "-e", kOne, "]]"}}, {false}},
      {"[[ x -nt y || x -ot y || x -ef y ]]",
       {{"[[", "x", "-nt", "y", "||", "x", "-ot", "y", "||", "x", "-ef", "y", "]]"}},
       {false}},
      {"if [[ -f x ]]; then ls; fi", {{"[[", "-f", "x", "]]"}, {"ls"}}, {false, false}},
      {"if [[ -f x ]] then ls; fi", {{"[[", "-f", "x", "]]"}, {"ls"}}, {false, false}},
      {"while [[ -f x ]] do ls; done", {{"[[", "-f", "x", "]]"}, {"ls"}}, {false, false}},
      {"{ [[ -f x ]] }", {{"[[", "-f", "x", "]]"}}, {false}},
      {"([[ -f x ]])", {{"[[", "-f", "x", "]]"}}, {false}},
      {"[[ -f x ]] > out; ls", {{"[[", "-f", "x", "]]"}, {"ls"}}, {true, false}},
      {"[[ -f x ]] | wc # [[ $x -eq 1 ]]", {{"[[", "-f", "x", "]]"}, {"wc"}}, {false, false}},
      {"[[ -f x ]];[[ -d y ]]", {{"[[", "-f", "x", "]]"}, {"[[", "-d", "y", "]]"}}, {false, false}},
      {"[[ \\\n -f x \\\n]]", {{"[[", "-f", "x", "]]"}}, {false}},
      {"[[ \"]]\" ]]", {{"[[", "]]", "]]"}}, {false}},
      // Its substitutions run first, and are judged like any command.
      {"[[ -d \"$(git rev-parse --git-dir)/x\" ]] && ls",
       {{"git", "rev-parse", "--git-dir"}, {"[[", "-d", kOne, "]]"}, {"ls"}},
       {false, false, false}},
      {"[[ -n $(rm -rf v) ]]", {{"rm", "-rf", "v"}, {"[[", "-n", kMany, "]]"}}, {false, false}},
      {"echo $([[ -f x ]] && echo y)",
       {{"[[", "-f", "x", "]]"}, {"echo", "y"}, {"echo", kMany}},
       {false, false, false}},
  };
  for (const auto& c : understood) {
    const ShellScript parsed = ParseShellScript(c.script, ShellDialect::kBash);
    ASSERT_TRUE(parsed.understood) << c.script << ": " << parsed.why;
    EXPECT_EQ(parsed.commands, c.commands) << c.script;
    EXPECT_EQ(parsed.writes_file, c.writes) << c.script;
    EXPECT_FALSE(parsed.assigns) << c.script;
    // Any other shell: not understood, and said so.
    const ShellScript posix = ParseShellScript(c.script, ShellDialect::kPosix);
    EXPECT_FALSE(posix.understood) << c.script;
    EXPECT_NE(posix.why.find("`[[ … ]]` (a bash keyword) is not understood for this shell"),
              std::string::npos)
        << c.script << ": " << posix.why;
  }
  const std::vector<Refused> refused = {
      // Operands evaluated as arithmetic or as a name with a subscript: code may run.
      {"[[ $x -eq 0 ]]", "'-eq' inside `[[ … ]]`"},
      {"[[ x -ne 1 ]]", "'-ne'"},
      {"[[ 1 -lt 2 ]]", "'-lt'"},
      {"[[ a -le b || c -gt d || e -ge f ]]", "'-le'"},
      {"[[ -v a ]]", "'-v'"},
      {"[[ -v 'a[$(rm -rf v)]' ]]", "'-v'"},
      {"[[ -R r ]]", "'-R'"},
      {"[[ \"-v\" = -vv ]]", "'-v'"},
      {"[[ -n x && $y -eq 1 ]]", "'-eq'"},
      {"[[ $x =~ ^a ]]", "'=~'"},
      {"[[ $x =~ (a|b) ]]", "'=~'"},
      // Read differently, or bash's own lexing.
      {"[[ a < b ]]", "'<' or '>'"},
      {"[[ a > b ]]", "'<' or '>'"},  // a comparison, not a redirection
      {"[[ ( -f x ) ]]", "'(', ')'"},
      {"[[ $x == @(a|b) ]]", "'(', ')'"},
      {"[[ <(ls) ]]", "'(', ')', '<' or '>'"},
      {"[[ -f x\n]]", "newline"},
      {"[[ a # ]]", "comment"},
      {"[[ a ; ]]", "operator"},
      {"[[ a | b ]]", "operator"},
      {"[[ a & ]]", "operator"},
      // Not one of the shapes understood.
      {"[[ ]]", "ends where a test must follow"},
      {"[[ -f ]]", "ends where a test must follow"},
      {"[[ ! ]]", "ends where a test must follow"},
      {"[[ a b ]]", "two words in a row"},
      {"[[ -f x y ]]", "two words in a row"},
      {"[[ -f x -a -f y ]]", "two words in a row"},
      {"[[ x -o y ]]", "two words in a row"},
      {"[[ == a ]]", "without a word before it"},
      {"[[ = a ]]", "without a word before it"},
      {"[[ a == ]]", "ends where a test must follow"},
      {"[[ a == == ]]", "without a word before it"},
      {"[[ -n -f ]]", "needs a word"},
      {"[[ a == -n ]]", "needs a word"},
      {"[[ && a ]]", "without a test before it"},
      {"[[ a && ]]", "ends where a test must follow"},
      {"[[ a ! ]]", "misplaced '!'"},
      {"[[ -f x", "without its `]]`"},
      {"[[ -f x ]]]", "two words in a row"},
      {"[[ -f x ]]x", "two words in a row"},
      // After it: only what may follow a compound command.
      {"[[ -f x ]] rm -rf v", "right after a compound command"},
      {"[[ -f x ]] ]]", "right after a compound command"},
      // Expansions refused anywhere stay refused inside it.
      {"[[ ${x:-y} ]]", "parameter expansion"},
      {"[[ `id` ]]", "backticks"},
      {"[[ $((x)) ]]", "arithmetic"},
      {"[[ {a,b} ]]", "brace"},
      {"[[ !x ]]", "'!' is not understood"},
      {"[[ ==x ]]", "starting with '='"},
      // Only where a command starts.
      {"x=1 [[ -f x ]]", "reserved word '[['"},
      {">/dev/null [[ -f x ]]", "reserved word '[['"},
      {"[[$x -f x ]]", "command name"},
      {"[[* -f x ]]", "command name"},
  };
  // Its words, `[[` and `]]` included, count against the bound on words.
  std::string long_test = "[[ a";
  for (std::size_t i = 0; i < kMaxShellWords / 2; ++i) long_test += " && a";
  const ShellScript bounded = ParseShellScript(long_test + " ]]", ShellDialect::kBash);
  EXPECT_FALSE(bounded.understood);
  EXPECT_NE(bounded.why.find("more than"), std::string::npos) << bounded.why;
  for (const auto& c : refused) {
    for (const auto dialect : {ShellDialect::kBash, ShellDialect::kPosix}) {
      const ShellScript parsed = ParseShellScript(c.script, dialect);
      EXPECT_FALSE(parsed.understood) << c.script;
      EXPECT_TRUE(parsed.commands.empty()) << c.script;
      const std::string why =
          dialect == ShellDialect::kBash || c.why.starts_with("reserved") || c.why == "command name"
              ? c.why
              : "`[[ … ]]` (a bash keyword) is not understood for this shell";
      EXPECT_NE(parsed.why.find(why), std::string::npos) << c.script << ": " << parsed.why;
      EXPECT_LE(parsed.offset, c.script.size()) << c.script;
    }
  }
}

// `$(( … ))` of digits and operators is a number computed from literals: understood in every
// shell, a word that expands like $NAME. A name inside, or $NAME (substituted first), is
// evaluated as arithmetic in turn, and bash runs the command substitutions of an array subscript
// there (x='a[$(rm -rf v)]'; echo $((x))): not understood.
TEST(ShellWords, ArithmeticOfLiteralsIsUnderstoodAndNamesAreNot) {
  const std::vector<Understood> understood = {
      {"echo $((1+2))", {{"echo", kMany}}},
      {"echo \"$(( (1 + 2) * 3 ))\" $((7 % 3))$((2**10))", {{"echo", kOne, kMany}}},
      {"echo $(( ))", {{"echo", kMany}}},
      {"echo $((1<2 && 3>=2 ? ~1 : -1 | 4 ^ 5 & !0))", {{"echo", kMany}}},
      {"sleep $((1)) && ls", {{"sleep", kMany}, {"ls"}}},
      {"echo $(echo $((1)))", {{"echo", kMany}, {"echo", kMany}}},
      {"(echo $((1)))", {{"echo", kMany}}},
  };
  for (const auto& c : understood) {
    for (const auto dialect : {ShellDialect::kPosix, ShellDialect::kBash}) {
      const ShellScript parsed = ParseShellScript(c.script, dialect);
      ASSERT_TRUE(parsed.understood) << c.script << ": " << parsed.why;
      EXPECT_EQ(parsed.commands, c.commands) << c.script;
    }
  }
  // A value computed here may be a program's name no more than any other expansion.
  EXPECT_FALSE(ParseShellScript("$((1)) x").understood);
  const std::vector<Refused> refused = {
      {"echo $((x))", "arithmetic"},
      {"echo $(( x + 1 ))", "arithmetic"},
      {"echo $(($x))", "arithmetic"},
      {"echo $((${x}))", "arithmetic"},
      {"echo $((a[1]))", "arithmetic"},
      {"echo $((i++))", "arithmetic"},
      {"echo $((0x1f))", "arithmetic"},
      {"echo $((2#101))", "arithmetic"},
      {"echo $((1,2))", "arithmetic"},
      {"echo $(('1'))", "arithmetic"},
      {"echo $((\"1\"))", "arithmetic"},
      {"echo $(($(id)))", "arithmetic"},
      {"echo $((`id`))", "arithmetic"},
      {"echo $((1\n+2))", "arithmetic"},
      {"echo $((1\\\n+2))", "arithmetic"},
      {"echo $(\\\n(1))", "arithmetic"},
      // Where `))` closes: only together, at depth zero (else bash may read `$( (…) )`, a
      // command substitution whose subshell runs a program).
      {"echo $((1)+(2))", "arithmetic"},
      {"echo $((1) )", "arithmetic"},
      {"echo $((1)", "arithmetic"},
      {"echo $(( (1 ))", "arithmetic"},
      {"echo $((1", "unterminated arithmetic"},
      // Right after it, as after $NAME.
      {"echo $((1))[0]", "zsh subscript"},
      {"echo $((1)):h", "zsh subscript or modifier"},
  };
  for (const auto& c : refused) {
    for (const auto dialect : {ShellDialect::kPosix, ShellDialect::kBash}) {
      const ShellScript parsed = ParseShellScript(c.script, dialect);
      EXPECT_FALSE(parsed.understood) << c.script;
      EXPECT_TRUE(parsed.commands.empty()) << c.script;
      EXPECT_NE(parsed.why.find(c.why), std::string::npos) << c.script << ": " << parsed.why;
    }
  }
}

// Differential: bash runs exactly the commands found around and inside `[[ … ]]` (each prints
// its words once), and the literal arithmetic is the number every shell computes.
TEST(ShellWords, DoubleBracketsAndArithmeticAgreeWithBash) {
  if (::access("/bin/bash", X_OK) != 0) GTEST_SKIP() << "SKIPPED: no /bin/bash";
  // (A substitution's printf writes to descriptor 3, the script's stdout, not into the word.)
  const std::vector<std::string> scripts = {
      "exec 3>&1; [[ -z $(printf '%s\\0' a >&3) ]] && printf '%s\\0' b",
      "exec 3>&1; if [[ -n \"$(printf '%s\\0' a >&3)\" ]]; then printf '%s\\0' never; fi",
      "[[ a == a && ! -z x ]] || printf '%s\\0' never; printf '%s\\0' c",
      "while [[ -z x ]] do printf '%s\\0' never; done; printf '%s\\0' d",
      "{ [[ x ]] } && ([[ -n x ]]) && printf '%s\\0' e",
  };
  for (const auto& script : scripts) {
    const ShellScript parsed = ParseShellScript(script, ShellDialect::kBash);
    ASSERT_TRUE(parsed.understood) << script << ": " << parsed.why;
    std::string expected;
    for (const auto& command : parsed.commands) {
      if (command[0] != "printf" || command[2] == "never") continue;
      for (std::size_t i = 2; i < command.size(); ++i) expected += command[i] + '\0';
    }
    EXPECT_EQ(RunShell("/bin/bash", script), expected) << script;
  }
  std::vector<std::string> shells;
  for (const char* shell : {"/bin/bash", "/bin/dash", "/usr/bin/zsh"}) {
    if (::access(shell, X_OK) == 0) shells.push_back(shell);
  }
  for (const auto& shell : shells) {
    EXPECT_EQ(RunShell(shell, "printf '%s|' $((1+2)) \"$(( (1 + 2) * 3 ))\" $((7 % 3))"), "3|9|1|")
        << shell;
  }
}

// Differential: where a command substitution ends, and the commands inside it, as bash, dash and
// zsh read them. Each script prints a known text only when its ')' is found where the parser
// finds it; the parser must list exactly the expected commands.
TEST(ShellWords, CommandSubstitutionsAgreeWithBashDashAndZsh) {
  struct Case {
    std::string script;
    std::string printed;
    Commands commands;
  };
  const std::vector<Case> cases = {
      {"printf '%s|' \"$(printf '%s' 'a)b')\" c",
       "a)b|c|",
       {{"printf", "%s", "a)b"}, {"printf", "%s|", kOne, "c"}}},
      {"printf '%s|' $(printf '%s ' x\\) \")\")",
       "x)|)|",
       {{"printf", "%s ", "x)", ")"}, {"printf", "%s|", kMany}}},
      {"printf '%s|' \"$( (printf a) && printf b )\"",
       "ab|",
       {{"printf", "a"}, {"printf", "b"}, {"printf", "%s|", kOne}}},
      {"printf '%s|' $(printf '%s' \"$(printf '%s' in)\")x",
       "inx|",
       {{"printf", "%s", "in"}, {"printf", "%s", kOne}, {"printf", "%s|", kMany}}},
      {"printf '%s|' \"$(if true; then printf t; fi)\"",
       "t|",
       {{"true"}, {"printf", "t"}, {"printf", "%s|", kOne}}},
  };
  std::vector<std::string> shells;
  for (const char* shell : {"/bin/bash", "/bin/dash", "/usr/bin/zsh"}) {
    if (::access(shell, X_OK) == 0) shells.push_back(shell);
  }
  ASSERT_FALSE(shells.empty());
  for (const auto& c : cases) {
    const ShellScript parsed = ParseShellScript(c.script);
    ASSERT_TRUE(parsed.understood) << c.script << ": " << parsed.why;
    EXPECT_EQ(parsed.commands, c.commands) << c.script;
    for (const auto& shell : shells) {
      EXPECT_EQ(RunShell(shell, c.script), c.printed) << shell << " -c " << c.script;
    }
  }
}

// Differential: every command of these scripts runs exactly once, so the words bash and dash
// print must be exactly the words of the commands found; a here-document's body is data.
TEST(ShellWords, CompoundCommandsAndHereDocumentsAgreeWithBashAndDash) {
  const std::vector<std::string> scripts = {
      "if printf '%s\\0' a; then printf '%s\\0' b c; fi",
      "{ printf '%s\\0' a; printf '%s\\0' b; } 2>/dev/null </dev/null; printf '%s\\0' c",
      "( printf '%s\\0' a ) && printf '%s\\0' b",
      "for f in x; do printf '%s\\0' a; done",
      "if true; then { printf '%s\\0' a; } else (true) fi",
      "for f in x; do (printf '%s\\0' a) done; { { printf '%s\\0' b; } }",
      "while printf '%s\\0' a; false; do printf '%s\\0' never; done",
      "printf '%s\\0' a <<'EOF'\nprintf '%s\\0' hidden $x\nEOF\nprintf '%s\\0' b",
      "printf '%s\\0' a <<-EOF\n\tbody\n\tEOF\nprintf '%s\\0' b",
      "x=1 printf '%s\\0' a; y=2; printf '%s\\0' b",
  };
  std::vector<std::string> shells;
  for (const char* shell : {"/bin/bash", "/bin/dash"}) {
    if (::access(shell, X_OK) == 0) shells.push_back(shell);
  }
  ASSERT_FALSE(shells.empty());
  for (const auto& script : scripts) {
    const ShellScript parsed = ParseShellScript(script);
    ASSERT_TRUE(parsed.understood) << script << ": " << parsed.why;
    std::string expected;
    for (const auto& command : parsed.commands) {
      if (command[0] != "printf") continue;
      for (std::size_t i = 2; i < command.size(); ++i) expected += command[i] + '\0';
    }
    if (script.find("never") != std::string::npos) expected = std::string("a\0", 2);
    for (const auto& shell : shells) {
      EXPECT_EQ(RunShell(shell, script), expected) << shell << " -c " << script;
    }
  }
}

}  // namespace
}  // namespace shell_words_test
}  // namespace anvil
