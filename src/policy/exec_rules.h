// The executable policy table (threat model T3): which programs a plugin's sys.exec may run, from
// which fixed absolute paths, and which argv each accepts. Pure: argv in, verdict out — nothing
// here starts a process. The runner (anvil-exec-runner) adds the kernel walls (Landlock, seccomp,
// no_new_privs, a fixed environment); this table is what keeps an allowlisted tool from being
// turned into a command launcher through its own features (rg --pre, fd --exec, config files).
//
// Flags are an ALLOWLIST: anything not named in a rule's allowed_flags is refused. The checked
// argv is re-emitted in one canonical spelling (`--long` / `--long=VALUE`, then `--`, then the
// positionals) so the tool's own parser cannot read it differently from the way it was checked:
// a value that looks like a flag (`-g --pre`) stays a value, a pattern that looks like a flag
// stays a pattern.
//
// docs/exec-policy.md describes the table in words; keep the two in step.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace anvil {

inline constexpr std::size_t kMaxExecArgs = 256;       // plugin-supplied args, per call
inline constexpr std::size_t kMaxExecArgBytes = 4096;  // per arg
// Caps on values that make a tool allocate (the runner's memory limit is the backstop).
inline constexpr std::uint64_t kMaxExecRegexBytes = 256ull << 20;  // rg --regex/--dfa-size-limit
inline constexpr std::uint64_t kMaxExecThreads = 16;               // rg/fd -j
inline constexpr std::uint64_t kMaxExecContextLines = 10000;       // rg -A/-B/-C

// What follows a flag, and how it is checked.
enum class OperandKind {
  kNone,        // a switch: -n, --hidden
  kValue,       // opaque data for the tool: a glob, a number, a type name, a separator
  kPattern,     // a search pattern (rg -e): data; NUL is still refused
  kFilePath,    // a file the tool opens (rg -f, --ignore-file): a workspace path beneath the root
  kSearchPath,  // a file or directory to search (fd --search-path): a workspace path, "." allowed
};

// A cap on a numeric value (a size or a count the tool allocates for: threads, regex sizes,
// context lines). The value must be spelled the way the tool parses it, and at most `max`.
enum class ValueCap {
  kNone,
  kCount,  // decimal digits
  kSize,   // decimal digits with an optional K, M or G suffix (ripgrep's NUM+SUFFIX)
};

struct ExecFlag {
  std::string long_name;  // without the leading "--"; empty when the flag has only a short form
  char short_name = 0;    // 0 when the flag has only a long form
  OperandKind operand = OperandKind::kNone;
  // rg -e/-f/--files/--type-list: the pattern does not come from the positionals, so every
  // positional is a path (and is checked as one).
  bool replaces_positional_pattern = false;
  ValueCap cap = ValueCap::kNone;  // kValue operands only
  std::uint64_t max = 0;           // the largest value accepted (bytes for kSize)
};

// A flag refused on purpose, with the reason (for messages and the documentation). Any flag not
// in allowed_flags is refused whether or not it is listed here.
struct RefusedExecFlag {
  std::string long_name;
  char short_name = 0;
  std::string reason;
};

struct ExecRule {
  std::string name;                          // what a plugin writes as `program`
  std::vector<std::string> candidate_paths;  // fixed absolute paths, tried in order; no PATH
  std::vector<ExecFlag> allowed_flags;
  std::vector<RefusedExecFlag> refused_flags;
  std::vector<std::string> forced_args;  // prepended after argv[0] (rg: --no-config)
  // Files of the system the tool reads besides its executable and libraries (which the exec
  // broker finds itself, linux/tool_runtime.h); nothing else of the system is in its view.
  std::vector<std::string> runtime_files;
  // Positionals: the first is the pattern unless a flag with replaces_positional_pattern was
  // given; every other positional is a search path (checked as kSearchPath).
  bool first_positional_is_pattern = true;
};

struct CheckedArgv {
  std::string program_path;       // the first candidate path that exists
  std::vector<std::string> argv;  // argv[0] is the rule's name, then forced args, then checked
  // Every path the tool will open by name: path positionals and path-valued flags, normalized,
  // in order ("." and "-" included as given). The gateway resolves each beneath the workspace.
  std::vector<std::string> path_operands;
};

// Answers whether a fixed absolute path names an executable regular file. Injected so the check
// stays pure under test; the default looks at the host filesystem.
using ExecutableExistsFn = std::function<bool(const std::string& absolute_path)>;
bool ExecutableExistsOnHost(const std::string& absolute_path);

// The whole table, in a fixed order.
const std::vector<ExecRule>& ExecPolicyTable();

// The rule named exactly `name` (no trimming, no case folding, no path), or nullptr.
const ExecRule* FindExecRule(std::string_view name);

// Like FindExecRule, but a miss is "denied: executable not in the policy table: NAME". A shell
// string ("sh -c ...", "rg -n x") or a path ("/usr/bin/rg") is never a table name.
Result<const ExecRule*> LookupExecRule(std::string_view program);

// Checks a plugin's argv (without argv[0]) against `rule`. Errors:
//   denied:    a flag that is not allowed ("rg flag not allowed: --pre (...)")
//   invalid:   too many / too long arguments, a NUL byte, a malformed flag, a path operand that
//              fails NormalizeWorkspacePath (absolute, "..", ...), a capped value that is not a
//              number as the tool spells it
//   limit:     a capped value over its cap ("rg --regex-size-limit=100G ...")
//   not_found: no candidate path exists
Result<CheckedArgv> CheckExecArgv(const ExecRule& rule, const std::vector<std::string>& args,
                                  const ExecutableExistsFn& exists = ExecutableExistsOnHost);

}  // namespace anvil
