// `anvil exec`: the agent-facing front door (agent/exec_flow.h) on a command line: the rules,
// the approval mode, a question on the terminal when there is one, the sandbox run in-process
// (the same code as `anvil sandbox`), the escalation on offer and the re-run.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agent/exec_flow.h"

namespace anvil::cli {

int RunExecCommand(const std::vector<std::string>& args);

// The parts shared with `anvil mcp`'s run_command, which runs the same flow.
struct ExecOptions {
  agent::ExecRequest request;
  bool json = false;
  int ask_fd = -1;  // --ask-fd: questions (and the report) over this descriptor
};

// Parses `anvil exec`'s command line (its own flags, `anvil sandbox`'s flags, `--`, CMD) into a
// request: the sandbox flags are checked by `anvil sandbox`'s own parser, which also gives the
// policy the escalation is decided against. `environ_entries` is the caller's environment.
Result<ExecOptions> ParseExecArgs(const std::vector<std::string>& args,
                                  const std::vector<std::string>& environ_entries);

// Runs the sandbox in this process (RunSandboxCommand), as `anvil sandbox` would.
agent::SandboxRun RunSandboxInProcess(const std::vector<std::string>& sandbox_args);

// `anvil sandbox`'s options that take a value (the next word, unless written NAME=VALUE): every
// flag of its table with a value, so a new one is never taken for the command; and its test
// hooks, which the table leaves out.
const std::set<std::string>& SandboxValueFlags();

// An existing directory that is not a symbolic link.
bool IsRealDirectory(const std::string& path);
// Whether `dir` holds a repository (.git, .hg, .jj, .svn) in a subdirectory or one below that
// (~/src/app, ~/work/client/app), or cannot tell (unreadable, or too much to look through):
// agent/escalation.h's holds_repositories for the real file system.
bool HoldsRepositories(const std::string& dir);

// Appends audit lines to the workspace's audit log (the file `anvil audit` reads).
agent::AuditSink WorkspaceAuditSink(const std::string& workspace);

}  // namespace anvil::cli
