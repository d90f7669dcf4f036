// The agent-facing front door of `anvil exec` (shaped to serve an MCP server too): the command
// rules (policy/command_rules.h) -> the approval mode (policy/approval.h) -> the sandbox -> the
// refusals it recorded -> the escalation on offer (agent/escalation.h) -> the re-run with
// exactly that widening. Where the question is asked (a terminal, an MCP client) and how the
// sandbox is run are injected, so the whole flow is tested with a scripted person and a fake
// sandbox (tests/unit/exec_flow_test.cc) and run for real by the front ends.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agent/escalation.h"
#include "policy/approval.h"
#include "policy/command_rules.h"

namespace anvil::agent {

// Exit status of `anvil exec` when nothing ran because the rules or a person refused it (the
// same as `anvil run`'s "permission refused"); 2 when the rules do not load.
inline constexpr int kExitRefused = 3;
// A question shows the whole command: one whose shown form is longer than this is not asked
// about (refused, saying so) rather than shown cut.
inline constexpr std::size_t kMaxQuestionCommandBytes = 16384;
inline constexpr int kExitRulesBroken = 2;

struct Question {
  enum class Kind : std::uint8_t { kCommand, kWidening };
  Kind kind = Kind::kCommand;
  std::vector<std::string> argv;
  std::string cwd;
  std::string mode;
  std::string sandbox;  // the sandbox it runs in, one line ("workspace-write, network none")
  std::string reason;   // why the question (the rules' verdict, or the refusal)
  std::optional<Widening> widening;
  std::string agent_reason;  // on-request: the agent's own words (untrusted; shown sanitized)
  // "always" writes these allow rules; empty: "always" is not offered.
  std::vector<std::vector<std::string>> always_prefixes;
  // Of a command question: each command of the script that no rule allows and the harmless set
  // does not cover (the rules' verdict names only the one that decided it).
  std::vector<std::vector<std::string>> unapproved;

  // The question as people read it, every untrusted string sanitized; no trailing prompt.
  std::string Text() const;
  nlohmann::json ToJson() const;
};

class Asker {
 public:
  virtual ~Asker() = default;
  virtual bool CanAsk() const = 0;
  // nullopt: no answer came (the person went away, the client declined or cancelled): refused.
  virtual std::optional<ApprovalAnswer> Ask(const Question& question) = 0;
};

// One run in the sandbox.
struct SandboxRun {
  int status = 125;      // as `anvil sandbox` exits
  bool started = false;  // false: the sandbox could not be set up (status 125, nothing ran)
  std::vector<RefusalFact> refusals;
  // The command ran, but the sandbox's check after it for git metadata could not vouch for the
  // writable roots (status 125): why. "" when it could.
  std::string git_check_error;
};
// Runs `anvil sandbox`'s command line (flags, "--", the command) and reports.
using SandboxRunner = std::function<SandboxRun(const std::vector<std::string>& sandbox_args)>;

// Appends one audit line (no newline); may be a no-op.
using AuditSink = std::function<void(const std::string& line)>;

struct ExecRequest {
  std::vector<std::string> argv;
  std::vector<std::string> sandbox_flags;  // `anvil sandbox`'s flags, without "--" and CMD
  ApprovalMode mode = ApprovalMode::kOnRequest;
  RulesLocations rules;
  std::string user_rules_dir;         // where "always" writes approved.toml
  std::optional<Widening> requested;  // on-request: the agent asks for this up front
  std::string request_reason;
  std::string requester = "anvil exec";  // audit "plugin": who asked
  std::string session;
  std::uint64_t id = 0;
  EscalationContext context;  // the run's policy, as the flags give it
  // Where the command runs (--workdir), canonical; empty: the workspace. What a person is shown
  // and the audit records as its cwd.
  std::string run_dir;
  const std::string& RunDir() const { return run_dir.empty() ? context.workspace : run_dir; }
  // How the command's bare program names are looked up (policy/program_lookup.h): the PATHs,
  // the writable roots and the directories' facts. No facts: no directory holds anything, so no
  // bare name is the system's program.
  ProgramSearch search;
  int max_escalations = 3;  // widenings offered one after another, at most
};

struct ExecResult {
  int exit_status = kExitRefused;
  nlohmann::json report;  // docs/agents.md, "anvil exec --json"
};

ExecResult RunExec(const ExecRequest& request, Asker& asker, const SandboxRunner& run,
                   const IsDirectory& is_directory, const AuditSink& audit);

// The current time as ISO 8601 (UTC), for the justification of "always" rules.
std::string NowIso8601();

}  // namespace anvil::agent
