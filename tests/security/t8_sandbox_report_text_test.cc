// T8 for the command sandbox's own lines after the run: the names it shows (what it moved aside,
// what it could not, the restore command) are the command's file names. Raw, a CR, ESC[2K or an
// OSC in one rewrites the terminal line and forges or hides Anvil's warning. Shown sanitized;
// --json keeps the exact bytes, and the restore command shown is quoted so that pasted into a
// shell it runs on exactly those bytes.
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "git_sandbox_fixture.h"

namespace anvil::testing {
namespace t8_sandbox_report_text_test {
namespace {

class T8SandboxReportText : public GitSandboxTest {};

// The text lines of stderr, the --json report taken out.
std::string TextLines(const std::string& err) {
  std::string out;
  size_t start = 0;
  while (start < err.size()) {
    size_t end = err.find('\n', start);
    if (end == std::string::npos) end = err.size();
    const std::string line = err.substr(start, end - start);
    if (line.rfind("{\"", 0) != 0) out += line + "\n";
    start = end + 1;
  }
  return out;
}

std::string RestoreLine(const std::string& text, const std::string& lead) {
  const size_t at = text.find(lead);
  if (at == std::string::npos) return "";
  const size_t start = at + lead.size();
  return text.substr(start, text.find('\n', start) - start);
}

// Red team s12 F4: a repository named "x\r\e[2Kanvil sandbox: nothing to move aside\e[8m" with a
// hook, and an Anvil.toml in "p\e]0;T\aq": Anvil's quarantine lines carried the bytes as they
// are. Benign neighbour: a plain name is shown as it is, and its restore command is the same
// simple command as before.
TEST_P(T8SandboxReportText, NamesInTheLinesAfterTheRunAreShownSanitized) {
  const std::string repo = "x\r\x1b[2Kanvil sandbox: nothing to move aside\x1b[8m";
  const std::string dir = "p\x1b]0;T\aq";
  auto attack =
      Sh("d=$(printf 'x\\r\\033[2Kanvil sandbox: nothing to move aside\\033[8m') && "
         "git init -q \"$d\" && printf '#!/bin/sh\\n' > \"$d/.git/hooks/pre-commit\" && "
         "chmod +x \"$d/.git/hooks/pre-commit\" && e=$(printf 'p\\033]0;T\\007q') && "
         "mkdir \"$e\" && echo '[x]' > \"$e/Anvil.toml\"");
  EXPECT_EQ(attack.status, 0) << attack.err;
  ASSERT_TRUE(Exists(ws_ + "/" + repo + "/.git.anvil-quarantine")) << attack.err;
  ASSERT_TRUE(Exists(ws_ + "/" + dir + "/Anvil.toml.anvil-quarantine")) << attack.err;
  const std::string text = TextLines(attack.err);
  for (char c : {'\x1b', '\r', '\a'}) {
    EXPECT_EQ(text.find(c), std::string::npos) << "a raw control byte " << int(c) << ":\n" << text;
  }
  EXPECT_NE(text.find("\\u{1b}"), std::string::npos) << text;
  // --json: the exact bytes.
  auto report = JsonReport(attack);
  ASSERT_TRUE(report.contains("git")) << attack.err;
  ASSERT_EQ(report["git"]["quarantined"].size(), 1u) << attack.err;
  EXPECT_EQ(report["git"]["quarantined"][0]["path"], ws_ + "/" + repo + "/.git");
  ASSERT_EQ(report["protected_names_quarantined"].size(), 1u) << attack.err;
  EXPECT_EQ(report["protected_names_quarantined"][0]["path"], ws_ + "/" + dir + "/Anvil.toml");
  // What is shown is what is run: the restore commands, pasted into a shell, put them back.
  const std::string git_restore = RestoreLine(text, "to restore: ");
  const std::string config_restore = RestoreLine(text, "if it is yours, put it back: ");
  ASSERT_FALSE(git_restore.empty()) << text;
  ASSERT_FALSE(config_restore.empty()) << text;
  EXPECT_EQ(Shell("cd / && bash -c " + ShellQuote(git_restore)), 0) << git_restore;
  EXPECT_EQ(Shell("cd / && bash -c " + ShellQuote(config_restore)), 0) << config_restore;
  EXPECT_TRUE(Exists(ws_ + "/" + repo + "/.git/HEAD")) << git_restore;
  EXPECT_TRUE(Exists(ws_ + "/" + dir + "/Anvil.toml")) << config_restore;

  // Benign: a plain name, shown as it is, with the plain restore command.
  auto benign =
      Sh("git init -q plain && printf '#!/bin/sh\\n' > plain/.git/hooks/pre-commit && "
         "chmod +x plain/.git/hooks/pre-commit");
  EXPECT_EQ(benign.status, 0) << benign.err;
  const std::string plain = TextLines(benign.err);
  EXPECT_NE(
      plain.find("quarantined " + ws_ + "/plain/.git -> " + ws_ + "/plain/.git.anvil-quarantine"),
      std::string::npos)
      << plain;
  // Its words as `anvil rules check` quotes them: a plain path stays bare.
  EXPECT_NE(plain.find("to restore: mv " + ws_ + "/plain/.git.anvil-quarantine/HEAD"),
            std::string::npos)
      << plain;
}

INSTANTIATE_TEST_SUITE_P(Callers, T8SandboxReportText, ::testing::ValuesIn(kAllCallers),
                         CallerParamName);

}  // namespace
}  // namespace t8_sandbox_report_text_test
}  // namespace anvil::testing
