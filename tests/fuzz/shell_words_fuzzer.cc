// The shell parser behind command rules (src/policy/shell_words: the scripts of `bash -c` that
// agents hand to `anvil exec` are untrusted input). Invariants for an understood script: every
// command and word is within the bounds and holds no NUL unless it is a whole wildcard word
// (kAnyWords, kAnyWord), never a command name; `writes_file` has one entry per command; without
// wildcard words, quoting every word and joining the commands with newlines reads back as
// exactly the same commands (what is understood is exact, with no state leaking between
// commands); a plain command appended on a new line is read as one more command; and the
// verdict is the same on a second parse. For a refused script: a reason and an offset inside the
// input, and no commands. Both dialects are checked (bash's reads `[[ … ]]`).
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "policy/shell_words.h"

using anvil::fuzz::Require;

namespace {

void Check(const std::string& script, anvil::ShellDialect dialect) {
  const anvil::ShellScript parsed = anvil::ParseShellScript(script, dialect);
  const anvil::ShellScript again = anvil::ParseShellScript(script, dialect);
  Require(again.understood == parsed.understood && again.commands == parsed.commands &&
              again.why == parsed.why && again.offset == parsed.offset,
          "parse is not deterministic", script);
  if (!parsed.understood) {
    Require(parsed.commands.empty(), "commands from a refused script", script);
    Require(!parsed.why.empty(), "a refusal without a reason", script);
    Require(parsed.offset <= script.size(), "offset past the end", script);
    return;
  }
  Require(!parsed.commands.empty(), "an understood script without a command", script);
  Require(parsed.commands.size() <= anvil::kMaxShellCommands, "too many commands", script);
  Require(parsed.writes_file.size() == parsed.commands.size(), "writes_file out of step", script);
  std::size_t words = 0;
  bool wildcards = false;
  std::string requoted;
  for (const auto& command : parsed.commands) {
    Require(!command.empty(), "an empty command", script);
    Require(!anvil::IsWildcardWord(command[0]), "a wildcard command name", script);
    words += command.size();
    for (const auto& word : command) {
      const bool wildcard = word == anvil::kAnyWords || word == anvil::kAnyWord;
      wildcards = wildcards || wildcard;
      Require(wildcard || word.find('\0') == std::string::npos, "a NUL in a word", script);
    }
    requoted += anvil::JoinShellWords(command);
    requoted += '\n';
  }
  Require(words <= anvil::kMaxShellWords, "too many words", script);
  if (!wildcards && requoted.size() <= anvil::kMaxShellScriptBytes) {
    const anvil::ShellScript round = anvil::ParseShellScript(requoted, dialect);
    Require(round.understood, "quoted commands not understood", requoted);
    Require(round.commands == parsed.commands, "quoted commands read back differently", script);
  }
  if (parsed.commands.size() < anvil::kMaxShellCommands && words + 3 <= anvil::kMaxShellWords &&
      script.size() + 16 <= anvil::kMaxShellScriptBytes) {
    const anvil::ShellScript longer = anvil::ParseShellScript(script + "\nrm -rf x", dialect);
    Require(longer.understood, "a command after a newline not understood", script);
    auto expected = parsed.commands;
    expected.push_back({"rm", "-rf", "x"});
    Require(longer.commands == expected, "a command after a newline read differently", script);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string script(anvil::fuzz::AsView(data, size));
  Check(script, anvil::ShellDialect::kPosix);
  Check(script, anvil::ShellDialect::kBash);
  return 0;
}
