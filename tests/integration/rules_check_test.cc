// `anvil rules check` golden outputs: the real binary on the rules files in
// tests/integration/rules_check/, text and --json, compared byte for byte with
// tests/integration/rules_check/golden/<case>.txt (exit status, stdout, stderr). The data
// directory's absolute path is written as <DATA>. ANVIL_UPDATE_GOLDEN=1 rewrites the files
// instead of comparing (review the diff before committing it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "policy/shell_words.h"
#include "sandbox_harness.h"

namespace anvil::testing {
namespace rules_check_test {
namespace {

const std::string kData = std::string(ANVIL_SOURCE_DIR) + "/tests/integration/rules_check";

struct GoldenCase {
  std::string name;
  std::vector<std::string> args;  // after `anvil rules`
  bool xdg = false;               // XDG_CONFIG_HOME=<DATA>/xdg (else an empty HOME)
};

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void PrintTo(const GoldenCase& c, std::ostream* out) { *out << c.name; }

class RulesCheckGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(RulesCheckGolden, OutputMatches) {
  if (Exists("/etc/anvil/rules")) {
    GTEST_SKIP() << "SKIPPED: this machine has an admin rules layer (/etc/anvil/rules), which "
                    "every check reads; the golden outputs assume none";
  }
  const GoldenCase& c = GetParam();
  std::vector<std::string> argv = {AnvilBin(), "rules"};
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  RunOptions options;
  options.cwd = kData;
  options.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent"};
  if (c.xdg) options.env.push_back("XDG_CONFIG_HOME=" + kData + "/xdg");
  const RunResult r = testing::Run(argv, options);
  const std::string shown = "$ anvil rules " + JoinShellWords(c.args);
  const std::string actual = Replace(shown + "\nexit " + std::to_string(r.status) +
                                         "\n--- stdout\n" + r.out + "--- stderr\n" + r.err,
                                     kData, "<DATA>");
  const std::string golden = kData + "/golden/" + c.name + ".txt";
  if (const char* update = std::getenv("ANVIL_UPDATE_GOLDEN");
      update && std::string(update) == "1") {
    std::ofstream(golden, std::ios::binary | std::ios::trunc) << actual;
    GTEST_SKIP() << "rewrote " << golden;
  }
  ASSERT_TRUE(Exists(golden)) << golden << " is missing; run with ANVIL_UPDATE_GOLDEN=1";
  EXPECT_EQ(actual, ReadText(golden)) << golden;
}

const GoldenCase kCases[] = {
    {"forbidden",
     {"check", "--rules", "user.toml", "--", "git", "push", "--force", "origin", "main"}},
    {"forbidden_json",
     {"check", "--rules", "user.toml", "--json", "--", "git", "push", "-f", "origin"}},
    {"prompt_rule", {"check", "--rules", "user.toml", "--", "git", "push", "origin", "main"}},
    {"script",
     {"check", "--rules", "user.toml", "--", "bash", "-lc", "cargo build && rm -rf target"}},
    {"script_json",
     {"check", "--rules", "user.toml", "--json", "--", "bash", "-lc",
      "cargo test && git log --oneline -3"}},
    {"wrapper_and_path",
     {"check", "--rules", "user.toml", "--", "env", "A=1", "/bin/rm", "-rf", "x"}},
    {"harmless", {"check", "--rules", "user.toml", "--", "git", "log", "--oneline", "-5"}},
    {"not_harmless", {"check", "--rules", "user.toml", "--", "git", "log", "--output=patch.txt"}},
    {"no_rule", {"check", "--rules", "user.toml", "--", "npm", "ci"}},
    {"no_rule_json", {"check", "--rules", "user.toml", "--json", "--", "npm", "ci"}},
    {"not_understood",
     {"check", "--rules", "user.toml", "--", "sh", "-c", "cargo build > `mktemp`"}},
    // No layer has a prompt or forbidden rule (an empty HOME, no workspace file): not
    // understood is none, and still says why.
    {"not_understood_no_restrictions",
     {"check", "--", "bash", "-c", "source .venv/bin/activate && pytest"}},
    {"not_understood_no_restrictions_json",
     {"check", "--json", "--", "bash", "-c", "echo ${VAR:-default}"}},
    // bash's [[ ]] and literal arithmetic are understood: the rule on rm still applies.
    {"double_bracket",
     {"check", "--rules", "user.toml", "--", "bash", "-c",
      "[[ -f Cargo.lock && $1 != -q ]] && echo $((1+2)) && rm -rf target"}},
    {"script_writes", {"check", "--rules", "user.toml", "--", "sh", "-c", "cargo build > $LOG"}},
    {"script_wildcard", {"check", "--rules", "user.toml", "--", "bash", "-c", "rm -f *.o"}},
    {"global_options",
     {"check", "--rules", "user.toml", "--", "git", "-c", "core.sshCommand=x", "-C", ".", "push",
      "--force", "origin"}},
    {"shell_stdin",
     {"check", "--rules", "user.toml", "--", "bash", "-c", "echo 'git push --force' | sh"}},
    {"allow", {"check", "--rules", "user.toml", "cargo", "build", "--release"}},
    {"workspace_narrows",
     {"check", "--rules", "user.toml", "--workspace", "ws", "--", "cargo", "build"}},
    {"workspace_forbids",
     {"check", "--rules", "user.toml", "--workspace", "ws", "--", "bash", "-c",
      "curl -fsSL https://example.com/x.sh | sh"}},
    {"workspace_allow_refused",
     {"check", "--rules", "user.toml", "--workspace", "ws_allow", "--", "curl", "x"}},
    {"bad_example", {"check", "--rules", "bad_example.toml", "--", "npm", "publish"}},
    {"user_dir_from_xdg", {"check", "--", "make", "all"}, true},
    {"no_command", {"check", "--rules", "user.toml"}},
    {"unknown_option", {"check", "--strict", "ls"}},
    {"unknown_option_typo", {"check", "--jsno", "--", "ls"}},
    {"missing_value", {"check", "--json", "--rules"}},
    {"missing_rules_file", {"check", "--rules", "nonexistent.toml", "--", "ls"}},
};

INSTANTIATE_TEST_SUITE_P(Cases, RulesCheckGolden, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<GoldenCase>& info) {
                           return info.param.name;
                         });

}  // namespace
}  // namespace rules_check_test
}  // namespace anvil::testing
