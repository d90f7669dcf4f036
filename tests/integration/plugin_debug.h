// Shared by the plugin-debugging tests (plugin_error, run_watch, serve_watch, serve_trace,
// audit_command): a workspace, a state dir and a plugin directory, with `anvil run` on them.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "sandbox_harness.h"
#include "serve_client.h"

namespace anvil::testing {

inline RunOptions Env(const std::string& state) {
  RunOptions o;
  o.env = {"PATH=/usr/bin:/bin", "HOME=/nonexistent", "XDG_STATE_HOME=" + state};
  return o;
}

// Processes (other than this one) whose command line mentions `needle`.
inline std::vector<pid_t> ProcessesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  while (dirent* e = d ? readdir(d) : nullptr) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0 || pid == getpid()) continue;
    // ReadFile: a process that exits mid-read is an empty text, not an exception.
    const std::string cmdline = ReadFile("/proc/" + std::string(e->d_name) + "/cmdline");
    if (cmdline.find(needle) != std::string::npos) out.push_back(pid);
  }
  if (d) closedir(d);
  return out;
}

class PluginDebug : public ServeTestBase {
 protected:
  RunResult Anvil(std::vector<std::string> args) {
    args.insert(args.begin(), {AnvilBin(), "run", "--workspace", ws_.path()});
    return testing::Run(args, Env(state_.path()));
  }
  std::string dir_ = plugins_ / "p";
  TempDir out_{"anvil-debug-out"};
};

}  // namespace anvil::testing
