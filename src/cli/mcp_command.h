// `anvil mcp --workspace DIR`: a Model Context Protocol server on stdio (docs/agents.md).
//
// The messages are decided by agent/mcp_protocol.h; this is the loop around them. The main
// thread only reads stdin (one line at a time, at most kMaxLineBytes) and routes: a tools/call
// gets a worker thread of its own, so the server keeps reading while a call runs or waits for
// the person's answer to an elicitation/create request; a client's response is handed to the
// call waiting for it; notifications/cancelled marks the call cancelled, and the call's worker
// stops its child process tree and answers nothing. Writes to stdout are whole lines under one
// lock. At stdin EOF every running call is cancelled, its processes are killed and reaped, and
// the server exits 0.
//
// run_command runs agent/exec_flow.h's RunExec, as `anvil exec` does, with two injections: the
// Asker sends elicitation/create (or cannot ask, without the client's capability), and the
// SandboxRunner starts `anvil sandbox --report-fd 3 --quiet ...` (this executable) as a child in
// a process group of its own, with stdout and stderr captured under caps, the refusals read from
// the report, and the timeout and cancellation enforced by killing that process group (the
// sandbox's own processes die with their supervisor: PR_SET_PDEATHSIG). Approved plugins'
// commands run as `anvil run --json` children the same way.
#pragma once

#include <string>
#include <vector>

namespace anvil::cli {

int RunMcpCommand(const std::vector<std::string>& args);

}  // namespace anvil::cli
