// Ctrl-C, SIGTERM and SIGHUP for a command that must stop what it started before it ends (a
// one-shot `anvil run`): the first such signal is recorded, not acted on, and interrupts the
// blocking call in progress (no SA_RESTART). The code waiting on its children looks at
// InterruptSignal() whenever it wakes, stops them the ordinary way (their exit waited for, their
// files swept), and the command then exits 128 + the signal, as `anvil run --watch` does.
#pragma once

#include <string>

namespace anvil {

// Installs the recording handler for SIGINT, SIGTERM and SIGHUP. A child that execs gets the
// defaults back (a caught signal is reset by exec; a forked child of Anvil's own code resets
// them as an exec would).
void CatchInterrupts();

// The signal recorded since CatchInterrupts, or 0.
int InterruptSignal();

// "SIGINT" for SIGINT: how messages name a signal.
std::string SignalName(int sig);

}  // namespace anvil
