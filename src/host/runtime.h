// The plugin runtime interface: one VM (Lua 5.4 or QuickJS) running one plugin inside
// anvil-plugin-host, after the host locked itself down. A runtime exposes the plugin API of
// INTERFACES.md (anvil.command, sys.*, editor.*) and reaches the world only through HostApi.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "ipc/cpu_budget.h"

namespace anvil::host {

// How a runtime reaches the world: every call becomes one request frame. An Error result is
// raised into the plugin as "code: message" (a Lua error string / a JS Error's message).
class HostApi {
 public:
  virtual ~HostApi() = default;
  // sys.fs.*, sys.net.fetch, sys.exec: the gateway ("fs.read", "net.fetch", "exec", ...).
  virtual Result<std::vector<std::string>> Gateway(const std::string& op,
                                                   std::vector<std::string> args) = 0;
  // editor.*: the trusted side ("editor.notify", "editor.buffer.get", "editor.buffer.edit").
  virtual Result<std::vector<std::string>> Editor(const std::string& op,
                                                  std::vector<std::string> args) = 0;
  // print/warn/console.log: the plugin log (trusted side), never the terminal directly.
  virtual void Log(std::string_view level, std::string_view text) = 0;
};

struct RuntimeLimits {
  uint64_t memory_bytes = 64ull << 20;                     // VM heap budget
  uint64_t instructions = ipc::kDefaultInstructionBudget;  // per load and per command; also
                                                           // bounds CPU time (ipc/cpu_budget.h)
  uint64_t stack_bytes = 1ull << 20;          // QuickJS max stack; Lua C-stack via LUAI_MAXCCALLS
  std::chrono::milliseconds deadline{10000};  // per command (the trusted side kills at it too)
};

struct PluginSource {
  std::string entry_name;  // "main.lua" / "main.js"
  std::string entry_code;
  std::map<std::string, std::string> modules;  // "lib.util" -> code (Lua require name / JS path)
};

class Runtime {
 public:
  virtual ~Runtime() = default;
  // Runs the entry's top level (which registers commands with anvil.command).
  virtual Status Load(const PluginSource& source) = 0;
  virtual std::vector<std::string> Commands() const = 0;
  // Runs one command. `args_json` is a JSON value (array or object); the result is JSON text
  // of the returned value (a string result is a JSON string). Budget exhaustion is an Error
  // with code "limit"; a deadline, "timeout"; a plugin error, code "error" with its message.
  virtual Result<std::string> RunCommand(const std::string& name, const std::string& args_json) = 0;
};

// `settings_json`: the workspace's settings for this plugin (Anvil.toml, untrusted data; a JSON
// object), exposed read-only as anvil.settings: Lua tables that refuse assignment and rawset at
// every level (pairs, ipairs and # work), a deep-frozen JS object. Nothing else in the host
// reads them. nullptr (no runtime) when it is not a JSON object.
std::unique_ptr<Runtime> MakeLuaRuntime(HostApi& api, const RuntimeLimits& limits,
                                        const std::string& settings_json = "{}");
std::unique_ptr<Runtime> MakeJsRuntime(HostApi& api, const RuntimeLimits& limits,
                                       const std::string& settings_json = "{}");

}  // namespace anvil::host
