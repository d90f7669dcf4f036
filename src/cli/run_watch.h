// `anvil run --watch`: runs, then runs again each time a file of the plugin directory (or its
// lib/) changes, until Ctrl-C. Changes are debounced (an editor's save is several events), and
// the signals that end the loop are taken through a signalfd while it waits, so the loop ends
// between runs with nothing left behind; during a run they act as without --watch (the
// session's processes die with their parent: PR_SET_PDEATHSIG).
#pragma once

#include <chrono>
#include <functional>
#include <string>

namespace anvil::cli {

// Returns 130 after SIGINT, 143 after SIGTERM, or 125 when the directory cannot be watched.
// `clear`: the terminal (stdout, when it is one) is cleared before each run.
int WatchAndRerun(const std::string& plugin_dir, bool clear, const std::function<int()>& run,
                  std::chrono::milliseconds debounce = std::chrono::milliseconds(150));

}  // namespace anvil::cli
