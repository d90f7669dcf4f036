// The sys.exec argv rules (src/policy/exec_rules, threat model T3). Input: byte 0 picks the
// rule, the rest is the plugin's argv split on NUL... except NUL is refused in args, so args are
// split on '\n' instead and may contain NUL. Invariants for an accepted argv: every flag in the
// canonical argv is allowed by the rule, path operands are normalized workspace paths, and the
// canonical argv re-checks to itself (the checked spelling is the one the tool runs).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fs/workspace_path.h"
#include "fuzz_util.h"
#include "policy/exec_rules.h"

using anvil::fuzz::Require;

namespace {
std::string Join(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += a + " ";
  return out;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const auto& table = anvil::ExecPolicyTable();
  const anvil::ExecRule& rule = table[data[0] % table.size()];
  std::vector<std::string> args;
  if (size > 1) args = anvil::fuzz::Split(anvil::fuzz::AsView(data + 1, size - 1), '\n');
  auto exists = [](const std::string&) { return true; };
  auto checked = anvil::CheckExecArgv(rule, args, exists);
  if (!checked) return 0;
  const auto& argv = checked->argv;
  Require(!argv.empty() && argv[0] == rule.name, "argv[0]", Join(argv));
  Require(checked->program_path == rule.candidate_paths.front(), "program path");
  size_t skip = 1 + rule.forced_args.size();
  Require(argv.size() >= skip, "forced args missing", Join(argv));
  for (size_t i = 0; i < rule.forced_args.size(); ++i) {
    Require(argv[1 + i] == rule.forced_args[i], "forced arg", Join(argv));
  }
  bool after_dashdash = false;
  for (size_t i = skip; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    Require(a.find('\0') == std::string::npos, "NUL in argv", Join(argv));
    if (after_dashdash) continue;
    if (a == "--") {
      after_dashdash = true;
      continue;
    }
    // Canonical flags are --long[=VALUE], or -c[=VALUE] for a flag with no long form, and
    // allowed by the rule.
    Require(a.size() >= 2 && a[0] == '-', "positional before --", Join(argv));
    bool allowed = false;
    if (a.starts_with("--")) {
      std::string name =
          a.substr(2, a.find('=') == std::string::npos ? std::string::npos : a.find('=') - 2);
      for (const auto& flag : rule.allowed_flags) allowed = allowed || flag.long_name == name;
    } else {
      Require(a.size() == 2 || a[2] == '=', "short flag not canonical", a);
      for (const auto& flag : rule.allowed_flags) {
        allowed = allowed || (flag.long_name.empty() && flag.short_name == a[1]);
      }
    }
    Require(allowed, "flag not in the rule's allowlist", a);
  }
  std::vector<std::string> again_args(argv.begin() + static_cast<long>(skip), argv.end());
  auto again = anvil::CheckExecArgv(rule, again_args, exists);
  Require(again.has_value(), "canonical argv does not re-check",
          Join(argv) + (again ? "" : " -> " + again.error().ToString()));
  Require(again->argv == argv, "canonical argv re-checks differently",
          Join(argv) + " -> " + Join(again->argv));
  return 0;
}
